// contract.md §window for transports that stage data through a per-rank window (shared memory,
// MPI): how many rows of a reduce-scatter exchange fit in one chunk, and where each part of a
// chunk lies inside a window slot.
//
// The window (HCCL_BUFFSIZE MB per rank) is double-buffered: two slots of half the window,
// so that a rank can fill the next chunk while its peers still read the previous one. As in
// the vendor's rule HCCL_BUFFSIZE >= 2 * (xDataSize + scalesDataSize + 1 MB), each slot keeps
// 1 MB in reserve; a chunk fits when 2 * (chunk bytes + 1 MB) <= window. A chunk of `rows`
// rows holds, for every destination rank in order, `rows` rows of x then `rows` rows of
// scales, each part rounded up to 512 bytes. The whole exchange fits in one chunk exactly
// when the vendor's rule holds; otherwise it moves in several chunks.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include "qcoll/contract.hpp"
#include "qcoll/settings.hpp"
#include "qcoll/status.hpp"

namespace qcoll::comm {

struct ExchangeSpec;

// The rule (slots, reserve) is the contract's, the variable the settings'; the layout is ours.
using contract::kMiB;
using contract::kWindowSlotReserveBytes;
using settings::kDefaultBuffSizeMiB;
using settings::kMaxBuffSizeMiB;
constexpr std::size_t kWindowPartAlign = 512;  // the vendor's rounding of data sizes

constexpr std::size_t round_up(std::size_t v, std::size_t a) { return (v + a - 1) / a * a; }

// Layout of one chunk inside a slot.
struct ChunkLayout {
  std::size_t x_bytes = 0;         // rows * x_row_bytes rounded up to 512
  std::size_t scales_bytes = 0;    // rows * s_row_bytes rounded up to 512
  std::size_t per_dest_bytes = 0;  // x_bytes + scales_bytes: stride between destinations
  std::size_t total_bytes = 0;     // nranks * per_dest_bytes
};
ChunkLayout chunk_layout(int nranks, std::size_t rows, std::size_t x_row_bytes, std::size_t s_row_bytes);

// Largest number of rows (<= rows) whose part for one destination, x rows then scales rows
// each rounded up to 512 bytes, fits in max_part bytes; 0 when not even one row fits.
std::size_t max_rows_for_part(std::size_t max_part, std::size_t x_row_bytes, std::size_t s_row_bytes, std::size_t rows);

// Largest number of rows (<= spec.rows_per_rank) of one chunk that fits a window of
// window_bytes per rank; 0 when not even one row fits.
std::size_t max_chunk_rows_for_window(std::size_t window_bytes, int nranks, const ExchangeSpec& spec);

// The message for a window that cannot hold one row, naming HCCL_BUFFSIZE.
std::string window_too_small_message(std::size_t window_bytes, int nranks, const ExchangeSpec& spec);

// HCCL_BUFFSIZE in bytes (settings::window_bytes: MB, a whole number in [1, kMaxBuffSizeMiB];
// unset or empty: 200). PARAM_INVALID naming HCCL_BUFFSIZE and the value seen otherwise.
inline Status read_buffsize_env(std::size_t& window_bytes) { return settings::window_bytes(window_bytes); }

}  // namespace qcoll::comm
