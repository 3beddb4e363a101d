#include "ops/executor.hpp"

#include <algorithm>
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
#include "ops/rank_threads.hpp"
#include "ops/timeout.hpp"

namespace qcoll::ops {

namespace testing {
namespace {
std::atomic<ReduceFaultForTest> g_reduce_fault{nullptr};
std::atomic<std::size_t> g_fused_chunk_rows{0};
}  // namespace
void set_reduce_fault_for_test(ReduceFaultForTest hook) { g_reduce_fault.store(hook, std::memory_order_release); }
void set_fused_chunk_rows_for_test(std::size_t rows) { g_fused_chunk_rows.store(rows, std::memory_order_release); }
}  // namespace testing

namespace {

// The descriptor a rank that failed phase one contributes: what it knows of its call.
CallDescriptor partial_descriptor(const OpRequest& req) {
  CallDescriptor d;
  d.op = static_cast<int32_t>(req.op);
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

// Rows per chunk of a fused call: about kFusedChunkBytes of quantized data per step over all
// destinations, so that the parts a rank quantizes are still in cache when its peers read
// them, and a peer can start reducing a chunk while the next one is quantized (the test hook
// overrides it). The window may cut chunks smaller still (comm::max_chunk_rows).
constexpr std::size_t kFusedChunkBytes = std::size_t{4} << 20;

std::size_t fused_chunk_rows(const comm::ExchangeSpec& spec, int n) {
  const std::size_t forced = testing::g_fused_chunk_rows.load(std::memory_order_acquire);
  if (forced > 0) return forced;
  const std::size_t row_bytes = static_cast<std::size_t>(n) * (spec.x_row_bytes + spec.s_row_bytes);
  return std::max<std::size_t>(1, kFusedChunkBytes / row_bytes);
}

// QuantAllReduce's choice between its two data movements (QCOLL_ALL_REDUCE, auto): the
// bytes that leave a host, with h hosts of L = n / h ranks (averaged when uneven: the choice
// must be the same on every rank) and a tensor of Q quantized bytes per rank, N elements
// of osz bytes out:
//   reduce-scatter, then all-gather of the output: L (n - L) / n Q + L G N osz / n
//   all-gather of the quantized inputs:             L G Q
// where G, the times a block crosses from a host, is h - 1 when an all-gather step crosses
// to each other host once (Communicator::same_once_per_host), else n - L. The gather costs
// every rank n times the reduction work (all rows, from every source), so it is taken only
// when it saves at least a tenth of the bytes; on one host (no network) never.
bool gather_all_reduce(const ValidatedCall& vc) {
  if (!contract::is_all_reduce(vc.op)) return false;
  if (vc.all_reduce != settings::AllReduce::Auto) return vc.all_reduce == settings::AllReduce::Gather;
  const comm::Communicator& c = *vc.comm;
  const int h = c.hosts();
  if (h <= 1) return false;
  const double n = c.size(), L = n / h;
  const double G = c.same_once_per_host() ? h - 1.0 : n - L;
  const double Q = static_cast<double>(vc.rows * (vc.H + vc.scales_row_bytes()));  // bytes per rank (x + scales)
  const double out = static_cast<double>(vc.rows * vc.H) * static_cast<double>(vc.out_elem_bytes());
  const double rs_ag = L * (n - L) / n * Q + L * G * out / n;
  const double gather = L * G * Q;
  return gather <= 0.9 * rs_ag;
}

std::string prefixed(OpKind op, const std::string& msg) {
  return std::string(op_name(op)) + ": " + msg;
}

}  // namespace

Executor::Executor(ValidatedCall c) : call_(std::move(c)) {
  workspace_bytes_ = call_.comm->may_fail_mid_call() ? call_.out_bytes() : 0;
  gather_ = gather_all_reduce(call_);
}

Status Executor::prepare(const OpRequest& req, uint64_t* workspace_size,
                         std::unique_ptr<Executor>* out) {
  ValidatedCall call;
  Status st = validate(req, &call);
  if (!st.ok()) {
    // Take part in this call's agreement if the group resolves, so peers fail fast.
    if (req.group != nullptr && comm::check_group_name(req.group, "group").ok()) {
      if (auto c = comm::resolve(req.group))
        report_local_failure(*c, partial_descriptor(req), static_cast<int32_t>(st.code));
    }
    return st;
  }
  std::unique_ptr<Executor> e(new Executor(std::move(call)));
  *workspace_size = e->workspace_bytes_;
  *out = std::move(e);
  return Status::Ok();
}

void Executor::report_failure(StatusCode code) {
  report_local_failure(*call_.comm, call_.descriptor(), static_cast<int32_t>(code));
}

void Executor::report_not_run() { report_local_failure(*call_.comm, call_.descriptor(), kLocalStatusNotRun); }

comm::ExchangeSpec Executor::exchange_spec() const {
  comm::ExchangeSpec spec = call_.exchange_spec();
  if (gather_) {  // every rank's whole tensor to every rank
    spec.rows_per_rank = call_.rows;
    spec.same_rows = true;
  }
  if (call_.fused()) spec.max_rows = fused_chunk_rows(spec, call_.comm->size());
  return spec;
}

Status Executor::reduce_scatter(uint8_t* mine, const comm::ExchangeSpec& spec, comm::Clock::time_point deadline) {
  comm::Communicator& c = *call_.comm;
  const std::size_t H = call_.H;
  const std::size_t osz = call_.out_elem_bytes();
  const int n = c.size();
  const ValidatedCall& vc = call_;
  const int threads = rank_threads(c.local_size());
  const testing::ReduceFaultForTest fault = testing::g_reduce_fault.load(std::memory_order_acquire);
  auto consume = [&vc, &c, fault, mine, H, osz, n, threads](const comm::Chunk& chunk) -> Status {
    // The one place where an exception of the reduction is caught: it becomes this rank's
    // status, and the exchange completes its protocol with the peers.
    try {
      if (fault != nullptr) {
        if (Status f = fault(c.name(), c.rank(), chunk.row_begin); !f.ok()) return f;
      }
      kernels::ReduceArgs a;
      a.x_dtype = vc.x_dtype;
      a.scales_dtype = vc.scales_dtype;
      a.out_dtype = vc.out_dtype;
      a.nsrc = n;
      a.x = chunk.x;
      a.scales = chunk.scales;
      a.count = chunk.rows * H;
      a.out = mine + chunk.row_begin * H * osz;
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
  if (!call_.fused()) return comm::exchange(c, spec, consume, deadline, nullptr, /*drain=*/false);

  // Fused: the rows for each destination are quantized straight into the transport's part
  // (window slot, send buffer, or on threads a slot buffer the peers read), one chunk at a
  // time; this rank's own rows too, for its own reduction.
  RowQuantizer quantize;
  quantize.in_dtype = vc.in_dtype;
  quantize.x_dtype = vc.x_dtype;
  quantize.scales_dtype = vc.scales_dtype;
  quantize.hif8_target = vc.hif8_target;
  quantize.H = H;
  quantize.threads = threads;
  const std::size_t rpr = vc.rows_per_rank(), in_row = quantize.in_row_bytes();
  const comm::RowProducer produce = [&vc, &quantize, rpr, in_row](int dest, std::size_t row0, std::size_t rows,
                                                                  const comm::PartRegion& part) -> Status {
    try {
      const std::size_t first = static_cast<std::size_t>(dest) * rpr + row0;
      return quantize(vc.x + first * in_row, rows, part.seg[0], part.seg[1]);
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
  comm::Communicator& c = *call_.comm;
  CallDescriptor outcome = call_.descriptor();
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

Status Executor::run(void* workspace, uint64_t workspace_size) {
  comm::Communicator& c = *call_.comm;
  const OpKind op = call_.op;

  // Local checks of phase two's own arguments.
  Status local;
  if (workspace_size < workspace_bytes_)
    local = Status::Error(StatusCode::ParamInvalid,
                          "workspaceSize: must be at least " + std::to_string(workspace_bytes_) +
                              " bytes (as reported by phase one), got " +
                              std::to_string(workspace_size));
  else if (workspace_bytes_ > 0 && workspace == nullptr)
    local = Status::Error(StatusCode::ParamNullptr,
                          "workspace: must not be null (phase one asked for " +
                              std::to_string(workspace_bytes_) + " bytes)");

  if (!c.usable()) {
    if (!local.ok()) return local;
    return Status::Error(StatusCode::RuntimeError,
                         prefixed(op, "group '" + c.name() + "' is unusable after an earlier failure (" +
                                          c.broken_reason() +
                                          "); every call on it fails: destroy it and create it again"));
  }

  const auto deadline = comm::Clock::now() + call_timeout();
  CallDescriptor mine = call_.descriptor();
  mine.local_status = static_cast<int32_t>(local.code);
  std::vector<CallDescriptor> all;
  Status st = allgather_descriptors(c, mine, all, deadline);
  if (!local.ok()) return local;
  if (!st.ok()) return Status::Error(st.code, prefixed(op, st.message));
  if (Status agree = check_agreement(all, c.name()); !agree.ok())
    return Status::Error(agree.code, prefixed(op, agree.message));

  const bool staged = c.may_fail_mid_call();
  const bool all_reduce = contract::is_all_reduce(op) && !gather_;  // gather_: no all-gather step
  const std::size_t block_bytes = call_.rows_per_rank() * call_.H * call_.out_elem_bytes();
  const std::size_t my_offset = all_reduce ? static_cast<std::size_t>(c.rank()) * block_bytes : 0;
  comm::ExchangeSpec spec = exchange_spec();
  auto failed = [&](const Status& s) { return Status::Error(s.code, prefixed(op, s.message)); };
  auto broken = [&](const Status& s) {
    return Status::Error(s.ok() ? StatusCode::RuntimeError : s.code, prefixed(op, s.ok() ? c.broken_reason() : s.message));
  };

  // QuantAllReduce where the transport has shared blocks (shm): reduce straight into this
  // rank's shared block, agree on the outcome, then every rank gathers every block from the
  // peers' windows into its output. No staging copy and no all-gather step: the
  // all-or-nothing rule costs nothing (the blocks are read only after every rank succeeded).
  uint8_t* shared = nullptr;
  if (staged && all_reduce && block_bytes > 0) {
    st = comm::reserve_for_exchange(c, spec, block_bytes, deadline);
    if (!st.ok()) return c.usable() ? failed(st) : broken(st);
    spec.reserved = true;  // reserved once: the exchange takes what this got
    const comm::Window* w = c.window();
    if (w != nullptr && w->shared_capacity() >= block_bytes) shared = w->shared_block(c.rank());
  }
  uint8_t* dst = staged ? static_cast<uint8_t*>(workspace) : call_.out;
  st = reduce_scatter(shared != nullptr ? shared : dst + my_offset, spec, deadline);
  if (!c.usable()) return broken(st);

  if (shared != nullptr) {
    st = agree_outcome(st, deadline, "output left untouched");
    if (!st.ok()) return failed(st);
    const int n = c.size();
    for (int k = 0; k < n; ++k)
      std::memcpy(call_.out + static_cast<std::size_t>(k) * block_bytes, c.window()->shared_block(k), block_bytes);
    return Status::Ok();
  }

  if (!staged) {
    // Written in place: agree on the outcome before the all-gather, so that a rank whose
    // reduction failed fails every rank and no rank gathers its block.
    st = agree_outcome(st, deadline, "the output, written in place on this transport, is not valid");
    if (!st.ok()) return failed(st);
    if (all_reduce) {
      if (st = comm::allgather_blocks(c, dst, block_bytes, deadline); !st.ok()) return failed(st);
    }
    return Status::Ok();
  }

  // Staged: compute into the workspace, agree on the outcome, then publish to the output.
  // (A rank whose reduction failed still takes part in the all-gather: its peers are in it.)
  if (all_reduce) {
    Status gathered = comm::allgather_blocks(c, dst, block_bytes, deadline);
    if (st.ok()) st = gathered;
  }
  if (!c.usable()) return broken(st);
  st = agree_outcome(st, deadline, "output left untouched");
  if (!st.ok()) return failed(st);
  std::memcpy(call_.out, workspace, call_.out_bytes());
  return Status::Ok();
}

}  // namespace qcoll::ops
