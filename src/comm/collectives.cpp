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
// call after each (and after each kPieceBytes of parts filled: once per destination when
// parts are large, once per many destinations when many peers have small parts, so that
// filling a step costs O(n) tests of its transfers, not O(n^2)), so that the chunks in
// flight keep moving meanwhile.
constexpr std::size_t kTargetChunks = 16;
constexpr std::size_t kPieceBytes = 128 * 1024;

// Rows of one chunk on an asynchronous transport (at most max_rows, the window's limit).
std::size_t async_chunk_rows(const ExchangeSpec& spec, std::size_t max_rows, std::size_t min_part_bytes) {
  const std::size_t row_bytes = std::max<std::size_t>(1, spec.x_row_bytes + spec.s_row_bytes);
  const std::size_t part_bytes = spec.rows_per_rank * row_bytes;
  const std::size_t chunks =
      std::clamp<std::size_t>(part_bytes / std::max<std::size_t>(1, min_part_bytes), 1, kTargetChunks);
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

std::size_t exchange_slot_bytes(const Communicator& c, const ExchangeSpec& spec) {
  const std::size_t rows = max_chunk_rows(c, spec);
  return rows == 0 ? 0 : chunk_layout(c.size(), rows, spec.x_row_bytes, spec.s_row_bytes).total_bytes;
}

Status reserve_for_exchange(Communicator& c, const ExchangeSpec& spec, std::size_t shared_bytes,
                            Clock::time_point deadline) {
  if (spec.rows_per_rank == 0 && shared_bytes == 0) return Status::Ok();
  Window* w = c.window();
  return w == nullptr ? Status::Ok() : w->reserve(exchange_slot_bytes(c, spec), shared_bytes, deadline);
}

std::size_t max_chunk_rows(const Communicator& c, const ExchangeSpec& spec) {
  const std::size_t rows =
      max_rows_for_part(c.max_part_bytes(kind_of(spec)), spec.x_row_bytes, spec.s_row_bytes, spec.rows_per_rank);
  return spec.max_rows > 0 ? std::min(rows, spec.max_rows) : rows;
}

namespace {
// One exchange (see exchange() in collectives.hpp): the chunking, decided once by plan(),
// then the steps, chunk i in steps_[i % depth_].
class ExchangeRun {
 public:
  ExchangeRun(Communicator& c, const ExchangeSpec& spec, const ChunkConsumer& consume, Clock::time_point deadline,
              const RowProducer* produce)
      : c_(c),
        spec_(spec),
        consume_(consume),
        deadline_(deadline),
        produce_(produce),
        n_(c.size()),
        me_(c.rank()),
        async_(c.async_transfers()),
        xs_(n_),
        ss_(n_),
        px_(n_),
        ps_(n_) {}

  Status plan();
  Status run(bool drain);

 private:
  std::size_t rows_of(std::size_t i) const { return std::min(max_rows_, spec_.rows_per_rank - i * max_rows_); }
  // The first row of block d (same_rows: of the rows themselves) in the input.
  std::size_t block_row(int d) const { return spec_.same_rows ? 0 : static_cast<std::size_t>(d) * spec_.rows_per_rank; }
  Status start(std::size_t i);
  Status fill(Communicator::Step s, int d, std::size_t row0, std::size_t rows);
  void find_sources(Communicator::Step s, std::size_t row0);
  Status consume_chunk(std::size_t i, Communicator::Step s);

  Communicator& c_;
  const ExchangeSpec& spec_;
  const ChunkConsumer& consume_;
  const Clock::time_point deadline_;
  const RowProducer* produce_;
  const int n_, me_;
  const bool async_;
  std::size_t max_rows_ = 0, nchunks_ = 0, depth_ = 2;
  bool exposed_ = false, own_in_place_ = false;
  std::size_t filled_since_progress_ = 0;  // bytes of parts filled since the last progress()
  Status local_;                           // the first error of produce or consume; the protocol goes on regardless
  std::vector<Communicator::Step> steps_;
  std::vector<const uint8_t*> xs_, ss_, px_, ps_;
};

Status ExchangeRun::plan() {
  const std::size_t xrb = spec_.x_row_bytes, srb = spec_.s_row_bytes, rpr = spec_.rows_per_rank;
  max_rows_ = max_chunk_rows(c_, spec_);
  if (max_rows_ == 0) {
    return Status::Error(StatusCode::ParamInvalid, window_too_small_message(c_.window_bytes(), n_, spec_));
  }
  if (Window* w = c_.window()) {
    if (!spec_.reserved) {
      if (Status st = reserve_for_exchange(c_, spec_, 0, deadline_); !st.ok()) return st;
    }
    max_rows_ =
        std::min(max_rows_, max_rows_for_part(w->slot_capacity() / static_cast<std::size_t>(n_), xrb, srb, rpr));
    if (max_rows_ == 0)
      return Status::Error(StatusCode::InnerError, w->no_room_message(chunk_layout(n_, 1, xrb, srb).total_bytes));
  }
  if (async_) max_rows_ = async_chunk_rows(spec_, max_rows_, c_.min_chunk_part_bytes());
  exposed_ = produce_ == nullptr && c_.can_expose();
  own_in_place_ = produce_ == nullptr && c_.own_part_in_place();
  nchunks_ = (rpr + max_rows_ - 1) / max_rows_;
  // Asynchronous transports start chunks i+1 .. i+depth-1 before chunk i is consumed; the
  // others fill chunk i+1 after chunk i is released (depth 2).
  depth_ = async_ ? static_cast<std::size_t>(std::max(2, c_.max_steps_in_flight())) : std::size_t{2};
  steps_.assign(depth_, 0);
  return Status::Ok();
}

// Fills (or exposes) this rank's part for destination d of a step.
Status ExchangeRun::fill(Communicator::Step s, int d, std::size_t row0, std::size_t rows) {
  const std::size_t xrb = spec_.x_row_bytes, srb = spec_.s_row_bytes;
  const std::size_t src_row = block_row(d) + row0;
  if (exposed_) {
    PartView v;
    v.seg[0] = spec_.x + src_row * xrb;
    v.seg[1] = spec_.scales + src_row * srb;
    c_.expose(s, d, v);
    return Status::Ok();
  }
  const PartRegion part = c_.region(s, d);
  if (produce_ != nullptr) {
    if (local_.ok()) local_ = (*produce_)(d, row0, rows, part);  // after a failure: send what is there
  } else {
    std::memcpy(part.seg[0], spec_.x + src_row * xrb, rows * xrb);
    std::memcpy(part.seg[1], spec_.scales + src_row * srb, rows * srb);
  }
  if (!async_) return Status::Ok();
  if (!spec_.same_rows) {
    if (Status st = c_.part_filled(s, d); !st.ok()) return st;
  }
  filled_since_progress_ += rows * (xrb + srb);
  if (filled_since_progress_ < kPieceBytes) return Status::Ok();
  filled_since_progress_ = 0;
  return c_.progress();
}

Status ExchangeRun::start(std::size_t i) {
  const std::size_t row0 = i * max_rows_, rows = rows_of(i);
  Communicator::Step s = 0;
  if (Status st = c_.begin_step(rows_shape(spec_, rows), "exchanging data", deadline_, &s); !st.ok()) return st;
  // Destinations me+1, me+2, ..., me last (the order in which the MPI transport sends, so that
  // a part it starts at once goes to a different peer from each rank); same_rows: one part,
  // for every rank.
  for (int j = 1; j <= (spec_.same_rows ? 1 : n_); ++j) {
    const int d = spec_.same_rows ? 0 : (me_ + j) % n_;
    if (d == me_ && own_in_place_ && !spec_.same_rows) continue;  // read from the input when consumed
    if (Status st = fill(s, d, row0, rows); !st.ok()) return st;
  }
  steps_[i % depth_] = s;
  return c_.publish(s);
}

// xs_, ss_: where each source's rows of the chunk starting at row0 are.
void ExchangeRun::find_sources(Communicator::Step s, std::size_t row0) {
  for (int k = 0; k < n_; ++k) {
    if (k == me_ && own_in_place_) {
      const std::size_t my_row = block_row(me_) + row0;
      xs_[k] = spec_.x + my_row * spec_.x_row_bytes;
      ss_[k] = spec_.scales + my_row * spec_.s_row_bytes;
    } else {
      const PartView v = c_.view(s, k);
      xs_[k] = v.seg[0];
      ss_[k] = v.seg[1];
    }
  }
}

// Consumes chunk i (received in step s); asynchronous transports in pieces of about
// kPieceBytes per source, with progress() between them.
Status ExchangeRun::consume_chunk(std::size_t i, Communicator::Step s) {
  const std::size_t xrb = spec_.x_row_bytes, srb = spec_.s_row_bytes;
  const std::size_t row0 = i * max_rows_, rows = rows_of(i);
  find_sources(s, row0);
  const std::size_t pieces = async_ ? std::max<std::size_t>(1, (rows * xrb + kPieceBytes - 1) / kPieceBytes) : 1;
  const std::size_t piece_rows = (rows + pieces - 1) / pieces;
  for (std::size_t r = 0; r < rows && local_.ok(); r += piece_rows) {
    for (int k = 0; k < n_; ++k) {
      px_[k] = xs_[k] + r * xrb;
      ps_[k] = ss_[k] + r * srb;
    }
    Chunk ch;
    ch.row_begin = row0 + r;
    ch.rows = std::min(piece_rows, rows - r);
    ch.x = px_.data();
    ch.scales = ps_.data();
    local_ = consume_(ch);
    if (async_) {
      if (Status st = c_.progress(); !st.ok()) return st;
    }
  }
  return Status::Ok();
}

Status ExchangeRun::run(bool drain) {
  // Asynchronous transfers: chunks i+1 .. i+depth-1 move while chunk i is consumed, in
  // pieces with progress() between them. Otherwise the peers read in place: fill chunk i+1
  // once chunk i is consumed and released, so that no rank waits for a slow peer before it
  // consumes.
  const std::size_t ahead = async_ ? depth_ - 1 : 1;  // chunks started before chunk 0 is waited for
  for (std::size_t i = 0; i < std::min(ahead, nchunks_); ++i) {
    if (Status st = start(i); !st.ok()) return st;
  }
  for (std::size_t i = 0; i < nchunks_; ++i) {
    const Communicator::Step s = steps_[i % depth_];
    if (Status st = c_.wait_step(s, deadline_); !st.ok()) return st;
    if (async_ && i + ahead < nchunks_) {
      if (Status st = start(i + ahead); !st.ok()) return st;
    }
    if (local_.ok()) {
      if (Status st = consume_chunk(i, s); !st.ok()) return st;
    }
    if (Status st = c_.release(s); !st.ok()) return st;
    if (!async_ && i + 1 < nchunks_) {
      if (Status st = start(i + 1); !st.ok()) return st;
    }
  }
  if (drain) {
    if (Status st = c_.drain(deadline_); !st.ok()) return st;
  }
  return local_;
}

// One in-place all-gather (see allgather_blocks() in collectives.hpp), piece i in
// steps_[i % depth_].
class GatherRun {
 public:
  GatherRun(Communicator& c, void* buf, std::size_t block_bytes, Clock::time_point deadline)
      : c_(c),
        base_(static_cast<uint8_t*>(buf)),
        block_bytes_(block_bytes),
        deadline_(deadline),
        n_(c.size()),
        me_(c.rank()),
        async_(c.async_transfers()) {}

  Status plan();
  Status run();

 private:
  std::size_t offset(std::size_t i) const { return i * piece_max_; }
  std::size_t piece(std::size_t i) const { return std::min(piece_max_, block_bytes_ - offset(i)); }
  Status start(std::size_t i);

  Communicator& c_;
  uint8_t* const base_;
  const std::size_t block_bytes_;
  const Clock::time_point deadline_;
  const int n_, me_;
  const bool async_;
  std::size_t piece_max_ = 0, npieces_ = 0, depth_ = 1;
  std::vector<Communicator::Step> steps_;
};

Status GatherRun::plan() {
  std::size_t window_piece = std::min(c_.max_part_bytes(StepShape::Kind::Same), block_bytes_);
  if (Window* w = c_.window()) {
    if (Status st = w->reserve(window_piece, 0, deadline_); !st.ok()) return st;
    window_piece = std::min(window_piece, w->slot_capacity() / kSegmentAlign * kSegmentAlign);
  }
  if (window_piece == 0) {
    return Status::Error(StatusCode::InnerError, "the window cannot hold any part of an all-gather");
  }
  // Asynchronous transports: about kTargetChunks pieces (>= min_chunk_part_bytes() each), up to
  // max_steps_in_flight() of them moving while an earlier one is copied out. Otherwise one
  // piece after the other, as large as the window takes.
  piece_max_ = window_piece;
  if (async_) {
    const std::size_t wanted = round_up(
        std::max(c_.min_chunk_part_bytes(), (block_bytes_ + kTargetChunks - 1) / kTargetChunks), kSegmentAlign);
    piece_max_ = std::min(piece_max_, wanted);
  }
  npieces_ = (block_bytes_ + piece_max_ - 1) / piece_max_;
  depth_ = async_ ? static_cast<std::size_t>(std::max(2, c_.max_steps_in_flight())) : 1;
  steps_.assign(depth_, 0);
  return Status::Ok();
}

Status GatherRun::start(std::size_t i) {
  StepShape shape;
  shape.kind = StepShape::Kind::Same;
  shape.seg_bytes[0] = piece(i);
  Communicator::Step s = 0;
  if (Status st = c_.begin_step(shape, "gathering results", deadline_, &s); !st.ok()) return st;
  const uint8_t* mine = base_ + static_cast<std::size_t>(me_) * block_bytes_ + offset(i);
  if (c_.can_expose()) {
    PartView v;
    v.seg[0] = mine;
    c_.expose(s, 0, v);
  } else {
    std::memcpy(c_.region(s, 0).seg[0], mine, piece(i));
  }
  steps_[i % depth_] = s;
  return c_.publish(s);
}

Status GatherRun::run() {
  const std::size_t ahead = async_ ? depth_ - 1 : 1;
  for (std::size_t i = 0; i < std::min(ahead, npieces_); ++i) {
    if (Status st = start(i); !st.ok()) return st;
  }
  for (std::size_t i = 0; i < npieces_; ++i) {
    const Communicator::Step s = steps_[i % depth_];
    if (Status st = c_.wait_step(s, deadline_); !st.ok()) return st;
    if (i + ahead < npieces_ && async_) {
      if (Status st = start(i + ahead); !st.ok()) return st;
    }
    for (int k = 0; k < n_; ++k) {
      if (k != me_)
        std::memcpy(base_ + static_cast<std::size_t>(k) * block_bytes_ + offset(i), c_.view(s, k).seg[0], piece(i));
    }
    if (Status st = c_.release(s); !st.ok()) return st;
    if (i + ahead < npieces_ && !async_) {
      if (Status st = start(i + ahead); !st.ok()) return st;
    }
  }
  return c_.drain(deadline_);
}
}  // namespace

Status exchange(Communicator& c, const ExchangeSpec& spec, const ChunkConsumer& consume, Clock::time_point deadline,
                const RowProducer* produce, bool drain) {
  if (spec.rows_per_rank == 0) return Status::Ok();
  ExchangeRun run(c, spec, consume, deadline, produce);
  if (Status st = run.plan(); !st.ok()) return st;
  return run.run(drain);
}

Status allgather_blocks(Communicator& c, void* buf, std::size_t block_bytes, Clock::time_point deadline) {
  if (block_bytes == 0) return c.drain(deadline);
  GatherRun run(c, buf, block_bytes, deadline);
  if (Status st = run.plan(); !st.ok()) return st;
  return run.run();
}

}  // namespace qcoll::comm
