// The core layer: the contract module (qcoll/contract.hpp) and the environment settings
// (qcoll/settings.hpp): every rule, range, default and message, at its edges.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "qcoll/contract.hpp"
#include "qcoll/qcoll.h"
#include "qcoll/qcoll.hpp"
#include "qcoll/settings.hpp"

namespace {

namespace c = qcoll::contract;
namespace s = qcoll::settings;
using qcoll::DType;
using qcoll::StatusCode;

constexpr DType kAll[] = {DType::Float,      DType::Float16,    DType::Int8,       DType::UInt8,
                          DType::BFloat16,   DType::HiFloat8,   DType::Float8E5M2, DType::Float8E4M3FN,
                          DType::Float8E8M0, DType::Float4E2M1, DType::Float4E1M2};

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

// ---- dtypes ----

TEST(CoreContract, DtypePredicates) {
  std::vector<DType> x, mx, out, sc;
  for (DType t : kAll) {
    if (c::is_x_dtype(t)) x.push_back(t);
    if (c::is_mx_x_dtype(t)) mx.push_back(t);
    if (c::is_out_dtype(t)) out.push_back(t);
    if (c::is_scales_dtype(t)) sc.push_back(t);
  }
  EXPECT_EQ(x, (std::vector<DType>{DType::Int8, DType::HiFloat8, DType::Float8E5M2, DType::Float8E4M3FN}));
  EXPECT_EQ(mx, (std::vector<DType>{DType::Float8E5M2, DType::Float8E4M3FN}));
  EXPECT_EQ(out, (std::vector<DType>{DType::Float, DType::Float16, DType::BFloat16}));
  EXPECT_EQ(sc, (std::vector<DType>{DType::Float, DType::Float8E8M0}));
  // An unknown enumerator value is no dtype of any kind.
  const auto bogus = static_cast<DType>(99);
  EXPECT_FALSE(c::is_x_dtype(bogus) || c::is_out_dtype(bogus) || c::is_scales_dtype(bogus));
  for (DType t : kAll) {
    EXPECT_EQ(c::dtypes_fit(t, DType::Float), c::is_x_dtype(t));
    EXPECT_EQ(c::dtypes_fit(t, DType::Float8E8M0), c::is_mx_x_dtype(t));
    EXPECT_FALSE(c::dtypes_fit(t, DType::Float16));
  }
  EXPECT_EQ(c::dtype_list(c::kXDtypes), "int8, hifloat8, float8_e4m3fn or float8_e5m2");
  EXPECT_EQ(c::dtype_list(c::kOutDtypes), "float, float16 or bfloat16");
  EXPECT_EQ(c::dtype_text(DType::Float8E5M2), "float8_e5m2");  // the name callers write, no enum value
  EXPECT_EQ(c::dtype_text(bogus), "99 (unknown dtype)");
}

// ---- scale groups and layout ----

TEST(CoreContract, ScaleGroupsAndLayout) {
  EXPECT_EQ(c::scale_group(DType::Float), 128u);
  EXPECT_EQ(c::scale_group(DType::Float8E8M0), 32u);
  EXPECT_EQ(c::h_multiple(DType::Float), 128u);
  EXPECT_EQ(c::h_multiple(DType::Float8E8M0), 64u);
  for (DType t : kAll) {
    if (c::is_scales_dtype(t)) continue;
    EXPECT_EQ(c::scale_group(t), 0u);
    EXPECT_EQ(c::h_multiple(t), 0u);
    EXPECT_EQ(c::scales_row_bytes(t, 1024), 0u);
    EXPECT_TRUE(c::scales_shape(t, {4, 1024}).empty());
  }
  EXPECT_EQ(c::scales_row_bytes(DType::Float, 1024), 32u);       // 8 fp32 scales
  EXPECT_EQ(c::scales_row_bytes(DType::Float8E8M0, 1024), 32u);  // 32 E8M0 bytes
  EXPECT_EQ(c::scales_row_bytes(DType::Float, 8192), 256u);
  EXPECT_EQ(c::scales_count(DType::Float, 3, 1024), 24u);
  EXPECT_EQ(c::scales_count(DType::Float8E8M0, 3, 1024), 96u);
  EXPECT_EQ(c::scales_shape(DType::Float, {8, 1024}), (std::vector<int64_t>{8, 8}));
  EXPECT_EQ(c::scales_shape(DType::Float, {2, 4, 2048}), (std::vector<int64_t>{2, 4, 16}));
  EXPECT_EQ(c::scales_shape(DType::Float8E8M0, {8, 1024}), (std::vector<int64_t>{8, 16, 2}));
  EXPECT_EQ(c::scales_shape(DType::Float8E8M0, {2, 4, 64}), (std::vector<int64_t>{2, 4, 1, 2}));
  EXPECT_TRUE(c::scales_shape(DType::Float, {}).empty());
  EXPECT_STREQ(c::mode_name(DType::Float), "KG");
  EXPECT_STREQ(c::mode_name(DType::Float8E8M0), "MX");
}

// ---- quantizer arguments ----

TEST(CoreContract, QuantizerRules) {
  EXPECT_TRUE(c::check_quant_dtypes(DType::HiFloat8, DType::Float).ok());
  EXPECT_TRUE(c::check_quant_dtypes(DType::Float8E5M2, DType::Float8E8M0).ok());
  auto st = c::check_quant_dtypes(DType::Int8, DType::Float8E8M0);
  EXPECT_EQ(st.code, StatusCode::ParamInvalid);
  EXPECT_EQ(st.message, "x_dtype: MX (float8_e8m0 scales) takes float8_e4m3fn or float8_e5m2, got int8");
  st = c::check_quant_dtypes(DType::Float8E8M0, DType::Float);
  EXPECT_EQ(st.message,
            "x_dtype: KG (float scales) takes int8, hifloat8, float8_e4m3fn or float8_e5m2, got "
            "float8_e8m0");
  // The caller's parameter names (Python's quantize_kg(x, dtype)).
  c::QuantParamNames names;
  names.x_dtype = "dtype";
  EXPECT_EQ(c::check_quant_call(DType::Float16, DType::Float, 1024, 0.0f, names).message,
            "dtype: KG (float scales) takes int8, hifloat8, float8_e4m3fn or float8_e5m2, got float16");
  names.hif8_target = "hif8_target=";
  EXPECT_TRUE(starts_with(c::check_quant_call(DType::HiFloat8, DType::Float, 1024, 0.5f, names).message,
                          "hif8_target=: must be"));
  st = c::check_quant_dtypes(DType::Int8, DType::Float16);
  EXPECT_TRUE(starts_with(st.message, "scales_dtype: must be float (KG) or float8_e8m0 (MX), got float16"))
      << st.message;

  EXPECT_TRUE(c::check_quant_h(DType::Float, 128).ok());
  EXPECT_TRUE(c::check_quant_h(DType::Float8E8M0, 64).ok());
  EXPECT_EQ(c::check_quant_h(DType::Float, 0).message,
            "H: must be a positive multiple of 128 for KG quantization, got 0");
  EXPECT_EQ(c::check_quant_h(DType::Float, 192).message,
            "H: must be a positive multiple of 128 for KG quantization, got 192");
  EXPECT_EQ(c::check_quant_h(DType::Float8E8M0, 96).message,
            "H: must be a positive multiple of 64 for MX quantization, got 96");

  // HiF8 target: 0 or [1, 32768] (the largest finite HiF8 value).
  for (float ok : {0.0f, 1.0f, 16.0f, 32768.0f}) EXPECT_TRUE(c::hif8_target_ok(ok)) << ok;
  for (float bad : {0.5f, 0.999f, -1.0f, 32768.5f, 1e9f, __builtin_nanf(""), __builtin_inff()})
    EXPECT_FALSE(c::hif8_target_ok(bad)) << bad;
  EXPECT_EQ(c::check_hif8_target(0.5f).message, "hif8_target: must be 0 (default) or in [1, 32768], got 0.500000");
  // check_quant_call: dtypes, then H, then the target for KG HiF8 only.
  EXPECT_EQ(c::check_quant_call(DType::HiFloat8, DType::Float, 1024, 0.5f).message, c::check_hif8_target(0.5f).message);
  EXPECT_TRUE(c::check_quant_call(DType::Int8, DType::Float, 1024, 0.5f).ok());
  EXPECT_TRUE(starts_with(c::check_quant_call(DType::HiFloat8, DType::Float, 100, 0.5f).message, "H:"));
  EXPECT_TRUE(starts_with(c::check_quant_call(DType::Int8, DType::Float8E8M0, 100, 0.5f).message, "x_dtype:"));
}

// ---- operators ----

TEST(CoreContract, OperatorRules) {
  for (int n = -1; n <= 16; ++n) EXPECT_EQ(c::is_rank_count(n), n == 2 || n == 4 || n == 8) << n;
  for (int64_t h : {1024, 1152, 4096, 8192}) EXPECT_TRUE(c::op_h_ok(h)) << h;
  for (int64_t h : {0, 128, 896, 1000, 1025, 8320, 16384}) EXPECT_FALSE(c::op_h_ok(h)) << h;
  EXPECT_STREQ(c::op_name(c::Op::ReduceScatter), "QuantReduceScatter");
  EXPECT_STREQ(c::op_name(c::Op::AllReduce), "QuantAllReduce");

  using V = std::vector<int64_t>;
  EXPECT_EQ(c::output_shape(c::Op::ReduceScatter, {8, 1024}, 4), V({2, 1024}));
  EXPECT_EQ(c::output_shape(c::Op::ReduceScatter, {2, 4, 1024}, 8), V({1, 1024}));  // always 2-D
  EXPECT_EQ(c::output_shape(c::Op::AllReduce, {2, 4, 1024}, 8), V({2, 4, 1024}));
  EXPECT_FALSE(c::output_shape(c::Op::ReduceScatter, {6, 1024}, 4));  // BS not a multiple of n
  EXPECT_FALSE(c::output_shape(c::Op::ReduceScatter, {}, 2));
  EXPECT_FALSE(c::output_shape(c::Op::AllReduce, {0, 1024}, 2));
  EXPECT_FALSE(c::output_shape(c::Op::AllReduce, {8, 1024}, 0));
  EXPECT_FALSE(c::output_shape(c::Op::AllReduce, {int64_t{1} << 40, int64_t{1} << 40}, 2));  // overflow
}

// ---- fused operators ----

TEST(CoreContract, FusedOperators) {
  using c::Op;
  EXPECT_STREQ(c::op_name(Op::QuantizeReduceScatter), "QuantizeReduceScatter");
  EXPECT_STREQ(c::op_name(Op::QuantizeAllReduce), "QuantizeAllReduce");
  for (Op op : {Op::ReduceScatter, Op::AllReduce, Op::QuantizeReduceScatter, Op::QuantizeAllReduce}) {
    const bool fused = op == Op::QuantizeReduceScatter || op == Op::QuantizeAllReduce;
    const bool ar = op == Op::AllReduce || op == Op::QuantizeAllReduce;
    EXPECT_EQ(c::is_fused(op), fused);
    EXPECT_EQ(c::is_all_reduce(op), ar);
    EXPECT_EQ(c::quantized_op(op), ar ? Op::AllReduce : Op::ReduceScatter);
    EXPECT_EQ(c::fused_op(op), ar ? Op::QuantizeAllReduce : Op::QuantizeReduceScatter);
    EXPECT_EQ(c::output_shape(op, {2, 4, 1024}, 4), c::output_shape(c::quantized_op(op), {2, 4, 1024}, 4));
  }
  for (DType t : {DType::Float, DType::Float16, DType::BFloat16}) EXPECT_TRUE(c::is_input_dtype(t));
  for (DType t : {DType::Int8, DType::UInt8, DType::HiFloat8, DType::Float8E4M3FN, DType::Float8E8M0})
    EXPECT_FALSE(c::is_input_dtype(t));

  // The config check: the quantizers' dtype rule and target rule under the config's names.
  EXPECT_TRUE(c::check_quant_config(DType::Int8, DType::Float, -3.0f).ok());  // target ignored
  EXPECT_TRUE(c::check_quant_config(DType::Float8E5M2, DType::Float8E8M0, 0.0f).ok());
  EXPECT_EQ(c::check_quant_config(DType::Int8, DType::Float8E8M0, 0.0f).message,
            "config.xDtype: MX (float8_e8m0 scales) takes float8_e4m3fn or float8_e5m2, got int8");
  EXPECT_EQ(c::check_quant_config(DType::Int8, DType::Float16, 0.0f).message,
            "config.scalesDtype: must be float (KG) or float8_e8m0 (MX), got float16");
  EXPECT_EQ(c::check_quant_config(DType::HiFloat8, DType::Float, 0.5f).message,
            "config.hif8Target: must be 0 (default) or in [1, 32768], got 0.500000");
  EXPECT_EQ(c::check_quant_config(DType::HiFloat8, DType::Float, 0.5f).code, qcoll::StatusCode::ParamInvalid);
  // The quantizers keep their own names.
  EXPECT_TRUE(starts_with(c::check_quant_dtypes(DType::Int8, DType::Float8E8M0).message, "x_dtype:"));

  EXPECT_EQ(c::effective_hif8_target(DType::HiFloat8, DType::Float, 0.0f, 16.0f), 16.0f);
  EXPECT_EQ(c::effective_hif8_target(DType::HiFloat8, DType::Float, 3.0f, 16.0f), 3.0f);
  EXPECT_EQ(c::effective_hif8_target(DType::Int8, DType::Float, 3.0f, 16.0f), 0.0f);
  EXPECT_EQ(c::effective_hif8_target(DType::Float8E4M3FN, DType::Float8E8M0, 3.0f, 16.0f), 0.0f);
}

TEST(CoreContract, QuantModes) {
  EXPECT_EQ(std::size(c::kQuantModes), 6u);
  for (const c::QuantMode& m : c::kQuantModes) {
    EXPECT_TRUE(c::dtypes_fit(m.x, m.scales)) << m.name;
    EXPECT_EQ(c::find_quant_mode(m.name), &m);
    EXPECT_EQ(std::string(m.name).substr(0, 3), c::is_mx(m.scales) ? "mx-" : "kg-");
  }
  EXPECT_EQ(c::find_quant_mode("kg-e4m3")->x, DType::Float8E4M3FN);
  EXPECT_EQ(c::find_quant_mode("mx-e5m2")->scales, DType::Float8E8M0);
  // A KG mode may be named by its format alone, in every front end (CLI, Python, torch).
  EXPECT_EQ(c::find_quant_mode("int8"), c::find_quant_mode("kg-int8"));
  EXPECT_EQ(c::find_quant_mode("e5m2"), c::find_quant_mode("kg-e5m2"));
  EXPECT_EQ(c::find_quant_mode("hifloat8"), nullptr);  // a dtype name, not a mode
  EXPECT_EQ(c::quant_mode_short_names(), "int8, hif8, e4m3, e5m2");
  EXPECT_EQ(c::find_quant_mode("mx-int8"), nullptr);
  EXPECT_EQ(c::quant_mode_names(), "kg-int8, kg-hif8, kg-e4m3, kg-e5m2, mx-e4m3 or mx-e5m2");
}

// ---- the window rule ----

TEST(CoreContract, WindowRule) {
  constexpr std::size_t MiB = c::kMiB;
  EXPECT_EQ(c::window_slot_bytes(200 * MiB), 99 * MiB);
  EXPECT_EQ(c::window_slot_bytes(2 * MiB), 0u);
  EXPECT_EQ(c::window_slot_bytes(3 * MiB), MiB / 2);
  EXPECT_EQ(c::window_slot_bytes(0), 0u);
  // 2 * (chunk + 1 MB) <= window, in whole MB rounded up.
  EXPECT_EQ(c::window_mb_for_chunk(0), 2u);
  EXPECT_EQ(c::window_mb_for_chunk(1), 3u);
  EXPECT_EQ(c::window_mb_for_chunk(MiB / 2), 3u);
  EXPECT_EQ(c::window_mb_for_chunk(MiB), 4u);
  for (std::size_t chunk : {std::size_t{1}, MiB / 3, 5 * MiB + 7}) {
    const std::size_t mb = c::window_mb_for_chunk(chunk);
    EXPECT_GE(c::window_slot_bytes(mb * MiB), chunk);
    EXPECT_LT(c::window_slot_bytes((mb - 1) * MiB), chunk);
  }
}

// ---- settings ----

// Sets (or unsets, for nullptr) an environment variable for the life of the object.
class EnvVar {
 public:
  EnvVar(const char* name, const char* value) : name_(name) {
    if (value)
      setenv(name, value, 1);
    else
      unsetenv(name);
  }
  ~EnvVar() { unsetenv(name_); }

