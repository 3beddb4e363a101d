// `qcoll formats show|encode`: runs the built program (env QCOLL_CLI) and checks its
// output against values stated in contract.md §vectors, the refusal cases and exit codes.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

struct Result {
  int rc = -1;
  std::string out, err;
  std::vector<std::string> lines() const {
    std::vector<std::string> v;
    std::istringstream in(out);
    for (std::string l; std::getline(in, l);) v.push_back(l);
    return v;
  }
};

std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

Result run_cli(const std::vector<std::string>& args) {
  Result r;
  const char* cli = std::getenv("QCOLL_CLI");
  if (!cli) {
    r.err = "QCOLL_CLI not set";
    return r;
  }
  char err_path[] = "/tmp/qcoll_cli_formats_err_XXXXXX";
  const int fd = mkstemp(err_path);
  if (fd < 0) return r;
  close(fd);
  std::string cmd = quote(cli);
  for (const auto& a : args) {
    cmd += ' ';
    cmd.append(quote(a));
  }
  cmd.append(" 2>");
  cmd.append(quote(err_path));
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return r;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) r.out.append(buf, n);
  const int status = pclose(p);
  r.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  std::ifstream e(err_path);
  std::stringstream ss;
  ss << e.rdbuf();
  r.err = ss.str();
  unlink(err_path);
  return r;
}

}  // namespace

TEST(CliFormats, ShowHiFloat8) {
  const Result r = run_cli({"formats", "show", "hifloat8"});
  ASSERT_EQ(r.rc, 0) << r.err;
  const auto lines = r.lines();
  ASSERT_EQ(lines.size(), 256u);
  // contract.md §vectors examples, in byte order
  EXPECT_EQ(lines[0x00], "0x00 0");
  EXPECT_EQ(lines[0x01], "0x01 2.38418579e-07");  // 2^-22
  EXPECT_EQ(lines[0x08], "0x08 1");
  EXPECT_EQ(lines[0x09], "0x09 1.125");
  EXPECT_EQ(lines[0x18], "0x18 0.5");
  EXPECT_EQ(lines[0x2F], "0x2F 15");
  EXPECT_EQ(lines[0x4F], "0x4F 224");
  EXPECT_EQ(lines[0x61], "0x61 384");
  EXPECT_EQ(lines[0x6E], "0x6E 32768");
  EXPECT_EQ(lines[0x6F], "0x6F inf");
  EXPECT_EQ(lines[0x70], "0x70 0.00390625");
  EXPECT_EQ(lines[0x80], "0x80 nan");
  EXPECT_EQ(lines[0x88], "0x88 -1");
  EXPECT_EQ(lines[0xEF], "0xEF -inf");
}

TEST(CliFormats, ShowOtherFormatsAndAliases) {
  Result r = run_cli({"formats", "show", "e4m3"});
  ASSERT_EQ(r.rc, 0) << r.err;
  auto lines = r.lines();
  ASSERT_EQ(lines.size(), 256u);
  EXPECT_EQ(lines[0x7E], "0x7E 448");
  EXPECT_EQ(lines[0x7F], "0x7F nan");
  EXPECT_EQ(lines[0xFF], "0xFF nan");
  EXPECT_EQ(lines[0x80], "0x80 -0");
  r = run_cli({"formats", "show", "float8_e5m2"});
  lines = r.lines();
  ASSERT_EQ(lines.size(), 256u);
  EXPECT_EQ(lines[0x7B], "0x7B 57344");
  EXPECT_EQ(lines[0x7C], "0x7C inf");
  EXPECT_EQ(lines[0xFC], "0xFC -inf");
  EXPECT_EQ(lines[0x01], "0x01 1.52587891e-05");
  r = run_cli({"formats", "show", "float8_e8m0"});
  lines = r.lines();
  ASSERT_EQ(lines.size(), 256u);
  EXPECT_EQ(lines[0x00], "0x00 5.87747175e-39");  // 2^-127
  EXPECT_EQ(lines[0x7F], "0x7F 1");
  EXPECT_EQ(lines[0xFE], "0xFE 1.70141183e+38");
  EXPECT_EQ(lines[0xFF], "0xFF nan");
  r = run_cli({"formats", "show", "int8"});
  lines = r.lines();
  ASSERT_EQ(lines.size(), 256u);
  EXPECT_EQ(lines[0x7F], "0x7F 127");
  EXPECT_EQ(lines[0x80], "0x80 -128");
  EXPECT_EQ(lines[0xFF], "0xFF -1");
}

