// The qcoll program's operator commands, run as a user would (env QCOLL_CLI = the binary).
// Inputs are .npy bytes built here by hand; outputs are read back with a minimal reader of
// this file and compared bit for bit with the oracle (tests/oracle.hpp: decode formulas,
// fp32 multiply then add in rank order, round-to-nearest-even casts). Refusals must exit
// non-zero, explain themselves on stderr, and create no output file.
#include <gtest/gtest.h>
#include <sys/wait.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "fp4_oracle.hpp"
#include "oracle.hpp"

namespace fs = std::filesystem;
using Bytes = std::vector<uint8_t>;

// The fp16 bits of v, for values fp16 holds exactly (normal range, at most 11 significant bits).
uint16_t oracle_fp16_bits(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  const uint32_t sign = (u >> 16) & 0x8000u;
  if ((u & 0x7FFFFFFFu) == 0) return static_cast<uint16_t>(sign);
  const int e = static_cast<int>((u >> 23) & 0xFF) - 127 + 15;
  return static_cast<uint16_t>(sign | (static_cast<uint32_t>(e) << 10) | ((u >> 13) & 0x3FFu));
}

namespace {

// ---- .npy files, by hand -------------------------------------------------------------------

std::string shape_tuple(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

void write_npy(const fs::path& path, const std::string& descr, const std::vector<int64_t>& shape, const Bytes& data) {
  std::string header = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape_tuple(shape) + ", }";
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  Bytes b = {0x93,
             'N',
             'U',
             'M',
             'P',
             'Y',
             1,
             0,
             static_cast<uint8_t>(header.size() & 0xFF),
             static_cast<uint8_t>(header.size() >> 8)};
  b.insert(b.end(), header.begin(), header.end());
  b.insert(b.end(), data.begin(), data.end());
  std::ofstream f(path, std::ios::binary);
  f.write(reinterpret_cast<const char*>(b.data()), static_cast<std::streamsize>(b.size()));
}

struct NpyFile {
  std::string descr;
  std::vector<int64_t> shape;
  Bytes data;
};

// Reads a version 1.0 file; enough for what the qcoll tools write for these shapes.
NpyFile read_npy(const fs::path& path) {
  std::ifstream f(path, std::ios::binary);
  Bytes b((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  NpyFile out;
  if (b.size() < 10 || std::memcmp(b.data(), "\x93NUMPY\x01\x00", 8) != 0) {
    ADD_FAILURE() << path << ": not a version 1.0 .npy file";
    return out;
  }
  std::size_t hlen = b[8] | (b[9] << 8);
  std::string header(b.begin() + 10, b.begin() + 10 + static_cast<std::ptrdiff_t>(hlen));
  EXPECT_EQ((10 + hlen) % 64, 0u) << path;
  EXPECT_NE(header.find("'fortran_order': False"), std::string::npos) << header;
  std::size_t d = header.find("'descr': '") + 10;
  out.descr = header.substr(d, header.find('\'', d) - d);
  std::size_t s = header.find("'shape': (") + 10;
  std::stringstream dims(header.substr(s, header.find(')', s) - s));
  std::string item;
  while (std::getline(dims, item, ','))
    if (item.find_first_not_of(' ') != std::string::npos) out.shape.push_back(std::stoll(item));
  out.data.assign(b.begin() + 10 + static_cast<std::ptrdiff_t>(hlen), b.end());
  return out;
}

// ---- reference numerics ---------------------------------------------------------------------

using oracle::f32_bits;

enum class XType { Int8, E4M3, E5M2 };

struct Case {
  XType x;
  bool mx;  // E8M0 scales (group 32), else fp32 scales (group 128)
  int n;
  std::vector<int64_t> x_shape;
  std::string out_dtype;  // float, float16, bfloat16
  bool int8_as_uint8 = false;
};

struct RankInput {
  Bytes x;
  Bytes scales;  // fp32 little-endian or E8M0 bytes
};

std::vector<RankInput> random_inputs(const Case& c, uint32_t seed) {
  std::mt19937 rng(seed);
  std::size_t count = 1;
  for (auto d : c.x_shape) count *= static_cast<std::size_t>(d);
  std::vector<RankInput> in(static_cast<std::size_t>(c.n));
  for (auto& r : in) {
    r.x.resize(count);
    for (auto& b : r.x) {
      do {
        b = static_cast<uint8_t>(rng());
      } while ((c.x == XType::E4M3 && (b & 0x7F) == 0x7F) || (c.x == XType::E5M2 && (b & 0x7C) == 0x7C));
    }
    if (c.mx) {
      r.scales.resize(count / 32);
      for (auto& b : r.scales) b = static_cast<uint8_t>(0x70 + rng() % 32);
    } else {
      for (std::size_t g = 0; g < count / 128; ++g) {
        float s = std::ldexp(1.0f + (rng() % 1000) / 1000.0f, -static_cast<int>(rng() % 12));
        uint32_t u = f32_bits(s);
        for (int i = 0; i < 4; ++i) r.scales.push_back(static_cast<uint8_t>(u >> (8 * i)));
      }
    }
  }
  return in;
}

// Expected output bytes of `rank` (rows [row0, row0 + rows) of the sum), from the oracle.
Bytes reference_output(const Case& c, const std::vector<RankInput>& in, std::size_t row0, std::size_t rows) {
  using qcoll::DType;
  const std::size_t h = static_cast<std::size_t>(c.x_shape.back());
  const DType xdt = c.x == XType::Int8 ? DType::Int8 : c.x == XType::E4M3 ? DType::Float8E4M3FN : DType::Float8E5M2;
  const DType odt = c.out_dtype == "float" ? DType::Float : c.out_dtype == "float16" ? DType::Float16 : DType::BFloat16;
  std::vector<const uint8_t*> xs, ss;
  for (const auto& r : in) {
    xs.push_back(r.x.data());
    ss.push_back(r.scales.data());
  }
  Bytes out(rows * h * qcoll::dtype_size(odt));
  oracle::reduce(xdt, c.mx ? DType::Float8E8M0 : DType::Float, odt, xs.data(), ss.data(), in.size(), row0 * h, rows * h,
                 out.data());
  return out;
}

// ---- running the program ----------------------------------------------------------------------

struct RunResult {
  int exit_code = -1;
  std::string out, err;
};

class CliTest : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* cli = std::getenv("QCOLL_CLI");
    if (!cli || !*cli) GTEST_SKIP() << "QCOLL_CLI is not set (run through ctest)";
    cli_ = cli;
    std::string tmpl = (fs::path(::testing::TempDir()) / "qcoll_cli_XXXXXX").string();
    ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  RunResult run(const std::string& args) {
    const fs::path out = dir_ / "stdout.txt", err = dir_ / "stderr.txt";
    std::string cmd = "cd '" + dir_.string() + "' && QCOLL_TIMEOUT_S=20 " + env_ + "'" + cli_ + "' " + args + " >'" +
                      out.string() + "' 2>'" + err.string() + "'";
    int st = std::system(cmd.c_str());
    RunResult r;
    r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 1000;
    std::ifstream fo(out), fe(err);
    r.out.assign(std::istreambuf_iterator<char>(fo), std::istreambuf_iterator<char>());
    r.err.assign(std::istreambuf_iterator<char>(fe), std::istreambuf_iterator<char>());
    fs::remove(out);
    fs::remove(err);
    return r;
  }

  // Names in the directory that start with "out" (outputs or their temporaries).
  std::vector<std::string> output_files() const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir_))
      if (e.path().filename().string().rfind("out", 0) == 0) names.push_back(e.path().filename().string());
    return names;
  }