 private:
  const char* name_;
};

TEST(CoreSettings, TimeoutRangeAndDefault) {
  EXPECT_EQ(s::parse_timeout_seconds(nullptr), 60.0);
  EXPECT_EQ(s::parse_timeout_seconds("2"), 2.0);
  EXPECT_EQ(s::parse_timeout_seconds("0.25"), 0.25);
  EXPECT_EQ(s::parse_timeout_seconds("1e6"), 1e6);
  EXPECT_EQ(s::parse_timeout_seconds("1e-3"), 1e-3);
  for (const char* bad : {"", "abc", "0", "-1", "2s", " ", "nan", "inf", "1e7", "1000000.5"})
    EXPECT_FALSE(s::parse_timeout_seconds(bad)) << bad;
  {
    EnvVar e(s::kTimeoutName, nullptr);
    EXPECT_EQ(s::timeout_seconds(), 60.0);
    EXPECT_EQ(s::call_timeout(), std::chrono::seconds(60));
  }
  {
    EnvVar e(s::kTimeoutName, "0.5");
    EXPECT_EQ(s::call_timeout(), std::chrono::milliseconds(500));
  }
}

TEST(CoreSettings, TimeoutWarnsOncePerValue) {
  EnvVar e(s::kTimeoutName, "-3 (core test)");
  testing::internal::CaptureStderr();
  EXPECT_EQ(s::timeout_seconds(), 60.0);
  EXPECT_EQ(s::timeout_seconds(), 60.0);
  const std::string err = testing::internal::GetCapturedStderr();
  EXPECT_EQ(err,
            "qcoll: warning: QCOLL_TIMEOUT_S: must be a number of seconds in (0, 1e6], got '-3 (core test)'; "
            "using 60 s\n");
}

TEST(CoreSettings, RankThreadsRangeAndDefault) {
  EXPECT_EQ(s::parse_rank_threads(nullptr), 0);
  EXPECT_EQ(s::parse_rank_threads("auto"), 0);
  EXPECT_EQ(s::parse_rank_threads("0"), 0);
  EXPECT_EQ(s::parse_rank_threads("1"), 1);
  EXPECT_EQ(s::parse_rank_threads("64"), 64);
  for (const char* bad : {"-1", "65", "2x", "", "many", "1.5"}) EXPECT_FALSE(s::parse_rank_threads(bad)) << bad;
  {
    EnvVar e(s::kRankThreadsName, "7");
    EXPECT_EQ(s::rank_threads(), 7);
  }
  EnvVar e(s::kRankThreadsName, "65");
  testing::internal::CaptureStderr();
  EXPECT_EQ(s::rank_threads(), 0);
  EXPECT_EQ(s::rank_threads(), 0);
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "qcoll: warning: QCOLL_RANK_THREADS: must be auto, 0 or a whole number in [1, 64], got '65'; using auto\n");
}

