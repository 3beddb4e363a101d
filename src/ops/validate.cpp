#include "ops/validate.hpp"

#include <bit>
#include <cstdint>
#include <cstring>
#include <string>

#include "comm/registry.hpp"
#include "qcoll/contract.hpp"
#include "qcoll/quant.hpp"

namespace qcoll::ops {
namespace {

Status invalid(std::string msg) { return Status::Error(StatusCode::ParamInvalid, std::move(msg)); }
Status nullptr_error(const char* param, const char* what) {
  return Status::Error(StatusCode::ParamNullptr, std::string(param) + ": " + what);
}

// A tensor's dtype value as a DType (an unknown value matches no contract predicate).
DType as_dtype(int32_t t) { return static_cast<DType>(t); }

// A tensor with a dimension 0 holds no element.
bool is_empty(const TensorDesc& t) {
  for (int64_t d : t.dims)
    if (d == 0) return true;
  return false;
}

// Rule 10 for one tensor.
Status check_layout(const char* param, const TensorDesc& t) {
  if (t.format != kFormatND)
    return invalid(std::string(param) + ": format must be ND (" + std::to_string(kFormatND) + "), got " +
                   std::to_string(t.format));
  const auto want = contiguous_strides(t.dims);
  for (std::size_t i = 0; i < t.dims.size(); ++i) {
    if (t.dims[i] == 1) continue;  // the stride of a size-1 dimension never matters
    if (t.strides[i] != want[i])
      return invalid(std::string(param) + ": must be contiguous: strides must be " + shape_string(want) +
                     " for shape " + shape_string(t.dims) + ", got " + shape_string(t.strides));
  }
  if (!t.storage_dims.empty()) {
    // Storage must hold offset + the view's elements. Products saturate (no overflow).
    constexpr int64_t kBig = int64_t(1) << 62;
    int64_t storage = 1;
    for (int64_t d : t.storage_dims) storage = (d != 0 && storage > kBig / d) ? kBig : storage * d;
    int64_t numel = 1;
    for (int64_t d : t.dims) numel *= d;  // bounded by the shape rules
    if (t.offset > kBig - numel || storage < t.offset + numel)
      return invalid(std::string(param) + ": storage shape " + shape_string(t.storage_dims) + " holds " +
                     std::to_string(storage) + " elements, the view needs offset + " +
                     "elements = " + std::to_string(t.offset) + " + " + std::to_string(numel));
  }
  // The tensor's bytes, (offset + elements) x element size from data, must fit in one
  // object (at most PTRDIFF_MAX bytes) below the end of the address space: else no memory
  // can hold it, and computing its pointers is undefined (found by fuzz/fuzz_ascend_tensors.cpp:
  // a huge offset on an output wrapped the output pointer).
  // A 4-bit tensor's bytes are its packed ones (elements / 2, contract.md §ext-fp4-layout).
  {
    const uint64_t bits = dtype_bits(static_cast<DType>(t.dtype));
    uint64_t numel = 1, elems = 0, ebits = 0, end = 0;
    bool over = false;
    for (int64_t d : t.dims) over |= __builtin_mul_overflow(numel, static_cast<uint64_t>(d), &numel);
    over |= __builtin_add_overflow(static_cast<uint64_t>(t.offset), numel, &elems);
    over |= __builtin_mul_overflow(elems, bits, &ebits);
    const uint64_t bytes = ebits / 8 + (ebits % 8 != 0);
    over |= bytes > static_cast<uint64_t>(PTRDIFF_MAX);
    over |= __builtin_add_overflow(static_cast<uint64_t>(reinterpret_cast<uintptr_t>(t.data)), bytes, &end);
    if (over)
      return invalid(std::string(param) + ": offset " + std::to_string(t.offset) + " (elements of " +
                     (bits % 8 == 0 ? std::to_string(bits / 8) + " bytes" : std::to_string(bits) + " bits") +
                     ") puts the tensor beyond any memory: its end must be at most " +
                     "2^63 - 1 bytes from data and inside the address space");
  }
  return Status::Ok();
}

}  // namespace

bool ValidatedCall::fused() const { return contract::is_fused(op); }
OpKind ValidatedCall::quantized_op() const { return contract::quantized_op(op); }
std::size_t ValidatedCall::x_row_bytes() const { return contract::x_row_bytes(x_dtype, H); }
std::size_t ValidatedCall::scales_row_bytes() const { return contract::scales_row_bytes(scales_dtype, H); }
std::size_t ValidatedCall::out_elem_bytes() const { return dtype_size(out_dtype); }
std::size_t ValidatedCall::out_bytes() const {
  const std::size_t out_rows = contract::is_all_reduce(op) ? rows : rows_per_rank();
  return out_rows * H * out_elem_bytes();
}
comm::ExchangeSpec ValidatedCall::exchange_spec() const {
  comm::ExchangeSpec s;
  s.x = fused() ? nullptr : x;  // the fused operators produce the rows they send
  s.x_row_bytes = x_row_bytes();
  s.scales = fused() ? nullptr : scales;
  s.s_row_bytes = scales_row_bytes();
  s.rows_per_rank = rows_per_rank();
  return s;
}
CallDescriptor ValidatedCall::descriptor() const {
  CallDescriptor d;
  d.op = static_cast<int32_t>(op);
  d.contract = static_cast<int32_t>(contract);
  d.x_dtype = static_cast<int32_t>(x_dtype);
  d.scales_dtype = static_cast<int32_t>(scales_dtype);
  d.out_dtype = static_cast<int32_t>(out_dtype);
  d.ndim = ndim;
  for (int i = 0; i < 3; ++i) d.shape[i] = shape[i];
  if (fused()) {
    d.in_dtype = static_cast<int32_t>(in_dtype);
    d.hif8_target_bits = std::bit_cast<uint32_t>(hif8_target);
  }
  if (contract::is_all_reduce(op)) d.all_reduce = static_cast<int32_t>(all_reduce);
  return d;
}

namespace {

// What the rules learn as they go, in order: a rule reads only what the rules before it
// established (rule 3 the communicator, rule 4 the dtypes, rule 5 BS and H).
struct Checked {
  explicit Checked(const OpRequest& r) : req(r), fused(contract::is_fused(r.op)), xp(fused ? "input" : "x") {}
  const OpRequest& req;
  bool fused;
  const char* xp;  // the parameter the shape rules name ("input" for the fused operators)
  settings::Contract contract = settings::Contract::Vendor;  // the call's (QCOLL_CONTRACT), read once
  std::shared_ptr<comm::Communicator> comm;
  int n = 0;
  int32_t x_dtype = -1;
  int32_t scales_dtype = -1;
  int64_t BS = 0;
  int64_t H = 0;
  const TensorDesc& x() const { return *req.x; }
  const TensorDesc& out() const { return *req.output; }
};

// contract.md §rule-1: pointers. The fused operators take `input` and `config` instead of x
// and scales. A data pointer matters only for a tensor that holds elements: an empty tensor
// (a dimension 0) is PARAM_INVALID by the shape rules (5, 8, 9) whatever its data pointer.
Status rule_1_arguments(const Checked& k) {
  const OpRequest& req = k.req;
  if (req.x == nullptr) return nullptr_error(k.xp, "must not be null");
  if (k.fused && req.config == nullptr) return nullptr_error("config", "must not be null");
  if (!k.fused && req.scales == nullptr) return nullptr_error("scales", "must not be null");
  if (req.output == nullptr) return nullptr_error("output", "must not be null");
  return Status::Ok();
}
Status rule_1_data(const Checked& k) {
  const OpRequest& req = k.req;
  if (req.x->data == nullptr && !is_empty(*req.x)) return nullptr_error(k.xp, "data pointer must not be null");
  if (!k.fused && req.scales->data == nullptr && !is_empty(*req.scales))
    return nullptr_error("scales", "data pointer must not be null");
  if (req.output->data == nullptr && !is_empty(*req.output))
    return nullptr_error("output", "data pointer must not be null");
  if (!req.has_workspace_size_out) return nullptr_error("workspaceSize", "must not be null");
  if (!req.has_executor_out) return nullptr_error("executor", "must not be null");
  return Status::Ok();
}
Status rule_1(Checked& k) {
  if (Status st = rule_1_arguments(k); !st.ok()) return st;
  return rule_1_data(k);
}

// contract.md §rule-2: reduceOp.
Status rule_2(Checked& k) {
  if (k.req.reduce_op == nullptr) return invalid("reduceOp: must be \"sum\", got null");
  if (std::strcmp(k.req.reduce_op, "sum") != 0)
    return invalid(std::string("reduceOp: must be \"sum\" (the only reduction supported), got \"") + k.req.reduce_op +
                   "\"");
  return Status::Ok();
}

// contract.md §rule-3: group.
Status rule_3(Checked& k) {
  const char* group = k.req.group;
  if (Status st = comm::check_group_name(group, "group"); !st.ok()) return st;
  k.comm = comm::resolve(group);
  if (!k.comm)
    return invalid(std::string("group: no communicator named '") + group +
                   "' is registered for this thread or process (create and join it first)");
  k.n = k.comm->size();
  if (contract::rank_count_allowed(k.n, k.contract)) return Status::Ok();
  // vendor: "must have 2, 4 or 8 ranks" (unchanged); extended: "must have a rank count in [2, 1024]".
  const std::string rule = k.contract == settings::Contract::Vendor
                               ? contract::rank_count_rule(k.contract) + " ranks"
                               : "a rank count " + contract::rank_count_rule(k.contract) + " (QCOLL_CONTRACT=extended)";
  return invalid(std::string("group: communicator '") + group + "' must have " + rule + ", got " + std::to_string(k.n));
}

// contract.md §rule-4 for the fused operators: the input dtype, then the quantization config.
Status rule_4_fused(Checked& k) {
  const int32_t in = k.x().dtype;
  if (!contract::is_input_dtype(as_dtype(in)))
    return invalid("input: dtype must be " + contract::dtype_list(contract::kInputDtypes) + ", got " +
                   contract::dtype_text(as_dtype(in)));
  const QuantConfigDesc& cfg = *k.req.config;
  if (Status st =
          contract::check_quant_config(as_dtype(cfg.x_dtype), as_dtype(cfg.scales_dtype), cfg.hif8_target, k.contract);
      !st.ok())
    return st;
  k.x_dtype = cfg.x_dtype;
  k.scales_dtype = cfg.scales_dtype;
  return Status::Ok();
}
// contract.md §rule-4 for the quantized operators: x and scales as given, x's dtypes those
// of the call's contract (§ext-fp4: extended adds the 4-bit ones; vendor lists kXDtypes).
Status rule_4_quantized(Checked& k) {
  k.x_dtype = k.x().dtype;
  k.scales_dtype = k.req.scales->dtype;
  if (!contract::x_dtype_allowed(as_dtype(k.x_dtype), k.contract))
    return invalid("x: dtype must be " + contract::dtype_list(contract::x_dtypes(k.contract)) + ", got " +
                   contract::dtype_text(as_dtype(k.x_dtype)));
  if (!contract::is_scales_dtype(as_dtype(k.scales_dtype)))
    return invalid("scales: dtype must be float (pertoken-pergroup) or float8_e8m0 (MX), got " +
                   contract::dtype_text(as_dtype(k.scales_dtype)));
  if (!contract::dtypes_fit(as_dtype(k.x_dtype), as_dtype(k.scales_dtype), k.contract))
    return invalid("scales: float8_e8m0 (MX) scales need x dtype " +
                   contract::dtype_list(contract::mx_x_dtypes(k.contract)) + ", got x dtype " +
                   contract::dtype_text(as_dtype(k.x_dtype)));
  return Status::Ok();
}
// contract.md §rule-4: dtypes, then the output dtype.
Status rule_4(Checked& k) {
  if (Status st = k.fused ? rule_4_fused(k) : rule_4_quantized(k); !st.ok()) return st;
  if (!contract::is_out_dtype(as_dtype(k.out().dtype)))
    return invalid("output: dtype must be " + contract::dtype_list(contract::kOutDtypes) + ", got " +
                   contract::dtype_text(as_dtype(k.out().dtype)));
  return Status::Ok();
}

// contract.md §rule-5: x is 2-D or 3-D, no zero dimension, at most 2^48 elements.
Status rule_5(Checked& k) {
  const std::vector<int64_t>& dims = k.x().dims;
  if (dims.size() != 2 && dims.size() != 3)
    return invalid(std::string(k.xp) + ": must be 2-D (BS, H) or 3-D (B, S, H), got " + std::to_string(dims.size()) +
                   "-D shape " + shape_string(dims));
  for (std::size_t i = 0; i < dims.size(); ++i)
    if (dims[i] == 0)
      return invalid(std::string(k.xp) + ": dimension " + std::to_string(i) +
                     " must not be 0 (empty tensors are not supported), got shape " + shape_string(dims));
  constexpr int64_t kMaxElems = int64_t(1) << 48;
  int64_t numel = 1;
  for (int64_t d : dims) {
    if (d > kMaxElems / numel)
      return invalid(std::string(k.xp) + ": shape " + shape_string(dims) + " has more than 2^48 elements");
    numel *= d;
  }
  k.H = dims.back();
  k.BS = numel / k.H;
  return Status::Ok();
}

// contract.md §rule-6: rows divisible by the group size.
Status rule_6(Checked& k) {
  if (k.BS % k.n == 0) return Status::Ok();
  const std::string what = k.x().dims.size() == 3 ? "B*S" : "BS";
  return invalid(std::string(k.xp) + ": " + what + " must be a multiple of the group size " + std::to_string(k.n) +
                 ", got " + what + " = " + std::to_string(k.BS) + " (shape " + shape_string(k.x().dims) + ")");
}

// contract.md §rule-7: H.
Status rule_7(Checked& k) {
  if (contract::op_h_ok(k.H)) return Status::Ok();
  return invalid(std::string(k.xp) + ": H must be a multiple of " + std::to_string(contract::kOpHMultiple) + " in [" +
                 std::to_string(contract::kOpHMin) + ", " + std::to_string(contract::kOpHMax) + "], got " +
                 std::to_string(k.H));
}

// contract.md §rule-8: scales shape (the fused operators have no scales argument).
Status rule_8(Checked& k) {
  if (k.fused) return Status::Ok();
  const auto want = contract::scales_shape(as_dtype(k.scales_dtype), k.x().dims);
  if (k.req.scales->dims == want) return Status::Ok();
  const std::string layout = contract::is_mx(as_dtype(k.scales_dtype))
                                 ? " (MX: group " + std::to_string(contract::kMxGroup) + ", layout (..., H/" +
                                       std::to_string(contract::kMxHMultiple) + ", " +
                                       std::to_string(contract::kMxScalePair) + "))"
                                 : " (pertoken-pergroup: group " + std::to_string(contract::kKgGroup) + ")";
  return invalid("scales: shape must be " + shape_string(want) + " for x " + shape_string(k.x().dims) + layout +
                 ", got " + shape_string(k.req.scales->dims));
}

// contract.md §rule-9: output shape (rule 6 holds here, so the contract has one).
Status rule_9(Checked& k) {
  const OpKind op = k.req.op;
  const std::vector<int64_t>& dims = k.x().dims;
  const std::vector<int64_t> want = contract::output_shape(op, dims, k.n).value_or(dims);
  if (k.out().dims == want) return Status::Ok();
  if (!contract::is_all_reduce(op))
    return invalid("output: shape must be (BS/n, H) = " + shape_string(want) + " for " + op_name(op) + " of " + k.xp +
                   " " + shape_string(dims) + " over " + std::to_string(k.n) + " ranks, got " +
                   shape_string(k.out().dims));
  return invalid("output: shape must equal " + std::string(k.xp) + "'s shape " + shape_string(dims) + " for " +
                 op_name(op) + ", got " + shape_string(k.out().dims));
}

// contract.md §rule-10: contiguous ND; a 4-bit x starts on a byte (§ext-fp4-layout: two
// elements a byte, so its offset, in elements, is even).
Status rule_10(Checked& k) {
  if (Status st = check_layout(k.xp, k.x()); !st.ok()) return st;
  if (!k.fused && is_4bit_format(as_dtype(k.x_dtype)) && k.x().offset % 2 != 0)
    return invalid("x: offset must be even for " + contract::dtype_text(as_dtype(k.x_dtype)) +
                   " (two elements a byte: the tensor starts on a byte), got " + std::to_string(k.x().offset));
  if (!k.fused) {
    if (Status st = check_layout("scales", *k.req.scales); !st.ok()) return st;
  }
  return check_layout("output", k.out());
}

// The call that rules 1-10 describe: dtypes, shape, and the tensors' first bytes.
ValidatedCall validated_call(const Checked& k) {
  const TensorDesc& x = k.x();
  const TensorDesc& out = k.out();
  ValidatedCall c;
  c.op = k.req.op;
  c.contract = k.contract;
  c.comm = k.comm;
  c.x_dtype = as_dtype(k.x_dtype);
  c.scales_dtype = as_dtype(k.scales_dtype);
  c.out_dtype = as_dtype(out.dtype);
  if (k.fused) {
    c.in_dtype = as_dtype(x.dtype);
    c.hif8_target = contract::effective_hif8_target(c.x_dtype, c.scales_dtype, k.req.config->hif8_target,
                                                    quant::default_hif8_target());
  }
  c.ndim = static_cast<int>(x.dims.size());
  for (std::size_t i = 0; i < x.dims.size(); ++i) c.shape[i] = x.dims[i];
  c.rows = static_cast<std::size_t>(k.BS);
  c.H = static_cast<std::size_t>(k.H);
  if (k.fused) {
    c.x = static_cast<const uint8_t*>(x.data) + static_cast<std::size_t>(x.offset) * dtype_size(c.in_dtype);
  } else {
    c.x = static_cast<const uint8_t*>(x.data) + dtype_bytes(c.x_dtype, static_cast<std::size_t>(x.offset));
    c.scales = static_cast<const uint8_t*>(k.req.scales->data) +
               static_cast<std::size_t>(k.req.scales->offset) * dtype_size(c.scales_dtype);
  }
  c.out = static_cast<uint8_t*>(out.data) + static_cast<std::size_t>(out.offset) * dtype_size(c.out_dtype);
  if (contract::is_all_reduce(c.op)) c.all_reduce = settings::all_reduce();
  return c;
}

// contract.md §rule-11: the staging window must hold at least one chunk of the call.
Status rule_11(const ValidatedCall& c) {
  const comm::Communicator& comm = *c.comm;
  const std::size_t w = comm.window_bytes();
  if (w == 0 || comm::max_chunk_rows(comm, c.exchange_spec()) > 0) return Status::Ok();
  return invalid("HCCL_BUFFSIZE: the communication window of " + std::to_string(w) + " bytes (" +
                 std::to_string(w >> 20) + " MB) of group '" + comm.name() + "' cannot hold one chunk (one row: " +
                 std::to_string(c.x_row_bytes()) + " bytes of x and " + std::to_string(c.scales_row_bytes()) +
                 " bytes of scales per rank, " + std::to_string(c.nranks()) + " ranks); raise HCCL_BUFFSIZE (MB)");
}

using Rule = Status (*)(Checked&);
constexpr Rule kRules[] = {rule_1, rule_2, rule_3, rule_4, rule_5, rule_6, rule_7, rule_8, rule_9, rule_10};

}  // namespace

Status validate(const OpRequest& req, ValidatedCall* call) {
  Checked k(req);
  // The call's contract (contract.md §ext), read once: every rule below asks this reading.
  if (Status st = settings::contract(k.contract); !st.ok()) return st;
  for (Rule rule : kRules) {
    if (Status st = rule(k); !st.ok()) return st;
  }
  ValidatedCall c = validated_call(k);
  if (Status st = rule_11(c); !st.ok()) return st;
  *call = std::move(c);
  return Status::Ok();
}

}  // namespace qcoll::ops
