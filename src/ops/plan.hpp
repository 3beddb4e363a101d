// Phase one's product: everything one operator call will do, computed once from the request
// (docs/architecture.md "One call"). Executor::run (phase two) carries the plan out and decides
// nothing; the one fact it learns on the way is how much shared window memory the transport
// gave (Output::SharedBlock falls back to Output::Staged when it is less than one row block).
#pragma once
#include <cstddef>
#include <cstdint>

#include "comm/collectives.hpp"
#include "kernels/dequant_reduce.hpp"
#include "ops/call_descriptor.hpp"
#include "ops/fused_quantize.hpp"
#include "ops/validate.hpp"

namespace qcoll::ops {

// Where the reduction is written and how it reaches the output.
enum class Output {
  InPlace,      // into the user's output; the outcome agreement comes before the all-gather
  Staged,       // into the workspace; copied to the output after the outcome agreement
  SharedBlock,  // QuantAllReduce on a windowed transport: into this rank's shared block, read by every rank
};

struct CallPlan {
  ValidatedCall call;            // the validated shapes, dtypes and tensors
  CallDescriptor descriptor;     // what the ranks agree on
  uint64_t workspace_bytes = 0;  // the output's bytes when the transport may fail mid-call, else 0
  // QuantAllReduce moving every rank's quantized tensor to every rank, each reducing every
  // row (QCOLL_ALL_REDUCE; the same on every rank): no all-gather of the output.
  bool gather = false;
  bool all_gather_step = false;  // QuantAllReduce by reduce-scatter: the row blocks are all-gathered
  Output output = Output::InPlace;
  std::size_t block_bytes = 0;    // one rank's row block of the output
  std::size_t reduce_offset = 0;  // where this rank's reduction starts in the output (or workspace)
  comm::ExchangeSpec spec;        // spec.max_rows: the chunk rows (0 only when no row fits)
  int threads = 1;                // threads of this rank's reduction and quantization
  kernels::ReduceArgs reduce;     // the kernel's dtypes and sources; each chunk adds its pointers
  RowQuantizer quantizer;         // the fused operators: rows of the float input per chunk
};

// Phase one: validates `req` (contract.md §validation) and, on success, fills *plan.
Status make_plan(const OpRequest& req, CallPlan* plan);

}  // namespace qcoll::ops