TEST(CoreSettings, BuffSizeRangeDefaultAndError) {
  EXPECT_EQ(s::parse_buffsize_mib(nullptr), 200u);
  EXPECT_EQ(s::parse_buffsize_mib(""), 200u);
  EXPECT_EQ(s::parse_buffsize_mib("1"), 1u);
  EXPECT_EQ(s::parse_buffsize_mib("1048576"), 1048576u);
  for (const char* bad : {"0", "-1", "+5", "1048577", "12MB", "x", "1.5", "99999999999999999999999"})
    EXPECT_FALSE(s::parse_buffsize_mib(bad)) << bad;
  std::size_t w = 0;
  {
    EnvVar e(s::kBuffSizeName, nullptr);
    ASSERT_TRUE(s::window_bytes(w).ok());
    EXPECT_EQ(w, 200 * c::kMiB);
  }
  {
    EnvVar e(s::kBuffSizeName, "3");
    ASSERT_TRUE(s::window_bytes(w).ok());
    EXPECT_EQ(w, 3 * c::kMiB);
  }
  EnvVar e(s::kBuffSizeName, "0");
  const qcoll::Status st = s::window_bytes(w);
  EXPECT_EQ(st.code, StatusCode::ParamInvalid);
  EXPECT_EQ(st.message, "HCCL_BUFFSIZE: must be a whole number of MB in [1, 1048576], got \"0\"");
}