  void write_inputs(const Case& c, const std::vector<RankInput>& in) {
    std::vector<int64_t> s_shape(c.x_shape.begin(), c.x_shape.end() - 1);
    const int64_t h = c.x_shape.back();
    if (c.mx) {
      s_shape.push_back(h / 64);
      s_shape.push_back(2);
    } else {
      s_shape.push_back(h / 128);
    }
    for (int r = 0; r < c.n; ++r) {
      const char* xdescr = c.x == XType::Int8 && !c.int8_as_uint8 ? "|i1" : "|u1";
      write_npy(dir_ / ("x" + std::to_string(r) + ".npy"), xdescr, c.x_shape, in[r].x);
      write_npy(dir_ / ("s" + std::to_string(r) + ".npy"), c.mx ? "|u1" : "<f4", s_shape, in[r].scales);
    }
  }

  static std::string x_dtype_arg(const Case& c) {
    return c.x == XType::Int8 ? "int8" : c.x == XType::E4M3 ? "float8_e4m3fn" : "float8_e5m2";
  }
  std::string op_args(const Case& c) const {
    return "--ranks " + std::to_string(c.n) + " --x-dtype " + x_dtype_arg(c) + " --scales-dtype " +
           (c.mx ? "float8_e8m0" : "float") + " --out-dtype " + c.out_dtype +
           " --x 'x{rank}.npy' --scales 's{rank}.npy' --out 'out{rank}.npy'";
  }

  void expect_refused(const RunResult& r, const std::string& needle) {
    EXPECT_NE(r.exit_code, 0) << r.out << r.err;
    EXPECT_NE(r.err.find(needle), std::string::npos) << "stderr: " << r.err << "\nexpected to contain: " << needle;
    EXPECT_TRUE(output_files().empty()) << "output files were created: " << output_files().front();
  }

  void check_operator(const std::string& op, const Case& c, uint32_t seed) {
    auto in = random_inputs(c, seed);
    write_inputs(c, in);
    RunResult r = run(op + " " + op_args(c));
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::size_t count = 1;
    for (auto d : c.x_shape) count *= static_cast<std::size_t>(d);
    const int64_t h = c.x_shape.back();
    const std::size_t bs = count / static_cast<std::size_t>(h);
    const std::string descr = c.out_dtype == "float" ? "<f4" : c.out_dtype == "float16" ? "<f2" : "<u2";
    const Bytes full = op == "all-reduce" ? reference_output(c, in, 0, bs) : Bytes{};
    for (int rank = 0; rank < c.n; ++rank) {
      NpyFile o = read_npy(dir_ / ("out" + std::to_string(rank) + ".npy"));
      EXPECT_EQ(o.descr, descr);
      if (op == "reduce-scatter") {
        const std::size_t rows = bs / static_cast<std::size_t>(c.n);
        EXPECT_EQ(o.shape, (std::vector<int64_t>{static_cast<int64_t>(rows), h}));
        EXPECT_TRUE(o.data == reference_output(c, in, rank * rows, rows)) << "rank " << rank << " differs";
      } else {
        EXPECT_EQ(o.shape, c.x_shape);
        EXPECT_TRUE(o.data == full) << "rank " << rank << " differs";
      }
    }
    EXPECT_EQ(output_files().size(), static_cast<std::size_t>(c.n));  // no temporaries left
  }

  // `qcoll demo ARGS --json`: it must succeed; its output parsed, with the ranks and the
  // contract it names checked.
  nlohmann::json demo_json(const std::string& args, int ranks, const char* contract) {
    RunResult r = run("demo " + args + " --json");
    EXPECT_EQ(r.exit_code, 0) << r.err;
    if (r.exit_code != 0) return nlohmann::json::object();
    nlohmann::json j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["ranks"], ranks);
    EXPECT_EQ(j["contract"], contract);
    return j;
  }

  // Under the extended contract (contract.md §ext).
  RunResult run_extended(const std::string& args) {
    env_ = "QCOLL_CONTRACT=extended ";
    RunResult r = run(args);
    env_.clear();
    return r;
  }

  std::string cli_;
  fs::path dir_;
  std::string env_;  // variables set for the program: "NAME=value "
};

// ---- operators, bit for bit ---------------------------------------------------------------------

TEST_F(CliTest, ReduceScatterInt8Float2Ranks) {
  check_operator("reduce-scatter", {XType::Int8, false, 2, {8, 1024}, "float"}, 1);
}
TEST_F(CliTest, ReduceScatterInt8StoredAsUint8Bf16) {
  Case c{XType::Int8, false, 4, {8, 1024}, "bfloat16"};
  c.int8_as_uint8 = true;
  check_operator("reduce-scatter", c, 2);
}
TEST_F(CliTest, ReduceScatterMxE4m3Bf16_4Ranks) {
  check_operator("reduce-scatter", {XType::E4M3, true, 4, {8, 1024}, "bfloat16"}, 3);
}
TEST_F(CliTest, ReduceScatter3DE5m2Float16_8Ranks) {
  check_operator("reduce-scatter", {XType::E5M2, false, 8, {2, 8, 1152}, "float16"}, 4);
}
TEST_F(CliTest, AllReduceInt8Float16_4Ranks3D) {
  check_operator("all-reduce", {XType::Int8, false, 4, {2, 4, 1024}, "float16"}, 5);
}
TEST_F(CliTest, AllReduceMxE5m2Bf16_2Ranks) {
  check_operator("all-reduce", {XType::E5M2, true, 2, {4, 2048}, "bfloat16"}, 6);
}
TEST_F(CliTest, DefaultOutputIsBfloat16AndScalesTypeFollowsTheFile) {
  Case c{XType::E4M3, true, 2, {4, 1024}, "bfloat16"};
  auto in = random_inputs(c, 7);
  write_inputs(c, in);
  RunResult r =
      run("reduce-scatter --ranks 2 --x-dtype e4m3 --x 'x{rank}.npy' --scales 's{rank}.npy' --out 'out{rank}.npy'");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  NpyFile o = read_npy(dir_ / "out1.npy");
  EXPECT_EQ(o.descr, "<u2");
  EXPECT_TRUE(o.data == reference_output(c, in, 2, 2));
}

