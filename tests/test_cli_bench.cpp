// `qcoll bench` smoke tests (env QCOLL_CLI = the binary): tiny sizes, one timed round, so the
// command cannot rot. Checks what the output must say independently of the timings: one row
// per (operator, mode), positive times, the transport, the wire-byte formulas (written here),
// and -- with MPI peers -- that the peers and qcoll computed the sum (their errors against
// the fp32 peer's result stay within what bf16 rounding and 8-bit quantization allow).
// Speed is never asserted.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace fs = std::filesystem;

namespace {

struct RunResult {
  int exit_code = -1;
  std::string out, err;
};

class CliBench : public ::testing::Test {
 protected:
  void SetUp() override {
    const char* cli = std::getenv("QCOLL_CLI");
    if (cli == nullptr || *cli == '\0') GTEST_SKIP() << "QCOLL_CLI is not set";
    cli_ = cli;
    dir_ = fs::temp_directory_path() / ("qcoll_cli_bench_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    if (!dir_.empty()) fs::remove_all(dir_);
  }

  RunResult run(const std::string& prefix, const std::string& args) {
    const fs::path out = dir_ / "stdout.txt", err = dir_ / "stderr.txt";
    const std::string cmd = "cd '" + dir_.string() + "' && QCOLL_TIMEOUT_S=30 timeout 120 " + prefix + " '" + cli_ +
                            "' " + args + " >'" + out.string() + "' 2>'" + err.string() + "'";
    const int st = std::system(cmd.c_str());
    RunResult r;
    r.exit_code = WIFEXITED(st) ? WEXITSTATUS(st) : 1000;
    std::ifstream fo(out), fe(err);
    r.out.assign(std::istreambuf_iterator<char>(fo), std::istreambuf_iterator<char>());
    r.err.assign(std::istreambuf_iterator<char>(fe), std::istreambuf_iterator<char>());
    return r;
  }

  nlohmann::json read_json(const std::string& name) {
    std::ifstream f(dir_ / name);
    EXPECT_TRUE(f.good()) << name << " was not written";
    nlohmann::json j;
    if (f) f >> j;
    return j;
  }

  // What every row must hold, whoever ran it: (BS, H) = (64, 1024) on n ranks.
  // `transport`: the expected one, or "shm|mpi" for either (shared memory falls back to MPI
  // when /dev/shm is too small for the windows, as in small containers).
  static void check_rows(const nlohmann::json& j, int n, const std::string& transport, bool peers) {
    ASSERT_TRUE(j.contains("rows")) << j.dump(1);
    const auto& rows = j["rows"];
    ASSERT_EQ(rows.size(), 4u) << "2 operators x 2 modes";
    int rs = 0;
    for (const auto& r : rows) {
      SCOPED_TRACE(r.dump());
      EXPECT_EQ(r["n"].get<int>(), n);
      const std::string t = r["transport"].get<std::string>();
      if (transport == "shm|mpi")
        EXPECT_TRUE(t == "shm" || t == "mpi") << t;
      else
        EXPECT_EQ(t, transport);
      EXPECT_EQ(r["bs"].get<int>(), 64);
      EXPECT_EQ(r["h"].get<int>(), 1024);
      ASSERT_TRUE(r["qcoll_s"].is_number());
      EXPECT_GT(r["qcoll_s"].get<double>(), 0.0);
      const bool is_rs = r["op"].get<std::string>() == "reduce-scatter";
      rs += is_rs;
      const std::string mode = r["mode"].get<std::string>();
      // Per rank: fp32 input 64*1024*4 bytes; 8-bit x (4-bit x: half a byte an element,
      // contract.md §ext-fp4) plus scales (KG: 4 bytes per 128, MX: 1 byte per 32); a reduce-scatter sends (n-1)/n of
      // it, an all-reduce the less of that plus (n-1)/n of the bf16 output (reduce-scatter + all-gather) and n-1 times
      // the quantized input (the gather); the fp32/bf16 peers (n-1)/n of their input, x2.
      const double elems = 64.0 * 1024.0, frac = (n - 1.0) / n;
      const bool fp4 = mode.find("e2m1") != std::string::npos || mode.find("e1m2") != std::string::npos;
      const double qbytes = elems * (fp4 ? 0.5 : 1.0) + (mode.rfind("kg-", 0) == 0 ? elems / 128 * 4 : elems / 32);
      EXPECT_DOUBLE_EQ(r["logical_bytes"].get<double>(), elems * 4);
      EXPECT_DOUBLE_EQ(r["wire_bytes_qcoll"].get<double>(),
                       is_rs ? frac * qbytes : std::min(frac * qbytes + frac * elems * 2, (n - 1.0) * qbytes));
      EXPECT_DOUBLE_EQ(r["wire_bytes_fp32"].get<double>(), frac * elems * 4 * (is_rs ? 1 : 2));
      EXPECT_DOUBLE_EQ(r["wire_bytes_bf16"].get<double>(), frac * elems * 2 * (is_rs ? 1 : 2));
      if (peers) {
        EXPECT_GT(r["fp32_s"].get<double>(), 0.0);
        EXPECT_GT(r["bf16_s"].get<double>(), 0.0);
        // bf16: inputs and every partial sum rounded to 8 significant bits: error near 2^-9,
        // never 0 on Gaussian data, far below 1e-2. qcoll: 8-bit quantization (with outlier
        // channels) then a bf16 output: percent level, below 0.1 for these modes (4-bit x:
        // three significant bits, below 0.5).
        const double e16 = r["bf16_rel_err"].get<double>(), eq = r["qcoll_rel_err"].get<double>();
        EXPECT_GT(e16, 1e-4);
        EXPECT_LT(e16, 1e-2);
        EXPECT_GT(eq, fp4 ? 1e-2 : 1e-4);
        EXPECT_LT(eq, fp4 ? 0.5 : 0.1);
      } else {
        EXPECT_TRUE(r["fp32_s"].is_null());
        EXPECT_TRUE(r["bf16_s"].is_null());
      }
    }
    EXPECT_EQ(rs, 2);
  }

  std::string cli_;
  fs::path dir_;
};

constexpr const char* kTiny = "--sizes 64x1024 --modes kg-int8,mx-e4m3 --repeats 1 --warmup 0";
// Two MPI ranks on this host (the prefix of run()).
constexpr const char* kMpirun2 =
    "mpirun --allow-run-as-root --oversubscribe --mca btl_vader_single_copy_mechanism none -np 2";

TEST_F(CliBench, ThreadRanksTimeQcollOnly) {
  RunResult r = run("", std::string("bench --ranks 2 ") + kTiny + " --json t.json");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("| reduce-scatter | 64 x 1024 | 2 | threads | kg-int8 |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("skipped"), std::string::npos) << "peers must be labelled as skipped:\n" << r.out;
  check_rows(read_json("t.json"), 2, "threads", false);
}

TEST_F(CliBench, MpiRanksTimeQcollAndPeers) {
#ifndef QCOLL_HAVE_MPI
  GTEST_SKIP() << "built without MPI";
#else
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0) GTEST_SKIP() << "mpirun not found";
  RunResult r = run(kMpirun2, std::string("bench ") + kTiny + " --json m.json");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("mpi-fp32"), std::string::npos) << r.out;
  check_rows(read_json("m.json"), 2, "shm|mpi", true);
#endif
}

// --input: one row per (operator, input, mode), each naming its input; thread ranks have no
// peers, so nothing is compared.
TEST_F(CliBench, InputsQuantizedBf16Fp32) {
  RunResult r = run("", std::string("bench --ranks 2 ") + kTiny + " --input quantized,bf16,fp32 --json t.json");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("| reduce-scatter | 64 x 1024 | 2 | threads | kg-int8 | bf16 |"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("qcoll from bf16/fp32 input: fused (QuantizeReduceScatter"), std::string::npos)
      << "float input must be labelled:\n"
      << r.out;
  nlohmann::json j = read_json("t.json");
  ASSERT_EQ(j["rows"].size(), 12u) << "2 operators x 3 inputs x 2 modes";
  std::map<std::string, int> per_input;
  for (const auto& row : j["rows"]) {
    SCOPED_TRACE(row.dump());
    per_input[row["input"].get<std::string>()]++;
    // Float input runs the fused operator; pre-quantized input the quantized one.
    EXPECT_EQ(row["qcoll_path"], row["input"] == "quantized" ? "operator" : "fused");
    EXPECT_GT(row["qcoll_s"].get<double>(), 0.0);
    EXPECT_GT(row["quant_s"].get<double>(), 0.0);
    EXPECT_TRUE(row["peers"].empty());
    EXPECT_TRUE(row["fastest_peer"].is_null());
  }
  EXPECT_EQ(per_input, (std::map<std::string, int>{{"bf16", 4}, {"fp32", 4}, {"quantized", 4}}));
  r = run("", std::string("bench --ranks 2 ") + kTiny + " --input fp16");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--input: expected quantized, bf16 or fp32, got 'fp16'"), std::string::npos) << r.err;
  r = run("", std::string("bench --ranks 2 ") + kTiny + " --peers mpi,nccl");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--peers: expected mpi, oneccl or gloo, got 'nccl'"), std::string::npos) << r.err;
}

// Under mpirun: every peer family asked for is either timed (its -fp32 and -bf16 peers in
// every row) or reported as unavailable with a reason; never an error. The oneCCL plugin is
// pointed at a file that does not exist, so it must be unavailable. Every row's fastest peer
// is the fastest of the peers its input is compared with (any for pre-quantized input, the
// fp32 peers for fp32 input).
TEST_F(CliBench, MpiAbsentPeersAreUnavailableNotAnError) {
#ifndef QCOLL_HAVE_MPI
  GTEST_SKIP() << "built without MPI";
#else
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0) GTEST_SKIP() << "mpirun not found";
  RunResult r =
      run("env QCOLL_CCL_PEER=/nonexistent/libqcoll_ccl_peer.so mpirun --allow-run-as-root --oversubscribe "
          "--mca btl_vader_single_copy_mechanism none -x QCOLL_CCL_PEER -np 2",
          std::string("bench ") + kTiny + " --input quantized,fp32 --peers mpi,oneccl,gloo --json m.json");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("peer oneccl: unavailable: cannot load /nonexistent/libqcoll_ccl_peer.so"), std::string::npos)
      << r.out;
  nlohmann::json j = read_json("m.json");
  const auto& unavailable = j["meta"]["peers_unavailable"];
  ASSERT_TRUE(unavailable.contains("oneccl")) << j["meta"].dump(1);
  ASSERT_EQ(j["rows"].size(), 8u);
  for (const auto& row : j["rows"]) {
    SCOPED_TRACE(row.dump());
    std::map<std::string, double> times;
    for (const auto& p : row["peers"]) {
      EXPECT_GT(p["s"].get<double>(), 0.0);
      times[p["name"].get<std::string>()] = p["s"].get<double>();
    }
    EXPECT_TRUE(times.count("mpi-fp32") && times.count("mpi-bf16"));
    EXPECT_FALSE(times.count("oneccl-fp32") || times.count("oneccl-bf16"));
    const bool gloo = times.count("gloo-fp32") && times.count("gloo-bf16");
    EXPECT_TRUE(gloo != unavailable.contains("gloo")) << "gloo must be timed or unavailable";
    if (unavailable.contains("gloo")) {
      EXPECT_FALSE(unavailable["gloo"].get<std::string>().empty());
    }
    const bool fp32 = row["input"].get<std::string>() == "fp32";
    std::string best;
    for (const auto& [name, s] : times)
      if ((!fp32 || name.find("-fp32") != std::string::npos) && (best.empty() || s < times[best])) best = name;
    EXPECT_EQ(row["fastest_peer"].get<std::string>(), best);
    EXPECT_DOUBLE_EQ(row["speedup_vs_fastest_peer"].get<double>(), times[best] / row["qcoll_s"].get<double>());
  }