TEST(CoreSettings, TransportValuesAndError) {
  EXPECT_EQ(s::parse_transport(nullptr), s::Transport::Auto);
  EXPECT_EQ(s::parse_transport(""), s::Transport::Auto);
  EXPECT_EQ(s::parse_transport("auto"), s::Transport::Auto);
  EXPECT_EQ(s::parse_transport("shm"), s::Transport::Shm);
  EXPECT_EQ(s::parse_transport("mpi"), s::Transport::Mpi);
  for (const char* bad : {"SHM", "tcp", " mpi", "threads"}) EXPECT_FALSE(s::parse_transport(bad)) << bad;
  EXPECT_STREQ(s::transport_name(s::Transport::Shm), "shm");
  s::Transport t = s::Transport::Mpi;
  {
    EnvVar e(s::kTransportName, nullptr);
    ASSERT_TRUE(s::transport(t).ok());
    EXPECT_EQ(t, s::Transport::Auto);
  }
  EnvVar e(s::kTransportName, "tcp");
  const qcoll::Status st = s::transport(t);
  EXPECT_EQ(st.code, StatusCode::ParamInvalid);
  EXPECT_EQ(st.message, "QCOLL_TRANSPORT: must be auto, shm or mpi, got \"tcp\"");
}

TEST(CoreSettings, MpiScheduleValues) {
  EXPECT_EQ(s::parse_mpi_schedule(nullptr), s::MpiSchedule::Hosts);
  EXPECT_EQ(s::parse_mpi_schedule(""), s::MpiSchedule::Hosts);
  EXPECT_EQ(s::parse_mpi_schedule("hosts"), s::MpiSchedule::Hosts);
  EXPECT_EQ(s::parse_mpi_schedule("p2p"), s::MpiSchedule::P2p);
  EXPECT_EQ(s::parse_mpi_schedule("alltoall"), s::MpiSchedule::Alltoall);
  for (const char* bad : {"P2P", "ring", "all-to-all", "host"}) EXPECT_FALSE(s::parse_mpi_schedule(bad)) << bad;
  {
    EnvVar e(s::kMpiScheduleName, "alltoall");
    EXPECT_EQ(s::mpi_schedule(), s::MpiSchedule::Alltoall);
  }
  {
    EnvVar e(s::kMpiScheduleName, "p2p");
    EXPECT_EQ(s::mpi_schedule(), s::MpiSchedule::P2p);
  }
  EnvVar e(s::kMpiScheduleName, "ring");
  testing::internal::CaptureStderr();
  EXPECT_EQ(s::mpi_schedule(), s::MpiSchedule::Hosts);
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "qcoll: warning: QCOLL_MPI_SCHEDULE: must be hosts, p2p or alltoall, got 'ring'; using hosts\n");
}

