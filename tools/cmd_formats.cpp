// `qcoll formats show DTYPE` and `qcoll formats encode DTYPE [--saturate] VALUE...`:
// print the decode table of an 8-bit or 4-bit format, or encode values (contract.md §formats,
// §encoders; the 4-bit formats float4_e2m1 and float4_e1m2: §ext-fp4, their 16 codes, always
// saturating; the formats themselves, whatever QCOLL_CONTRACT). See docs/formats.md.
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "command.hpp"
#include "qcoll/dtype.hpp"
#include "qcoll/formats.hpp"

namespace qcoll::cli {
namespace {

namespace fmt = qcoll::formats;

constexpr int kUsageError = 2;
constexpr const char* kEightBitNames = "int8, hifloat8, float8_e4m3fn, float8_e5m2, float8_e8m0";
constexpr const char* kFourBitNames = "float4_e2m1, float4_e1m2";

[[noreturn]] void fail(const std::string& message) {
  std::fprintf(stderr, "qcoll formats: %s\n", message.c_str());
  throw CLI::RuntimeError(kUsageError);
}

// "%.9g" (enough digits to identify any fp32), with nan / inf / -inf spelled plainly.
std::string format_value(float v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", static_cast<double>(v));
  return buf;
}

// Decimal, hex-float, inf, nan (strtof, rounded to nearest fp32); the whole token must parse.
std::optional<float> parse_value(const std::string& token) {
  if (token.empty() || std::isspace(static_cast<unsigned char>(token[0]))) return std::nullopt;
  char* end = nullptr;
  errno = 0;
  const float v = std::strtof(token.c_str(), &end);
  if (end != token.c_str() + token.size()) return std::nullopt;
  return v;  // ERANGE: strtof already gave the nearest fp32 (+-inf, 0 or a subnormal)
}

DType parse_dtype_or_fail(const std::string& arg) {
  const auto t = parse_dtype(arg);
  if (!t)
    fail("unknown dtype '" + arg + "'; expected one of " + kEightBitNames + ", " + kFourBitNames +
         ", float16, bfloat16");
  return *t;
}

void run_show(const std::string& dtype_arg) {
  const DType t = parse_dtype_or_fail(dtype_arg);
  const bool four = is_4bit_format(t);
  if (!is_8bit_format(t) && !four)
    fail("show: dtype '" + dtype_arg + "' is not an 8-bit or 4-bit number format; show lists the 256 codes of " +
         kEightBitNames + " and the 16 of " + kFourBitNames + " (use 'formats encode' for float16 / bfloat16)");
  std::string out;
  char code[8];
  for (int b = 0; b < (four ? 16 : 256); ++b) {
    std::snprintf(code, sizeof code, four ? "0x%X " : "0x%02X ", b);
    out += code;
    out += format_value(four ? fmt::decode4(t, static_cast<uint8_t>(b)) : fmt::decode8(t, static_cast<uint8_t>(b)));
    out += '\n';
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
}

void run_encode(const std::string& dtype_arg, bool saturate, const std::vector<std::string>& tokens) {
  const DType t = parse_dtype_or_fail(dtype_arg);
  const bool is16 = t == DType::Float16 || t == DType::BFloat16, four = is_4bit_format(t);
  if (!is_8bit_format(t) && !is16 && !four)
    fail("encode: dtype '" + dtype_arg + "' has no encoder; expected one of " + kEightBitNames + ", " + kFourBitNames +
         ", float16, bfloat16");
  if (saturate && (is16 || t == DType::Float8E8M0))
    fail("encode: --saturate applies to int8, hifloat8, float8_e4m3fn and float8_e5m2, not '" + dtype_arg + "'");
  if (tokens.empty()) fail("encode: no VALUE given");
  // Validate every value before printing anything.
  std::vector<float> values;
  for (const auto& tok : tokens) {
    const auto v = parse_value(tok);
    if (!v) fail("encode: VALUE '" + tok + "' is not a number (decimal, hex-float, inf or nan)");
    values.push_back(*v);
  }
  const auto sat = saturate ? fmt::Saturation::Saturating : fmt::Saturation::NonSaturating;
  std::string out;
  char code[16];
  for (float v : values) {
    float decoded;
    if (t == DType::Float16) {
      const uint16_t c = fmt::encode_float16(v);
      std::snprintf(code, sizeof code, "0x%04X ", c);
      decoded = fmt::decode_float16(c);
    } else if (t == DType::BFloat16) {
      const uint16_t c = fmt::encode_bfloat16(v);
      std::snprintf(code, sizeof code, "0x%04X ", c);
      decoded = fmt::decode_bfloat16(c);
    } else if (four) {  // always saturating (contract.md §ext-fp4-encode)
      const uint8_t c = fmt::encode4(t, v);
      std::snprintf(code, sizeof code, "0x%X ", c);
      decoded = fmt::decode4(t, c);
    } else {
      const uint8_t c = fmt::encode8(t, v, sat);
      std::snprintf(code, sizeof code, "0x%02X ", c);
      decoded = fmt::decode8(t, c);
    }
    out += code;
    out += format_value(decoded);
    out += '\n';
  }
  std::fwrite(out.data(), 1, out.size(), stdout);
}

const CommandRegistrar reg([](CLI::App& app) {
  auto* formats = app.add_subcommand("formats", "Inspect the number formats: decode tables, encoding");
  formats->require_subcommand(1);

  auto* show = formats->add_subcommand(
      "show", "Print all 256 codes of an 8-bit format ('0xNN VALUE' per line), or the 16 of a 4-bit one ('0xN VALUE')");
  auto show_dtype = std::make_shared<std::string>();
  show->add_option("DTYPE", *show_dtype,
                   std::string("8-bit dtype: ") + kEightBitNames + "; 4-bit: " + kFourBitNames + " (or an alias)")
      ->required();
  show->callback([show_dtype] { run_show(*show_dtype); });

  auto* encode = formats->add_subcommand(
      "encode",
      "Usage: qcoll formats encode DTYPE [--saturate] [--] VALUE...\n"
      "Encode values: one line '0xNN DECODED' per value (0xNNNN for float16/bfloat16, 0xN for 4-bit).\n"
      "DTYPE: int8, hifloat8, float8_e4m3fn, float8_e5m2, float8_e8m0, float4_e2m1, float4_e1m2, float16,\n"
      "bfloat16 (or an alias: e2m1, float4_e2m1fn, e1m2, ...). The 4-bit formats always saturate.\n"
      "VALUE: decimal, hex-float (0x1.8p3), inf, -inf or nan; each is first rounded to fp32.\n"
      "Negative values need no '--'.");
  auto saturate = std::make_shared<bool>(false);
  encode->add_flag("--saturate", *saturate, "clamp overflow and +-inf to +-max finite (NaN stays NaN)");
  // DTYPE and the VALUEs are read from the arguments CLI11 leaves over: with
  // prefix_command, everything from the first positional on is left over in order, so
  // values that look like options (-1, -inf, -.5) need no '--'.
  encode->prefix_command();
  encode->callback([encode, saturate] {
    const std::vector<std::string> args = encode->remaining();
    if (args.empty()) fail("encode: missing DTYPE");
    bool sat = *saturate, values_only = false;
    std::vector<std::string> values;
    for (size_t i = 1; i < args.size(); ++i) {
      if (!values_only && args[i] == "--")
        values_only = true;
      else if (!values_only && args[i] == "--saturate")
        sat = true;
      else
        values.push_back(args[i]);
    }
    run_encode(args[0], sat, values);
  });
});

}  // namespace
}  // namespace qcoll::cli