#endif
}

// --peer-inputs bf16: each family's bf16 peer only (the fp32 peer and the fp32 input are not
// made: under smpirun every rank's buffers share one process). With no fp32 peer there is no
// reference, so no error is reported; the bf16 peer is still timed and is the fastest peer.
TEST_F(CliBench, MpiPeerInputsBf16Only) {
#ifndef QCOLL_HAVE_MPI
  GTEST_SKIP() << "built without MPI";
#else
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0) GTEST_SKIP() << "mpirun not found";
  RunResult r = run(kMpirun2, std::string("bench ") + kTiny + " --peers mpi --peer-inputs bf16 --json m.json");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_EQ(r.out.find("mpi-fp32"), std::string::npos) << r.out;
  nlohmann::json j = read_json("m.json");
  ASSERT_EQ(j["rows"].size(), 4u);
  for (const auto& row : j["rows"]) {
    SCOPED_TRACE(row.dump());
    ASSERT_EQ(row["peers"].size(), 1u);
    EXPECT_EQ(row["peers"][0]["name"], "mpi-bf16");
    EXPECT_GT(row["peers"][0]["s"].get<double>(), 0.0);
    EXPECT_TRUE(row["fp32_s"].is_null());
    EXPECT_GT(row["bf16_s"].get<double>(), 0.0);
    EXPECT_TRUE(row["bf16_rel_err"].is_null());
    EXPECT_TRUE(row["qcoll_rel_err"].is_null());
    EXPECT_EQ(row["fastest_peer"], "mpi-bf16");
  }
