// libFuzzer target: the Ascend layer's tensor descriptors (src/ascend/, docs/ascend.md):
// aclCreateTensor with any shape, strides, offset, dtype, format and storage shape over
// aclrtMalloc memory of any size (exact, too small, larger, the pointer anywhere inside),
// host memory or NULL, then aclnnQuantReduceScatterGetWorkspaceSize /
// aclnnQuantAllReduceGetWorkspaceSize in the vendor's check order, and phase two when
// phase one accepts.
//
// The groups are loopback communicators registered for the fuzzing thread
// (fuzz/loopback.hpp), resolved by the Ascend layer through qcoll's group lookup, so that
// no call blocks.
//
// Checked on every input, beside ASan/UBSan/LSan: aclCreateTensor returns NULL only with a
// message; every status is an aclnn status (161001, 161002, 361001, 561000) with a message,
// or success; no executor on failure; an accepted call's tensors that live in aclrtMalloc
// memory lie inside their allocation (the extent computed here in 128-bit arithmetic from
// shape, strides, offset and dtype); phase two of an accepted call succeeds and writes
// nothing of the output's allocation outside the output tensor.
#include <fuzzer/FuzzedDataProvider.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "acl/acl.h"
#include "aclnnop/aclnn_quant_all_reduce.h"
#include "aclnnop/aclnn_quant_reduce_scatter.h"
#include "comm/registry.hpp"
#include "loopback.hpp"
#include "qcoll/qcoll.h"

namespace {

using qcoll::fuzz::LoopbackCommunicator;

[[noreturn]] void fail(const std::string& what, int st = 0) {
  std::fprintf(stderr, "fuzz_ascend_tensors: %s (status %d, message \"%s\")\n", what.c_str(), st, aclGetRecentErrMsg());
  std::abort();
}

const char* const kGroups[] = {"alb2", "alb4", "alb8", "alb8w", "alb3"};
const int kGroupSizes[] = {2, 4, 8, 8, 3};

void setup() {
  static const bool done = [] {
    if (aclInit(nullptr) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS) std::abort();
    const std::size_t windows[] = {0, 0, 0, 64 << 10, 0};
    for (int i = 0; i < 5; ++i) {
      auto c = std::make_shared<LoopbackCommunicator>(kGroups[i], kGroupSizes[i], windows[i], i == 1);
      if (!qcoll::comm::register_for_thread(c).ok()) std::abort();
    }
    return true;
  }();
  (void)done;
}

const int32_t kDtypes[] = {ACL_FLOAT,       ACL_FLOAT16,     ACL_INT8,        ACL_UINT8,
                           ACL_BF16,        ACL_HIFLOAT8,    ACL_FLOAT8_E5M2, ACL_FLOAT8_E4M3FN,
                           ACL_FLOAT8_E8M0, ACL_FLOAT4_E2M1, ACL_FLOAT4_E1M2};
constexpr int kLastDtype = static_cast<int>(sizeof kDtypes / sizeof kDtypes[0]) - 1;

// Bits per element: the 4-bit formats are packed, two elements a byte (contract.md §ext-fp4-layout).
std::size_t elem_bits(int32_t dt) {
  switch (dt) {
    case ACL_FLOAT:
      return 32;
    case ACL_FLOAT16:
    case ACL_BF16:
      return 16;
    case ACL_FLOAT4_E2M1:
    case ACL_FLOAT4_E1M2:
      return 4;
    default:
      return 8;
  }
}

constexpr std::size_t kMaxAlloc = 1 << 17;  // bounds phase two's work
constexpr std::size_t kMaxHost = 1 << 17;

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

struct Tensor {
  std::vector<int64_t> dims, strides, storage;
  bool pass_strides = false, pass_storage = false;
  int64_t offset = 0;
  int32_t dtype = 0, format = ACL_FORMAT_ND;
  // Where the data is: an aclrtMalloc allocation (device), host memory, or NULL.
  enum class Mem { Device, Host, Null } mem = Mem::Device;
  void* alloc = nullptr;  // aclrtMalloc'd
  std::size_t alloc_bytes = 0;
  std::size_t at = 0;         // data = alloc + at
  std::vector<uint8_t> host;  // Host: holds the extent when small (else not backed)
  bool host_backed = false;
  unsigned __int128 extent = 0;  // bytes from data that the tensor spans (0: empty)
  bool extent_bounded = true;    // strides all >= 0 (else the extent goes below data)
  aclTensor* t = nullptr;