TEST(CoreSettings, AllReduceValues) {
  EXPECT_EQ(s::parse_all_reduce(nullptr), s::AllReduce::Auto);
  EXPECT_EQ(s::parse_all_reduce(""), s::AllReduce::Auto);
  EXPECT_EQ(s::parse_all_reduce("auto"), s::AllReduce::Auto);
  EXPECT_EQ(s::parse_all_reduce("reduce-scatter"), s::AllReduce::ReduceScatter);
  EXPECT_EQ(s::parse_all_reduce("gather"), s::AllReduce::Gather);
  for (const char* bad : {"Gather", "ring", "allgather", "rs"}) EXPECT_FALSE(s::parse_all_reduce(bad)) << bad;
  {
    EnvVar e(s::kAllReduceName, "gather");
    EXPECT_EQ(s::all_reduce(), s::AllReduce::Gather);
  }
  EnvVar e(s::kAllReduceName, "ring");
  testing::internal::CaptureStderr();
  EXPECT_EQ(s::all_reduce(), s::AllReduce::Auto);
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "qcoll: warning: QCOLL_ALL_REDUCE: must be auto, reduce-scatter or gather, got 'ring'; using auto\n");
}

TEST(CoreSettings, MpiChunkValues) {
  EXPECT_EQ(s::parse_mpi_chunk_kib(nullptr), 64u);
  EXPECT_EQ(s::parse_mpi_chunk_kib(""), 64u);
  EXPECT_EQ(s::parse_mpi_chunk_kib("16"), 16u);
  EXPECT_EQ(s::parse_mpi_chunk_kib("256"), 256u);
  EXPECT_EQ(s::parse_mpi_chunk_kib("65536"), 65536u);
  for (const char* bad : {"15", "65537", "-64", "+64", "64k", "1.5", "abc", " 64"})
    EXPECT_FALSE(s::parse_mpi_chunk_kib(bad)) << bad;
  {
    EnvVar e(s::kMpiChunkName, "512");
    EXPECT_EQ(s::mpi_chunk_kib(), 512u);
  }
  EnvVar e(s::kMpiChunkName, "8");
  testing::internal::CaptureStderr();
  EXPECT_EQ(s::mpi_chunk_kib(), 64u);
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "qcoll: warning: QCOLL_MPI_CHUNK_KIB: must be a whole number of KiB in [16, 65536], got '8'; using 64\n");
}

