// libFuzzer target: what the MPI transport receives in a call, as the operators consume it.
// Over MPI a rank receives (1) its peers' call records (the agreement before data moves,
// the outcome after: ops/call_descriptor.hpp, MPI_Iallgather of raw bytes) and (2) the data
// steps' parts, each peer's message landing in the step's receive slot at that source's place
// (StepShape::received_in, as comm/mpi/mpi_communicator.cpp lays them out; a message may be
// shorter than the slot's part, which MPI allows, leaving old bytes behind it); and a step may
// fail (a peer died, a timeout: the communicator breaks).
//
// The communicator here has the MPI transport's properties (asynchronous transfers, 4 steps
// in flight, the own part read from the send slot, slots of HCCL_BUFFSIZE/4, the window rule's
// part bounds, staged output because a step can fail mid-call) and plays rank 0 of n; what
// "arrives" from ranks 1..n-1 comes from the input: records that are this rank's own with any
// bytes changed, and per step per source the mirror of this rank's part (a consistent call),
// any bytes (codes and scales of any bits: NaN, Inf, subnormal), or a short message. Then the
// real operator (qcollQuantReduceScatter / qcollQuantAllReduce, phase one and two) runs.
//
// Checked on every input, beside ASan/UBSan/LSan: phase two returns a contract.md §status
// code with a message; a peer record that differs from this rank's on any field, or reports a
// failure, makes the call fail with RUNTIME_ERROR (the outcome record too); a failed call
// leaves the output as it was (staged: all or nothing); a broken communicator fails the next
// call at once.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "comm/communicator.hpp"
#include "comm/registry.hpp"
#include "ops/call_descriptor.hpp"
#include "qcoll/contract.hpp"
#include "qcoll/qcoll.h"

namespace {

using qcoll::Status;
using qcoll::StatusCode;
using namespace qcoll::comm;
using qcoll::ops::CallDescriptor;

[[noreturn]] void fail(const std::string& what, int st = 0) {
  std::fprintf(stderr, "fuzz_mpi_step: %s (status %d, message \"%s\")\n", what.c_str(), st, qcollGetRecentErrMsg());
  std::abort();
}

// What the peers do, drawn from the input.
struct Script {
  // Records: for each records step (0: the agreement, 1: the outcome, ...), a byte of peer
  // `who` to set (offset < 0: none).
  struct RecordEdit {
    int step = 0, who = 1, offset = -1;
    uint8_t value = 0;
  };
  std::vector<RecordEdit> edits;
  // Data steps: per step, what the peers' messages are.
  enum class Msg { Mirror, Bytes, Short, Specials };
  std::vector<Msg> msgs;
  std::vector<uint32_t> seeds;
  std::vector<std::size_t> short_len;
  int fail_step = -1;  // wait_step of this data step fails (a peer died)
};

// Every field of the two records but local_status is the same (written out here, not the
// library's same_call).
bool same_fields(const CallDescriptor& a, const CallDescriptor& b) {
  return a.op == b.op && a.x_dtype == b.x_dtype && a.scales_dtype == b.scales_dtype && a.out_dtype == b.out_dtype &&
         a.ndim == b.ndim && a.shape[0] == b.shape[0] && a.shape[1] == b.shape[1] && a.shape[2] == b.shape[2] &&
         a.in_dtype == b.in_dtype && a.hif8_target_bits == b.hif8_target_bits && a.all_reduce == b.all_reduce &&
         a.contract == b.contract;
}

class ReceivedCommunicator final : public Communicator {
 public:
  static constexpr int kDepth = 4;
  ReceivedCommunicator(std::string name, int n, std::size_t window, const Script& script)
      : name_(std::move(name)),
        n_(n),
        window_(window),
        slot_bytes_(round_up(window / kDepth, kWindowPartAlign)),
        script_(script) {}
  int rank() const override { return 0; }
  int size() const override { return n_; }
  const std::string& name() const override { return name_; }
  const char* transport() const override { return "mpi"; }
  Traits traits() const override {
    return {.window_bytes = window_,
            .own_part_in_place = false,
            .async_transfers = true,
            .max_steps_in_flight = kDepth,
            .may_fail_mid_call = true};
  }
  std::size_t max_part_bytes(StepShape::Kind kind) const override {
    if (kind == StepShape::Kind::PerDestination)
      return std::min(qcoll::contract::window_slot_bytes(window_), slot_bytes_) / n_;
    return slot_bytes_ / n_ / kSegmentAlign * kSegmentAlign;
  }
  bool usable() const override { return !broken_; }
  std::string broken_reason() const override { return broken_ ? "a peer failed (fuzz)" : std::string(); }

