// qcoll: the contract's facts, each stated once (docs/contract.md). Every layer, the tools
// and the Python package ask here instead of re-typing a number or a rule:
//   - the two quantization modes: KG (fp32 scales, one per 128 elements) and MX (E8M0
//     scales, one per 32 elements, laid out (..., H/64, 2)); the scales' shape and bytes;
//   - which dtypes an x, an MX x, an output and a scales tensor may have;
//   - the H rules (quantizers: a positive multiple of the mode's H multiple; operators: a
//     multiple of 128 in [1024, 8192]), the rank counts (2, 4, 8), the output shapes;
//   - the HiF8 KG target range and the window rule (HCCL_BUFFSIZE);
//   - the fused operators (quantize and exchange in one call): their float input dtypes and
//     the check of their quantization config;
//   - the extended contract (QCOLL_CONTRACT=extended, contract.md §ext): what it adds to
//     the dtypes and rank counts above, as predicates of the Contract (the functions
//     without one state the vendor contract and stay as they are).
// Messages follow the project's shape `param: rule, got value`.
#pragma once
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "qcoll/dtype.hpp"
#include "qcoll/settings.hpp"
#include "qcoll/status.hpp"

namespace qcoll::contract {

// ---- Dtypes (contract.md §api, §modes) ----

// x of an operator or of a quantizer's output: int8, hifloat8, float8_e4m3fn, float8_e5m2.
inline constexpr DType kXDtypes[] = {DType::Int8, DType::HiFloat8, DType::Float8E4M3FN, DType::Float8E5M2};
// x in the MX mode: float8_e4m3fn, float8_e5m2.
inline constexpr DType kMxXDtypes[] = {DType::Float8E4M3FN, DType::Float8E5M2};
// Operator outputs: float, float16, bfloat16.
inline constexpr DType kOutDtypes[] = {DType::Float, DType::Float16, DType::BFloat16};
// Scales: float (KG) or float8_e8m0 (MX).
inline constexpr DType kScalesDtypes[] = {DType::Float, DType::Float8E8M0};

bool is_x_dtype(DType t);
bool is_mx_x_dtype(DType t);
bool is_out_dtype(DType t);
bool is_scales_dtype(DType t);
bool is_mx(DType scales_dtype);  // scales_dtype == Float8E8M0
// x_dtype may go with scales_dtype: any x dtype with float scales, E4M3FN/E5M2 with E8M0.
bool dtypes_fit(DType x_dtype, DType scales_dtype);

// "int8, hifloat8, float8_e4m3fn or float8_e5m2": canonical names joined for a message.
std::string dtype_list(std::span<const DType> types);
// "float8_e5m2": a dtype as messages quote a value seen (its name, as callers write it; an
// unknown value as "99 (unknown dtype)").
std::string dtype_text(DType t);

// ---- Quantization modes: the names of the (x dtype, scales dtype) rows of §modes, as the
// tools, the Python package and the fused operators' wrappers spell them ----

struct QuantMode {
  const char* name;        // "kg-int8", ..., "mx-e5m2", "kg-e2m1", ..., "mx-e1m2"
  const char* short_name;  // a KG mode's format alone ("int8", ..., "e2m1"); nullptr for MX
  DType x;
  DType scales;  // Float (KG) or Float8E8M0 (MX)
};
// Every mode: the vendor contract's six, then the 4-bit ones of the extended contract
// (§ext-fp4), which only it has.
inline constexpr QuantMode kExtendedQuantModes[] = {
    {"kg-int8", "int8", DType::Int8, DType::Float},
    {"kg-hif8", "hif8", DType::HiFloat8, DType::Float},
    {"kg-e4m3", "e4m3", DType::Float8E4M3FN, DType::Float},
    {"kg-e5m2", "e5m2", DType::Float8E5M2, DType::Float},
    {"mx-e4m3", nullptr, DType::Float8E4M3FN, DType::Float8E8M0},
    {"mx-e5m2", nullptr, DType::Float8E5M2, DType::Float8E8M0},
    {"kg-e2m1", "e2m1", DType::Float4E2M1, DType::Float},
    {"kg-e1m2", "e1m2", DType::Float4E1M2, DType::Float},
    {"mx-e2m1", nullptr, DType::Float4E2M1, DType::Float8E8M0},
    {"mx-e1m2", nullptr, DType::Float4E1M2, DType::Float8E8M0},
};
// The vendor contract's modes (the first six above): what the functions without a Contract
// resolve and list, as before the extended contract.
inline constexpr std::span<const QuantMode, 6> kQuantModes = std::span(kExtendedQuantModes).first<6>();
// The modes of contract c: kQuantModes (vendor) or kExtendedQuantModes (extended).
std::span<const QuantMode> quant_modes(settings::Contract c);
// The mode named `name` (its name or its short name, exactly), or nullptr. Every front end
// (the CLI, the Python package, qcoll.torch) resolves mode names here. Without a contract:
// the vendor's modes only.
const QuantMode* find_quant_mode(std::string_view name);
const QuantMode* find_quant_mode(std::string_view name, settings::Contract c);
// The mode named `name` under contract c, or PARAM_INVALID naming `param`: an unknown name
// ("mode: must be kg-int8, ... or mx-e5m2, got 'x'"), or a mode of the extended contract
// under vendor ("mode: mx-e2m1 needs QCOLL_CONTRACT=extended (the contract is vendor)").
Status resolve_quant_mode(std::string_view name, settings::Contract c, const QuantMode*& mode,
                          const char* param = "mode");
// "kg-int8, kg-hif8, kg-e4m3, kg-e5m2, mx-e4m3 or mx-e5m2" (vendor; extended: the ten)
std::string quant_mode_names(settings::Contract c = settings::Contract::Vendor);
// "int8, hif8, e4m3, e5m2": the short names of the KG modes (extended: and e2m1, e1m2)
std::string quant_mode_short_names(settings::Contract c = settings::Contract::Vendor);

// ---- Scale groups and the scales layout (contract.md §modes) ----

inline constexpr std::size_t kKgGroup = 128;                          // elements per fp32 scale
inline constexpr std::size_t kMxGroup = 32;                           // elements per E8M0 scale
inline constexpr std::size_t kMxScalePair = 2;                        // MX scales: (..., H/64, 2)
inline constexpr std::size_t kMxHMultiple = kMxGroup * kMxScalePair;  // 64

// Elements per scale: 128 (Float), 32 (Float8E8M0), 0 for any other dtype.
std::size_t scale_group(DType scales_dtype);
// What H must be a multiple of for a quantized tensor: 128 (KG), 64 (MX), 0 otherwise.
std::size_t h_multiple(DType scales_dtype);
// Bytes of scales per row of H elements: H/128*4 (KG), H/32 (MX); 0 for another dtype.
std::size_t scales_row_bytes(DType scales_dtype, std::size_t H);
// Number of scale elements of a (rows, H) tensor: rows*H/128 (KG), rows*H/32 (MX).
std::size_t scales_count(DType scales_dtype, std::size_t rows, std::size_t H);
// The scales' shape for x's shape (..., H): (..., H/128) (KG) or (..., H/64, 2) (MX).
// Empty for an empty x shape or another scales dtype.
std::vector<int64_t> scales_shape(DType scales_dtype, const std::vector<int64_t>& x_shape);
// The mode in words, for messages: "KG" / "MX" (anything else: "?").
const char* mode_name(DType scales_dtype);

// ---- Quantizer arguments (contract.md §quantizers) ----

// The HiF8 KG target (scale = amax / target): 0 (the library's default) or in
// [kHif8TargetMin, kHif8TargetMax] (the largest finite HiF8 value).
inline constexpr float kHif8TargetMin = 1.0f;
inline constexpr float kHif8TargetMax = 32768.0f;
bool hif8_target_ok(float target);

// PARAM_INVALID naming the parameter, or Ok:
//   x_dtype / scales_dtype combination of a quantize or dequantize call;
Status check_quant_dtypes(DType x_dtype, DType scales_dtype);
//   H of a quantized tensor: positive and a multiple of h_multiple(scales_dtype) (assumes a
//   valid scales_dtype);
Status check_quant_h(DType scales_dtype, std::size_t H);
//   hif8_target (checked whatever the dtype; callers apply it to KG HiF8 only).
Status check_hif8_target(float target);
// All three in that order, the target only for KG HiF8: the rule of every quantizer and of
// the dequantizer (null pointers are the caller's business).
Status check_quant_call(DType x_dtype, DType scales_dtype, std::size_t H, float hif8_target = 0.0f);
// The same rule with the caller's parameter names in the messages (a binding whose
// arguments are spelled otherwise, e.g. Python's quantize_kg(x, dtype)).
struct QuantParamNames {
  const char* x_dtype = "x_dtype";
  const char* scales_dtype = "scales_dtype";
  const char* hif8_target = "hif8_target";
};
Status check_quant_call(DType x_dtype, DType scales_dtype, std::size_t H, float hif8_target,
                        const QuantParamNames& names);

// ---- Operators (contract.md §api, §validation) ----

// The quantized operators (1, 2) and the fused ones (3, 4: quantize a float input, then the
// same exchange and reduction; contract.md §fused).
enum class Op : int32_t { ReduceScatter = 1, AllReduce = 2, QuantizeReduceScatter = 3, QuantizeAllReduce = 4 };
// "QuantReduceScatter", "QuantAllReduce", "QuantizeReduceScatter", "QuantizeAllReduce".
const char* op_name(Op op);
bool is_fused(Op op);       // QuantizeReduceScatter or QuantizeAllReduce
bool is_all_reduce(Op op);  // AllReduce or QuantizeAllReduce
Op quantized_op(Op op);     // the quantized operator a fused one ends in (RS / AR)
Op fused_op(Op op);         // the fused twin of a quantized operator

inline constexpr int kRankCounts[] = {2, 4, 8};
// Group (communicator) names: non-empty, at most 127 characters (shorter than 128).
inline constexpr std::size_t kMaxGroupNameLen = 127;
bool is_rank_count(int nranks);
// "2, 4 or 8": the rank counts for a message
std::string rank_count_list();

// A communicator (a thread group, or one made from a unique id) has 1 to kMaxCommRanks
// ranks; the operators take those of kRankCounts ranks (rule 3).
inline constexpr int kMaxCommRanks = 1024;
// PARAM_INVALID "nranks: must be in [1, 1024], got N", or Ok.
Status check_comm_size(int nranks);

// Rule 7: H is a multiple of 128 in [1024, 8192].
inline constexpr int64_t kOpHMultiple = 128;
inline constexpr int64_t kOpHMin = 1024;
inline constexpr int64_t kOpHMax = 8192;
bool op_h_ok(int64_t H);

// Rule 9: the output shape of `op` for x's shape over nranks ranks: (BS/n, H) for
// reduce-scatter (BS = the product of all dimensions but the last, whatever x's rank),
// x's shape for all-reduce. nullopt when there is no such shape: x_shape empty, a
// dimension <= 0, the element count overflowing int64, nranks < 1, or BS not a multiple
// of nranks for reduce-scatter.
std::optional<std::vector<int64_t>> output_shape(Op op, const std::vector<int64_t>& x_shape, int nranks);

// ---- Fused operators (contract.md §fused) ----

// The input of a fused operator: float, float16 or bfloat16.
inline constexpr DType kInputDtypes[] = {DType::Float, DType::Float16, DType::BFloat16};
bool is_input_dtype(DType t);

// The quantization config of a fused call (qcollQuantConfig): the quantizers' rule
// (check_quant_dtypes, then the HiF8 target for KG HiF8 only) with the config's field names
// in the messages: "config.xDtype: ...", "config.scalesDtype: ...", "config.hif8Target: ...".
Status check_quant_config(DType x_dtype, DType scales_dtype, float hif8_target);
// The HiF8 target a call uses: the given one, 0 meaning the default (default_target, passed
// in by the caller: the quantizers own it); 0 for anything but KG HiF8, where it has no role.
float effective_hif8_target(DType x_dtype, DType scales_dtype, float hif8_target, float default_target);

// ---- The window rule (contract.md §window; HCCL_BUFFSIZE is read by qcoll/settings.hpp) ----

inline constexpr std::size_t kMiB = std::size_t{1} << 20;
inline constexpr std::size_t kWindowSlots = 2;                // double-buffered
inline constexpr std::size_t kWindowSlotReserveBytes = kMiB;  // the vendor's "+ 1 MB"

// Bytes of one slot available to chunk data: window/2 - 1 MB (0 when the window is <= 2 MB).
std::size_t window_slot_bytes(std::size_t window_bytes);
// The smallest window, in whole MB, whose slot holds chunk_bytes:
// ceil(2 * (chunk_bytes + 1 MB) / 1 MB).
std::size_t window_mb_for_chunk(std::size_t chunk_bytes);

// ---- The extended contract (contract.md §ext; QCOLL_CONTRACT, qcoll/settings.hpp) ----
// Under Contract::Vendor every predicate below answers as its vendor twin above (the same
// sets, the same rules); Contract::Extended adds exactly what §ext lists.

using settings::Contract;

// The 4-bit x dtypes (§ext-fp4): float4_e2m1, float4_e1m2, in KG and MX alike.
inline constexpr DType kFp4XDtypes[] = {DType::Float4E2M1, DType::Float4E1M2};
// x under extended: kXDtypes, then the 4-bit ones; MX x: kMxXDtypes, then the 4-bit ones.
inline constexpr DType kExtendedXDtypes[] = {DType::Int8,       DType::HiFloat8,   DType::Float8E4M3FN,
                                             DType::Float8E5M2, DType::Float4E2M1, DType::Float4E1M2};
inline constexpr DType kExtendedMxXDtypes[] = {DType::Float8E4M3FN, DType::Float8E5M2, DType::Float4E2M1,
                                               DType::Float4E1M2};

// The x dtypes of an operator or a quantizer's output (KG) / of the MX mode under c.
std::span<const DType> x_dtypes(Contract c);
std::span<const DType> mx_x_dtypes(Contract c);
bool x_dtype_allowed(DType t, Contract c);
bool mx_x_dtype_allowed(DType t, Contract c);
// dtypes_fit under c: any allowed x dtype with float scales, an allowed MX one with E8M0.
bool dtypes_fit(DType x_dtype, DType scales_dtype, Contract c);

// The quantizers' rule under c (§ext-fp4-quantizers): check_quant_call / check_quant_config
// with c's x dtypes in the rule and the messages. Under vendor they answer exactly as the
// functions without a Contract, except that a 4-bit x dtype's message (the vendor one) ends
// in "; float4_e2m1 needs QCOLL_CONTRACT=extended", naming the dtype and the setting.
Status check_quant_call(DType x_dtype, DType scales_dtype, std::size_t H, float hif8_target, Contract c,
                        const QuantParamNames& names = {});
Status check_quant_config(DType x_dtype, DType scales_dtype, float hif8_target, Contract c);

// Rank counts (§ext-ranks): vendor 2, 4 or 8 (is_rank_count); extended any n in
// [kExtendedMinRanks, kExtendedMaxRanks]. BS must still be a multiple of n (rule 6,
// output_shape), whatever the contract.
inline constexpr int kExtendedMinRanks = 2;
inline constexpr int kExtendedMaxRanks = kMaxCommRanks;  // 1024
bool rank_count_allowed(int nranks, Contract c);
// The rule for a message: "2, 4 or 8" (vendor), "in [2, 1024]" (extended).
std::string rank_count_rule(Contract c);

// The H rules do not depend on the contract (§ext-fp4-h): an operator's H is a multiple of
// 128 in [1024, 8192] (op_h_ok), a quantizer's a positive multiple of 128 (KG) or 64 (MX)
// (check_quant_h); both are even, so a 4-bit row is H/2 whole bytes.
bool op_h_allowed(int64_t H, Contract c);

// Bytes of x data (§ext-fp4-layout, §window): a row of H elements, and BS rows (the
// window rule's xDataSize): H and BS·H for the 8-bit x dtypes, H/2 and BS·H/2 for the
// 4-bit ones (packed); 0 for a dtype that is no x dtype of either contract.
std::size_t x_row_bytes(DType x_dtype, std::size_t H);
std::size_t x_data_bytes(DType x_dtype, std::size_t BS, std::size_t H);

}  // namespace qcoll::contract