// ---- refusals: non-zero exit, a message, no output ------------------------------------------

class CliRefusal : public CliTest {
 protected:
  void SetUp() override {
    CliTest::SetUp();
    if (IsSkipped()) return;
    c_ = {XType::Int8, false, 4, {8, 1024}, "float"};
    in_ = random_inputs(c_, 11);
    write_inputs(c_, in_);
  }
  Case c_;
  std::vector<RankInput> in_;
};

TEST_F(CliRefusal, MissingFile) {
  fs::remove(dir_ / "x2.npy");
  expect_refused(run("reduce-scatter " + op_args(c_)), "x2.npy: cannot open");
}

TEST_F(CliRefusal, MoreRanksThanFiles) {
  Case c = c_;
  c.n = 8;
  expect_refused(run("reduce-scatter " + op_args(c)), "x4.npy: cannot open");
}

TEST_F(CliRefusal, WrongDtypeInFile) {
  write_npy(dir_ / "x1.npy", "<f4", {8, 256}, Bytes(8 * 1024));
  expect_refused(run("reduce-scatter " + op_args(c_)), "x1.npy: x has element type float32");
}

TEST_F(CliRefusal, Float8DataInInt8File) {
  Case c = c_;
  c.x = XType::E4M3;
  expect_refused(run("all-reduce " + op_args(c)), "cannot hold float8_e4m3fn");
}

TEST_F(CliRefusal, ScalesOfWrongType) {
  write_npy(dir_ / "s0.npy", "<f2", {8, 8}, Bytes(128));
  expect_refused(run("reduce-scatter " + op_args(c_)), "s0.npy");
}

TEST_F(CliRefusal, CorruptFile) {
  std::ofstream(dir_ / "s3.npy") << "not numpy";
  expect_refused(run("reduce-scatter " + op_args(c_)), "s3.npy: ");
}

TEST_F(CliRefusal, BadHiddenSizeIsParamInvalid) {
  for (int r = 0; r < 4; ++r) {
    write_npy(dir_ / ("x" + std::to_string(r) + ".npy"), "|i1", {8, 1000}, Bytes(8000));
    write_npy(dir_ / ("s" + std::to_string(r) + ".npy"), "<f4", {8, 8}, Bytes(256));
  }
  RunResult r = run("reduce-scatter " + op_args(c_));
  expect_refused(r, "qcoll: PARAM_INVALID (161002): ");
  EXPECT_NE(r.err.find("1000"), std::string::npos) << r.err;
}

TEST_F(CliRefusal, BadScalesShapeIsParamInvalid) {
  for (int r = 0; r < 4; ++r) write_npy(dir_ / ("s" + std::to_string(r) + ".npy"), "<f4", {8, 4, 2}, Bytes(256));
  expect_refused(run("all-reduce " + op_args(c_)), "qcoll: PARAM_INVALID (161002): ");
}

TEST_F(CliRefusal, OneDimensionalXIsParamInvalid) {
  for (int r = 0; r < 4; ++r) write_npy(dir_ / ("x" + std::to_string(r) + ".npy"), "|i1", {8192}, Bytes(8192));
  expect_refused(run("reduce-scatter " + op_args(c_)), "qcoll: PARAM_INVALID (161002): ");
}

// An empty .npy holds no data (a null pointer): still PARAM_INVALID "empty", as the vendor says.
TEST_F(CliRefusal, EmptyXIsParamInvalidNotNullptr) {
  for (int r = 0; r < 4; ++r) {
    write_npy(dir_ / ("x" + std::to_string(r) + ".npy"), "|i1", {0, 1024}, Bytes());
    write_npy(dir_ / ("s" + std::to_string(r) + ".npy"), "<f4", {0, 8}, Bytes());
  }
  RunResult r = run("reduce-scatter " + op_args(c_));
  expect_refused(r, "qcoll: PARAM_INVALID (161002): x: dimension 0 must not be 0 (empty tensors");
}

TEST_F(CliRefusal, RanksDisagreeOnShapeIsRuntimeError) {
  write_npy(dir_ / "x3.npy", "|i1", {16, 1024}, Bytes(16 * 1024));
  write_npy(dir_ / "s3.npy", "<f4", {16, 8}, Bytes(16 * 8 * 4));
  RunResult r = run("reduce-scatter " + op_args(c_));
  // Each rank's call is valid on its own; the ranks disagree on the shape.
  expect_refused(r, "qcoll: RUNTIME_ERROR (361001): ");
}

TEST_F(CliRefusal, ThreeRanksIsParamInvalid) {
  Case c = c_;
  c.n = 3;
  c.x_shape = {6, 1024};
  write_inputs(c, random_inputs(c, 12));
  expect_refused(run("reduce-scatter " + op_args(c)), "qcoll: PARAM_INVALID (161002): ");
}

TEST_F(CliRefusal, Int8WithE8m0ScalesIsParamInvalid) {
  for (int r = 0; r < 4; ++r) write_npy(dir_ / ("s" + std::to_string(r) + ".npy"), "|u1", {8, 16, 2}, Bytes(256, 0x7F));
  expect_refused(
      run("reduce-scatter --ranks 4 --x-dtype int8 --x 'x{rank}.npy' --scales 's{rank}.npy' --out 'out{rank}.npy'"),
      "qcoll: PARAM_INVALID (161002): ");
}

TEST_F(CliRefusal, BadOutDtype) {
  RunResult r =
      run("reduce-scatter --ranks 4 --x-dtype int8 --out-dtype int8 --x 'x{rank}.npy' --scales 's{rank}.npy' --out "
          "'out{rank}.npy'");
  expect_refused(r, "--out-dtype");
  EXPECT_EQ(r.exit_code, 2);
  expect_refused(run("reduce-scatter --ranks 4 --x-dtype int8 --out-dtype fp64 --x 'x{rank}.npy' --scales "
                     "'s{rank}.npy' --out 'out{rank}.npy'"),
                 "unknown dtype 'fp64'");
}

TEST_F(CliRefusal, BadXDtype) {
  expect_refused(
      run("all-reduce --ranks 4 --x-dtype float --x 'x{rank}.npy' --scales 's{rank}.npy' --out 'out{rank}.npy'"),
      "--x-dtype");
}

TEST_F(CliRefusal, PatternWithoutRank) {
  expect_refused(run("reduce-scatter --ranks 4 --x-dtype int8 --x 'x{rank}.npy' --scales 's{rank}.npy' --out out.npy"),
                 "{rank}");
  expect_refused(run("reduce-scatter --ranks 4 --x-dtype int8 --x x0.npy --scales 's{rank}.npy' --out 'out{rank}.npy'"),
                 "{rank}");
}