  Status allgather_records(const void* mine, std::size_t bytes, void* all, Clock::time_point) override {
    if (broken_) return Status::Error(StatusCode::RuntimeError, "broken");
    auto* out = static_cast<uint8_t*>(all);
    for (int k = 0; k < n_; ++k) std::memcpy(out + k * bytes, mine, bytes);
    for (const auto& e : script_.edits)
      if (e.step == records_steps_ && e.who < n_ && e.offset >= 0 && static_cast<std::size_t>(e.offset) < bytes)
        out[e.who * bytes + e.offset] = e.value;
    // What the peers said, against this rank's own record.
    if (bytes == sizeof(CallDescriptor)) {
      CallDescriptor me;
      std::memcpy(&me, mine, sizeof me);
      for (int k = 1; k < n_; ++k) {
        CallDescriptor d;
        std::memcpy(&d, out + k * bytes, sizeof d);
        if (records_steps_ == 0 && qcoll::ops::same_call(me, d) != same_fields(me, d))
          fail("same_call disagrees with the fields");
        if (records_steps_ == 0 && !same_fields(me, d)) agreement_differs_ = true;
        if (d.local_status != 0 && records_steps_ <= 1) peer_failed_ = true;
      }
    }
    ++records_steps_;
    return Status::Ok();
  }
  bool agreement_differs() const { return agreement_differs_; }
  bool peer_reported_failure() const { return peer_failed_; }

