#include "ops/executor.hpp"

#include <atomic>
#include <cstring>
#include <exception>
#include <new>
#include <string>
#include <vector>

#include "comm/collectives.hpp"
#include "comm/registry.hpp"
#include "kernels/dequant_reduce.hpp"
#include "ops/agreement.hpp"
#include "ops/fused_quantize.hpp"
#include "ops/timeout.hpp"

namespace qcoll::ops {

namespace testing {
namespace {
std::atomic<ReduceFaultForTest> g_reduce_fault{nullptr};
}  // namespace
void set_reduce_fault_for_test(ReduceFaultForTest hook) { g_reduce_fault.store(hook, std::memory_order_release); }
}  // namespace testing

namespace {

// The descriptor a rank that failed phase one contributes: what it knows of its call.
CallDescriptor partial_descriptor(const OpRequest& req) {
  CallDescriptor d;
  d.op = static_cast<int32_t>(req.op);
  settings::Contract contract = settings::Contract::Vendor;
  d.contract = settings::contract(contract).ok() ? static_cast<int32_t>(contract) : kContractUnknown;
  const bool fused = contract::is_fused(req.op);
  if (fused && req.config != nullptr) {
    d.x_dtype = req.config->x_dtype;
    d.scales_dtype = req.config->scales_dtype;
  }
  if (req.x != nullptr) {
    (fused ? d.in_dtype : d.x_dtype) = req.x->dtype;
    d.ndim = static_cast<int32_t>(req.x->dims.size());
    for (std::size_t i = 0; i < req.x->dims.size() && i < 3; ++i) d.shape[i] = req.x->dims[i];
  }
  if (!fused && req.scales != nullptr) d.scales_dtype = req.scales->dtype;
  if (req.output != nullptr) d.out_dtype = req.output->dtype;
  return d;
}

std::string prefixed(OpKind op, const std::string& msg) { return std::string(op_name(op)) + ": " + msg; }

}  // namespace

Status Executor::prepare(const OpRequest& req, uint64_t* workspace_size, std::unique_ptr<Executor>* out) {
  CallPlan plan;
  Status st = make_plan(req, &plan);
  if (!st.ok()) {
    // Take part in this call's agreement if the group resolves, so peers fail fast.
    if (req.group != nullptr && comm::check_group_name(req.group, "group").ok()) {
      if (auto c = comm::resolve(req.group))
        report_local_failure(*c, partial_descriptor(req), static_cast<int32_t>(st.code));
    }
    return st;
  }
  std::unique_ptr<Executor> e(new Executor(std::move(plan)));
  *workspace_size = e->plan_.workspace_bytes;
  *out = std::move(e);
  return Status::Ok();
}

void Executor::report_failure(StatusCode code) {
  report_local_failure(*plan_.call.comm, plan_.descriptor, static_cast<int32_t>(code));
}

void Executor::report_not_run() { report_local_failure(*plan_.call.comm, plan_.descriptor, kLocalStatusNotRun); }

Status Executor::failed(const Status& s) const { return Status::Error(s.code, prefixed(plan_.call.op, s.message)); }

Status Executor::broken(const Status& s) const {
  const comm::Communicator& c = *plan_.call.comm;
  return Status::Error(s.ok() ? StatusCode::RuntimeError : s.code,
                       prefixed(plan_.call.op, s.ok() ? c.broken_reason() : s.message));
}

Status Executor::reduce_scatter(uint8_t* mine, comm::Clock::time_point deadline, bool reserved) {
  comm::Communicator& c = *plan_.call.comm;
  comm::ExchangeSpec spec = plan_.spec;
  spec.reserved = reserved;
  const std::size_t row_bytes = plan_.call.H * plan_.call.out_elem_bytes();
  const std::size_t H = plan_.call.H;
  const kernels::ReduceArgs& reduce = plan_.reduce;
  const int threads = plan_.threads;
  const testing::ReduceFaultForTest fault = testing::g_reduce_fault.load(std::memory_order_acquire);
  auto consume = [&reduce, &c, fault, mine, H, row_bytes, threads](const comm::Chunk& chunk) -> Status {
    // The one place where an exception of the reduction is caught: it becomes this rank's
    // status, and the exchange completes its protocol with the peers.
    try {
      if (fault != nullptr) {
        if (Status f = fault(c.name(), c.rank(), chunk.row_begin); !f.ok()) return f;
      }
      kernels::ReduceArgs a = reduce;
      a.x = chunk.x;
      a.scales = chunk.scales;
      a.count = chunk.rows * H;
      a.out = mine + chunk.row_begin * row_bytes;
      kernels::dequant_reduce_parallel(a, threads);
      return Status::Ok();
    } catch (const std::bad_alloc&) {
      return Status::Error(StatusCode::InnerError, "out of memory while reducing");
    } catch (const std::exception& e) {
      return Status::Error(StatusCode::InnerError, std::string("reduction failed: ") + e.what());
    } catch (...) {
      return Status::Error(StatusCode::InnerError, "reduction failed: unknown exception");
    }
  };
  // The outcome agreement that follows drains the inputs (comm::exchange): no drain here.
  if (!plan_.call.fused()) return comm::exchange(c, spec, consume, deadline, nullptr, /*drain=*/false);

  // Fused: the rows for each destination are quantized straight into the transport's part
  // (window slot, send buffer, or on threads a slot buffer the peers read), one chunk at a
  // time; this rank's own rows too, for its own reduction.
  const RowQuantizer& quantize = plan_.quantizer;
  const uint8_t* in = plan_.call.x;
  const std::size_t rpr = plan_.call.rows_per_rank(), in_row = quantize.in_row_bytes();
  const comm::RowProducer produce = [in, &quantize, rpr, in_row](int dest, std::size_t row0, std::size_t rows,
                                                                 const comm::PartRegion& part) -> Status {
    try {
      const std::size_t first = static_cast<std::size_t>(dest) * rpr + row0;
      return quantize(in + first * in_row, rows, part.seg[0], part.seg[1]);
    } catch (const std::bad_alloc&) {
      return Status::Error(StatusCode::InnerError, "out of memory while quantizing");
    } catch (const std::exception& e) {
      return Status::Error(StatusCode::InnerError, std::string("quantizing failed: ") + e.what());
    } catch (...) {
      return Status::Error(StatusCode::InnerError, "quantizing failed: unknown exception");
    }
  };
  return comm::exchange(c, spec, consume, deadline, &produce, /*drain=*/false);
}

Status Executor::agree_outcome(const Status& mine, comm::Clock::time_point deadline, const char* consequence) {
  comm::Communicator& c = *plan_.call.comm;
  CallDescriptor outcome = plan_.descriptor;
  outcome.local_status = static_cast<int32_t>(mine.ok() ? StatusCode::Success : mine.code);
  std::vector<CallDescriptor> all;
  Status st = allgather_descriptors(c, outcome, all, deadline);
  if (!mine.ok()) return mine;
  if (!st.ok()) return st;
  for (std::size_t k = 0; k < all.size(); ++k)
    if (all[k].local_status != 0)
      return Status::Error(StatusCode::RuntimeError,
                           "group '" + c.name() + "': rank " + std::to_string(k) + " failed while moving data (" +
                               std::string(status_name(static_cast<StatusCode>(all[k].local_status))) + "); " +
                               consequence);
  return Status::Ok();
}

Status Executor::check_workspace(const void* workspace, uint64_t workspace_size) const {
  const uint64_t need = plan_.workspace_bytes;
  if (workspace_size < need)
    return Status::Error(StatusCode::ParamInvalid, "workspaceSize: must be at least " + std::to_string(need) +
                                                       " bytes (as reported by phase one), got " +
                                                       std::to_string(workspace_size));
  if (need > 0 && workspace == nullptr)
    return Status::Error(StatusCode::ParamNullptr,
                         "workspace: must not be null (phase one asked for " + std::to_string(need) + " bytes)");
  return Status::Ok();
}

// The call agreement: every rank's descriptor, with its local status (`local`, phase two's
// own checks); any failure or difference fails every rank before a byte moves.
Status Executor::agree_call(const Status& local, comm::Clock::time_point deadline) {
  comm::Communicator& c = *plan_.call.comm;
  const OpKind op = plan_.call.op;
  if (!c.usable()) {
    if (!local.ok()) return local;
    return Status::Error(
        StatusCode::RuntimeError,
        prefixed(op, "group '" + c.name() + "' is unusable after an earlier failure (" + c.broken_reason() +
                         "); every call on it fails: destroy it and create it again"));
  }
  CallDescriptor mine = plan_.descriptor;
  mine.local_status = static_cast<int32_t>(local.code);
  std::vector<CallDescriptor> all;
  Status st = allgather_descriptors(c, mine, all, deadline);
  if (!local.ok()) return local;
  if (!st.ok()) return failed(st);
  if (Status agree = check_agreement(all, c.name()); !agree.ok()) return failed(agree);
  return Status::Ok();
}

// Output::SharedBlock (QuantAllReduce where the transport has shared blocks, shm): reduce
// straight into this rank's shared block, agree on the outcome, then every rank gathers every
// block from the peers' windows into its output. No staging copy and no all-gather step: the
// all-or-nothing rule costs nothing (the blocks are read only after every rank succeeded).
// Where the transport gave less than a block, the call is staged.
Status Executor::run_shared_block(uint8_t* workspace, comm::Clock::time_point deadline) {
  comm::Communicator& c = *plan_.call.comm;
  const std::size_t block = plan_.block_bytes;
  Status st = comm::reserve_for_exchange(c, plan_.spec, block, deadline);
  if (!st.ok()) return c.usable() ? failed(st) : broken(st);
  const comm::Window* w = c.window();  // reserved once: the exchange takes what this got
  if (w == nullptr || w->shared_capacity() < block) return run_staged(workspace, deadline, /*reserved=*/true);
  st = reduce_scatter(w->shared_block(c.rank()), deadline, /*reserved=*/true);
  if (!c.usable()) return broken(st);
  st = agree_outcome(st, deadline, "output left untouched");
  if (!st.ok()) return failed(st);
  for (int k = 0; k < c.size(); ++k)
    std::memcpy(plan_.call.out + static_cast<std::size_t>(k) * block, w->shared_block(k), block);
  return Status::Ok();
}

// Output::InPlace: agree on the outcome before the all-gather, so that a rank whose
// reduction failed fails every rank and no rank gathers its block.
Status Executor::run_in_place(comm::Clock::time_point deadline) {
  comm::Communicator& c = *plan_.call.comm;
  Status st = reduce_scatter(plan_.call.out + plan_.reduce_offset, deadline);
  if (!c.usable()) return broken(st);
  st = agree_outcome(st, deadline, "the output, written in place on this transport, is not valid");
  if (!st.ok()) return failed(st);
  if (plan_.all_gather_step) {
    if (st = comm::allgather_blocks(c, plan_.call.out, plan_.block_bytes, deadline); !st.ok()) return failed(st);
  }
  return Status::Ok();
}

// Output::Staged: compute into the workspace, agree on the outcome, then publish to the output.
// (A rank whose reduction failed still takes part in the all-gather: its peers are in it.)
Status Executor::run_staged(uint8_t* workspace, comm::Clock::time_point deadline, bool reserved) {
  comm::Communicator& c = *plan_.call.comm;
  Status st = reduce_scatter(workspace + plan_.reduce_offset, deadline, reserved);
  if (!c.usable()) return broken(st);
  if (plan_.all_gather_step) {
    Status gathered = comm::allgather_blocks(c, workspace, plan_.block_bytes, deadline);
    if (st.ok()) st = gathered;
  }
  if (!c.usable()) return broken(st);
  st = agree_outcome(st, deadline, "output left untouched");
  if (!st.ok()) return failed(st);
  std::memcpy(plan_.call.out, workspace, plan_.call.out_bytes());
  return Status::Ok();
}

Status Executor::run(void* workspace, uint64_t workspace_size) {
  const auto deadline = comm::Clock::now() + call_timeout();
  if (Status st = agree_call(check_workspace(workspace, workspace_size), deadline); !st.ok()) return st;
  uint8_t* ws = static_cast<uint8_t*>(workspace);
  switch (plan_.output) {
    case Output::SharedBlock:
      return run_shared_block(ws, deadline);
    case Output::Staged:
      return run_staged(ws, deadline);
    case Output::InPlace:
      break;
  }
  return run_in_place(deadline);
}

}  // namespace qcoll::ops
