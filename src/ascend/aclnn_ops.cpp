// aclnnQuantReduceScatter / aclnnQuantAllReduce over qcoll's operators (docs/ascend.md §aclnn).
//
// Phase one checks the arguments in the vendor's order (null tensors; the dtype combination;
// the group name; reduceOp; the shapes: x 2-D/3-D, the world size, empty tensors, H, BS % n,
// the scales' and the output's shapes; format ND), then what the vendor cannot see on a CPU:
// every tensor must lie inside its aclrtMalloc allocation. The facts come from the contract
// module (qcoll/contract.hpp). Then qcoll's own phase one runs (contiguity, storage, the
// HCCL_BUFFSIZE window) and builds the executor. A rank whose checks fail after its group
// resolved still takes part in the call's agreement, so its peers return at once.
#include <cstdint>
#include <cstring>
#include <optional>
#include <string>
#include <vector>

#include "aclnnop/aclnn_quant_all_reduce.h"
#include "aclnnop/aclnn_quant_reduce_scatter.h"
#include "ascend/state.hpp"
#include "qcoll/contract.hpp"
#include "qcoll/dtype.hpp"
#include "qcoll/settings.hpp"

namespace qcoll::ascend {
namespace {

using contract::Op;

Status invalid(std::string msg) { return Status::Error(StatusCode::ParamInvalid, std::move(msg)); }

std::string shape_text(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string dtype_value(int32_t t) {
  return is_known_dtype(t) ? contract::dtype_text(static_cast<DType>(t)) : std::to_string(t) + " (not supported)";
}

bool has_zero_dim(const aclTensor& t) {
  for (int64_t d : t.dims)
    if (d == 0) return true;
  return false;
}

// The bytes a tensor spans from its data pointer: (offset + elements) * element size, for a
// 4-bit dtype the packed bytes, (offset + elements) / 2 rounded up; SIZE_MAX when that does
// not fit (no allocation holds it).
std::size_t tensor_bytes(const aclTensor& t) {
  std::size_t n = 1;
  for (int64_t d : t.dims)
    if (__builtin_mul_overflow(n, static_cast<std::size_t>(d), &n)) return SIZE_MAX;
  std::size_t bits = 0;
  if (__builtin_add_overflow(static_cast<std::size_t>(t.offset), n, &n) ||
      __builtin_mul_overflow(n, dtype_bits(static_cast<DType>(t.dtype)), &bits))
    return SIZE_MAX;
  return bits / 8 + (bits % 8 != 0);
}

// Beyond the vendor: a tensor over aclrtMalloc memory must not extend past its allocation.
Status check_allocation(const char* param, const aclTensor& t) {
  const unsigned char* base = nullptr;
  std::size_t size = 0;
  if (!find_device_allocation(t.data, &base, &size)) return Status::Ok();  // host memory: not checked
  const std::size_t at = static_cast<std::size_t>(static_cast<const unsigned char*>(t.data) - base);
  const std::size_t need = tensor_bytes(t);
  if (need <= size - at) return Status::Ok();
  return invalid(std::string(param) + ": the tensor extends past its aclrtMalloc allocation: shape " +
                 shape_text(t.dims) + " of " + std::string(dtype_name(static_cast<DType>(t.dtype))) + " (offset " +
                 std::to_string(t.offset) + ") is " + std::to_string(need) + " bytes from " + std::to_string(at) +
                 " bytes into an allocation of " + std::to_string(size) + " bytes (" +
                 std::to_string(need - (size - at)) + " bytes short)");
}

// The dtype rules of the call's contract (docs/contract.md §ext): vendor takes kXDtypes, as
// the vendor's aclnn pages say; extended also ACL_FLOAT4_E2M1 / ACL_FLOAT4_E1M2.
Status check_dtypes(const aclTensor& x, const aclTensor& scales, const aclTensor& out, settings::Contract c) {
  const DType xd = static_cast<DType>(x.dtype), sd = static_cast<DType>(scales.dtype);
  if (!is_known_dtype(x.dtype) || !contract::x_dtype_allowed(xd, c))
    return invalid("x: dtype must be " + contract::dtype_list(contract::x_dtypes(c)) + ", got " + dtype_value(x.dtype));
  if (!is_known_dtype(scales.dtype) || !contract::is_scales_dtype(sd))
    return invalid("scales: dtype must be float (pertoken-pergroup) or float8_e8m0 (MX), got " +
                   dtype_value(scales.dtype));
  if (!contract::dtypes_fit(xd, sd, c))
    return invalid("scales: float8_e8m0 (MX) scales need x dtype " + contract::dtype_list(contract::mx_x_dtypes(c)) +
                   ", got x dtype " + dtype_value(x.dtype));
  if (!is_known_dtype(out.dtype) || !contract::is_out_dtype(static_cast<DType>(out.dtype)))
    return invalid("output: dtype must be " + contract::dtype_list(contract::kOutDtypes) + ", got " +
                   dtype_value(out.dtype));
  return Status::Ok();
}

// The vendor's checks up to the group name (nothing is resolved yet); first qcoll's
// QCOLL_CONTRACT (a bad value is PARAM_INVALID naming it).
Status check_before_group(const aclTensor* x, const aclTensor* scales, const char* group, aclTensor* out,
                          uint64_t* workspaceSize, aclOpExecutor** executor) {
  auto null = [](const char* p) {
    return Status::Error(StatusCode::ParamNullptr, std::string(p) + ": must not be null");
  };
  if (x == nullptr) return null("x");
  if (scales == nullptr) return null("scales");
  if (out == nullptr) return null("output");
  if (workspaceSize == nullptr) return null("workspaceSize");
  if (executor == nullptr) return null("executor");
  settings::Contract c = settings::Contract::Vendor;
  if (Status st = settings::contract(c); !st.ok()) return st;
  if (Status st = check_dtypes(*x, *scales, *out, c); !st.ok()) return st;
  if (group == nullptr) return invalid("group: must not be null");
  const std::size_t len = strnlen(group, contract::kMaxGroupNameLen + 1);
  if (len == 0 || len > contract::kMaxGroupNameLen)
    return invalid("group: length must be in [1, " + std::to_string(contract::kMaxGroupNameLen) + "] characters, got " +
                   (len == 0 ? std::string("0") : std::string("128 or more")));
  return Status::Ok();
}

// The vendor's checks from reduceOp on; n is the resolved group's size.
Status check_after_group(Op op, const aclTensor& x, const aclTensor& scales, const char* reduceOp, const aclTensor& out,
                         int n) {
  if (reduceOp == nullptr) return invalid("reduceOp: must be \"sum\", got null");
  if (std::strcmp(reduceOp, "sum") != 0) {
    std::string msg = "reduceOp: must be \"sum\", got \"";
    msg += reduceOp;
    msg += '"';
    return invalid(msg);
  }
  if (x.dims.size() != 2 && x.dims.size() != 3)
    return invalid("x: must be 2-D (BS, H) or 3-D (B, S, H), got shape " + shape_text(x.dims));
  if (!contract::is_rank_count(n)) return invalid("group: world size must be 2, 4 or 8, got " + std::to_string(n));
  for (auto [param, t] : {std::pair{"x", &x}, std::pair{"scales", &scales}, std::pair{"output", &out}})
    if (has_zero_dim(*t))
      return invalid(std::string(param) + ": empty tensors are not supported, got shape " + shape_text(t->dims));
  const int64_t H = x.dims.back();
  if (!contract::op_h_ok(H))
    return invalid("x: H must be a multiple of " + std::to_string(contract::kOpHMultiple) + " in [" +
                   std::to_string(contract::kOpHMin) + ", " + std::to_string(contract::kOpHMax) + "], got " +
                   std::to_string(H));
  int64_t bs = 1;
  for (std::size_t i = 0; i + 1 < x.dims.size(); ++i)
    if (__builtin_mul_overflow(bs, x.dims[i], &bs))  // (a plain product was undefined past 2^63)
      return invalid("x: BS (the product of the dimensions before H) must fit in int64, got shape " +
                     shape_text(x.dims));
  if (bs % n != 0)
    return invalid("x: BS must be a multiple of the world size " + std::to_string(n) +
                   ", got BS = " + std::to_string(bs) + " (shape " + shape_text(x.dims) + ")");
  const auto want_scales = contract::scales_shape(static_cast<DType>(scales.dtype), x.dims);
  if (scales.dims != want_scales)
    return invalid("scales: shape must be " + shape_text(want_scales) + " for x " + shape_text(x.dims) + " (" +
                   contract::mode_name(static_cast<DType>(scales.dtype)) + "), got " + shape_text(scales.dims));
  const auto want_out = contract::output_shape(op, x.dims, n);
  if (!want_out || out.dims != *want_out)
    return invalid("output: shape must be " + (want_out ? shape_text(*want_out) : std::string("?")) + " for x " +
                   shape_text(x.dims) + " over " + std::to_string(n) + " ranks, got " + shape_text(out.dims));
  for (auto [param, t] : {std::pair{"x", &x}, std::pair{"scales", &scales}, std::pair{"output", &out}})
    if (t->format != ACL_FORMAT_ND)
      return invalid(std::string(param) + ": format must be ND (" + std::to_string(ACL_FORMAT_ND) + "), got " +
                     std::to_string(t->format));
  for (auto [param, t] : {std::pair{"x", &x}, std::pair{"scales", &scales}, std::pair{"output", &out}})
    if (Status st = check_allocation(param, *t); !st.ok()) return st;
  return Status::Ok();
}

using Prepare = qcollStatus (*)(const qcollTensor*, const qcollTensor*, const char*, const char*, qcollTensor*,
                                uint64_t*, qcollOpExecutor**);

aclnnStatus prepare(Op op, const aclTensor* x, const aclTensor* scales, const char* group, const char* reduceOp,
                    aclTensor* out, uint64_t* workspaceSize, aclOpExecutor** executor) {
  if (Status st = check_before_group(x, scales, group, out, workspaceSize, executor); !st.ok())
    return fail(static_cast<int>(st.code), st.message);
  int n = 0;
  if (Status st = resolve_group(group, &n); !st.ok()) return fail(static_cast<int>(st.code), st.message);
  const Status mine = check_after_group(op, *x, *scales, reduceOp, *out, n);
  const Prepare qcoll_prepare =
      op == Op::ReduceScatter ? qcollQuantReduceScatterGetWorkspaceSize : qcollQuantAllReduceGetWorkspaceSize;
  qcollOpExecutor* exec = nullptr;
  uint64_t ws = 0;
  // qcoll's phase one: its own rules, and (on failure) the call's agreement with the peers.
  const qcollStatus st = qcoll_prepare(x->q, scales->q, group, mine.ok() ? reduceOp : "sum", out->q, &ws, &exec);
  if (!mine.ok()) {
    if (st == QCOLL_SUCCESS) qcollDestroyExecutor(exec);  // tells the peers this rank failed
    return fail(static_cast<int>(mine.code), mine.message);
  }
  if (st != QCOLL_SUCCESS) return from_qcoll(st);
  *workspaceSize = ws;
  *executor = reinterpret_cast<aclOpExecutor*>(exec);
  return succeed();
}

}  // namespace
}  // namespace qcoll::ascend

using namespace qcoll::ascend;
using qcoll::contract::Op;

extern "C" {

aclnnStatus aclnnQuantReduceScatterGetWorkspaceSize(const aclTensor* x, const aclTensor* scales, const char* group,
                                                    const char* reduceOp, aclTensor* output, uint64_t* workspaceSize,
                                                    aclOpExecutor** executor) {
  return prepare(Op::ReduceScatter, x, scales, group, reduceOp, output, workspaceSize, executor);
}

aclnnStatus aclnnQuantReduceScatter(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor,
                                    aclrtStream stream) {
  return from_qcoll(
      qcollQuantReduceScatter(workspace, workspaceSize, reinterpret_cast<qcollOpExecutor*>(executor), stream));
}

aclnnStatus aclnnQuantAllReduceGetWorkspaceSize(const aclTensor* x, const aclTensor* scales, const char* group,
                                                const char* reduceOp, aclTensor* output, uint64_t* workspaceSize,
                                                aclOpExecutor** executor) {
  return prepare(Op::AllReduce, x, scales, group, reduceOp, output, workspaceSize, executor);
}

aclnnStatus aclnnQuantAllReduce(void* workspace, uint64_t workspaceSize, aclOpExecutor* executor, aclrtStream stream) {
  return from_qcoll(
      qcollQuantAllReduce(workspace, workspaceSize, reinterpret_cast<qcollOpExecutor*>(executor), stream));
}

}  // extern "C"