#endif
}

TEST_F(CliBench, RefusesBadPeerInputs) {
  RunResult r = run("", std::string("bench --ranks 2 ") + kTiny + " --peer-inputs fp16");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--peer-inputs: expected fp32 or bf16, got 'fp16'"), std::string::npos) << r.err;
  r = run("", std::string("bench --ranks 2 ") + kTiny + " --peer-inputs ,");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--peer-inputs: no input given (fp32, bf16)"), std::string::npos) << r.err;
}

// The plugin peers themselves (oneCCL; torch gloo), where bench/install_peers.sh has
// installed them (not in CI): timed in every row, their results agree with the MPI fp32
// peer's.
TEST_F(CliBench, MpiPluginPeersWhereInstalled) {
#ifndef QCOLL_HAVE_MPI
  GTEST_SKIP() << "built without MPI";
#else
  if (std::system("command -v mpirun >/dev/null 2>&1") != 0) GTEST_SKIP() << "mpirun not found";
  const char* home = std::getenv("HOME");
  const std::string dir = std::string(home ? home : "") + "/.local/qcoll-peers/lib/";
  int tested = 0;
  for (const auto& [family, file] :
       {std::pair<std::string, std::string>{"oneccl", "libqcoll_ccl_peer.so"}, {"gloo", "libqcoll_gloo_peer.so"}}) {
    SCOPED_TRACE(family);
    const std::string plugin = dir + file;
    if (!fs::exists(plugin)) continue;
    ++tested;
    RunResult r = run(kMpirun2, std::string("bench ") + kTiny + " --peers mpi," + family + " --" +
                                    (family == "oneccl" ? "ccl" : "gloo") + "-peer '" + plugin + "' --json c.json");
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    nlohmann::json j = read_json("c.json");
    EXPECT_FALSE(j["meta"]["peers_unavailable"].contains(family)) << j["meta"].dump(1);
    check_rows(j, 2, "shm|mpi", true);
    for (const auto& row : j["rows"]) {
      SCOPED_TRACE(row.dump());
      int found = 0;
      for (const auto& p : row["peers"]) {
        const std::string name = p["name"].get<std::string>();
        if (name.rfind(family + "-", 0) != 0) continue;
        ++found;
        EXPECT_GT(p["s"].get<double>(), 0.0);
        // Against the MPI fp32 result: fp32 sums (n=2: one addition, the same), bf16 input
        // and output rounding.
        EXPECT_LT(p["rel_err"].get<double>(), name == family + "-fp32" ? 1e-6 : 1e-2);
      }
      EXPECT_EQ(found, 2);
    }
  }
  if (tested == 0) GTEST_SKIP() << "no peer plugin in " << dir << " (bench/install_peers.sh)";
#endif
}

