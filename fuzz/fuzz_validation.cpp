// libFuzzer target: the operators' phase one (contract.md §validation) through the C API, on
// random shapes, strides, offsets, storage shapes, dtypes, null pointers, group names and
// reduceOp strings; when phase one accepts and the buffers really hold the tensors, phase
// two runs too.
//
// Phase one of a rank whose checks fail takes part in that call's agreement with its peers
// (src/ops/executor.hpp) when its group resolves, so a real thread group would block the
// fuzzer until QCOLL_TIMEOUT_S. The groups here are "loopback" communicators registered for
// the fuzzing thread (src/comm/registry.hpp): every collective returns at once as if the
// other ranks had made the same call with the same data, so nothing can block. A real
// thread group of size 1 (the C API) covers the size rule.
//
// Checked on every input: the status is a contract.md §status code; a non-zero status leaves
// a message that names the parameter ("x: ...", "group: ..."); no executor is returned on
// failure; the first rules hold in contract order (null tensor -> PARAM_NULLPTR; then reduceOp
// not "sum" -> PARAM_INVALID naming reduceOp; then an unknown or bad group -> PARAM_INVALID
// naming group); an accepted call obeys the shape rules; phase two never writes past the
// output.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "comm/registry.hpp"
#include "loopback.hpp"
#include "qcoll/qcoll.h"

namespace {

using qcoll::Status;
using namespace qcoll::comm;
using qcoll::fuzz::LoopbackCommunicator;

struct Groups {
  std::vector<std::string> names;  // resolvable from the fuzzing thread
  qcollThreadGroup* solo = nullptr;
};

const Groups& groups() {
  static const Groups g = [] {
    Groups g;
    auto add = [&](const char* name, int n, std::size_t window, bool staged) {
      auto c = std::make_shared<LoopbackCommunicator>(name, n, window, staged);
      if (!register_for_thread(c).ok()) std::abort();
      g.names.push_back(name);
    };
    add("lb2", 2, 0, false);
    add("lb4", 4, 0, true);  // staged: result through the workspace
    add("lb8", 8, 0, false);
    add("lb8w", 8, 64 << 10, false);  // a small window: data moves in chunks
    add("lb2tiny", 2, 4096, false);   // too small for one row of H >= 1024: rule 11
    add("lb3", 3, 0, false);          // size not 2/4/8
    // A real thread group of one rank, joined by this thread (size rule, C API path).
    if (qcollThreadGroupCreate("solo", 1, &g.solo) != QCOLL_SUCCESS || qcollThreadGroupJoin(g.solo, 0) != QCOLL_SUCCESS)
      std::abort();
    g.names.push_back("solo");
    return g;
  }();
  return g;
}

const qcollDataType kDtypes[] = {QCOLL_DT_FLOAT,       QCOLL_DT_FLOAT16,       QCOLL_DT_INT8,
                                 QCOLL_DT_UINT8,       QCOLL_DT_BFLOAT16,      QCOLL_DT_HIFLOAT8,
                                 QCOLL_DT_FLOAT8_E5M2, QCOLL_DT_FLOAT8_E4M3FN, QCOLL_DT_FLOAT8_E8M0,
                                 QCOLL_DT_FLOAT4_E2M1, QCOLL_DT_FLOAT4_E1M2};
constexpr int kLastDtype = static_cast<int>(sizeof kDtypes / sizeof kDtypes[0]) - 1;

std::size_t elem_bytes(int32_t dt) {
  switch (dt) {
    case QCOLL_DT_FLOAT:
      return 4;
    case QCOLL_DT_FLOAT16:
    case QCOLL_DT_BFLOAT16:
      return 2;
    default:
      return 1;
  }
}

// One fuzzed tensor argument: its description, and a buffer that holds it when small.
struct FuzzTensor {
  bool null_handle = false;
  std::vector<int64_t> dims, strides, storage;
  bool pass_strides = false, pass_storage = false;
  int64_t offset = 0;
  int32_t dtype = 0;
  int32_t format = QCOLL_FORMAT_ND;
  bool null_data = false;
  std::vector<uint8_t> buf;  // sized for offset + numel elements (+ guard) when bounded
  bool backed = false;       // buf really holds the tensor
  qcollTensor* handle = nullptr;

