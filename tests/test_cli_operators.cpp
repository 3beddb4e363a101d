// The qcoll program's operator commands, run as a user would (env QCOLL_CLI = the binary).
// Inputs are .npy bytes built here by hand; outputs are read back with a minimal reader of
// this file and compared bit for bit with the oracle (tests/oracle.hpp: decode formulas,
// fp32 multiply then add in rank order, round-to-nearest-even casts). Refusals must exit
// non-zero, explain themselves on stderr, and create no output file.
#include <gtest/gtest.h>
#include <sys/wait.h>

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
    std::string cmd = "cd '" + dir_.string() + "' && QCOLL_TIMEOUT_S=20 '" + cli_ + "' " + args + " >'" + out.string() +
                      "' 2>'" + err.string() + "'";
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

  std::string cli_;
  fs::path dir_;
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
  RunResult r = run("demo --ranks 4 --bs 64 --hidden 1024 --reps 2 --json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  nlohmann::json j = nlohmann::json::parse(r.out);
  EXPECT_EQ(j["ranks"], 4);
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

}  // namespace
