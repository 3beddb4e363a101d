// Synthetic LLM-like activations for the demo and `qcoll generate`: Gaussian values with a
// per-token scale, plus a few outlier channels (the same channels on every rank, as in real
// models) whose magnitude is 10-100x the rest. Deterministic for a given (seed, rank).
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

namespace qcoll::cli {

struct ActivationSpec {
  std::size_t rows = 1024;    // tokens (BS)
  std::size_t hidden = 4096;  // H
  uint64_t seed = 1;
  std::size_t outlier_channels = 0;  // 0: max(4, hidden / 512)
};

// The outlier channels and their magnitude factors (same for every rank of one seed).
struct OutlierChannel {
  std::size_t channel;
  float factor;  // 10..100 (log-uniform)
};
std::vector<OutlierChannel> outlier_channels(const ActivationSpec& spec);

// rows x hidden values (row-major) of rank `rank`.
std::vector<float> make_activations(const ActivationSpec& spec, int rank);

}  // namespace qcoll::cli