TEST_F(CliRefusal, MissingRequiredOption) {
  RunResult r = run("reduce-scatter --ranks 4 --x 'x{rank}.npy' --scales 's{rank}.npy' --out 'out{rank}.npy'");
  expect_refused(r, "--x-dtype");
}

TEST_F(CliRefusal, UnwritableOutputLeavesNothing) {
  RunResult r = run(
      "reduce-scatter --ranks 4 --x-dtype int8 --x 'x{rank}.npy' --scales 's{rank}.npy' --out 'nodir/out{rank}.npy'");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("nodir/out0.npy"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(dir_ / "nodir"));
}

TEST_F(CliRefusal, FailedRunLeavesExistingOutputsUntouched) {
  { std::ofstream(dir_ / "old0.npy") << "previous"; }
  fs::remove(dir_ / "x1.npy");
  RunResult r =
      run("reduce-scatter --ranks 4 --x-dtype int8 --x 'x{rank}.npy' --scales 's{rank}.npy' --out 'old{rank}.npy'");
  EXPECT_NE(r.exit_code, 0);
  std::ifstream f(dir_ / "old0.npy");
  std::string content((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_EQ(content, "previous");
  EXPECT_FALSE(fs::exists(dir_ / "old1.npy"));
}

// ---- the documented workflow: generate -> quantize -> reduce-scatter ---------------------------

TEST_F(CliTest, GenerateQuantizeReduceScatterWorkflow) {
  RunResult g = run("generate --ranks 4 --bs 16 --hidden 1024 --seed 3 --out 'act{rank}.npy'");
  ASSERT_EQ(g.exit_code, 0) << g.err;
  RunResult q = run("quantize --ranks 4 --in 'act{rank}.npy' --x-dtype int8 --x 'x{rank}.npy' --scales 's{rank}.npy'");
  ASSERT_EQ(q.exit_code, 0) << q.err;
  RunResult r =
      run("reduce-scatter --ranks 4 --x-dtype int8 --out-dtype float --x 'x{rank}.npy' --scales 's{rank}.npy' --out "
          "'out{rank}.npy'");
  ASSERT_EQ(r.exit_code, 0) << r.err;

  Case c{XType::Int8, false, 4, {16, 1024}, "float"};
  std::vector<RankInput> in(4);
  std::vector<std::vector<float>> act(4);
  for (int k = 0; k < 4; ++k) {
    NpyFile a = read_npy(dir_ / ("act" + std::to_string(k) + ".npy"));
    NpyFile x = read_npy(dir_ / ("x" + std::to_string(k) + ".npy"));
    NpyFile s = read_npy(dir_ / ("s" + std::to_string(k) + ".npy"));
    ASSERT_EQ(a.descr, "<f4");
    ASSERT_EQ(a.shape, (std::vector<int64_t>{16, 1024}));
    ASSERT_EQ(x.descr, "|i1");
    ASSERT_EQ(x.shape, (std::vector<int64_t>{16, 1024}));
    ASSERT_EQ(s.descr, "<f4");
    ASSERT_EQ(s.shape, (std::vector<int64_t>{16, 8}));
    in[k] = {x.data, s.data};
    act[k].resize(16 * 1024);
    std::memcpy(act[k].data(), a.data.data(), a.data.size());
  }
  double err2 = 0, ref2 = 0;
  for (int rank = 0; rank < 4; ++rank) {
    NpyFile o = read_npy(dir_ / ("out" + std::to_string(rank) + ".npy"));
    ASSERT_EQ(o.shape, (std::vector<int64_t>{4, 1024}));
    EXPECT_TRUE(o.data == reference_output(c, in, rank * 4, 4)) << "rank " << rank;
    for (std::size_t i = 0; i < 4 * 1024; ++i) {
      float y;
      std::memcpy(&y, &o.data[i * 4], 4);
      double exact = 0;
      for (int k = 0; k < 4; ++k) exact += act[k][rank * 4 * 1024 + i];
      err2 += (y - exact) * (y - exact);
      ref2 += exact * exact;
    }
  }
  // INT8 with 128-element groups: quantization noise well under 5% of the signal.
  EXPECT_LT(std::sqrt(err2 / ref2), 0.05);
  EXPECT_GT(ref2, 0);
}

// ---- the fused operators: --in and --mode --------------------------------------------------------

// `reduce-scatter|all-reduce --in --mode` on float32, float16 and bfloat16 (uint16 bits) files
// writes the bits of `quantize` (of the same values in float32, exact) followed by the
// quantized operator.
TEST_F(CliTest, FusedEqualsQuantizeThenOperate) {
  struct Pick {
    const char* op;
    const char* mode;
    const char* x_dtype;
    const char* scales_dtype;
    const char* descr;  // the input file's element type
  };
  const Pick picks[] = {{"reduce-scatter", "kg-int8", "int8", "float", "<f4"},
                        {"all-reduce", "mx-e4m3", "e4m3", "float8_e8m0", "<f2"},
                        {"reduce-scatter", "kg-hif8", "hifloat8", "float", "<u2"},
                        {"all-reduce", "e5m2", "e5m2", "float", "<f4"}};
  const std::vector<int64_t> shape{2, 4, 1024};
  for (const Pick& p : picks) {
    SCOPED_TRACE(std::string(p.op) + " " + p.mode + " " + p.descr);
    std::mt19937 g(17);
    for (int r = 0; r < 2; ++r) {
      Bytes in, f32;
      for (int i = 0; i < 8 * 1024; ++i) {
        const float v =
            std::ldexp(static_cast<float>(static_cast<int>(g() % 2001) - 1000), -static_cast<int>(g() % 12));
        uint32_t u;
        std::memcpy(&u, &v, 4);
        if (std::string(p.descr) == "<f4") {
          for (int b = 0; b < 4; ++b) in.push_back(static_cast<uint8_t>(u >> (8 * b)));
          f32 = in;
          continue;
        }
        // 16-bit inputs: values a bf16 / fp16 holds exactly (few mantissa bits, small exponents).
        // (bfloat16: the top 16 bits, and the float32 file holds that truncated value.)
        const bool bf16 = std::string(p.descr) == "<u2";
        const uint32_t u16 = bf16 ? u >> 16 : oracle_fp16_bits(v);
        if (bf16) u &= 0xFFFF0000u;
        in.push_back(static_cast<uint8_t>(u16));
        in.push_back(static_cast<uint8_t>(u16 >> 8));
        for (int b = 0; b < 4; ++b) f32.push_back(static_cast<uint8_t>(u >> (8 * b)));
      }
      write_npy(dir_ / ("in" + std::to_string(r) + ".npy"), p.descr, shape, in);
      write_npy(dir_ / ("f32_" + std::to_string(r) + ".npy"), "<f4", shape, f32);
    }
    RunResult f =
        run(std::string(p.op) + " --ranks 2 --in 'in{rank}.npy' --mode " + p.mode + " --out 'outf{rank}.npy'");
    ASSERT_EQ(f.exit_code, 0) << f.err;
    EXPECT_NE(f.out.find("fused"), std::string::npos) << f.out;
    RunResult q = run(std::string("quantize --ranks 2 --in 'f32_{rank}.npy' --x-dtype ") + p.x_dtype +
                      " --scales-dtype " + p.scales_dtype + " --x 'x{rank}.npy' --scales 's{rank}.npy'");
    ASSERT_EQ(q.exit_code, 0) << q.err;
    RunResult o = run(std::string(p.op) + " --ranks 2 --x-dtype " + p.x_dtype +
                      " --x 'x{rank}.npy' --scales 's{rank}.npy' --out 'outq{rank}.npy'");
    ASSERT_EQ(o.exit_code, 0) << o.err;
    for (int r = 0; r < 2; ++r) {
      NpyFile a = read_npy(dir_ / ("outf" + std::to_string(r) + ".npy"));
      NpyFile b = read_npy(dir_ / ("outq" + std::to_string(r) + ".npy"));
      EXPECT_EQ(a.shape, b.shape);
      EXPECT_EQ(a.descr, "<u2");  // bfloat16 by default
      EXPECT_TRUE(a.data == b.data) << "rank " << r << " differs";
    }
  }
}

TEST_F(CliTest, FusedRefusesBadArguments) {
  RunResult g = run("generate --ranks 3 --bs 6 --hidden 1024 --out 'act{rank}.npy'");
  ASSERT_EQ(g.exit_code, 0) << g.err;
  expect_refused(run("reduce-scatter --ranks 2 --in 'act{rank}.npy' --out 'out{rank}.npy'"), "--mode: required");
  expect_refused(run("reduce-scatter --ranks 2 --in 'act{rank}.npy' --mode mx-int8 --out 'out{rank}.npy'"),
                 "--mode: must be one of");
  expect_refused(
      run("reduce-scatter --ranks 2 --in 'act{rank}.npy' --mode kg-int8 --x-dtype int8 --out 'out{rank}.npy'"),
      "--x-dtype cannot be given");
  expect_refused(
      run("reduce-scatter --ranks 2 --in 'act{rank}.npy' --mode kg-int8 --hif8-target 4 --out 'out{rank}.npy'"),
      "--hif8-target: applies to --mode kg-hif8 only");
  expect_refused(run("all-reduce --ranks 2 --mode kg-int8 --out 'out{rank}.npy'"), "--mode: needs --in");
  expect_refused(run("all-reduce --ranks 2 --x-dtype int8 --scales 's{rank}.npy' --out 'out{rank}.npy'"),
                 "--x: required");
  // The operator's own rule (rank count), with its status.
  RunResult r = run("reduce-scatter --ranks 3 --in 'act{rank}.npy' --mode kg-int8 --out 'out{rank}.npy'");
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("PARAM_INVALID"), std::string::npos) << r.err;
}

// ---- demo smoke test ------------------------------------------------------------------------------

TEST_F(CliTest, DemoJson) {
  const nlohmann::json j = demo_json("--ranks 4 --bs 64 --hidden 1024 --reps 2", 4, "vendor");
  ASSERT_TRUE(j.contains("rows"));
  EXPECT_EQ(j["bs"], 64);
  EXPECT_EQ(j["hidden"], 1024);
  const auto& rows = j["rows"];
  const std::vector<std::string> expected = {"bf16-ring", "int8", "hif8", "e4m3", "e5m2", "mx-e4m3", "mx-e5m2"};
  ASSERT_EQ(rows.size(), expected.size());
  const double elems = 64.0 * 1024.0;
  for (std::size_t i = 0; i < rows.size(); ++i) {
    const auto& row = rows[i];
    EXPECT_EQ(row["mode"], expected[i]);
    double rms = row["rel_rms_error"], mx = row["max_abs_error_rel"];
    EXPECT_TRUE(std::isfinite(rms) && std::isfinite(mx)) << row.dump();
    EXPECT_GT(rms, 0.0) << row.dump();  // every path rounds somewhere
    EXPECT_LT(rms, 0.1) << row.dump();
    EXPECT_LT(mx, 0.2) << row.dump();
    // Bytes each rank sends to the 3 others: 3/4 of x plus scales (bf16: 2 bytes per element).
    double per_elem = i == 0 ? 2.0 : (expected[i].rfind("mx-", 0) == 0 ? 1.0 + 1.0 / 32 : 1.0 + 4.0 / 128);
    EXPECT_DOUBLE_EQ(row["bytes_sent_per_rank"].get<double>(), elems * per_elem * 3 / 4) << row.dump();
    EXPECT_DOUBLE_EQ(row["ratio_vs_bf16"].get<double>(), per_elem / 2.0) << row.dump();
    for (const char* t : {"time_ms_median", "quantize_ms_median", "fused_ms_median"}) {
      if (i == 0) {
        EXPECT_TRUE(row[t].is_null()) << t;
      } else {
        EXPECT_GT(row[t].get<double>(), 0.0) << t;
      }
    }
  }
  EXPECT_LT(rows[1]["rel_rms_error"].get<double>(), 0.05);  // INT8
}

TEST_F(CliTest, DemoRefusesBadArguments) {
  RunResult r = run("demo --ranks 3");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--ranks"), std::string::npos) << r.err;
  r = run("demo --modes int8,bogus");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("bogus"), std::string::npos) << r.err;
}

