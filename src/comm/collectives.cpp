#include "comm/collectives.hpp"

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "comm/window_plan.hpp"

namespace qcoll::comm {

namespace {
// On transports with asynchronous transfers (MPI) the exchange is cut into chunks by the
// data size: about kTargetChunks of them, so that up to max_steps_in_flight() chunks move
// while one is consumed and the last one (whose reduction nothing hides) is small, but each
// part (the message to one peer) at least c.min_chunk_part_bytes(), so that per-message costs stay
// small. A chunk is consumed in pieces of about kPieceBytes per source, with a progress()
// call after each (and after each destination's part is filled), so that the chunks in
// flight keep moving meanwhile.
constexpr std::size_t kTargetChunks = 16;
constexpr std::size_t kPieceBytes = 128 * 1024;

// Rows of one chunk on an asynchronous transport (at most max_rows, the window's limit).
std::size_t async_chunk_rows(const ExchangeSpec& spec, std::size_t max_rows, std::size_t min_part_bytes) {
  const std::size_t row_bytes = std::max<std::size_t>(1, spec.x_row_bytes + spec.s_row_bytes);
  const std::size_t part_bytes = spec.rows_per_rank * row_bytes;
  const std::size_t chunks = std::clamp<std::size_t>(part_bytes / std::max<std::size_t>(1, min_part_bytes), 1, kTargetChunks);
  return std::min(max_rows, (spec.rows_per_rank + chunks - 1) / chunks);
}

StepShape::Kind kind_of(const ExchangeSpec& spec) {
  return spec.same_rows ? StepShape::Kind::Same : StepShape::Kind::PerDestination;
}

StepShape rows_shape(const ExchangeSpec& spec, std::size_t rows) {
  StepShape s;
  s.kind = kind_of(spec);
  s.seg_bytes[0] = rows * spec.x_row_bytes;
  s.seg_bytes[1] = rows * spec.s_row_bytes;
  return s;
}
}  // namespace

std::string no_room_message(const Communicator& c, const ExchangeSpec& spec) {
  const std::size_t one_row = chunk_layout(c.size(), 1, spec.x_row_bytes, spec.s_row_bytes).total_bytes;
  return std::string(c.transport()) + " transport: /dev/shm has no room for one row from each of " +
         std::to_string(c.size()) + " ranks (" + std::to_string(one_row) + " bytes per slot, 2 slots per rank; " +
         std::to_string(c.slot_capacity()) + " reserved): enlarge /dev/shm or use QCOLL_TRANSPORT=mpi";
}

std::size_t exchange_slot_bytes(const Communicator& c, const ExchangeSpec& spec) {
  const std::size_t rows = max_chunk_rows(c, spec);
  return rows == 0 ? 0 : chunk_layout(c.size(), rows, spec.x_row_bytes, spec.s_row_bytes).total_bytes;
}

Status reserve_for_exchange(Communicator& c, const ExchangeSpec& spec, std::size_t shared_bytes,
                            Clock::time_point deadline) {
  if (spec.rows_per_rank == 0 && shared_bytes == 0) return Status::Ok();
  return c.reserve(exchange_slot_bytes(c, spec), shared_bytes, deadline);
}

std::size_t max_chunk_rows(const Communicator& c, const ExchangeSpec& spec) {
  const std::size_t rows = max_rows_for_part(c.max_part_bytes(kind_of(spec)), spec.x_row_bytes,
                                             spec.s_row_bytes, spec.rows_per_rank);
  return spec.max_rows > 0 ? std::min(rows, spec.max_rows) : rows;
}

Status exchange(Communicator& c, const ExchangeSpec& spec, const ChunkConsumer& consume,
                Clock::time_point deadline, const RowProducer* produce, bool drain) {
  if (spec.rows_per_rank == 0) return Status::Ok();
  const bool async = c.async_transfers();
  std::size_t max_rows = max_chunk_rows(c, spec);
  if (max_rows == 0) {
    return Status::Error(StatusCode::ParamInvalid, window_too_small_message(c.window_bytes(), c.size(), spec));
  }
  const int n = c.size(), me = c.rank();
  const std::size_t xrb = spec.x_row_bytes, srb = spec.s_row_bytes, rpr = spec.rows_per_rank;
  if (Status st = reserve_for_exchange(c, spec, 0, deadline); !st.ok()) return st;
  max_rows = std::min(max_rows, max_rows_for_part(c.slot_capacity() / static_cast<std::size_t>(n), xrb, srb, rpr));
  if (max_rows == 0) return Status::Error(StatusCode::InnerError, no_room_message(c, spec));
  if (async) max_rows = async_chunk_rows(spec, max_rows, c.min_chunk_part_bytes());
  const bool exposed = produce == nullptr && c.can_expose();
  const bool own_in_place = produce == nullptr && c.own_part_in_place();
  const std::size_t nchunks = (rpr + max_rows - 1) / max_rows;
  auto rows_of = [&](std::size_t i) { return std::min(max_rows, rpr - i * max_rows); };

  Status local;  // the first error of produce or consume; the protocol goes on regardless
  // Steps in flight: chunk i uses steps[i % depth]. Asynchronous transports start chunks
  // i+1 .. i+depth-1 before chunk i is consumed; the others fill chunk i+1 after chunk i is
  // released (depth 2).
  const std::size_t depth =
      async ? static_cast<std::size_t>(std::max(2, c.max_steps_in_flight())) : std::size_t{2};
  std::vector<Communicator::Step> steps(depth, 0);
  auto start = [&](std::size_t i) -> Status {
    const std::size_t row0 = i * max_rows, rows = rows_of(i);
    Communicator::Step s = 0;
    if (Status st = c.begin_step(rows_shape(spec, rows), "exchanging data", deadline, &s); !st.ok()) return st;
    for (int d = 0; d < (spec.same_rows ? 1 : n); ++d) {  // same_rows: one part, for every rank
      if (d == me && own_in_place && !spec.same_rows) continue;  // read from the input below
      const std::size_t src_row = (spec.same_rows ? 0 : static_cast<std::size_t>(d) * rpr) + row0;
      if (exposed) {
        PartView v;
        v.seg[0] = spec.x + src_row * xrb;
        v.seg[1] = spec.scales + src_row * srb;
        c.expose(s, d, v);
        continue;
      }
      const PartRegion part = c.region(s, d);
      if (produce != nullptr) {
        if (local.ok()) local = (*produce)(d, row0, rows, part);  // after a failure: send what is there
      } else {
        std::memcpy(part.seg[0], spec.x + src_row * xrb, rows * xrb);
        std::memcpy(part.seg[1], spec.scales + src_row * srb, rows * srb);
      }
      if (async) {
        if (Status st = c.progress(); !st.ok()) return st;
      }
    }
    steps[i % depth] = s;
    return c.publish(s);
  };

  std::vector<const uint8_t*> xs(n), ss(n), px(n), ps(n);
  // Asynchronous transfers: chunks i+1 .. i+depth-1 move while chunk i is consumed, in
  // pieces with progress() between them. Otherwise the peers read in place: fill chunk i+1
  // once chunk i is consumed and released, so that no rank waits for a slow peer before it
  // consumes.
  const std::size_t ahead = async ? depth - 1 : 1;  // chunks started before chunk 0 is waited for
  for (std::size_t i = 0; i < std::min(ahead, nchunks); ++i) {
    if (Status st = start(i); !st.ok()) return st;
  }
  for (std::size_t i = 0; i < nchunks; ++i) {
    const Communicator::Step s = steps[i % depth];
    const bool next = i + 1 < nchunks;
    if (Status st = c.wait_step(s, deadline); !st.ok()) return st;
    if (async && i + ahead < nchunks) {
      if (Status st = start(i + ahead); !st.ok()) return st;
    }
    if (local.ok()) {
      const std::size_t row0 = i * max_rows, rows = rows_of(i);
      for (int k = 0; k < n; ++k) {
        if (k == me && own_in_place) {
          const std::size_t my_row = (spec.same_rows ? 0 : static_cast<std::size_t>(me) * rpr) + row0;
          xs[k] = spec.x + my_row * xrb;
          ss[k] = spec.scales + my_row * srb;
        } else {
          const PartView v = c.view(s, k);
          xs[k] = v.seg[0];
          ss[k] = v.seg[1];
        }
      }
      const std::size_t pieces = async ? std::max<std::size_t>(1, (rows * xrb + kPieceBytes - 1) / kPieceBytes) : 1;
      const std::size_t piece_rows = (rows + pieces - 1) / pieces;
      for (std::size_t r = 0; r < rows && local.ok(); r += piece_rows) {
        for (int k = 0; k < n; ++k) {
          px[k] = xs[k] + r * xrb;
          ps[k] = ss[k] + r * srb;
        }
        Chunk ch;
        ch.row_begin = row0 + r;
        ch.rows = std::min(piece_rows, rows - r);
        ch.x = px.data();
        ch.scales = ps.data();
        local = consume(ch);
        if (async) {
          if (Status st = c.progress(); !st.ok()) return st;
        }
      }
    }
    if (Status st = c.release(s); !st.ok()) return st;
    if (!async && next) {
      if (Status st = start(i + 1); !st.ok()) return st;
    }
  }
  if (drain) {
    if (Status st = c.drain(deadline); !st.ok()) return st;
  }
  return local;
}

Status allgather_blocks(Communicator& c, void* buf, std::size_t block_bytes, Clock::time_point deadline) {
  auto* base = static_cast<uint8_t*>(buf);
  const int n = c.size(), me = c.rank();
  std::size_t window_piece = std::min(c.max_part_bytes(StepShape::Kind::Same), block_bytes);
  if (block_bytes > 0) {
    if (Status st = c.reserve(window_piece, 0, deadline); !st.ok()) return st;
    window_piece = std::min(window_piece, c.slot_capacity() / kSegmentAlign * kSegmentAlign);
  }
  if (block_bytes > 0 && window_piece == 0) {
    return Status::Error(StatusCode::InnerError, "the window cannot hold any part of an all-gather");
  }
  if (block_bytes == 0) return c.drain(deadline);
  // Asynchronous transports: about kTargetChunks pieces (>= min_chunk_part_bytes() each), up to
  // max_steps_in_flight() of them moving while an earlier one is copied out. Otherwise one
  // piece after the other, as large as the window takes.
  const bool async = c.async_transfers();
  std::size_t piece_max = window_piece;
  if (async) {
    const std::size_t wanted = round_up(std::max(c.min_chunk_part_bytes(), (block_bytes + kTargetChunks - 1) / kTargetChunks),
                                        kSegmentAlign);
    piece_max = std::min(piece_max, wanted);
  }
  const std::size_t npieces = (block_bytes + piece_max - 1) / piece_max;
  const std::size_t depth = async ? static_cast<std::size_t>(std::max(2, c.max_steps_in_flight())) : 1;
  std::vector<Communicator::Step> steps(depth, 0);
  auto start = [&](std::size_t i) -> Status {
    const std::size_t off = i * piece_max, piece = std::min(piece_max, block_bytes - off);
    StepShape shape;
    shape.kind = StepShape::Kind::Same;
    shape.seg_bytes[0] = piece;
    Communicator::Step s = 0;
    if (Status st = c.begin_step(shape, "gathering results", deadline, &s); !st.ok()) return st;
    const uint8_t* mine = base + static_cast<std::size_t>(me) * block_bytes + off;
    if (c.can_expose()) {
      PartView v;
      v.seg[0] = mine;
      c.expose(s, 0, v);
    } else {
      std::memcpy(c.region(s, 0).seg[0], mine, piece);
    }
    steps[i % depth] = s;
    return c.publish(s);
  };
  const std::size_t ahead = async ? depth - 1 : 1;
  for (std::size_t i = 0; i < std::min(ahead, npieces); ++i) {
    if (Status st = start(i); !st.ok()) return st;
  }
  for (std::size_t i = 0; i < npieces; ++i) {
    const Communicator::Step s = steps[i % depth];
    if (Status st = c.wait_step(s, deadline); !st.ok()) return st;
    if (i + ahead < npieces && async) {
      if (Status st = start(i + ahead); !st.ok()) return st;
    }
    const std::size_t off = i * piece_max, piece = std::min(piece_max, block_bytes - off);
    for (int k = 0; k < n; ++k) {
      if (k != me) std::memcpy(base + static_cast<std::size_t>(k) * block_bytes + off, c.view(s, k).seg[0], piece);
    }
    if (Status st = c.release(s); !st.ok()) return st;
    if (i + ahead < npieces && !async) {
      if (Status st = start(i + ahead); !st.ok()) return st;
    }
  }
  return c.drain(deadline);
}

}  // namespace qcoll::comm
