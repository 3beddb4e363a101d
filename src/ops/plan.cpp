#include "ops/plan.hpp"

#include <algorithm>
#include <atomic>

#include "ops/executor.hpp"
#include "ops/rank_threads.hpp"

namespace qcoll::ops {

namespace testing {
namespace {
std::atomic<std::size_t> g_fused_chunk_rows{0};
}  // namespace
void set_fused_chunk_rows_for_test(std::size_t rows) { g_fused_chunk_rows.store(rows, std::memory_order_release); }
}  // namespace testing

namespace {

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
  const double Q = static_cast<double>(vc.rows * (vc.x_row_bytes() + vc.scales_row_bytes()));  // bytes per rank
  const double out = static_cast<double>(vc.rows * vc.H) * static_cast<double>(vc.out_elem_bytes());
  const double rs_ag = L * (n - L) / n * Q + L * G * out / n;
  const double gather = L * G * Q;
  return gather <= 0.9 * rs_ag;
}

// The exchange of the call, with its chunk rows (computed here, once): the transport's part
// limit and the window rule, and for the fused operators their own cap (comm::max_chunk_rows).
comm::ExchangeSpec planned_spec(const ValidatedCall& vc, bool gather) {
  comm::ExchangeSpec spec = vc.exchange_spec();
  if (gather) {  // every rank's whole tensor to every rank
    spec.rows_per_rank = vc.rows;
    spec.same_rows = true;
  }
  if (vc.fused()) spec.max_rows = fused_chunk_rows(spec, vc.comm->size());
  spec.max_rows = comm::max_chunk_rows(*vc.comm, spec);
  return spec;
}

Output output_strategy(const ValidatedCall& vc, bool all_gather_step, std::size_t block_bytes) {
  if (!vc.comm->may_fail_mid_call()) return Output::InPlace;
  return all_gather_step && block_bytes > 0 ? Output::SharedBlock : Output::Staged;
}

}  // namespace

Status make_plan(const OpRequest& req, CallPlan* plan) {
  CallPlan p;
  if (Status st = validate(req, &p.call); !st.ok()) return st;
  const ValidatedCall& vc = p.call;
  const comm::Communicator& c = *vc.comm;
  p.descriptor = vc.descriptor();
  p.workspace_bytes = c.may_fail_mid_call() ? vc.out_bytes() : 0;
  p.gather = gather_all_reduce(vc);
  p.all_gather_step = contract::is_all_reduce(vc.op) && !p.gather;
  p.block_bytes = vc.rows_per_rank() * vc.H * vc.out_elem_bytes();
  p.reduce_offset = p.all_gather_step ? static_cast<std::size_t>(c.rank()) * p.block_bytes : 0;
  p.output = output_strategy(vc, p.all_gather_step, p.block_bytes);
  p.spec = planned_spec(vc, p.gather);
  p.threads = rank_threads(c.local_size());
  p.reduce.x_dtype = vc.x_dtype;
  p.reduce.scales_dtype = vc.scales_dtype;
  p.reduce.out_dtype = vc.out_dtype;
  p.reduce.nsrc = c.size();
  if (vc.fused())
    p.quantizer = RowQuantizer{.in_dtype = vc.in_dtype,
                               .x_dtype = vc.x_dtype,
                               .scales_dtype = vc.scales_dtype,
                               .hif8_target = vc.hif8_target,
                               .H = vc.H,
                               .threads = p.threads,
                               .contract = vc.contract};
  *plan = std::move(p);
  return Status::Ok();
}

}  // namespace qcoll::ops