  FuzzTensor() = default;
  FuzzTensor(const FuzzTensor&) = delete;
  FuzzTensor& operator=(const FuzzTensor&) = delete;
  ~FuzzTensor() { qcollDestroyTensor(handle); }
};

constexpr std::size_t kGuard = 64;
constexpr std::size_t kMaxBuffer = 1 << 16;  // keeps phase two fast enough to fuzz

int64_t pick_dim(FuzzedDataProvider& p, int64_t H, int64_t rows) {
  switch (p.ConsumeIntegralInRange<int>(0, 9)) {
    case 0:
      return H;
    case 1:
      return H / 128;
    case 2:
      return H / 64;
    case 3:
      return 2;
    case 4:
      return rows;
    case 5:
      return p.ConsumeIntegralInRange<int64_t>(0, 16);
    case 6:
      return p.ConsumeIntegralInRange<int64_t>(0, 9000);
    case 7:
      return rows / 2;
    case 8:
      return p.ConsumeIntegral<int64_t>();
    default:
      return int64_t(1) << p.ConsumeIntegralInRange<int>(0, 62);
  }
}

void make_tensor(FuzzedDataProvider& p, FuzzTensor& t, std::vector<int64_t> base, int32_t base_dtype) {
  const int how = p.ConsumeIntegralInRange<int>(0, 15);
  t.null_handle = how == 0;
  t.dims = base;
  if (how >= 12) {  // a different shape
    const std::size_t nd = p.ConsumeIntegralInRange<std::size_t>(0, 9);
    t.dims.clear();
    const int64_t H = base.empty() ? 1024 : base.back();
    for (std::size_t i = 0; i < nd; ++i) t.dims.push_back(pick_dim(p, H, base.empty() ? 8 : base[0]));
  } else if (how >= 10 && !t.dims.empty()) {  // one dimension changed
    const std::size_t i = p.ConsumeIntegralInRange<std::size_t>(0, t.dims.size() - 1);
    t.dims[i] = pick_dim(p, t.dims.back(), t.dims[0]);
  }
  t.dtype = p.ConsumeIntegralInRange<int>(0, 12) == 0
                ? p.ConsumeIntegral<int32_t>()
                : (p.ConsumeBool() ? base_dtype : kDtypes[p.ConsumeIntegralInRange<int>(0, kLastDtype)]);
  const int layout = p.ConsumeIntegralInRange<int>(0, 7);
  if (layout >= 5) {
    t.pass_strides = true;
    int64_t s = 1;
    t.strides.assign(t.dims.size(), 0);
    for (std::size_t i = t.dims.size(); i-- > 0;) {
      t.strides[i] = s;
      int64_t next;
      if (t.dims[i] > 0 && !__builtin_mul_overflow(s, t.dims[i], &next)) s = next;
    }
    if (layout >= 6 && !t.strides.empty()) {
      const std::size_t i = p.ConsumeIntegralInRange<std::size_t>(0, t.strides.size() - 1);
      t.strides[i] = p.ConsumeBool() ? p.ConsumeIntegral<int64_t>()
                                     : static_cast<int64_t>(static_cast<uint64_t>(t.strides[i]) + 1);
    }
  }
  t.offset = p.ConsumeIntegralInRange<int>(0, 7) == 0 ? p.ConsumeIntegralInRange<int64_t>(-2, 4096) : 0;
  if (p.ConsumeIntegralInRange<int>(0, 7) == 0) t.format = p.ConsumeIntegralInRange<int32_t>(-1, 40);
  const int storage = p.ConsumeIntegralInRange<int>(0, 5);
  if (storage >= 3) {
    t.pass_storage = true;
    t.storage = t.dims;
    if (storage == 4 && !t.storage.empty()) t.storage[0] = p.ConsumeIntegralInRange<int64_t>(0, 1 << 20);
    if (storage == 5) t.storage = {p.ConsumeIntegral<int64_t>()};
  }
  t.null_data = p.ConsumeIntegralInRange<int>(0, 15) == 0;

  // Back the tensor with memory when its extent is small and well defined.
  bool ok = t.offset >= 0;
  std::size_t numel = 1;
  for (int64_t d : t.dims) {
    if (d < 0 || (d > 0 && numel > kMaxBuffer / static_cast<std::size_t>(d)))
      ok = false;
    else
      numel *= static_cast<std::size_t>(d);
  }
  const std::size_t eb = elem_bytes(t.dtype);
  if (ok && (numel + static_cast<std::size_t>(t.offset)) * eb <= kMaxBuffer) {
    t.buf.assign((numel + static_cast<std::size_t>(t.offset)) * eb + kGuard, 0xA5);
    t.backed = true;
  } else {
    t.buf.assign(kGuard, 0xA5);
  }
  // Fill x and scales with fuzzed-looking but finite-agnostic bytes (any bits are valid input).
  for (std::size_t i = 0; i + kGuard < t.buf.size(); ++i) t.buf[i] = static_cast<uint8_t>(i * 131 + 7);

  if (!t.null_handle) {
    t.handle = qcollCreateTensor(t.dims.data(), t.dims.size(), static_cast<qcollDataType>(t.dtype),
                                 t.pass_strides ? t.strides.data() : nullptr, t.offset,
                                 static_cast<qcollFormat>(t.format), t.pass_storage ? t.storage.data() : nullptr,
                                 t.pass_storage ? t.storage.size() : 0, t.null_data ? nullptr : t.buf.data());
    if (t.handle == nullptr && qcollGetRecentErrMsg()[0] == '\0') {
      std::fprintf(stderr, "fuzz_validation: qcollCreateTensor returned NULL without a message\n");
      std::abort();
    }
  }
}

[[noreturn]] void fail(const std::string& what, qcollStatus st) {
  std::fprintf(stderr, "fuzz_validation: %s (status %d %s, message \"%s\")\n", what.c_str(), st, qcollStatusName(st),
               qcollGetRecentErrMsg());
  std::abort();
}

bool starts_with_any(const char* msg, std::initializer_list<const char*> prefixes) {
  for (const char* p : prefixes)
    if (std::strncmp(msg, p, std::strlen(p)) == 0) return true;
  return false;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Groups& gs = groups();
  FuzzedDataProvider p(data, size);
  const bool all_reduce = p.ConsumeBool();
  // Either contract (docs/contract.md §ext): the 4-bit x dtypes above pass under extended.
  const bool extended = p.ConsumeBool();
  if (qcollSetContract(extended ? QCOLL_CONTRACT_EXTENDED : QCOLL_CONTRACT_VENDOR) != QCOLL_SUCCESS) std::abort();

  // Group: a registered name, or a bad one.
  std::string group_text;
  const char* group = nullptr;
  int group_kind = p.ConsumeIntegralInRange<int>(0, 9);
  int n = 0;  // size of the resolved group (0: does not resolve)
  if (group_kind <= 5) {
    const std::size_t i = p.ConsumeIntegralInRange<std::size_t>(0, gs.names.size() - 1);
    group_text = gs.names[i];
    static const int sizes[] = {2, 4, 8, 8, 2, 3, 1};
    n = sizes[i];
  } else if (group_kind == 6) {
    group_text = std::string(p.ConsumeIntegralInRange<std::size_t>(126, 130), 'g');
  } else if (group_kind == 7) {
    group_text = p.ConsumeRandomLengthString(140);
  } else if (group_kind == 8) {
    group_text = "";
  }
  if (group_kind != 9) group = group_text.c_str();
  if (group_kind == 7) {  // a random string may name a registered group
    n = 0;
    for (std::size_t i = 0; i < gs.names.size(); ++i)
      if (std::string(group_text.c_str()) == gs.names[i]) n = -1;  // resolves (up to an embedded NUL)
  }

  // A base shape that is often valid; the tensors deviate from it.
  const int64_t nn = n > 0 ? n : 2;
  const int64_t H = 128 * p.ConsumeIntegralInRange<int64_t>(7, 65);
  const int64_t rows = nn * p.ConsumeIntegralInRange<int64_t>(1, 4);
  const bool three_d = p.ConsumeBool();
  const bool mx = p.ConsumeBool();
  std::vector<int64_t> xs = three_d ? std::vector<int64_t>{1, rows, H} : std::vector<int64_t>{rows, H};
  std::vector<int64_t> ss(xs.begin(), xs.end() - 1);
  if (mx) {
    ss.push_back(H / 64);
    ss.push_back(2);
  } else {
    ss.push_back(H / 128);
  }
  std::vector<int64_t> os = all_reduce ? xs : std::vector<int64_t>{rows / nn, H};
  const int32_t x_dt = mx ? QCOLL_DT_FLOAT8_E4M3FN : QCOLL_DT_INT8;

  FuzzTensor x, sc, out;
  make_tensor(p, x, xs, x_dt);
  make_tensor(p, sc, ss, mx ? QCOLL_DT_FLOAT8_E8M0 : QCOLL_DT_FLOAT);
  make_tensor(p, out, os, QCOLL_DT_BFLOAT16);

  std::string reduce_text = "sum";
  const char* reduce_op = "sum";
  switch (p.ConsumeIntegralInRange<int>(0, 9)) {
    case 0:
      reduce_op = nullptr;
      break;
    case 1:
      reduce_text = p.ConsumeRandomLengthString(16);
      reduce_op = reduce_text.c_str();
      break;
    case 2:
      reduce_op = "max";
      break;
    default:
      break;
  }
  const bool null_ws_out = p.ConsumeIntegralInRange<int>(0, 15) == 0;
  const bool null_exec_out = p.ConsumeIntegralInRange<int>(0, 15) == 0;

  uint64_t ws = 12345;
  qcollOpExecutor* exec = reinterpret_cast<qcollOpExecutor*>(uintptr_t{1});
  const qcollStatus st =
      all_reduce
          ? qcollQuantAllReduceGetWorkspaceSize(x.handle, sc.handle, group, reduce_op, out.handle,
                                                null_ws_out ? nullptr : &ws, null_exec_out ? nullptr : &exec)
          : qcollQuantReduceScatterGetWorkspaceSize(x.handle, sc.handle, group, reduce_op, out.handle,
                                                    null_ws_out ? nullptr : &ws, null_exec_out ? nullptr : &exec);
  const char* msg = qcollGetRecentErrMsg();

  if (st != QCOLL_SUCCESS && st != QCOLL_PARAM_NULLPTR && st != QCOLL_PARAM_INVALID && st != QCOLL_RUNTIME_ERROR &&
      st != QCOLL_INNER_ERROR)
    fail("status is not a contract.md §status code", st);
  if (st != QCOLL_SUCCESS) {
    if (msg == nullptr || msg[0] == '\0') fail("no message for a non-zero status", st);
    if (!starts_with_any(
            msg, {"x:", "scales:", "output:", "group:", "reduceOp:", "workspaceSize:", "executor:", "HCCL_BUFFSIZE:"}))
      fail("the message does not start with the parameter's name", st);
    if (!null_exec_out && exec != nullptr) fail("an executor was returned with an error", st);
  }
  // Rule order (contract.md §validation): 1 null tensors, 2 reduceOp, 3 group.
  const bool any_null = x.handle == nullptr || sc.handle == nullptr || out.handle == nullptr;
  const bool bad_reduce = reduce_op == nullptr || std::strcmp(reduce_op, "sum") != 0;
  if (any_null && st != QCOLL_PARAM_NULLPTR) fail("a null tensor must give PARAM_NULLPTR", st);
  if (!any_null && !x.null_data && !sc.null_data && !out.null_data && !null_ws_out && !null_exec_out) {
    if (bad_reduce && (st != QCOLL_PARAM_INVALID || std::strncmp(msg, "reduceOp:", 9) != 0))
      fail("a reduceOp other than \"sum\" must be refused first", st);
    if (!bad_reduce && (n == 0 || n == 1 || (n == 3 && !extended)) &&
        (st != QCOLL_PARAM_INVALID || std::strncmp(msg, "group:", 6) != 0))
      fail("a bad or unknown group must be refused next", st);
  }
  if (st != QCOLL_SUCCESS) return 0;

  // Accepted: the shapes must obey the rules.
  const std::vector<int64_t>& xd = x.dims;
  if (xd.size() < 2 || xd.size() > 3 || xd.back() % 128 != 0 || xd.back() < 1024 || xd.back() > 8192)
    fail("accepted an x shape that breaks rule 5 or 7", st);
  if (exec == nullptr) fail("SUCCESS without an executor", st);

  // Phase two, when every buffer really holds its tensor.
  if (x.backed && sc.backed && out.backed) {
    std::vector<uint8_t> workspace(ws + 1);
    const std::vector<uint8_t> guard(out.buf.end() - kGuard, out.buf.end());
    const qcollStatus st2 = all_reduce ? qcollQuantAllReduce(ws ? workspace.data() : nullptr, ws, exec, nullptr)
                                       : qcollQuantReduceScatter(ws ? workspace.data() : nullptr, ws, exec, nullptr);
    if (st2 != QCOLL_SUCCESS) fail("phase two of an accepted call failed on a loopback group", st2);
    if (!std::equal(guard.begin(), guard.end(), out.buf.end() - kGuard)) fail("phase two wrote past the output", st2);
  } else {
    if (qcollDestroyExecutor(exec) != QCOLL_SUCCESS) fail("qcollDestroyExecutor failed", 0);
  }
  return 0;
}
