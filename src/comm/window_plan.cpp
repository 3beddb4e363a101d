#include "comm/window_plan.hpp"

#include <cerrno>
#include <cstdlib>

#include "comm/communicator.hpp"

namespace qcoll::comm {

ChunkLayout chunk_layout(int nranks, std::size_t rows, std::size_t x_row_bytes, std::size_t s_row_bytes) {
  ChunkLayout l;
  l.x_bytes = round_up(rows * x_row_bytes, kWindowPartAlign);
  l.scales_bytes = round_up(rows * s_row_bytes, kWindowPartAlign);
  l.per_dest_bytes = l.x_bytes + l.scales_bytes;
  l.total_bytes = static_cast<std::size_t>(nranks) * l.per_dest_bytes;
  return l;
}

std::size_t slot_data_bytes(std::size_t window_bytes) {
  const std::size_t slot = window_bytes / 2;
  return slot > kWindowSlotReserveBytes ? slot - kWindowSlotReserveBytes : 0;
}

std::size_t max_chunk_rows_for_window(std::size_t window_bytes, int nranks, const ExchangeSpec& spec) {
  const std::size_t avail = slot_data_bytes(window_bytes);
  const std::size_t row_bytes = spec.x_row_bytes + spec.s_row_bytes;
  if (nranks <= 0 || row_bytes == 0) return spec.rows_per_rank;
  std::size_t rows = avail / (static_cast<std::size_t>(nranks) * row_bytes);
  if (rows > spec.rows_per_rank) rows = spec.rows_per_rank;
  // Rounding each part up to 512 bytes can push the estimate over; step down until it fits.
  while (rows > 0 && chunk_layout(nranks, rows, spec.x_row_bytes, spec.s_row_bytes).total_bytes > avail) --rows;
  return rows;
}

std::string window_too_small_message(std::size_t window_bytes, int nranks, const ExchangeSpec& spec) {
  const std::size_t one_row = chunk_layout(nranks, 1, spec.x_row_bytes, spec.s_row_bytes).total_bytes;
  const std::size_t need_mb = (2 * (one_row + kWindowSlotReserveBytes) + kMiB - 1) / kMiB;
  return "HCCL_BUFFSIZE: the window of " + std::to_string(window_bytes / kMiB) +
         " MB cannot hold one chunk (one row from each of " + std::to_string(nranks) + " ranks needs " +
         std::to_string(one_row) + " bytes; rule 11: HCCL_BUFFSIZE >= 2*(chunk bytes + 1 MB)), expected " +
         "HCCL_BUFFSIZE >= " + std::to_string(need_mb) + ", got " + std::to_string(window_bytes / kMiB);
}

Status read_buffsize_env(std::size_t& window_bytes) {
  window_bytes = kDefaultBuffSizeMiB * kMiB;
  const char* v = std::getenv("HCCL_BUFFSIZE");
  if (v == nullptr || *v == '\0') return Status::Ok();
  errno = 0;
  char* end = nullptr;
  const unsigned long long mb = std::strtoull(v, &end, 10);
  if (errno != 0 || end == v || *end != '\0' || *v == '-' || *v == '+' || mb < 1 || mb > kMaxBuffSizeMiB) {
    return Status::Error(StatusCode::ParamInvalid,
                         std::string("HCCL_BUFFSIZE must be a whole number of MB in [1, ") +
                             std::to_string(kMaxBuffSizeMiB) + "], got \"" + v + "\"");
  }
  window_bytes = static_cast<std::size_t>(mb) * kMiB;
  return Status::Ok();
}

}  // namespace qcoll::comm
