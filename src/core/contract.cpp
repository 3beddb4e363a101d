// The contract's facts (qcoll/contract.hpp).
#include "qcoll/contract.hpp"

#include <algorithm>

namespace qcoll::contract {
namespace {

bool contains(std::span<const DType> set, DType t) { return std::find(set.begin(), set.end(), t) != set.end(); }

Status invalid(std::string msg) { return Status::Error(StatusCode::ParamInvalid, std::move(msg)); }

}  // namespace

// ---- Dtypes ----

bool is_x_dtype(DType t) { return contains(kXDtypes, t); }
bool is_mx_x_dtype(DType t) { return contains(kMxXDtypes, t); }
bool is_out_dtype(DType t) { return contains(kOutDtypes, t); }
bool is_scales_dtype(DType t) { return contains(kScalesDtypes, t); }
bool is_mx(DType scales_dtype) { return scales_dtype == DType::Float8E8M0; }

bool dtypes_fit(DType x_dtype, DType scales_dtype) {
  if (scales_dtype == DType::Float) return is_x_dtype(x_dtype);
  if (is_mx(scales_dtype)) return is_mx_x_dtype(x_dtype);
  return false;
}

std::string dtype_list(std::span<const DType> types) {
  std::string s;
  for (std::size_t i = 0; i < types.size(); ++i) {
    if (i > 0) s += i + 1 == types.size() ? " or " : ", ";
    s += dtype_name(types[i]);
  }
  return s;
}

std::string dtype_text(DType t) {
  if (!is_known_dtype(static_cast<int32_t>(t))) return std::to_string(static_cast<int32_t>(t)) + " (unknown dtype)";
  return std::string(dtype_name(t));
}

// ---- Quantization modes ----

std::span<const QuantMode> quant_modes(Contract c) {
  if (c == Contract::Extended) return kExtendedQuantModes;
  return kQuantModes;
}

const QuantMode* find_quant_mode(std::string_view name, Contract c) {
  for (const QuantMode& m : quant_modes(c))
    if (name == m.name || (m.short_name != nullptr && name == m.short_name)) return &m;
  return nullptr;
}

const QuantMode* find_quant_mode(std::string_view name) { return find_quant_mode(name, Contract::Vendor); }

Status resolve_quant_mode(std::string_view name, Contract c, const QuantMode*& mode, const char* param) {
  mode = find_quant_mode(name, c);
  if (mode != nullptr) return Status::Ok();
  const std::string p(param);
  if (find_quant_mode(name, Contract::Extended) != nullptr)
    return invalid(p + ": " + std::string(name) + " needs " + settings::kContractName + "=extended (the contract is " +
                   settings::contract_name(c) + ")");
  return invalid(p + ": must be " + quant_mode_names(c) + ", got '" + std::string(name) + "' (" +
                 quant_mode_short_names(c) + " also name the KG modes)");
}

std::string quant_mode_names(Contract c) {
  const std::span<const QuantMode> modes = quant_modes(c);
  std::string s;
  const std::size_t n = modes.size();
  for (std::size_t i = 0; i < n; ++i) s += std::string(i == 0 ? "" : i + 1 == n ? " or " : ", ") + modes[i].name;
  return s;
}

std::string quant_mode_short_names(Contract c) {
  std::string s;
  for (const QuantMode& m : quant_modes(c))
    if (m.short_name != nullptr) s += std::string(s.empty() ? "" : ", ") + m.short_name;
  return s;
}

// ---- Scale groups and the scales layout ----

std::size_t scale_group(DType scales_dtype) {
  switch (scales_dtype) {
    case DType::Float:
      return kKgGroup;
    case DType::Float8E8M0:
      return kMxGroup;
    default:
      return 0;
  }
}

std::size_t h_multiple(DType scales_dtype) {
  switch (scales_dtype) {
    case DType::Float:
      return kKgGroup;
    case DType::Float8E8M0:
      return kMxHMultiple;
    default:
      return 0;
  }
}

std::size_t scales_row_bytes(DType scales_dtype, std::size_t H) {
  const std::size_t g = scale_group(scales_dtype);
  return g == 0 ? 0 : H / g * dtype_size(scales_dtype);
}

std::size_t scales_count(DType scales_dtype, std::size_t rows, std::size_t H) {
  const std::size_t g = scale_group(scales_dtype);
  return g == 0 ? 0 : rows * H / g;
}

std::vector<int64_t> scales_shape(DType scales_dtype, const std::vector<int64_t>& x_shape) {
  if (x_shape.empty() || !is_scales_dtype(scales_dtype)) return {};
  std::vector<int64_t> s(x_shape.begin(), x_shape.end() - 1);
  const int64_t H = x_shape.back();
  if (is_mx(scales_dtype)) {
    s.push_back(H / static_cast<int64_t>(kMxHMultiple));
    s.push_back(static_cast<int64_t>(kMxScalePair));
  } else {
    s.push_back(H / static_cast<int64_t>(kKgGroup));
  }
  return s;
}

const char* mode_name(DType scales_dtype) {
  return scales_dtype == DType::Float ? "KG" : is_mx(scales_dtype) ? "MX" : "?";
}

// ---- Quantizer arguments ----

bool hif8_target_ok(float target) { return target == 0.0f || (target >= kHif8TargetMin && target <= kHif8TargetMax); }

namespace {

// The dtype rule of a quantizer call under contract c, naming its parameters x_param /
// scales_param. hint: a dtype that only the extended contract has, refused under c, gets
// "; NAME needs QCOLL_CONTRACT=extended" after the rule (the vendor twins pass false).
Status check_dtypes_named(DType x_dtype, DType scales_dtype, const char* x_param, const char* scales_param,
                          Contract c = Contract::Vendor, bool hint = false) {
  if (scales_dtype != DType::Float && !is_mx(scales_dtype))
    return invalid(std::string(scales_param) + ": must be float (KG) or float8_e8m0 (MX), got " +
                   dtype_text(scales_dtype));
  if (dtypes_fit(x_dtype, scales_dtype, c)) return Status::Ok();
  const bool kg = scales_dtype == DType::Float;
  std::string msg = std::string(x_param) + (kg ? ": KG (float scales) takes " : ": MX (float8_e8m0 scales) takes ") +
                    dtype_list(kg ? x_dtypes(c) : mx_x_dtypes(c)) + ", got " + dtype_text(x_dtype);
  if (hint && dtypes_fit(x_dtype, scales_dtype, Contract::Extended))
    msg += "; " + dtype_text(x_dtype) + " needs " + settings::kContractName + "=extended";
  return invalid(std::move(msg));
}

Status check_target_named(float target, const char* param) {
  if (!hif8_target_ok(target))
    return invalid(std::string(param) + ": must be 0 (default) or in [" +
                   std::to_string(static_cast<int>(kHif8TargetMin)) + ", " +
                   std::to_string(static_cast<int>(kHif8TargetMax)) + "], got " + std::to_string(target));
  return Status::Ok();
}

// check_quant_call under c; hint as for check_dtypes_named.
Status check_call_named(DType x_dtype, DType scales_dtype, std::size_t H, float hif8_target, Contract c,
                        const QuantParamNames& names, bool hint) {
  if (Status st = check_dtypes_named(x_dtype, scales_dtype, names.x_dtype, names.scales_dtype, c, hint); !st.ok())
    return st;
  if (Status st = check_quant_h(scales_dtype, H); !st.ok()) return st;
  if (scales_dtype == DType::Float && x_dtype == DType::HiFloat8)
    return check_target_named(hif8_target, names.hif8_target);
  return Status::Ok();
}

// check_quant_config under c.
Status check_config_named(DType x_dtype, DType scales_dtype, float hif8_target, Contract c, bool hint) {
  if (Status st = check_dtypes_named(x_dtype, scales_dtype, "config.xDtype", "config.scalesDtype", c, hint); !st.ok())
    return st;
  if (scales_dtype == DType::Float && x_dtype == DType::HiFloat8)
    return check_target_named(hif8_target, "config.hif8Target");
  return Status::Ok();
}

}  // namespace

Status check_quant_dtypes(DType x_dtype, DType scales_dtype) {
  return check_dtypes_named(x_dtype, scales_dtype, "x_dtype", "scales_dtype");
}

Status check_quant_h(DType scales_dtype, std::size_t H) {
  const std::size_t multiple = h_multiple(scales_dtype);
  if (H == 0 || multiple == 0 || H % multiple != 0)
    return invalid("H: must be a positive multiple of " + std::to_string(multiple) + " for " + mode_name(scales_dtype) +
                   " quantization, got " + std::to_string(H));
  return Status::Ok();
}

Status check_hif8_target(float target) { return check_target_named(target, "hif8_target"); }

Status check_quant_call(DType x_dtype, DType scales_dtype, std::size_t H, float hif8_target) {
  return check_quant_call(x_dtype, scales_dtype, H, hif8_target, QuantParamNames{});
}

Status check_quant_call(DType x_dtype, DType scales_dtype, std::size_t H, float hif8_target,
                        const QuantParamNames& names) {
  return check_call_named(x_dtype, scales_dtype, H, hif8_target, Contract::Vendor, names, false);
}

Status check_quant_call(DType x_dtype, DType scales_dtype, std::size_t H, float hif8_target, Contract c,
                        const QuantParamNames& names) {
  return check_call_named(x_dtype, scales_dtype, H, hif8_target, c, names, true);
}

// ---- Operators ----

const char* op_name(Op op) {
  switch (op) {
    case Op::AllReduce:
      return "QuantAllReduce";
    case Op::QuantizeReduceScatter:
      return "QuantizeReduceScatter";
    case Op::QuantizeAllReduce:
      return "QuantizeAllReduce";
    default:
      return "QuantReduceScatter";
  }
}
bool is_fused(Op op) { return op == Op::QuantizeReduceScatter || op == Op::QuantizeAllReduce; }
bool is_all_reduce(Op op) { return op == Op::AllReduce || op == Op::QuantizeAllReduce; }
Op quantized_op(Op op) { return is_all_reduce(op) ? Op::AllReduce : Op::ReduceScatter; }
Op fused_op(Op op) { return is_all_reduce(op) ? Op::QuantizeAllReduce : Op::QuantizeReduceScatter; }

bool is_rank_count(int nranks) {
  return std::find(std::begin(kRankCounts), std::end(kRankCounts), nranks) != std::end(kRankCounts);
}

std::string rank_count_list() {
  std::string s;
  const std::size_t n = std::size(kRankCounts);
  for (std::size_t i = 0; i < n; ++i) s += (i == 0 ? "" : i + 1 == n ? " or " : ", ") + std::to_string(kRankCounts[i]);
  return s;
}

Status check_comm_size(int nranks) {
  if (nranks >= 1 && nranks <= kMaxCommRanks) return Status::Ok();
  return Status::Error(StatusCode::ParamInvalid,
                       "nranks: must be in [1, " + std::to_string(kMaxCommRanks) + "], got " + std::to_string(nranks));
}

bool op_h_ok(int64_t H) { return H % kOpHMultiple == 0 && H >= kOpHMin && H <= kOpHMax; }

std::optional<std::vector<int64_t>> output_shape(Op op, const std::vector<int64_t>& x_shape, int nranks) {
  if (x_shape.empty() || nranks < 1) return std::nullopt;
  int64_t count = 1;
  for (int64_t d : x_shape)
    if (d <= 0 || __builtin_mul_overflow(count, d, &count)) return std::nullopt;
  if (is_all_reduce(op)) return x_shape;
  const int64_t H = x_shape.back();
  const int64_t BS = count / H;
  if (BS % nranks != 0) return std::nullopt;
  return std::vector<int64_t>{BS / nranks, H};
}

// ---- Fused operators ----

bool is_input_dtype(DType t) { return contains(kInputDtypes, t); }

Status check_quant_config(DType x_dtype, DType scales_dtype, float hif8_target) {
  return check_config_named(x_dtype, scales_dtype, hif8_target, Contract::Vendor, false);
}

Status check_quant_config(DType x_dtype, DType scales_dtype, float hif8_target, Contract c) {
  return check_config_named(x_dtype, scales_dtype, hif8_target, c, true);
}

float effective_hif8_target(DType x_dtype, DType scales_dtype, float hif8_target, float default_target) {
  if (scales_dtype != DType::Float || x_dtype != DType::HiFloat8) return 0.0f;
  return hif8_target == 0.0f ? default_target : hif8_target;
}

// ---- The window rule ----

std::size_t window_slot_bytes(std::size_t window_bytes) {
  const std::size_t slot = window_bytes / kWindowSlots;
  return slot > kWindowSlotReserveBytes ? slot - kWindowSlotReserveBytes : 0;
}

std::size_t window_mb_for_chunk(std::size_t chunk_bytes) {
  return (kWindowSlots * (chunk_bytes + kWindowSlotReserveBytes) + kMiB - 1) / kMiB;
}

// ---- The extended contract ----

std::span<const DType> x_dtypes(Contract c) {
  if (c == Contract::Extended) return kExtendedXDtypes;
  return kXDtypes;
}

std::span<const DType> mx_x_dtypes(Contract c) {
  if (c == Contract::Extended) return kExtendedMxXDtypes;
  return kMxXDtypes;
}

bool x_dtype_allowed(DType t, Contract c) { return contains(x_dtypes(c), t); }
bool mx_x_dtype_allowed(DType t, Contract c) { return contains(mx_x_dtypes(c), t); }

bool dtypes_fit(DType x_dtype, DType scales_dtype, Contract c) {
  if (scales_dtype == DType::Float) return x_dtype_allowed(x_dtype, c);
  if (is_mx(scales_dtype)) return mx_x_dtype_allowed(x_dtype, c);
  return false;
}

bool rank_count_allowed(int nranks, Contract c) {
  if (c == Contract::Extended) return nranks >= kExtendedMinRanks && nranks <= kExtendedMaxRanks;
  return is_rank_count(nranks);
}

std::string rank_count_rule(Contract c) {
  if (c == Contract::Extended)
    return "in [" + std::to_string(kExtendedMinRanks) + ", " + std::to_string(kExtendedMaxRanks) + "]";
  return rank_count_list();
}

bool op_h_allowed(int64_t H, Contract) { return op_h_ok(H); }

std::size_t x_row_bytes(DType x_dtype, std::size_t H) { return x_data_bytes(x_dtype, 1, H); }

std::size_t x_data_bytes(DType x_dtype, std::size_t BS, std::size_t H) {
  if (!x_dtype_allowed(x_dtype, Contract::Extended)) return 0;
  return dtype_bytes(x_dtype, BS * H);
}

}  // namespace qcoll::contract
