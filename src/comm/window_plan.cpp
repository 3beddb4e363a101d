#include "comm/window_plan.hpp"

#include <algorithm>

#include "comm/collectives.hpp"

namespace qcoll::comm {

ChunkLayout chunk_layout(int nranks, std::size_t rows, std::size_t x_row_bytes, std::size_t s_row_bytes) {
  ChunkLayout l;
  l.x_bytes = round_up(rows * x_row_bytes, kWindowPartAlign);
  l.scales_bytes = round_up(rows * s_row_bytes, kWindowPartAlign);
  l.per_dest_bytes = l.x_bytes + l.scales_bytes;
  l.total_bytes = static_cast<std::size_t>(nranks) * l.per_dest_bytes;
  return l;
}

std::size_t max_rows_for_part(std::size_t max_part, std::size_t x_row_bytes, std::size_t s_row_bytes,
                              std::size_t rows) {
  const std::size_t row_bytes = x_row_bytes + s_row_bytes;
  if (row_bytes == 0) return rows;
  std::size_t r = std::min(rows, max_part / row_bytes);
  // Rounding each part up to 512 bytes can push the estimate over; step down until it fits.
  while (r > 0 && round_up(r * x_row_bytes, kWindowPartAlign) + round_up(r * s_row_bytes, kWindowPartAlign) > max_part)
    --r;
  return r;
}

std::size_t max_chunk_rows_for_window(std::size_t window_bytes, int nranks, const ExchangeSpec& spec) {
  if (nranks <= 0) return spec.rows_per_rank;
  // A slot holds one part per destination: nranks * part <= the slot.
  return max_rows_for_part(contract::window_slot_bytes(window_bytes) / static_cast<std::size_t>(nranks),
                           spec.x_row_bytes, spec.s_row_bytes, spec.rows_per_rank);
}

std::string window_too_small_message(std::size_t window_bytes, int nranks, const ExchangeSpec& spec) {
  const std::size_t one_row = chunk_layout(nranks, 1, spec.x_row_bytes, spec.s_row_bytes).total_bytes;
  const std::size_t need_mb = contract::window_mb_for_chunk(one_row);
  return "HCCL_BUFFSIZE: the window of " + std::to_string(window_bytes / kMiB) +
         " MB cannot hold one chunk (one row from each of " + std::to_string(nranks) + " ranks needs " +
         std::to_string(one_row) + " bytes; rule 11: HCCL_BUFFSIZE >= 2*(chunk bytes + 1 MB)), expected " +
         "HCCL_BUFFSIZE >= " + std::to_string(need_mb) + ", got " + std::to_string(window_bytes / kMiB);
}

}  // namespace qcoll::comm