  Status begin_step(const StepShape& shape, const char*, Clock::time_point, Step* step) override {
    if (broken_) return Status::Error(StatusCode::RuntimeError, "broken");
    if (shape.part_bytes() * n_ > slot_bytes_)
      return Status::Error(StatusCode::InnerError, "a step larger than its slot");
    Slot& sl = slots_[next_ % kDepth];
    // The slot's bytes this step uses (what a step before left there stays: a short message
    // leaves it behind).
    const std::size_t need = shape.part_bytes() * static_cast<std::size_t>(n_);
    if (sl.send.size() < need) sl.send.resize(need, 0xEE);
    if (sl.recv.size() < need) sl.recv.resize(need, 0xEE);
    sl.shape = shape;
    sl.index = data_steps_++;
    *step = next_++;
    return Status::Ok();
  }
  PartRegion region(Step s, int dest) override {
    Slot& sl = slots_[s % kDepth];
    return sl.shape.part_in<PartRegion>(sl.send.data(), dest);
  }
  // The peers' messages land in the receive slot, each at its source's place.
  Status publish(Step s) override {
    if (broken_) return Status::Error(StatusCode::RuntimeError, "broken");
    Slot& sl = slots_[s % kDepth];
    const std::size_t i = static_cast<std::size_t>(sl.index);
    const Script::Msg m = i < script_.msgs.size() ? script_.msgs[i] : Script::Msg::Mirror;
    if (m != Script::Msg::Mirror) any_odd_ = true;
    const std::size_t part = sl.shape.part_bytes();
    // What a mirror of this rank sends it: its part for rank 0 (PerDestination) or its one part.
    const uint8_t* own = sl.shape.part_in<PartView>(static_cast<const uint8_t*>(sl.send.data()), 0).seg[0];
    uint32_t x = i < script_.seeds.size() ? script_.seeds[i] : 1;
    for (int src = 1; src < n_; ++src) {
      uint8_t* dst = sl.shape.received_in<PartRegion>(sl.recv.data(), src).seg[0];
      switch (m) {
        case Script::Msg::Mirror:
          std::memcpy(dst, own, part);
          break;
        case Script::Msg::Short: {
          const std::size_t len = std::min(part, i < script_.short_len.size() ? script_.short_len[i] : 0);
          std::memcpy(dst, own, len);  // the rest: whatever the slot held
          break;
        }
        case Script::Msg::Bytes:
          for (std::size_t b = 0; b < part; ++b) {
            x = x * 1664525u + 1013904223u;
            dst[b] = static_cast<uint8_t>(x >> 24);
          }
          break;
        case Script::Msg::Specials: {
          static const uint8_t kSpecial[] = {0x00, 0x80, 0x7F, 0xFF, 0x7F, 0x80, 0x00, 0x00,  // fp32 +-Inf, NaN
                                             0x01, 0x00, 0x00, 0x00, 0xFF, 0xFF, 0x7F, 0xFF};
          for (std::size_t b = 0; b < part; ++b) dst[b] = kSpecial[(b + x) % sizeof kSpecial];
          break;
        }
      }
    }
    return Status::Ok();
  }
  Status wait_step(Step s, Clock::time_point) override {
    if (broken_) return Status::Error(StatusCode::RuntimeError, "broken");
    if (slots_[s % kDepth].index == script_.fail_step) {
      broken_ = true;
      return Status::Error(StatusCode::RuntimeError, "MPI transport: a peer failed in a call (fuzz)");
    }
    return Status::Ok();
  }
  PartView view(Step s, int src) const override {
    const Slot& sl = slots_[s % kDepth];
    if (src == 0) return sl.shape.part_in<PartView>(static_cast<const uint8_t*>(sl.send.data()), 0);
    return sl.shape.received_in<PartView>(static_cast<const uint8_t*>(sl.recv.data()), src);
  }
  Status release(Step) override { return broken_ ? Status::Error(StatusCode::RuntimeError, "broken") : Status::Ok(); }

  bool any_odd() const { return any_odd_; }
  int data_steps() const { return data_steps_; }

 private:
  struct Slot {
    StepShape shape;
    int index = 0;  // data step number within the communicator's life
    std::vector<uint8_t> send, recv;
  };
  std::string name_;
  int n_;
  std::size_t window_, slot_bytes_;
  const Script& script_;
  Slot slots_[kDepth];
  Step next_ = 0;
  int data_steps_ = 0, records_steps_ = 0;
  bool broken_ = false, any_odd_ = false, agreement_differs_ = false, peer_failed_ = false;
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider p(data, size);
  static const int kSizes[] = {2, 4, 8};
  const int n = kSizes[p.ConsumeIntegralInRange<int>(0, 2)];
  static const std::size_t kWindows[] = {std::size_t{256} << 10, std::size_t{1} << 20, std::size_t{8} << 20};
  const std::size_t window = kWindows[p.ConsumeIntegralInRange<int>(0, 2)];
  const bool all_reduce = p.ConsumeBool();
  const bool mx = p.ConsumeBool();
  // Small calls (fast to fuzz) with windows small enough that they move in several chunks.
  const int64_t H = 128 * (p.ConsumeIntegralInRange<int>(0, 7) == 0 ? p.ConsumeIntegralInRange<int64_t>(8, 64)
                                                                    : p.ConsumeIntegralInRange<int64_t>(8, 12));
  const int64_t rows = n * p.ConsumeIntegralInRange<int64_t>(1, 2);
  static const qcollDataType kX[] = {QCOLL_DT_INT8, QCOLL_DT_HIFLOAT8, QCOLL_DT_FLOAT8_E4M3FN, QCOLL_DT_FLOAT8_E5M2};
  const qcollDataType x_dt = mx ? kX[p.ConsumeIntegralInRange<int>(2, 3)] : kX[p.ConsumeIntegralInRange<int>(0, 3)];
  const qcollDataType s_dt = mx ? QCOLL_DT_FLOAT8_E8M0 : QCOLL_DT_FLOAT;
  static const qcollDataType kOut[] = {QCOLL_DT_FLOAT, QCOLL_DT_FLOAT16, QCOLL_DT_BFLOAT16};
  const qcollDataType o_dt = kOut[p.ConsumeIntegralInRange<int>(0, 2)];