// Result files of earlier versions (MPI peers as fp32_s / bf16_s) still merge.
TEST_F(CliBench, ReadsEarlierResultFiles) {
  std::ofstream(dir_ / "old.json") << R"({"format": "qcoll-bench-1", "meta": {}, "rows": [{"op": "reduce-scatter",
      "bs": 64, "h": 1024, "n": 2, "transport": "shm", "mode": "kg-int8", "qcoll_s": 0.001, "fp32_s": 0.004,
      "bf16_s": 0.002, "bf16_rel_err": 0.003, "quant_s": 0.0005, "qcoll_rel_err": 0.02, "logical_bytes": 262144,
      "wire_bytes_qcoll": 1, "wire_bytes_fp32": 1, "wire_bytes_bf16": 1}]})";
  RunResult r = run("", "bench --from-json old.json --json new.json");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("| kg-int8 | quantized | 1.000 | 4.000 | 2.000 | mpi-bf16 | 2.00 |"), std::string::npos)
      << r.out;
  nlohmann::json j = read_json("new.json");
  EXPECT_DOUBLE_EQ(j["rows"][0]["speedup_vs_fp32"].get<double>(), 4.0);
  EXPECT_EQ(j["rows"][0]["fastest_peer"], "mpi-bf16");
}

TEST_F(CliBench, MergesResultsAndPlots) {
  ASSERT_EQ(run("", std::string("bench --ranks 2 ") + kTiny + " --json a.json -q").exit_code, 0);
  ASSERT_EQ(run("", std::string("bench --ranks 4 ") + kTiny + " --json b.json -q").exit_code, 0);
  const bool gnuplot = std::system("command -v gnuplot >/dev/null 2>&1") == 0;
  RunResult r = run("", std::string("bench --from-json a.json b.json --json all.json --table all.md") +
                            (gnuplot ? " --plot all.png" : ""));
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  nlohmann::json all = read_json("all.json");
  ASSERT_EQ(all["runs"].size(), 2u);
  check_rows(all["runs"][0], 2, "threads", false);
  check_rows(all["runs"][1], 4, "threads", false);
  std::ifstream md(dir_ / "all.md");
  std::string table((std::istreambuf_iterator<char>(md)), std::istreambuf_iterator<char>());
  EXPECT_EQ(std::count(table.begin(), table.end(), '\n'), 2 + 8) << table;
  if (gnuplot) {
    std::ifstream png(dir_ / "all.png", std::ios::binary);
    char magic[8] = {};
    png.read(magic, 8);
    EXPECT_EQ(std::string(magic + 1, 3), "PNG") << "all.png is not a PNG";
  }
}