TEST(CoreSettings, ShmTagValues) {
  EXPECT_EQ(s::parse_shm_tag(nullptr), std::string());
  EXPECT_EQ(s::parse_shm_tag(""), std::string());
  EXPECT_EQ(s::parse_shm_tag("t0a1B"), std::string("t0a1B"));
  EXPECT_EQ(s::parse_shm_tag("0123456789abcdef"), std::string("0123456789abcdef"));  // 16
  for (const char* bad : {"0123456789abcdefg", "a-b", "a/b", "a b", "..", "tag\n", "\xc3\xa9"})
    EXPECT_FALSE(s::parse_shm_tag(bad)) << bad;
  {
    EnvVar e(s::kShmTagName, "run7");
    EXPECT_EQ(s::shm_tag(), "run7");
  }
  EnvVar e(s::kShmTagName, "../x");
  testing::internal::CaptureStderr();
  EXPECT_EQ(s::shm_tag(), "");
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "qcoll: warning: QCOLL_SHM_TAG: must be 1 to 16 ASCII letters and digits, got '../x'; using no tag\n");
}

TEST(CoreSettings, KernelValues) {
  EXPECT_EQ(s::parse_kernel(nullptr), s::Kernel::Auto);
  EXPECT_EQ(s::parse_kernel(""), s::Kernel::Auto);
  EXPECT_EQ(s::parse_kernel("auto"), s::Kernel::Auto);
  EXPECT_EQ(s::parse_kernel("scalar"), s::Kernel::Scalar);
  for (const char* bad : {"Scalar", "avx2", "simd"}) EXPECT_FALSE(s::parse_kernel(bad)) << bad;
  // Read once per process: the first reading (here a bad value, warned) holds afterwards.
  EnvVar e(s::kKernelName, "avx2");
  testing::internal::CaptureStderr();
  EXPECT_EQ(s::kernel(), s::Kernel::Auto);
  setenv(s::kKernelName, "scalar", 1);
  EXPECT_EQ(s::kernel(), s::Kernel::Auto);
  EXPECT_EQ(testing::internal::GetCapturedStderr(),
            "qcoll: warning: QCOLL_KERNEL: must be auto or scalar, got 'avx2'; using auto\n");
}

// ---- the extended contract (contract.md §ext) ----

