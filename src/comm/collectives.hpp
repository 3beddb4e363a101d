// The data movements of the operators, written once over the transport primitives of
// communicator.hpp: the chunked reduce-scatter exchange and the in-place all-gather. They
// know row blocks and bytes, not operators or dtypes.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "comm/communicator.hpp"
#include "qcoll/status.hpp"

namespace qcoll::comm {

// The reduce-scatter exchange. Every rank holds `nranks` row blocks of rows_per_rank rows
// each (x: x_row_bytes per row; scales: s_row_bytes per row, row-major, contiguous).
// Rank r receives block r of every rank's x and scales. With same_rows, every rank holds
// rows_per_rank rows and every rank receives all of them from every rank (an all-gather
// of the rows, in Same steps).
struct ExchangeSpec {
  const uint8_t* x = nullptr;
  std::size_t x_row_bytes = 0;
  const uint8_t* scales = nullptr;
  std::size_t s_row_bytes = 0;
  std::size_t rows_per_rank = 0;
  std::size_t max_rows = 0;  // at most this many rows per chunk (0: as many as the transport takes)
  bool same_rows = false;    // every rank receives the same rows (all of them) from every rank
  // The caller already reserved the window for this spec (reserve_for_exchange, on every
  // rank): exchange() does not reserve a second time.
  bool reserved = false;
};

// A piece of the received data: rows [row_begin, row_begin + rows) of this rank's block,
// from each source rank k = 0..n-1: x[k] and scales[k] point at row row_begin.
struct Chunk {
  std::size_t row_begin = 0;
  std::size_t rows = 0;
  const uint8_t* const* x = nullptr;       // size() pointers
  const uint8_t* const* scales = nullptr;  // size() pointers
};
using ChunkConsumer = std::function<Status(const Chunk&)>;

// Writes this rank's rows [row_begin, row_begin + rows) of block `dest` (same_rows: dest 0,
// the rows themselves) into `part`:
// segment 0 the x rows, segment 1 the scales rows (for rows that do not exist before the
// exchange, e.g. quantized on the fly). Must not throw.
using RowProducer = std::function<Status(int dest, std::size_t row_begin, std::size_t rows, const PartRegion& part)>;

// Largest number of rows of one chunk of `spec` on `c` (all rows_per_rank when the
// transport has no window; 0 when not even one row fits: the window rule), at most
// spec.max_rows when that is set.
std::size_t max_chunk_rows(const Communicator& c, const ExchangeSpec& spec);

// Bytes of one slot that a chunk of spec needs on `c` (0 when not even one row fits).
std::size_t exchange_slot_bytes(const Communicator& c, const ExchangeSpec& spec);

// Collective (the same arguments on every rank, after the call agreement): reserves the
// window memory an exchange of spec needs, and a shared block of shared_bytes per rank
// (Window::reserve; a no-op where the transport has no Window). exchange() reserves its
// slots itself unless spec.reserved; call this first (then set spec.reserved) to take the
// shared block in the same step, so that the call reserves once.
Status reserve_for_exchange(Communicator& c, const ExchangeSpec& spec, std::size_t shared_bytes,
                            Clock::time_point deadline);

// Calls `consume` for consecutive chunks covering this rank's rows_per_rank rows; sources
// stay valid only during the call to consume (on MPI chunk i+1 moves meanwhile).
// Without `produce` the rows are read from spec.x / spec.scales (in place where the
// transport allows); with it (spec.x, spec.scales unused) the producer fills each part.
// `consume` and `produce` must not throw. If either returns an error, the exchange still
// completes its protocol with the peers (consuming nothing more), then returns that error:
// the caller tells its peers (the outcome agreement). A transport failure returns at once.
// `drain` false: the caller makes every rank take one more step (e.g. the outcome
// agreement) before spec.x / spec.scales may change; a peer publishes that step only after
// it finished reading them, so it drains them, one wait fewer.
Status exchange(Communicator& c, const ExchangeSpec& spec, const ChunkConsumer& consume, Clock::time_point deadline,
                const RowProducer* produce = nullptr, bool drain = true);

// All-gather in place: buf holds size() blocks of block_bytes, block rank() filled on
// entry; on success every block is filled with the owner's data.
Status allgather_blocks(Communicator& c, void* buf, std::size_t block_bytes, Clock::time_point deadline);

}  // namespace qcoll::comm