  Tensor() = default;
  Tensor(const Tensor&) = delete;
  Tensor& operator=(const Tensor&) = delete;
  ~Tensor() {
    aclDestroyTensor(t);
    if (alloc) aclrtFree(alloc);
  }
  void* data() {
    if (mem == Mem::Null) return nullptr;
    if (mem == Mem::Host) return host.data();
    return static_cast<uint8_t*>(alloc) + at;
  }
};

// The bytes the tensor spans from its data pointer: (offset + the largest element index + 1)
// x element size, with the given strides or the contiguous ones; 0 when an extent is 0.
void compute_extent(Tensor& t) {
  using u128 = unsigned __int128;
  u128 last = 0;
  u128 stride = 1;
  for (std::size_t i = t.dims.size(); i-- > 0;) {
    const int64_t d = t.dims[i];
    if (d <= 0) {
      t.extent = 0;
      return;
    }
    const int64_t s = t.pass_strides ? t.strides[i] : 0;
    // (A dimension of size 1 is never stepped along: its stride does not matter.)
    if (t.pass_strides && s < 0 && d > 1) t.extent_bounded = false;
    const u128 si = t.pass_strides ? static_cast<u128>(s < 0 ? -(s + 1) + u128(1) : u128(s)) : stride;
    last += static_cast<u128>(d - 1) * si;
    if (!t.pass_strides) stride *= static_cast<u128>(d);
  }
  t.extent = ((static_cast<u128>(t.offset < 0 ? 0 : t.offset) + last + 1) * elem_bits(t.dtype) + 7) / 8;
}

void make(FuzzedDataProvider& p, Tensor& t, const std::vector<int64_t>& base, int32_t base_dtype) {
  const int how = p.ConsumeIntegralInRange<int>(0, 15);
  t.dims = base;
  if (how >= 13) {
    t.dims.clear();
    const std::size_t nd = p.ConsumeIntegralInRange<std::size_t>(0, 9);
    for (std::size_t i = 0; i < nd; ++i) t.dims.push_back(pick_dim(p, base.back(), base[0]));
  } else if (how >= 10 && !t.dims.empty()) {
    const std::size_t i = p.ConsumeIntegralInRange<std::size_t>(0, t.dims.size() - 1);
    t.dims[i] = pick_dim(p, base.back(), base[0]);
  }
  t.dtype = p.ConsumeIntegralInRange<int>(0, 15) == 0
                ? p.ConsumeIntegral<int32_t>()
                : (p.ConsumeBool() ? base_dtype : kDtypes[p.ConsumeIntegralInRange<int>(0, kLastDtype)]);
  const int layout = p.ConsumeIntegralInRange<int>(0, 7);
  if (layout >= 5) {
    t.pass_strides = true;
    t.strides.assign(t.dims.size(), 0);
    int64_t s = 1;
    for (std::size_t i = t.dims.size(); i-- > 0;) {
      t.strides[i] = s;
      int64_t next;
      if (t.dims[i] > 0 && !__builtin_mul_overflow(s, t.dims[i], &next)) s = next;
    }
    if (layout >= 6 && !t.strides.empty()) {
      const std::size_t i = p.ConsumeIntegralInRange<std::size_t>(0, t.strides.size() - 1);
      switch (p.ConsumeIntegralInRange<int>(0, 3)) {
        case 0:
          t.strides[i] = p.ConsumeIntegral<int64_t>();
          break;
        case 1:
          t.strides[i] = 0;
          break;
        case 2:
          t.strides[i] = static_cast<int64_t>(0 - static_cast<uint64_t>(t.strides[i]));
          break;  // negated, wrapping
        default:
          t.strides[i] = static_cast<int64_t>(static_cast<uint64_t>(t.strides[i]) + 1);
          break;
      }
    }
  }
  switch (p.ConsumeIntegralInRange<int>(0, 7)) {
    case 0:
      t.offset = p.ConsumeIntegralInRange<int64_t>(-2, 4096);
      break;
    case 1:
      t.offset = p.ConsumeIntegral<int64_t>();
      break;
    default:
      t.offset = 0;
      break;
  }
  if (p.ConsumeIntegralInRange<int>(0, 7) == 0) t.format = p.ConsumeIntegralInRange<int32_t>(-1, 40);
  const int storage = p.ConsumeIntegralInRange<int>(0, 5);
  if (storage >= 3) {
    t.pass_storage = true;
    t.storage = t.dims;
    if (storage == 4 && !t.storage.empty()) t.storage[0] = p.ConsumeIntegralInRange<int64_t>(0, 1 << 20);
    if (storage == 5) t.storage = {p.ConsumeIntegral<int64_t>()};
  }
  compute_extent(t);

  // The memory: an allocation sized from the extent (exact, short, longer) with the data
  // pointer at its start or inside; host memory; or NULL.
  const int mem = p.ConsumeIntegralInRange<int>(0, 15);
  if (mem == 0) {
    t.mem = Tensor::Mem::Null;
  } else if (mem == 1) {
    t.mem = Tensor::Mem::Host;
    if (t.extent_bounded && t.extent <= kMaxHost) {
      t.host.assign(static_cast<std::size_t>(t.extent) + 1, 0x3C);
      t.host_backed = true;
    } else {
      t.host.assign(1, 0x3C);
    }
  } else {
    const std::size_t want = t.extent <= kMaxAlloc ? static_cast<std::size_t>(t.extent) : kMaxAlloc;
    std::size_t bytes = want;
    switch (p.ConsumeIntegralInRange<int>(0, 5)) {
      case 0:
        bytes = want > 0 ? want - std::min<std::size_t>(want, p.ConsumeIntegralInRange<std::size_t>(1, 600)) : 0;
        break;
      case 1:
        bytes = want + p.ConsumeIntegralInRange<std::size_t>(1, 4096);
        break;
      case 2:
        bytes = p.ConsumeIntegralInRange<std::size_t>(1, kMaxAlloc);
        break;
      default:
        break;
    }
    bytes = std::max<std::size_t>(bytes, 1);
    const std::size_t at =
        p.ConsumeIntegralInRange<int>(0, 3) == 0 ? p.ConsumeIntegralInRange<std::size_t>(0, bytes - 1) : 0;
    if (aclrtMalloc(&t.alloc, bytes, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) fail("aclrtMalloc");
    t.alloc_bytes = bytes;
    t.at = at;
    auto* b = static_cast<uint8_t*>(t.alloc);
    for (std::size_t i = 0; i < bytes; ++i) b[i] = static_cast<uint8_t>(i * 131 + 7);
  }
  t.t = aclCreateTensor(t.dims.data(), t.dims.size(), static_cast<aclDataType>(t.dtype),
                        t.pass_strides ? t.strides.data() : nullptr, t.offset, static_cast<aclFormat>(t.format),
                        t.pass_storage ? t.storage.data() : nullptr, t.pass_storage ? t.storage.size() : 0, t.data());
  if (t.t == nullptr && aclGetRecentErrMsg()[0] == '\0') fail("aclCreateTensor returned NULL without a message");
}

bool aclnn_code(int st) { return st == 161001 || st == 161002 || st == 361001 || st == 561000; }

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  setup();
  FuzzedDataProvider p(data, size);
  const bool all_reduce = p.ConsumeBool();
  // Either contract (docs/contract.md §ext): ACL_FLOAT4_E2M1 / E1M2 pass as x under extended.
  if (qcollSetContract(p.ConsumeBool() ? QCOLL_CONTRACT_EXTENDED : QCOLL_CONTRACT_VENDOR) != QCOLL_SUCCESS)
    std::abort();
  const int g = p.ConsumeIntegralInRange<int>(0, 5);
  std::string group_text = g < 5 ? kGroups[g] : p.ConsumeRandomLengthString(140);
  const int n = g < 5 ? kGroupSizes[g] : 2;
  const int64_t H = 128 * p.ConsumeIntegralInRange<int64_t>(7, 65);
  const int64_t rows = n * p.ConsumeIntegralInRange<int64_t>(1, 3);
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
  std::vector<int64_t> os = all_reduce ? xs : std::vector<int64_t>{rows / n, H};
  Tensor x, sc, out;
  make(p, x, xs, mx ? ACL_FLOAT8_E4M3FN : ACL_INT8);
  make(p, sc, ss, mx ? ACL_FLOAT8_E8M0 : ACL_FLOAT);
  make(p, out, os, ACL_BF16);
  const char* reduce_op = p.ConsumeIntegralInRange<int>(0, 15) == 0 ? "max" : "sum";

  uint64_t ws = 0;
  aclOpExecutor* exec = nullptr;
  const aclnnStatus st =
      all_reduce ? aclnnQuantAllReduceGetWorkspaceSize(x.t, sc.t, group_text.c_str(), reduce_op, out.t, &ws, &exec)
                 : aclnnQuantReduceScatterGetWorkspaceSize(x.t, sc.t, group_text.c_str(), reduce_op, out.t, &ws, &exec);
  if (st != 0) {
    if (!aclnn_code(st)) fail("not an aclnn status", st);
    if (aclGetRecentErrMsg()[0] == '\0') fail("no message for a non-zero status", st);
    if (exec != nullptr) fail("an executor with an error", st);
    return 0;
  }
  if (exec == nullptr) fail("success without an executor");
  // Accepted: every tensor in aclrtMalloc memory lies inside its allocation.
  for (Tensor* t : {&x, &sc, &out}) {
    if (t->mem != Tensor::Mem::Device) continue;
    if (!t->extent_bounded || t->extent > t->alloc_bytes - t->at) {
      std::string d = "dims", sd = " strides";
      for (int64_t v : t->dims) d += " " + std::to_string(v);
      for (int64_t v : t->strides) sd += " " + std::to_string(v);
      fail("accepted a tensor that extends past its aclrtMalloc allocation: " + d + (t->pass_strides ? sd : "") +
               ", offset " + std::to_string(t->offset) + ", dtype " + std::to_string(t->dtype) + ", extent " +
               std::to_string(static_cast<uint64_t>(t->extent)) + " bytes from " + std::to_string(t->at) +
               " into an allocation of " + std::to_string(t->alloc_bytes),
           st);
    }
  }
  Tensor* const all[] = {&x, &sc, &out};
  const bool runnable = std::all_of(std::begin(all), std::end(all), [](const Tensor* t) {
    return t->mem == Tensor::Mem::Device || (t->mem == Tensor::Mem::Host && t->host_backed);
  });
  if (!runnable) {
    // Host memory that does not hold the tensor is the caller's error (not checked on a CPU):
    // run nothing over it.
    // (An aclOpExecutor is qcoll's executor: src/ascend/aclnn_ops.cpp.)
    qcollDestroyExecutor(reinterpret_cast<qcollOpExecutor*>(exec));
    return 0;
  }
  std::vector<uint8_t> before;
  if (out.mem == Tensor::Mem::Device)
    before.assign(static_cast<uint8_t*>(out.alloc), static_cast<uint8_t*>(out.alloc) + out.alloc_bytes);
  std::vector<uint8_t> workspace(ws + 1);
  const aclnnStatus st2 = all_reduce ? aclnnQuantAllReduce(ws ? workspace.data() : nullptr, ws, exec, nullptr)
                                     : aclnnQuantReduceScatter(ws ? workspace.data() : nullptr, ws, exec, nullptr);
  if (st2 != 0) fail("phase two of an accepted call failed on a loopback group", st2);
  if (out.mem == Tensor::Mem::Device) {
    const auto* b = static_cast<const uint8_t*>(out.alloc);
    const std::size_t lo = out.at, hi = out.at + static_cast<std::size_t>(out.extent);
    for (std::size_t i = 0; i < out.alloc_bytes; ++i)
      if ((i < lo || i >= hi) && b[i] != before[i]) fail("phase two wrote outside the output tensor");
  }
  return 0;
}