TEST(CoreSettings, ContractValuesOverrideAndError) {
  EXPECT_EQ(s::parse_contract(nullptr), s::Contract::Vendor);
  EXPECT_EQ(s::parse_contract(""), s::Contract::Vendor);
  EXPECT_EQ(s::parse_contract("vendor"), s::Contract::Vendor);
  EXPECT_EQ(s::parse_contract("extended"), s::Contract::Extended);
  for (const char* bad : {"Vendor", "EXTENDED", "ext", " extended", "extended ", "1", "on"})
    EXPECT_FALSE(s::parse_contract(bad)) << bad;
  EXPECT_STREQ(s::contract_name(s::Contract::Vendor), "vendor");
  EXPECT_STREQ(s::contract_name(s::Contract::Extended), "extended");
  ASSERT_FALSE(s::contract_override());  // nothing chose yet: the environment decides
  s::Contract k = s::Contract::Extended;
  {
    EnvVar e(s::kContractName, nullptr);
    ASSERT_TRUE(s::contract(k).ok());
    EXPECT_EQ(k, s::Contract::Vendor);  // the default
  }
  {
    EnvVar e(s::kContractName, "extended");
    ASSERT_TRUE(s::contract(k).ok());
    EXPECT_EQ(k, s::Contract::Extended);
  }
  {
    EnvVar e(s::kContractName, "Extended");
    k = s::Contract::Extended;
    const qcoll::Status st = s::contract(k);
    EXPECT_EQ(st.code, StatusCode::ParamInvalid);
    EXPECT_EQ(st.message, "QCOLL_CONTRACT: must be vendor or extended, got \"Extended\"");
    EXPECT_EQ(k, s::Contract::Vendor);
    // The program's choice takes precedence over the environment, a bad value included.
    s::set_contract_override(s::Contract::Extended);
    ASSERT_TRUE(s::contract(k).ok());
    EXPECT_EQ(k, s::Contract::Extended);
    s::set_contract_override(s::Contract::Vendor);
    ASSERT_TRUE(s::contract(k).ok());
    EXPECT_EQ(k, s::Contract::Vendor);
    s::set_contract_override(std::nullopt);  // back to the environment
    EXPECT_FALSE(s::contract(k).ok());
  }
}

TEST(CoreSettings, ContractFromCAndCpp) {
  EnvVar e(s::kContractName, "extended");
  qcollContract c = QCOLL_CONTRACT_FROM_ENV;
  ASSERT_EQ(qcollGetContract(&c), QCOLL_SUCCESS);
  EXPECT_EQ(c, QCOLL_CONTRACT_EXTENDED);
  ASSERT_EQ(qcollSetContract(QCOLL_CONTRACT_VENDOR), QCOLL_SUCCESS);
  ASSERT_EQ(qcollGetContract(&c), QCOLL_SUCCESS);
  EXPECT_EQ(c, QCOLL_CONTRACT_VENDOR);
  EXPECT_EQ(qcoll::current_contract(), s::Contract::Vendor);
  EXPECT_EQ(qcollSetContract(static_cast<qcollContract>(2)), QCOLL_PARAM_INVALID);
  EXPECT_STREQ(qcollGetRecentErrMsg(),
               "contract: must be QCOLL_CONTRACT_FROM_ENV (-1), QCOLL_CONTRACT_VENDOR (0) or "
               "QCOLL_CONTRACT_EXTENDED (1), got 2");
  EXPECT_EQ(qcoll::current_contract(), s::Contract::Vendor);  // a refused value changes nothing
  EXPECT_EQ(qcollGetContract(nullptr), QCOLL_PARAM_NULLPTR);
  ASSERT_EQ(qcollSetContract(QCOLL_CONTRACT_FROM_ENV), QCOLL_SUCCESS);
  EXPECT_EQ(qcoll::current_contract(), s::Contract::Extended);
  qcoll::set_contract(s::Contract::Vendor);
  EXPECT_EQ(qcoll::current_contract(), s::Contract::Vendor);
  qcoll::set_contract(std::nullopt);
  setenv(s::kContractName, "both", 1);
  ASSERT_EQ(qcollGetContract(&c), QCOLL_PARAM_INVALID);
  EXPECT_EQ(c, QCOLL_CONTRACT_VENDOR);
  EXPECT_STREQ(qcollGetRecentErrMsg(), "QCOLL_CONTRACT: must be vendor or extended, got \"both\"");
  try {
    (void)qcoll::current_contract();
    ADD_FAILURE() << "no error for a bad QCOLL_CONTRACT";
  } catch (const qcoll::Error& err) {
    EXPECT_EQ(err.code(), StatusCode::ParamInvalid);
  }
}