TEST_F(CliBench, RefusesBadArguments) {
  RunResult r = run("", "bench --ranks 4 --sizes 66x1024 --repeats 1");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("BS 66 is not a multiple of the 4 ranks"), std::string::npos) << r.err;
  r = run("", "bench --ranks 2 --modes kg-int4");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("unknown mode 'kg-int4'"), std::string::npos) << r.err;
  r = run("", "bench --ranks 2 --sizes 64by1024");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("'64by1024' is not BSxH"), std::string::npos) << r.err;
  r = run("", "bench --ranks 2 --repeats 0");
  EXPECT_EQ(r.exit_code, 2);
  EXPECT_NE(r.err.find("--repeats must be at least 1, got 0"), std::string::npos) << r.err;
  // A size the operators refuse (H not a multiple of 128): the library's message, status exit.
  r = run("", "bench --ranks 2 --sizes 64x1000 --modes mx-e4m3 --repeats 1");
  EXPECT_EQ(r.exit_code, 1) << r.out << r.err;
  EXPECT_NE(r.err.find("PARAM_INVALID"), std::string::npos) << r.err;
}

// The extended contract (contract.md §ext): the 4-bit modes and any rank count, here 16
// thread ranks; under vendor both refused as arguments, naming QCOLL_CONTRACT=extended.
TEST_F(CliBench, ExtendedContractFourBitModesAndSixteenRanks) {
  const std::string fp4 = "--sizes 64x1024 --modes kg-e2m1,mx-e1m2 --repeats 1 --warmup 0";
  RunResult r = run("env QCOLL_CONTRACT=extended", "bench --ranks 16 " + fp4 + " --json t.json");
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  EXPECT_NE(r.out.find("| reduce-scatter | 64 x 1024 | 16 | threads | kg-e2m1 |"), std::string::npos) << r.out;
  const nlohmann::json j = read_json("t.json");
  EXPECT_EQ(j["meta"]["contract"], "extended") << j.dump(1);
  check_rows(j, 16, "threads", false);

  r = run("", "bench --ranks 16 --sizes 64x1024 --modes kg-int8 --repeats 1");
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--ranks must be 2, 4 or 8, got 16"), std::string::npos) << r.err;
  r = run("", "bench --ranks 2 " + fp4);
  EXPECT_EQ(r.exit_code, 2) << r.out << r.err;
  EXPECT_NE(r.err.find("--modes: kg-e2m1 needs QCOLL_CONTRACT=extended (the contract is vendor)"), std::string::npos)
      << r.err;
}

// The default modes are the contract's: the vendor's six, under extended also the 4-bit four.
TEST_F(CliBench, DefaultModesAreTheContracts) {
  const std::string args =
      "bench --ranks 2 --sizes 64x1024 --ops reduce-scatter --repeats 1 --warmup 0 --json t.json -q";
  for (const bool extended : {false, true}) {
    SCOPED_TRACE(extended ? "extended" : "vendor");
    RunResult r = run(extended ? "env QCOLL_CONTRACT=extended" : "", args);
    ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
    std::vector<std::string> modes;
    const nlohmann::json j = read_json("t.json");
    for (const auto& row : j["rows"]) modes.push_back(row["mode"].get<std::string>());
    std::vector<std::string> want = {"kg-int8", "kg-hif8", "kg-e4m3", "kg-e5m2", "mx-e4m3", "mx-e5m2"};
    if (extended) want.insert(want.end(), {"kg-e2m1", "kg-e1m2", "mx-e2m1", "mx-e1m2"});
    EXPECT_EQ(modes, want);
  }
}

}  // namespace