  Script script;
  const int nedits = p.ConsumeIntegralInRange<int>(0, 3) == 0 ? p.ConsumeIntegralInRange<int>(1, 3) : 0;
  for (int i = 0; i < nedits; ++i) {
    Script::RecordEdit e;
    e.step = p.ConsumeIntegralInRange<int>(0, 1);
    e.who = p.ConsumeIntegralInRange<int>(1, n - 1);
    e.offset = p.ConsumeIntegralInRange<int>(0, static_cast<int>(sizeof(CallDescriptor)) - 1);
    e.value = p.ConsumeIntegral<uint8_t>();
    script.edits.push_back(e);
  }
  const int nsteps = p.ConsumeIntegralInRange<int>(0, 8);
  for (int i = 0; i < nsteps; ++i) {
    script.msgs.push_back(static_cast<Script::Msg>(p.ConsumeIntegralInRange<int>(0, 3)));
    script.seeds.push_back(p.ConsumeIntegral<uint32_t>());
    script.short_len.push_back(p.ConsumeIntegralInRange<std::size_t>(0, 4096));
  }
  script.fail_step = p.ConsumeIntegralInRange<int>(0, 7) == 0 ? p.ConsumeIntegralInRange<int>(0, 7) : -1;

  // x and scales: bytes from the input (any codes and scales), repeated to fill.
  const std::size_t G = mx ? 32 : 128;
  const std::size_t x_count = static_cast<std::size_t>(rows * H);
  const std::size_t s_count = x_count / G;
  const std::size_t s_bytes = s_count * (mx ? 1 : 4);
  const std::vector<uint8_t> pattern = p.ConsumeBytes<uint8_t>(256);
  std::vector<uint8_t> xb(x_count), sb(s_bytes);
  for (std::size_t i = 0; i < x_count; ++i) xb[i] = pattern.empty() ? uint8_t(i) : pattern[(i * 7) % pattern.size()];
  for (std::size_t i = 0; i < s_bytes; ++i)
    sb[i] = pattern.empty() ? uint8_t(0x3C) : pattern[(i * 3 + 1) % pattern.size()];
  if (!mx && p.ConsumeBool())  // mostly finite fp32 scales, so that mirrored results are comparable
    for (std::size_t i = 0; i < s_count; ++i) {
      const float v = 0.0078125f * static_cast<float>(1 + (sb[4 * i] & 15));
      std::memcpy(&sb[4 * i], &v, 4);
    }
  const std::size_t out_rows = all_reduce ? static_cast<std::size_t>(rows) : static_cast<std::size_t>(rows / n);
  const std::size_t ob = o_dt == QCOLL_DT_FLOAT ? 4 : 2;
  const std::size_t out_bytes = out_rows * static_cast<std::size_t>(H) * ob;
  std::vector<uint8_t> out(out_bytes, 0xA5);

  static unsigned counter = 0;
  const std::string name = "mpistep" + std::to_string(counter++ % 1000);
  auto comm = std::make_shared<ReceivedCommunicator>(name, n, window, script);
  if (!register_for_thread(comm).ok()) fail("register_for_thread");