TEST(CoreContract, ExtendedDtypes) {
  using K = s::Contract;
  // Vendor: exactly the vendor sets, the 4-bit formats refused everywhere.
  for (DType t : kAll) {
    EXPECT_EQ(c::x_dtype_allowed(t, K::Vendor), c::is_x_dtype(t)) << qcoll::dtype_name(t);
    EXPECT_EQ(c::mx_x_dtype_allowed(t, K::Vendor), c::is_mx_x_dtype(t)) << qcoll::dtype_name(t);
    for (DType sd : kAll) EXPECT_EQ(c::dtypes_fit(t, sd, K::Vendor), c::dtypes_fit(t, sd));
  }
  for (DType t : c::kFp4XDtypes) {
    EXPECT_FALSE(c::is_x_dtype(t) || c::is_mx_x_dtype(t) || c::is_out_dtype(t) || c::is_scales_dtype(t));
    EXPECT_FALSE(c::check_quant_dtypes(t, DType::Float).ok());
    EXPECT_FALSE(c::check_quant_dtypes(t, DType::Float8E8M0).ok());
  }
  EXPECT_EQ(c::check_quant_dtypes(DType::Float4E2M1, DType::Float).message,
            "x_dtype: KG (float scales) takes int8, hifloat8, float8_e4m3fn or float8_e5m2, got float4_e2m1");
  // Extended: the vendor's and the two 4-bit formats, in KG and in MX.
  std::vector<DType> x, mx;
  for (DType t : kAll) {
    if (c::x_dtype_allowed(t, K::Extended)) x.push_back(t);
    if (c::mx_x_dtype_allowed(t, K::Extended)) mx.push_back(t);
  }
  EXPECT_EQ(x, (std::vector<DType>{DType::Int8, DType::HiFloat8, DType::Float8E5M2, DType::Float8E4M3FN,
                                   DType::Float4E2M1, DType::Float4E1M2}));
  EXPECT_EQ(mx, (std::vector<DType>{DType::Float8E5M2, DType::Float8E4M3FN, DType::Float4E2M1, DType::Float4E1M2}));
  for (DType t : c::kFp4XDtypes) {
    EXPECT_TRUE(c::dtypes_fit(t, DType::Float, K::Extended));
    EXPECT_TRUE(c::dtypes_fit(t, DType::Float8E8M0, K::Extended));
    EXPECT_FALSE(c::dtypes_fit(t, DType::Float16, K::Extended));
  }
  EXPECT_FALSE(c::dtypes_fit(DType::Int8, DType::Float8E8M0, K::Extended));  // MX stays float only
  EXPECT_EQ(c::dtype_list(c::x_dtypes(K::Extended)),
            "int8, hifloat8, float8_e4m3fn, float8_e5m2, float4_e2m1 or float4_e1m2");
  EXPECT_EQ(c::dtype_list(c::x_dtypes(K::Vendor)), c::dtype_list(c::kXDtypes));
  EXPECT_EQ(c::dtype_list(c::mx_x_dtypes(K::Vendor)), c::dtype_list(c::kMxXDtypes));
}

TEST(CoreContract, ExtendedRankCountsAndH) {
  using K = s::Contract;
  for (int n = -1; n <= 1100; ++n) {
    EXPECT_EQ(c::rank_count_allowed(n, K::Vendor), c::is_rank_count(n)) << n;
    EXPECT_EQ(c::rank_count_allowed(n, K::Extended), n >= 2 && n <= 1024) << n;
  }
  EXPECT_EQ(c::rank_count_rule(K::Vendor), "2, 4 or 8");
  EXPECT_EQ(c::rank_count_rule(K::Extended), "in [2, 1024]");
  // BS divisible by n still holds for any n (rule 6).
  using V = std::vector<int64_t>;
  EXPECT_EQ(c::output_shape(c::Op::ReduceScatter, {48, 1024}, 3), V({16, 1024}));
  EXPECT_FALSE(c::output_shape(c::Op::ReduceScatter, {48, 1024}, 5));
  EXPECT_EQ(c::output_shape(c::Op::ReduceScatter, {1024, 1024}, 1024), V({1, 1024}));
  for (int64_t h = 0; h <= 9000; h += 64)
    for (K k : {K::Vendor, K::Extended}) EXPECT_EQ(c::op_h_allowed(h, k), c::op_h_ok(h)) << h;
}

TEST(CoreContract, ExtendedDataBytes) {
  // A row of H packed 4-bit elements is H/2 bytes; the window rule's xDataSize is BS·H/2.
  EXPECT_EQ(c::x_row_bytes(DType::Float4E2M1, 1024), 512u);
  EXPECT_EQ(c::x_row_bytes(DType::Float4E1M2, 8192), 4096u);
  EXPECT_EQ(c::x_row_bytes(DType::Float8E4M3FN, 1024), 1024u);
  EXPECT_EQ(c::x_data_bytes(DType::Float4E2M1, 4096, 5120), 4096u * 5120 / 2);
  EXPECT_EQ(c::x_data_bytes(DType::Int8, 4096, 5120), 4096u * 5120);
  EXPECT_EQ(c::x_data_bytes(DType::HiFloat8, 3, 1024), 3072u);
  for (DType t : {DType::Float, DType::Float16, DType::BFloat16, DType::UInt8, DType::Float8E8M0})
    EXPECT_EQ(c::x_data_bytes(t, 8, 1024), 0u) << qcoll::dtype_name(t);
  // The scales do not change with the x format: the same shape and bytes as for 8 bits.
  EXPECT_EQ(c::scales_row_bytes(DType::Float, 1024), 32u);
  EXPECT_EQ(c::scales_shape(DType::Float8E8M0, {8, 1024}), (std::vector<int64_t>{8, 16, 2}));
  // The window for one chunk of 4-bit rows: half the x bytes of the 8-bit rows.
  const std::size_t rows = 64, H = 4096;
  const std::size_t chunk = c::x_data_bytes(DType::Float4E2M1, rows, H) + rows * c::scales_row_bytes(DType::Float, H);
  EXPECT_EQ(chunk, rows * H / 2 + rows * H / 128 * 4);
  EXPECT_EQ(c::window_mb_for_chunk(chunk), 3u);
}

}  // namespace