TEST(CliFormats, EncodeSpecVectors) {
  Result r = run_cli({"formats", "encode", "hifloat8", "1.0625", "1.1875", "240", "0.1", "100", "1000", "40959",
                      "40960", "0x1p-23", "0x1p-24"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out,
            "0x09 1.125\n0x0A 1.25\n0x60 256\n0x52 0.09375\n0x4A 96\n0x64 1024\n"
            "0x6E 32768\n0x6F inf\n0x01 2.38418579e-07\n0x00 0\n");
  r = run_cli({"formats", "encode", "float8_e4m3fn", "1.0625", "1.1875", "17", "19", "464", "500"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "0x38 1\n0x3A 1.25\n0x58 16\n0x5A 20\n0x7E 448\n0x7F nan\n");
  r = run_cli({"formats", "encode", "e5m2", "1.125", "1.375", "61439", "61440"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "0x3C 1\n0x3E 1.5\n0x7B 57344\n0x7C inf\n");
}

TEST(CliFormats, EncodeSaturate) {
  Result r = run_cli({"formats", "encode", "e4m3", "--saturate", "500", "-500", "inf", "nan"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "0x7E 448\n0xFE -448\n0x7E 448\n0x7F nan\n");
  r = run_cli({"formats", "encode", "--saturate", "e5m2", "61440", "-inf"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "0x7B 57344\n0xFB -57344\n");
  r = run_cli({"formats", "encode", "hif8", "40960", "-inf", "--saturate"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "0x6E 32768\n0xEE -32768\n");
}

TEST(CliFormats, EncodeHexFloatNegativesAndSixteenBit) {
  Result r = run_cli({"formats", "encode", "e4m3", "0x1.8p3", "-1", "-inf", "-.5", "-0x1p-9", "-0"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "0x54 12\n0xB8 -1\n0xFF nan\n0xB0 -0.5\n0x81 -0.001953125\n0x80 -0\n");
  r = run_cli({"formats", "encode", "hifloat8", "--", "-1", "-0x1p-24"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "0x88 -1\n0x00 0\n");
  r = run_cli({"formats", "encode", "float16", "65504", "65520", "-0x1p-24", "1e-8"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "0x7BFF 65504\n0x7C00 inf\n0x8001 -5.96046448e-08\n0x0000 0\n");
  r = run_cli({"formats", "encode", "bf16", "1.00390625", "1.01171875", "-3"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "0x3F80 1\n0x3F82 1.015625\n0xC040 -3\n");
  r = run_cli({"formats", "encode", "int8", "2.5", "3.5", "-200", "nan"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "0x02 2\n0x04 4\n0x80 -128\n0x00 0\n");
  r = run_cli({"formats", "encode", "e8m0", "1.5", "0.3", "0"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "0x80 2\n0x7D 0.25\n0x00 5.87747175e-39\n");
}

TEST(CliFormats, Refusals) {
  struct Case {
    std::vector<std::string> args;
    std::string err_has;
  };
  const Case cases[] = {
      {{"formats", "encode", "e4m3", "1", "abc", "2"}, "'abc'"},
      {{"formats", "encode", "e4m3", "1.5x"}, "'1.5x'"},
      {{"formats", "encode", "e4m3", ""}, "''"},
      {{"formats", "encode", "float9", "1"}, "'float9'"},
      {{"formats", "encode", "e4m3"}, "no VALUE"},
      {{"formats", "encode", "float", "1"}, "'float'"},
      {{"formats", "encode", "bf16", "--saturate", "1"}, "--saturate"},
      {{"formats", "show", "float16"}, "'float16'"},
      {{"formats", "show", "nope"}, "'nope'"},
  };
  for (const auto& c : cases) {
    const Result r = run_cli(c.args);
    std::string joined;
    for (const auto& a : c.args) joined += a + " ";
    EXPECT_NE(r.rc, 0) << joined;
    EXPECT_EQ(r.out, "") << joined;
    EXPECT_NE(r.err.find(c.err_has), std::string::npos) << joined << " stderr: " << r.err;
  }
}

// The 4-bit formats (contract.md §ext-fp4): their 16 codes from the value lists, and the
// encoder's test vectors of §ext-status (always saturating, the sign kept, NaN to 0).
TEST(CliFormats, FourBitFormats) {
  Result r = run_cli({"formats", "show", "float4_e2m1"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out,
            "0x0 0\n0x1 0.5\n0x2 1\n0x3 1.5\n0x4 2\n0x5 3\n0x6 4\n0x7 6\n"
            "0x8 -0\n0x9 -0.5\n0xA -1\n0xB -1.5\n0xC -2\n0xD -3\n0xE -4\n0xF -6\n");
  r = run_cli({"formats", "show", "e1m2"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out,
            "0x0 0\n0x1 0.25\n0x2 0.5\n0x3 0.75\n0x4 1\n0x5 1.25\n0x6 1.5\n0x7 1.75\n"
            "0x8 -0\n0x9 -0.25\n0xA -0.5\n0xB -0.75\n0xC -1\n0xD -1.25\n0xE -1.5\n0xF -1.75\n");
  r = run_cli({"formats", "encode", "float4_e2m1fn", "0.25", "0.75", "1.25", "1.75", "2.5", "3.5", "5", "5.5", "1e9",
               "-inf", "-0", "-0.1", "nan"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "0x0 0\n0x2 1\n0x2 1\n0x4 2\n0x4 2\n0x6 4\n0x6 4\n0x7 6\n0x7 6\n0xF -6\n0x8 -0\n0x8 -0\n0x0 0\n");
  r = run_cli(
      {"formats", "encode", "e1m2", "0.125", "0.375", "0.875", "1.125", "1.625", "1.8125", "-100", "--saturate"});
  ASSERT_EQ(r.rc, 0) << r.err;
  EXPECT_EQ(r.out, "0x0 0\n0x2 0.5\n0x4 1\n0x4 1\n0x6 1.5\n0x7 1.75\n0xF -1.75\n");
}