  const int64_t xshape[] = {rows, H};
  const int64_t sshape_kg[] = {rows, H / 128};
  const int64_t sshape_mx[] = {rows, H / 64, 2};
  const int64_t oshape[] = {static_cast<int64_t>(out_rows), H};
  qcollTensor* xt = qcollCreateTensor(xshape, 2, x_dt, nullptr, 0, QCOLL_FORMAT_ND, nullptr, 0, xb.data());
  qcollTensor* st = mx ? qcollCreateTensor(sshape_mx, 3, s_dt, nullptr, 0, QCOLL_FORMAT_ND, nullptr, 0, sb.data())
                       : qcollCreateTensor(sshape_kg, 2, s_dt, nullptr, 0, QCOLL_FORMAT_ND, nullptr, 0, sb.data());
  qcollTensor* ot = qcollCreateTensor(oshape, 2, o_dt, nullptr, 0, QCOLL_FORMAT_ND, nullptr, 0, out.data());
  if (!xt || !st || !ot) fail("qcollCreateTensor");

  uint64_t ws = 0;
  qcollOpExecutor* exec = nullptr;
  qcollStatus s1 = all_reduce ? qcollQuantAllReduceGetWorkspaceSize(xt, st, name.c_str(), "sum", ot, &ws, &exec)
                              : qcollQuantReduceScatterGetWorkspaceSize(xt, st, name.c_str(), "sum", ot, &ws, &exec);
  if (s1 == QCOLL_SUCCESS) {
    std::vector<uint8_t> workspace(ws + 1);
    const qcollStatus s2 = all_reduce ? qcollQuantAllReduce(ws ? workspace.data() : nullptr, ws, exec, nullptr)
                                      : qcollQuantReduceScatter(ws ? workspace.data() : nullptr, ws, exec, nullptr);
    if (s2 != QCOLL_SUCCESS && s2 != QCOLL_PARAM_NULLPTR && s2 != QCOLL_PARAM_INVALID && s2 != QCOLL_RUNTIME_ERROR &&
        s2 != QCOLL_INNER_ERROR)
      fail("not a contract.md status", s2);
    if (s2 != QCOLL_SUCCESS && qcollGetRecentErrMsg()[0] == '\0') fail("no message", s2);
    // A peer's record that differed from this rank's (agreement), or reported a failure
    // (agreement or outcome), must fail the call.
    if ((comm->agreement_differs() || comm->peer_reported_failure()) && s2 != QCOLL_RUNTIME_ERROR)
      fail("a peer's record that differs or reports a failure must give RUNTIME_ERROR", s2);
    if (script.fail_step >= 0 && script.fail_step < comm->data_steps()) {
      if (s2 != QCOLL_RUNTIME_ERROR) fail("a failed step must give RUNTIME_ERROR", s2);
      if (comm->usable()) fail("the communicator must be broken");
    }
    if (s2 != QCOLL_SUCCESS) {
      for (std::size_t i = 0; i < out_bytes; ++i)
        if (out[i] != 0xA5) fail("a failed call wrote the output", s2);
    } else if (!comm->usable()) {
      fail("SUCCESS on a broken communicator");
    }
    if (!comm->usable()) {
      qcollOpExecutor* again = nullptr;
      uint64_t ws2 = 0;
      const qcollStatus s3 =
          all_reduce ? qcollQuantAllReduceGetWorkspaceSize(xt, st, name.c_str(), "sum", ot, &ws2, &again)
                     : qcollQuantReduceScatterGetWorkspaceSize(xt, st, name.c_str(), "sum", ot, &ws2, &again);
      if (s3 == QCOLL_SUCCESS) {
        std::vector<uint8_t> w2(ws2 + 1);
        const qcollStatus s4 = all_reduce ? qcollQuantAllReduce(ws2 ? w2.data() : nullptr, ws2, again, nullptr)
                                          : qcollQuantReduceScatter(ws2 ? w2.data() : nullptr, ws2, again, nullptr);
        if (s4 != QCOLL_RUNTIME_ERROR) fail("a call on a broken communicator must fail", s4);
      }
    }
  } else if (s1 != QCOLL_PARAM_INVALID) {
    fail("phase one refused a valid call", s1);  // (PARAM_INVALID: rule 11, a window too small)
  }
  qcollDestroyTensor(xt);
  qcollDestroyTensor(st);
  qcollDestroyTensor(ot);
  unregister_for_thread(name);
  return 0;
}