// ---- the extended contract (contract.md §ext): 4-bit x, any rank count ------------------------
//
// The expected bits come from the rules alone (tests/fp4_oracle.hpp: the value lists; the
// quantizers' rule of §ext-fp4-quantizers; the packed layout of §ext-fp4-layout, the even
// element in bits 0-3), never from the library.

struct Fp4Case {
  const fp4_oracle::Fp4* fmt;
  bool mx;  // E8M0 scales (group 32), else fp32 (group 128)
  int n;
  std::vector<int64_t> shape;  // logical (..., H)
  const char* x_arg;           // as --x-dtype spells it (a name or an alias)
  const char* mode;            // the fused operators' --mode
};

std::size_t element_count(const std::vector<int64_t>& shape) {
  std::size_t count = 1;
  for (auto d : shape) count *= static_cast<std::size_t>(d);
  return count;
}

std::vector<int64_t> packed_shape(std::vector<int64_t> shape) {
  shape.back() /= 2;
  return shape;
}

std::vector<int64_t> scales_shape_of(bool mx, std::vector<int64_t> shape) {
  const int64_t h = shape.back();
  shape.pop_back();
  if (mx) {
    shape.push_back(h / 64);
    shape.push_back(2);
  } else {
    shape.push_back(h / 128);
  }
  return shape;
}

