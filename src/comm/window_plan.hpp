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
#include "qcoll/status.hpp"

namespace qcoll::comm {

struct ExchangeSpec;

constexpr std::size_t kMiB = std::size_t{1} << 20;
constexpr std::size_t kWindowSlotReserveBytes = kMiB;  // the vendor's "+ 1 MB"
constexpr std::size_t kWindowPartAlign = 512;          // the vendor's rounding of data sizes
constexpr std::size_t kDefaultBuffSizeMiB = 200;       // HCCL_BUFFSIZE default
constexpr std::size_t kMaxBuffSizeMiB = 1 << 20;       // 1 TiB: beyond any machine here

constexpr std::size_t round_up(std::size_t v, std::size_t a) { return (v + a - 1) / a * a; }

// Layout of one chunk inside a slot.
struct ChunkLayout {
  std::size_t x_bytes = 0;         // rows * x_row_bytes rounded up to 512
  std::size_t scales_bytes = 0;    // rows * s_row_bytes rounded up to 512
  std::size_t per_dest_bytes = 0;  // x_bytes + scales_bytes: stride between destinations
  std::size_t total_bytes = 0;     // nranks * per_dest_bytes
};
ChunkLayout chunk_layout(int nranks, std::size_t rows, std::size_t x_row_bytes, std::size_t s_row_bytes);

// Bytes of one slot available to chunk data: window/2 - 1 MB (0 when the window is <= 2 MB).
std::size_t slot_data_bytes(std::size_t window_bytes);

// Largest number of rows (<= spec.rows_per_rank) of one chunk that fits a window of
// window_bytes per rank; 0 when not even one row fits.
std::size_t max_chunk_rows_for_window(std::size_t window_bytes, int nranks, const ExchangeSpec& spec);

// The message for a window that cannot hold one row, naming HCCL_BUFFSIZE.
std::string window_too_small_message(std::size_t window_bytes, int nranks, const ExchangeSpec& spec);

// Reads HCCL_BUFFSIZE (MB, a whole number in [1, kMaxBuffSizeMiB]; unset or empty: 200).
// PARAM_INVALID naming HCCL_BUFFSIZE and the value seen otherwise.
Status read_buffsize_env(std::size_t& window_bytes);

}  // namespace qcoll::comm