Bytes float_bytes(const std::vector<float>& v) {
  Bytes b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

// One rank's quantized input by the rules: packed codes and the scales' bytes.
RankInput fp4_quantize_oracle(const Fp4Case& c, const std::vector<float>& v) {
  const fp4_oracle::Fp4& f = *c.fmt;
  std::vector<uint8_t> codes(v.size());
  RankInput out;
  if (!c.mx) {
    for (std::size_t g = 0; g < v.size(); g += 128) {
      float amax = 0;
      for (std::size_t i = g; i < g + 128; ++i) amax = std::max(amax, std::fabs(v[i]));
      const float scale = amax / f.magnitudes[7];  // one fp32 division
      for (std::size_t i = g; i < g + 128; ++i) codes[i] = scale == 0 ? 0 : fp4_oracle::encode(f, v[i] / scale);
      const uint32_t u = f32_bits(scale);
      for (int b = 0; b < 4; ++b) out.scales.push_back(static_cast<uint8_t>(u >> (8 * b)));
    }
  } else {
    const int emax = f.type == qcoll::DType::Float4E2M1 ? 2 : 0;  // floor(log2(max finite))
    for (std::size_t g = 0; g < v.size(); g += 32) {
      double amax = 0;
      for (std::size_t i = g; i < g + 32; ++i) amax = std::max(amax, std::fabs(static_cast<double>(v[i])));
      int se = -127;
      if (amax > 0) {
        int ex;
        std::frexp(amax, &ex);  // amax = m * 2^ex, m in [0.5, 1)
        se = std::clamp(ex - 1 - emax, -127, 127);
      }
      out.scales.push_back(static_cast<uint8_t>(se + 127));
      for (std::size_t i = g; i < g + 32; ++i)
        codes[i] = fp4_oracle::encode(f, static_cast<float>(std::ldexp(static_cast<double>(v[i]), -se)));
    }
  }
  out.x.assign(v.size() / 2, 0);
  for (std::size_t i = 0; i < v.size(); ++i) out.x[i / 2] |= static_cast<uint8_t>(codes[i] << (4 * (i % 2)));
  return out;
}

// Rows [row0, row0 + rows) of the sum, cast to `out`, by the rules.
Bytes fp4_reduce_oracle(const Fp4Case& c, const std::vector<RankInput>& in, qcoll::DType out, std::size_t row0,
                        std::size_t rows) {
  const std::size_t h = static_cast<std::size_t>(c.shape.back()), osz = qcoll::dtype_size(out);
  const qcoll::DType sdt = c.mx ? qcoll::DType::Float8E8M0 : qcoll::DType::Float;
  Bytes o(rows * h * osz);
  for (std::size_t i = row0 * h; i < (row0 + rows) * h; ++i) {
    volatile float acc = 0.0f;
    for (const RankInput& r : in) {
      const unsigned code = (r.x[i / 2] >> (4 * (i % 2))) & 0xFu;
      volatile float d = fp4_oracle::value(*c.fmt, code);
      d = d * oracle::scale_at(sdt, r.scales.data(), i);
      acc = acc + d;
    }
    oracle::store(out, acc, o.data() + (i - row0 * h) * osz);
  }
  return o;
}

class CliFp4 : public CliTest {
 protected:
  // Writes act{r}.npy (float32, the logical shape) and returns the values.
  std::vector<std::vector<float>> write_activations(const Fp4Case& c, uint32_t seed) {
    std::vector<std::vector<float>> act;
    for (int r = 0; r < c.n; ++r) {
      act.push_back(oracle::random_values(element_count(c.shape), seed + static_cast<uint32_t>(r), 2.0));
      act.back()[3] = 0.0f;  // a zero and a negative zero among the values
      act.back()[4] = -0.0f;
      write_npy(dir_ / ("act" + std::to_string(r) + ".npy"), "<f4", c.shape, float_bytes(act.back()));
    }
    return act;
  }

  // Writes random packed x (every code) and scales for n ranks, x{r}.npy and s{r}.npy.
  std::vector<RankInput> write_random_inputs(const Fp4Case& c, uint32_t seed) {
    std::mt19937 rng(seed);
    const std::size_t count = element_count(c.shape);
    std::vector<RankInput> in(static_cast<std::size_t>(c.n));
    for (int r = 0; r < c.n; ++r) {
      for (std::size_t b = 0; b < count / 2; ++b) in[r].x.push_back(static_cast<uint8_t>(rng()));
      for (std::size_t g = 0; g < count / (c.mx ? 32 : 128); ++g) {
        if (c.mx) {
          in[r].scales.push_back(static_cast<uint8_t>(0x70 + rng() % 32));
          continue;
        }
        const uint32_t u = f32_bits(std::ldexp(1.0f + (rng() % 1000) / 1000.0f, -static_cast<int>(rng() % 12)));
        for (int b = 0; b < 4; ++b) in[r].scales.push_back(static_cast<uint8_t>(u >> (8 * b)));
      }
      write_npy(dir_ / ("x" + std::to_string(r) + ".npy"), "|u1", packed_shape(c.shape), in[r].x);
      write_npy(dir_ / ("s" + std::to_string(r) + ".npy"), c.mx ? "|u1" : "<f4", scales_shape_of(c.mx, c.shape),
                in[r].scales);
    }
    return in;
  }

  std::string operator_args(const Fp4Case& c, const std::string& out_dtype, const std::string& out) const {
    return "--ranks " + std::to_string(c.n) + " --x-dtype " + c.x_arg + " --out-dtype " + out_dtype +
           " --x 'x{rank}.npy' --scales 's{rank}.npy' --out '" + out + "{rank}.npy'";
  }

  // Every rank's output file of `op` against the oracle.
  void expect_outputs(const std::string& op, const Fp4Case& c, const std::vector<RankInput>& in,
                      const std::string& out_dtype, const std::string& out) {
    using qcoll::DType;
    const DType odt = out_dtype == "float" ? DType::Float : out_dtype == "float16" ? DType::Float16 : DType::BFloat16;
    const std::size_t bs = element_count(c.shape) / static_cast<std::size_t>(c.shape.back());
    const std::size_t rows = op == "reduce-scatter" ? bs / static_cast<std::size_t>(c.n) : bs;
    const Bytes all = op == "all-reduce" ? fp4_reduce_oracle(c, in, odt, 0, bs) : Bytes{};
    for (int r = 0; r < c.n; ++r) {
      SCOPED_TRACE(op + " rank " + std::to_string(r));
      NpyFile o = read_npy(dir_ / (out + std::to_string(r) + ".npy"));
      EXPECT_EQ(o.descr, odt == DType::Float ? "<f4" : odt == DType::Float16 ? "<f2" : "<u2");
      if (op == "all-reduce") {
        EXPECT_EQ(o.shape, c.shape);
        EXPECT_TRUE(o.data == all);
      } else {
        EXPECT_EQ(o.shape, (std::vector<int64_t>{static_cast<int64_t>(rows), c.shape.back()}));
        EXPECT_TRUE(o.data == fp4_reduce_oracle(c, in, odt, static_cast<std::size_t>(r) * rows, rows));
      }
    }
  }
};

// quantize (packed uint8 (..., H/2) files) -> reduce-scatter / all-reduce, and the fused
// operators from the same float32 files: all bit for bit as the rules say.
TEST_F(CliFp4, QuantizeThenOperateAndFused) {
  const Fp4Case cases[] = {
      {&fp4_oracle::kE2M1, false, 4, {16, 1024}, "e2m1", "kg-e2m1"},
      {&fp4_oracle::kE1M2, true, 3, {2, 6, 1024}, "float4_e1m2", "mx-e1m2"},  // 3-D, 3 ranks
      {&fp4_oracle::kE2M1, true, 2, {4, 2048}, "float4_e2m1fn", "mx-e2m1"},
  };
  uint32_t seed = 40;
  for (const Fp4Case& c : cases) {
    SCOPED_TRACE(std::string(c.fmt->name) + (c.mx ? " MX" : " KG") + ", " + std::to_string(c.n) + " ranks");
    const auto act = write_activations(c, seed += 10);
    RunResult q =
        run_extended("quantize --ranks " + std::to_string(c.n) + " --in 'act{rank}.npy' --x-dtype " + c.fmt->name +
                     " --scales-dtype " + (c.mx ? "e8m0" : "float") + " --x 'x{rank}.npy' --scales 's{rank}.npy'");
    ASSERT_EQ(q.exit_code, 0) << q.err;
    std::vector<RankInput> want;
    for (int r = 0; r < c.n; ++r) {
      want.push_back(fp4_quantize_oracle(c, act[r]));
      NpyFile x = read_npy(dir_ / ("x" + std::to_string(r) + ".npy"));
      NpyFile sc = read_npy(dir_ / ("s" + std::to_string(r) + ".npy"));
      EXPECT_EQ(x.descr, "|u1");
      EXPECT_EQ(x.shape, packed_shape(c.shape)) << "two codes a byte: the last dimension is H/2";
      EXPECT_TRUE(x.data == want.back().x) << "rank " << r << ": codes differ from the rules";
      EXPECT_EQ(sc.descr, c.mx ? "|u1" : "<f4");
      EXPECT_EQ(sc.shape, scales_shape_of(c.mx, c.shape));
      EXPECT_TRUE(sc.data == want.back().scales) << "rank " << r << ": scales differ from the rules";
    }
    for (const std::string op : {"reduce-scatter", "all-reduce"}) {
      const std::string out_dtype = op == "all-reduce" ? "bfloat16" : "float";
      RunResult o = run_extended(op + " " + operator_args(c, out_dtype, "out"));
      ASSERT_EQ(o.exit_code, 0) << o.err;
      EXPECT_NE(o.out.find("(packed: uint8 " + shape_tuple(packed_shape(c.shape)) + ")"), std::string::npos) << o.out;
      expect_outputs(op, c, want, out_dtype, "out");
      RunResult f = run_extended(op + " --ranks " + std::to_string(c.n) + " --in 'act{rank}.npy' --mode " + c.mode +
                                 " --out-dtype " + out_dtype + " --out 'fused{rank}.npy'");
      ASSERT_EQ(f.exit_code, 0) << f.err;
      expect_outputs(op, c, want, out_dtype, "fused");
    }
  }
}

// Random packed bytes (every code pair) on 16 and 5 ranks (the extended contract's rank counts).
TEST_F(CliFp4, RandomPackedDataManyRanks) {
  const Fp4Case cases[] = {{&fp4_oracle::kE2M1, true, 16, {32, 1024}, "float4_e2m1", "mx-e2m1"},
                           {&fp4_oracle::kE1M2, false, 5, {10, 1152}, "e1m2", "kg-e1m2"}};
  for (const Fp4Case& c : cases) {
    SCOPED_TRACE(std::string(c.fmt->name) + ", " + std::to_string(c.n) + " ranks");
    const auto in = write_random_inputs(c, 77);
    for (const std::string op : {"reduce-scatter", "all-reduce"}) {
      RunResult o = run_extended(op + " " + operator_args(c, "float16", "out"));
      ASSERT_EQ(o.exit_code, 0) << o.err;
      expect_outputs(op, c, in, "float16", "out");
    }
  }
}

// 8-bit x on 3 ranks: refused under vendor (rule 3), the oracle's bits under extended.
TEST_F(CliTest, ThreeRanksUnderTheExtendedContract) {
  env_ = "QCOLL_CONTRACT=extended ";
  check_operator("reduce-scatter", {XType::E4M3, true, 3, {6, 1024}, "bfloat16"}, 21);
  check_operator("all-reduce", {XType::Int8, false, 3, {3, 1024}, "float"}, 22);
}

TEST_F(CliFp4, VendorRefusesTheFourBitFormats) {
  const Fp4Case c{&fp4_oracle::kE2M1, false, 2, {4, 1024}, "e2m1", "kg-e2m1"};
  write_activations(c, 5);
  write_random_inputs(c, 6);
  const std::string needs = " needs QCOLL_CONTRACT=extended (the contract is vendor)";
  for (const char* name : {"float4_e2m1", "float4_e2m1fn", "e2m1"}) {
    RunResult r = run(std::string("quantize --ranks 2 --in 'act{rank}.npy' --x-dtype ") + name +
                      " --x 'q{rank}.npy' --scales 'qs{rank}.npy'");
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_NE(r.err.find("--x-dtype: float4_e2m1" + needs), std::string::npos) << r.err;
    EXPECT_FALSE(fs::exists(dir_ / "q0.npy"));
  }
  RunResult r = run("quantize --ranks 2 --in 'act{rank}.npy' --x-dtype e1m2 --x 'q{rank}.npy' --scales 'qs{rank}.npy'");
  EXPECT_NE(r.err.find("--x-dtype: float4_e1m2" + needs), std::string::npos) << r.err;
  r = run("reduce-scatter " + operator_args(c, "float", "out"));
  EXPECT_EQ(r.exit_code, 2);
  expect_refused(r, "--x-dtype: float4_e2m1" + needs);
  for (const char* mode : {"kg-e2m1", "mx-e1m2"}) {
    r = run(std::string("all-reduce --ranks 2 --in 'act{rank}.npy' --mode ") + mode + " --out 'out{rank}.npy'");
    EXPECT_EQ(r.exit_code, 2);
    expect_refused(r, std::string("--mode: ") + mode + needs);
  }
  // The short name of a 4-bit KG mode is the extended contract's too.
  expect_refused(run("all-reduce --ranks 2 --in 'act{rank}.npy' --mode e1m2 --out 'out{rank}.npy'"),
                 "--mode: e1m2" + needs);
  // An 8-bit mode name that no contract has stays an unknown mode.
  expect_refused(run("all-reduce --ranks 2 --in 'act{rank}.npy' --mode mx-e3m0 --out 'out{rank}.npy'"),
                 "--mode: must be one of kg-int8, kg-hif8, kg-e4m3, kg-e5m2, mx-e4m3, mx-e5m2, got 'mx-e3m0'");
  // A bad QCOLL_CONTRACT: the setting's message, an argument error.
  env_ = "QCOLL_CONTRACT=Extended ";
  r = run("reduce-scatter " + operator_args(c, "float", "out"));
  EXPECT_EQ(r.exit_code, 2);
  expect_refused(r, "QCOLL_CONTRACT: must be vendor or extended");
}

TEST_F(CliFp4, BadFourBitFiles) {
  const Fp4Case c{&fp4_oracle::kE2M1, false, 2, {8, 1024}, "e2m1", "kg-e2m1"};
  write_random_inputs(c, 8);
  // One code a byte (the logical shape) where the packed one belongs.
  write_npy(dir_ / "x1.npy", "|u1", c.shape, Bytes(8 * 1024));
  RunResult r = run_extended("all-reduce " + operator_args(c, "float", "out"));
  EXPECT_EQ(r.exit_code, 3) << r.err;
  expect_refused(r,
                 "x1.npy: float4_e2m1 x is packed, two codes a byte, so its last dimension must be H/2 = 512 for the "
                 "scales' H = 1024; got shape (8, 1024) (H = 2048)");
  // MX scales say H too.
  const Fp4Case m{&fp4_oracle::kE1M2, true, 2, {8, 1024}, "e1m2", "mx-e1m2"};
  write_random_inputs(m, 9);
  write_npy(dir_ / "x0.npy", "|u1", {8, 256}, Bytes(8 * 256));
  expect_refused(run_extended("reduce-scatter " + operator_args(m, "float", "out")),
                 "x0.npy: float4_e1m2 x is packed, two codes a byte, so its last dimension must be H/2 = 512");
  // int8 elements cannot hold packed codes.
  write_npy(dir_ / "x0.npy", "|i1", {8, 512}, Bytes(8 * 512));
  expect_refused(run_extended("reduce-scatter " + operator_args(m, "float", "out")),
                 "x0.npy: x has element type int8 ('|i1'), which cannot hold float4_e1m2 data; expected uint8 ('|u1') "
                 "holding two codes a byte (last dimension H/2)");
  // A packed H the operators refuse (H = 1088, a multiple of 64 but not of 128): the library's rule.
  for (int k = 0; k < 2; ++k) {
    write_npy(dir_ / ("x" + std::to_string(k) + ".npy"), "|u1", {8, 544}, Bytes(8 * 544));
    write_npy(dir_ / ("s" + std::to_string(k) + ".npy"), "|u1", {8, 17, 2}, Bytes(8 * 17 * 2, 0x7F));
  }
  r = run_extended("reduce-scatter " + operator_args(m, "float", "out"));
  expect_refused(r, "qcoll: PARAM_INVALID (161002): ");
}

TEST_F(CliTest, DemoExtendedHasFourBitRowsAndThreeRanks) {
  env_ = "QCOLL_CONTRACT=extended ";
  const nlohmann::json j = demo_json("--ranks 3 --bs 48 --hidden 1024 --reps 1", 3, "extended");
  ASSERT_TRUE(j.contains("rows"));
  const auto& rows = j["rows"];
  const std::vector<std::string> expected = {"bf16-ring", "int8", "hif8", "e4m3",    "e5m2",   "mx-e4m3",
                                             "mx-e5m2",   "e2m1", "e1m2", "mx-e2m1", "mx-e1m2"};
  ASSERT_EQ(rows.size(), expected.size()) << j.dump(1);
  const double elems = 48.0 * 1024.0, int8_rms = rows[1]["rel_rms_error"].get<double>();
  for (std::size_t i = 7; i < rows.size(); ++i) {
    const auto& row = rows[i];
    SCOPED_TRACE(row.dump());
    EXPECT_EQ(row["mode"], expected[i]);
    EXPECT_EQ(row["x_dtype"], i % 2 == 1 ? "float4_e2m1" : "float4_e1m2");
    // 4 bits an element plus the scales, 2/3 of it to the other ranks.
    const double per_elem = 0.5 + (row["mode"].get<std::string>().rfind("mx-", 0) == 0 ? 1.0 / 32 : 4.0 / 128);
    EXPECT_DOUBLE_EQ(row["bytes_sent_per_rank"].get<double>(), elems * per_elem * 2 / 3);
    const double rms = row["rel_rms_error"];
    EXPECT_TRUE(std::isfinite(rms) && std::isfinite(row["max_abs_error_rel"].get<double>()));
    // Three bits of precision: coarser than INT8, still a signal.
    EXPECT_GT(rms, 2 * int8_rms);
    EXPECT_LT(rms, 0.5);
    EXPECT_GT(row["fused_ms_median"].get<double>(), 0.0);
  }
}

TEST_F(CliTest, DemoRankCountsFollowTheContract) {
  RunResult r = run("demo --ranks 16 --bs 64 --hidden 1024 --reps 1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--ranks must be 2, 4 or 8, got 16"), std::string::npos) << r.err;
  r = run("demo --ranks 2 --modes int8,mx-e2m1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--modes: mx-e2m1 needs QCOLL_CONTRACT=extended (the contract is vendor)"), std::string::npos)
      << r.err;
  env_ = "QCOLL_CONTRACT=extended ";
  const nlohmann::json j =
      demo_json("--ranks 16 --bs 64 --hidden 1024 --reps 1 --modes kg-e2m1,mx-e1m2", 16, "extended");
  ASSERT_EQ(j.value("rows", nlohmann::json::array()).size(), 3u);
  EXPECT_EQ(j["rows"][1]["mode"], "e2m1");
  EXPECT_EQ(j["rows"][2]["mode"], "mx-e1m2");
  r = run("demo --ranks 1 --bs 64 --hidden 1024 --reps 1");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--ranks must be in [2, 1024], got 1"), std::string::npos) << r.err;
}

}  // namespace
