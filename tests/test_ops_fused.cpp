// The fused operators QuantizeReduceScatter / QuantizeAllReduce (contract.md §fused):
//   - bits: fused == the public quantizer then the quantized operator, for every mode x output
//     dtype x n in {2, 4, 8} x 2-D/3-D x input dtype, on threads (one chunk, and chunks of one
//     row) and on shared memory (forked ranks; chunks of 2 rows, and chunks a 3 MB window imposes);
//   - validation: the fused rules in order (contract.md §fused-validation), one row per rule;
//   - agreement: a rank calling the fused operator while another calls the quantized one, or
//     with another config or input dtype, fails every rank before data moves, outputs untouched;
//   - the C++ wrappers.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "comm/registry.hpp"
#include "comm/shm_communicator.hpp"
#include "comm/shm_segment.hpp"
#include "fused_check.hpp"
#include "fused_threads.hpp"
#include "ops/executor.hpp"
#include "ops_harness.hpp"
#include "qcoll/qcoll.hpp"

using qcoll::DType;

namespace {

// Every mode x output x input x op for n ranks, 2-D and 3-D, on a thread group.
void check_all_combinations_threads(int n, std::size_t chunk_rows) {
  fused::expect_cases_pass_on_threads(n, chunk_rows, fused::every_combination_2d_3d(fused::kModes, n));
}

TEST(FusedBits, Threads2) { check_all_combinations_threads(2, 0); }
TEST(FusedBits, Threads4) { check_all_combinations_threads(4, 0); }
TEST(FusedBits, Threads8) { check_all_combinations_threads(8, 0); }
TEST(FusedBits, Threads2OneRowChunks) { check_all_combinations_threads(2, 1); }
TEST(FusedBits, Threads4OneRowChunks) { check_all_combinations_threads(4, 1); }
TEST(FusedBits, Threads8OneRowChunks) { check_all_combinations_threads(8, 1); }

// The HiF8 target reaches the quantizer: a non-default target changes the bits, and the
// result still equals quantize(target)-then-operate.
TEST(FusedBits, Hif8TargetIsApplied) {
  harness::Group g(2);
  std::vector<std::string> errors(2);
  g.run([&](int r) {
    for (float t : {0.0f, 1.0f, 100.0f, 32768.0f}) {
      fused::Case c;
      c.mode = fused::kModes[1];
      c.in = DType::BFloat16;
      c.hif8_target = t;
      c.seed = 77;
      std::string e = fused::check_fused_rank(c, g.name(), r, 2);
      if (!e.empty() && errors[r].empty()) errors[r] = e;
    }
  });
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1], "");
}

// ---- Shared memory: forked ranks on one segment, a window small enough for several chunks ----

// Runs check_fused_rank for every case on n forked ranks of a shm communicator with a window
// of window_mb MB; returns the children's reports (empty: all passed).
std::string run_shm(int n, std::size_t window_mb, const std::vector<fused::Case>& cases) {
  using namespace qcoll::comm;
  const std::size_t window = window_mb << 20;
  std::string name;
  if (!random_shm_name(name).ok()) return "no shm name";
  ShmMapping m;
  if (!create_shm(name, ShmCommunicator::segment_bytes(n, window), m).ok()) return "cannot create the segment";
  ShmCommunicator::init_segment(m.data(), n, window);
  unlink_shm(name);
  std::vector<int> fds;
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    int p[2];
    if (pipe(p) != 0) return "pipe";
    const pid_t pid = fork();
    if (pid == 0) {
      close(p[0]);
      std::string report;
      {
        auto c = std::make_shared<ShmCommunicator>("fused-shm", r, n, window, ShmMapping(m.data(), m.bytes()));
        if (!c->valid() || !register_for_process(c).ok()) _exit(90);
        for (const fused::Case& k : cases) {
          std::string e = fused::check_fused_rank(k, "fused-shm", r, n);
          if (!e.empty() && report.size() < 2000) report += e + "\n";
        }
        unregister_for_process("fused-shm");
      }
      const ssize_t w = write(p[1], report.data(), report.size());
      _exit(w == static_cast<ssize_t>(report.size()) ? 0 : 91);
    }
    close(p[1]);
    fds.push_back(p[0]);
    pids.push_back(pid);
  }
  std::string all;
  for (int r = 0; r < n; ++r) {
    char buf[4096];
    ssize_t k;
    while ((k = read(fds[r], buf, sizeof buf)) > 0) all.append(buf, static_cast<std::size_t>(k));
    close(fds[r]);
    int st = 0;
    waitpid(pids[r], &st, 0);
    if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) all += "rank " + std::to_string(r) + " exited abnormally\n";
  }
  return all;
}

// Every combination on shm: small tensors moved in chunks of 2 rows (the test hook), 2-D
// and 3-D.
void check_all_combinations_shm(int n) {
  const std::vector<fused::Case> cases = fused::every_combination(100, [n](uint32_t seed) {
    const bool three_d = (seed % 2) == 0;
    return three_d ? std::vector<int64_t>{3, 2 * n, 1024} : std::vector<int64_t>{5 * n, 2048};
  });
  qcoll::ops::testing::set_fused_chunk_rows_for_test(2);  // inherited by the forked ranks
  EXPECT_EQ(run_shm(n, 8, cases), "");
  qcoll::ops::testing::set_fused_chunk_rows_for_test(0);
}

TEST(FusedBits, Shm2) { check_all_combinations_shm(2); }
TEST(FusedBits, Shm4) { check_all_combinations_shm(4); }
TEST(FusedBits, Shm8) { check_all_combinations_shm(8); }

// Chunks the window imposes: a 3 MB window (a slot holds 0.5 MB of chunk data) and H = 8192
// rows of n * (8192 + scales) bytes: 15 rows per chunk at n = 4, so 40 rows per rank move
// in 3 chunks (n = 2: 31 rows per chunk, 2 chunks).
TEST(FusedBits, ShmWindowChunks) {
  for (int n : {2, 4}) {
    std::vector<fused::Case> cases;
    const struct {
      int mode;
      DType in, out;
      bool ar;
      bool three_d;
    } picks[] = {{0, DType::BFloat16, DType::BFloat16, false, false},
                 {5, DType::Float, DType::Float, true, true},
                 {1, DType::Float16, DType::Float16, false, true},
                 {4, DType::BFloat16, DType::Float, true, false}};
    uint32_t seed = 500;
    for (const auto& p : picks) {
      fused::Case c;
      c.mode = fused::kModes[p.mode];
      c.in = p.in;
      c.out = p.out;
      c.all_reduce = p.ar;
      c.shape = p.three_d ? std::vector<int64_t>{5, 8 * n, 8192} : std::vector<int64_t>{40 * n, 8192};
      c.seed = seed++;
      cases.push_back(c);
    }
    EXPECT_EQ(run_shm(n, 3, cases), "") << "n = " << n;
  }
}

// The 4-bit modes on shm under QCOLL_CONTRACT=extended (the forked ranks inherit the
// program's choice): rows of H/2 bytes through the window, in 2-row chunks (the test hook)
// and in the chunks a 3 MB window imposes at H = 8192 (n * (4096 + 256) bytes a row: 60
// rows per chunk at n = 2, 30 at n = 4, so several chunks per rank).
TEST(FusedBits, ShmFp4) {
  qcoll::set_contract(qcoll::settings::Contract::Extended);
  for (int n : {2, 4}) {
    std::vector<fused::Case> small, large;
    uint32_t seed = 700;
    for (const fused::Mode& m : qcoll::contract::quant_modes(qcoll::settings::Contract::Extended)) {
      if (!qcoll::is_4bit_format(m.x)) continue;
      for (bool ar : {false, true}) {
        fused::Case c;
        c.mode = m;
        c.in = ar ? DType::BFloat16 : DType::Float;
        c.out = ar ? DType::Float : DType::BFloat16;
        c.all_reduce = ar;
        c.shape = ar ? std::vector<int64_t>{3, 2 * n, 1024} : std::vector<int64_t>{5 * n, 2048};
        c.seed = seed++;
        small.push_back(c);
        c.shape = std::vector<int64_t>{100 * n, 8192};
        c.seed = seed++;
        large.push_back(c);
      }
    }
    qcoll::ops::testing::set_fused_chunk_rows_for_test(2);  // inherited by the forked ranks
    EXPECT_EQ(run_shm(n, 8, small), "") << "n = " << n;
    qcoll::ops::testing::set_fused_chunk_rows_for_test(0);
    EXPECT_EQ(run_shm(n, 3, large), "") << "n = " << n;
  }
  qcoll::set_contract(std::nullopt);
}

// ---- Validation (contract.md §fused-validation) ------------------------------------------

using harness::GroupArg;

struct Call {
  bool all_reduce = false;
  int nranks = 4;
  std::vector<int64_t> ishape{8, 1024}, oshape{2, 1024};
  qcollDataType idt = QCOLL_DT_BFLOAT16, odt = QCOLL_DT_FLOAT16;
  qcollQuantConfig cfg{QCOLL_DT_INT8, QCOLL_DT_FLOAT, 0.0f};
  std::vector<int64_t> istrides;  // empty: contiguous
  bool null_input = false, null_config = false, null_out = false, null_ws = false, null_exec = false,
       null_idata = false, null_odata = false;
  std::string reduce_op = "sum";
  GroupArg group = GroupArg::Own;
};

using Case = harness::RuleCase<Call>;

void run_phase_one(const Call& c, std::vector<qcollStatus>& st, std::vector<std::string>& msg) {
  harness::on_every_rank(c.nranks, st, msg, [&](int r, const harness::Group& g) {
    std::vector<uint8_t> ib = harness::scratch(c.ishape), ob = harness::scratch(c.oshape);
    harness::Tensor ti(qcollCreateTensor(c.ishape.data(), c.ishape.size(), c.idt,
                                         c.istrides.empty() ? nullptr : c.istrides.data(), 0, QCOLL_FORMAT_ND,
                                         c.ishape.data(), c.ishape.size(), c.null_idata ? nullptr : ib.data()));
    harness::Tensor to(c.oshape, c.odt, c.null_odata ? nullptr : ob.data());
    const char* group = harness::group_arg(c.group, g);
    uint64_t ws = 0;
    qcollOpExecutor* exec = nullptr;
    auto prepare = c.all_reduce ? qcollQuantizeAllReduceGetWorkspaceSize : qcollQuantizeReduceScatterGetWorkspaceSize;
    st[r] = prepare(c.null_input ? nullptr : ti.get(), c.null_config ? nullptr : &c.cfg, group, c.reduce_op.c_str(),
                    c.null_out ? nullptr : to.get(), c.null_ws ? nullptr : &ws, c.null_exec ? nullptr : &exec);
    msg[r] = qcollGetRecentErrMsg();
    if (st[r] == QCOLL_SUCCESS) {
      std::vector<uint8_t> w(ws);
      auto run = c.all_reduce ? qcollQuantizeAllReduce : qcollQuantizeReduceScatter;
      st[r] = run(ws ? w.data() : nullptr, ws, exec, nullptr);
      msg[r] = qcollGetRecentErrMsg();
    } else {
      EXPECT_EQ(exec, nullptr);
    }
  });
}

const std::vector<Case>& cases() {
  static const std::vector<Case> k = {
      // Rule 1
      {"NullInput", [](Call& c) { c.null_input = true; }, QCOLL_PARAM_NULLPTR, "input", {"null"}},
      {"NullConfig", [](Call& c) { c.null_config = true; }, QCOLL_PARAM_NULLPTR, "config", {"null"}},
      {"NullOutput", [](Call& c) { c.null_out = true; }, QCOLL_PARAM_NULLPTR, "output", {"null"}},
      {"NullInputData", [](Call& c) { c.null_idata = true; }, QCOLL_PARAM_NULLPTR, "input", {"data"}},
      {"NullOutputData", [](Call& c) { c.null_odata = true; }, QCOLL_PARAM_NULLPTR, "output", {"data"}},
      {"NullWorkspaceSize", [](Call& c) { c.null_ws = true; }, QCOLL_PARAM_NULLPTR, "workspaceSize", {"null"}},
      {"NullExecutor", [](Call& c) { c.null_exec = true; }, QCOLL_PARAM_NULLPTR, "executor", {"null"}},
      {"NullBeforeBadConfig",
       [](Call& c) {
         c.null_out = true;
         c.cfg.xDtype = QCOLL_DT_FLOAT;
       },
       QCOLL_PARAM_NULLPTR,
       "output",
       {"null"}},
      // Rule 2
      {"ReduceOpMax", [](Call& c) { c.reduce_op = "max"; }, QCOLL_PARAM_INVALID, "reduceOp", {"\"max\""}},
      // Rule 3
      {"GroupNull", [](Call& c) { c.group = GroupArg::Null; }, QCOLL_PARAM_INVALID, "group", {"null"}},
      {"GroupUnknown", [](Call& c) { c.group = GroupArg::Unknown; }, QCOLL_PARAM_INVALID, "group", {"no-such-group"}},
      {"GroupSize3",
       [](Call& c) {
         c.nranks = 3;
         c.ishape = {6, 1024};
       },
       QCOLL_PARAM_INVALID,
       "group",
       {"3"}},
      // Rule 4
      {"InputInt8",
       [](Call& c) { c.idt = QCOLL_DT_INT8; },
       QCOLL_PARAM_INVALID,
       "input",
       {"float, float16 or bfloat16", "int8"}},
      {"InputE4M3", [](Call& c) { c.idt = QCOLL_DT_FLOAT8_E4M3FN; }, QCOLL_PARAM_INVALID, "input", {"float8_e4m3fn"}},
      {"ConfigXFloat",
       [](Call& c) { c.cfg.xDtype = QCOLL_DT_FLOAT; },
       QCOLL_PARAM_INVALID,
       "config.xDtype",
       {"KG", "got float"}},
      {"ConfigScalesFloat16",
       [](Call& c) { c.cfg.scalesDtype = QCOLL_DT_FLOAT16; },
       QCOLL_PARAM_INVALID,
       "config.scalesDtype",
       {"float8_e8m0", "got float16"}},
      {"ConfigInt8WithE8M0",
       [](Call& c) { c.cfg.scalesDtype = QCOLL_DT_FLOAT8_E8M0; },
       QCOLL_PARAM_INVALID,
       "config.xDtype",
       {"MX", "got int8"}},
      {"ConfigHif8WithE8M0",
       [](Call& c) {
         c.cfg = {QCOLL_DT_HIFLOAT8, QCOLL_DT_FLOAT8_E8M0, 0.0f};
       },
       QCOLL_PARAM_INVALID,
       "config.xDtype",
       {"hifloat8"}},
      {"ConfigHif8TargetSmall",
       [](Call& c) {
         c.cfg = {QCOLL_DT_HIFLOAT8, QCOLL_DT_FLOAT, 0.5f};
       },
       QCOLL_PARAM_INVALID,
       "config.hif8Target",
       {"[1, 32768]", "0.5"}},
      {"ConfigHif8TargetLarge",
       [](Call& c) {
         c.cfg = {QCOLL_DT_HIFLOAT8, QCOLL_DT_FLOAT, 40000.0f};
       },
       QCOLL_PARAM_INVALID,
       "config.hif8Target",
       {"40000"}},
      {"OutputInt8", [](Call& c) { c.odt = QCOLL_DT_INT8; }, QCOLL_PARAM_INVALID, "output", {"int8"}},
      {"InputDtypeBeforeShape",
       [](Call& c) {
         c.idt = QCOLL_DT_UINT8;
         c.ishape = {8, 1025};
       },
       QCOLL_PARAM_INVALID,
       "input",
       {"uint8"}},
      // Rule 5
      {"Input1D", [](Call& c) { c.ishape = {8192}; }, QCOLL_PARAM_INVALID, "input", {"1-D"}},
      {"Input4D",
       [](Call& c) {
         c.ishape = {2, 2, 2, 1024};
       },
       QCOLL_PARAM_INVALID,
       "input",
       {"4-D"}},
      {"InputZeroDim",
       [](Call& c) {
         c.ishape = {0, 1024};
       },
       QCOLL_PARAM_INVALID,
       "input",
       {"[0, 1024]"}},
      // Rule 6
      {"RowsNotMultiple",
       [](Call& c) {
         c.ishape = {6, 1024};
       },
       QCOLL_PARAM_INVALID,
       "input",
       {"BS", "6"}},
      {"RowsNotMultiple3D",
       [](Call& c) {
         c.ishape = {2, 3, 1024};
       },
       QCOLL_PARAM_INVALID,
       "input",
       {"B*S", "6"}},
      // Rule 7
      {"H1025",
       [](Call& c) {
         c.ishape = {8, 1025};
       },
       QCOLL_PARAM_INVALID,
       "input",
       {"input: H must be a multiple of 128 in [1024, 8192], got 1025"}},
      {"H8320",
       [](Call& c) {
         c.ishape = {8, 8320};
       },
       QCOLL_PARAM_INVALID,
       "input",
       {"8320"}},
      // Rule 9
      {"OutputShapeRS",
       [](Call& c) {
         c.oshape = {8, 1024};
       },
       QCOLL_PARAM_INVALID,
       "output",
       {"QuantizeReduceScatter", "[2, 1024]", "[8, 1024]"}},
      {"OutputShapeAR",
       [](Call& c) {
         c.all_reduce = true;
         c.oshape = {2, 1024};
       },
       QCOLL_PARAM_INVALID,
       "output",
       {"QuantizeAllReduce", "[8, 1024]"}},
      // Rule 10
      {"InputNotContiguous",
       [](Call& c) {
         c.istrides = {1, 8};
       },
       QCOLL_PARAM_INVALID,
       "input",
       {"contiguous"}},
  };
  return k;
}

QCOLL_RULE_TABLE_TESTS(FusedValidation, cases, run_phase_one);

TEST(FusedValidationOk, EveryInputAndModeAndHif8TargetLimits) {
  for (qcollDataType in : {QCOLL_DT_FLOAT, QCOLL_DT_FLOAT16, QCOLL_DT_BFLOAT16})
    for (const fused::Mode& m : fused::kModes) {
      Call c;
      c.idt = in;
      c.cfg = {static_cast<qcollDataType>(m.x), static_cast<qcollDataType>(m.scales), 0.0f};
      std::vector<qcollStatus> st;
      std::vector<std::string> msg;
      run_phase_one(c, st, msg);
      for (int r = 0; r < c.nranks; ++r) EXPECT_EQ(st[r], QCOLL_SUCCESS) << m.name << ": " << msg[r];
    }
  // The target is the HiF8 KG quantizer's alone: any value is ignored by the other modes.
  for (qcollQuantConfig cfg : {qcollQuantConfig{QCOLL_DT_HIFLOAT8, QCOLL_DT_FLOAT, 1.0f},
                               qcollQuantConfig{QCOLL_DT_HIFLOAT8, QCOLL_DT_FLOAT, 32768.0f},
                               qcollQuantConfig{QCOLL_DT_INT8, QCOLL_DT_FLOAT, -5.0f},
                               qcollQuantConfig{QCOLL_DT_FLOAT8_E4M3FN, QCOLL_DT_FLOAT8_E8M0, 1e9f}}) {
    Call c;
    c.cfg = cfg;
    std::vector<qcollStatus> st;
    std::vector<std::string> msg;
    run_phase_one(c, st, msg);
    for (int r = 0; r < c.nranks; ++r) EXPECT_EQ(st[r], QCOLL_SUCCESS) << msg[r];
  }
}

// An executor of a fused operator run through another operator's phase two is refused.
TEST(FusedValidationOk, ExecutorOfAnotherOperatorIsRefused) {
  harness::Group g(2);
  std::vector<qcollStatus> st(2);
  std::vector<std::string> msg(2);
  g.run([&](int r) {
    std::vector<uint16_t> in(2 * 1024);
    std::vector<float> out(1024);
    harness::Tensor ti({2, 1024}, QCOLL_DT_BFLOAT16, in.data()), to({1, 1024}, QCOLL_DT_FLOAT, out.data());
    qcollQuantConfig cfg{QCOLL_DT_INT8, QCOLL_DT_FLOAT, 0.0f};
    uint64_t ws = 0;
    qcollOpExecutor* e = nullptr;
    ASSERT_EQ(qcollQuantizeReduceScatterGetWorkspaceSize(ti.get(), &cfg, g.name(), "sum", to.get(), &ws, &e),
              QCOLL_SUCCESS);
    std::vector<uint8_t> w(ws);
    st[r] = r == 0 ? qcollQuantReduceScatter(ws ? w.data() : nullptr, ws, e, nullptr)
                   : qcollQuantizeReduceScatter(ws ? w.data() : nullptr, ws, e, nullptr);
    msg[r] = qcollGetRecentErrMsg();
  });
  EXPECT_EQ(st[0], QCOLL_PARAM_INVALID) << msg[0];
  EXPECT_NE(msg[0].find("QuantizeReduceScatter"), std::string::npos) << msg[0];
  EXPECT_EQ(st[1], QCOLL_RUNTIME_ERROR) << msg[1];
}

// ---- Agreement: ranks that make different calls fail before data moves ------------------

struct RankChoice {
  bool fused = true;
  DType in = DType::BFloat16;
  qcollQuantConfig cfg{QCOLL_DT_FLOAT8_E4M3FN, QCOLL_DT_FLOAT, 0.0f};
  int64_t rows = 8;
};

// Every rank makes its call (fused or quantized, reduce-scatter, H 1024); returns statuses,
// messages, and whether each rank's output is still the sentinel.
void run_mixed(const std::vector<RankChoice>& ch, std::vector<qcollStatus>& st, std::vector<std::string>& msg,
               std::vector<bool>& untouched) {
  const int n = static_cast<int>(ch.size());
  harness::Group g(n);
  st.assign(n, -1);
  msg.assign(n, "");
  untouched.assign(n, false);
  g.run([&](int r) {
    const RankChoice& c = ch[r];
    const std::vector<int64_t> shape{c.rows, 1024}, oshape{c.rows / n, 1024};
    std::vector<uint8_t> in(static_cast<std::size_t>(c.rows) * 1024 * 4, 0x3C);
    std::vector<uint8_t> sc(static_cast<std::size_t>(c.rows) * 8 * 4, 0x3C);
    std::vector<uint8_t> out(static_cast<std::size_t>(c.rows / n) * 1024 * 2, 0xA5);
    harness::Tensor to(oshape, QCOLL_DT_BFLOAT16, out.data());
    if (c.fused) {
      harness::Tensor ti(shape, static_cast<qcollDataType>(c.in), in.data());
      uint64_t ws = 0;
      qcollOpExecutor* e = nullptr;
      st[r] = qcollQuantizeReduceScatterGetWorkspaceSize(ti.get(), &c.cfg, g.name(), "sum", to.get(), &ws, &e);
      if (st[r] == QCOLL_SUCCESS) {
        std::vector<uint8_t> w(ws);
        st[r] = qcollQuantizeReduceScatter(ws ? w.data() : nullptr, ws, e, nullptr);
      }
      msg[r] = qcollGetRecentErrMsg();  // (before the tensors' release clears it)
    } else {
      harness::Tensor tx(shape, QCOLL_DT_FLOAT8_E4M3FN, in.data()), ts({c.rows, 8}, QCOLL_DT_FLOAT, sc.data());
      st[r] = harness::call_op(harness::Op::ReduceScatter, tx.get(), ts.get(), g.name(), to.get());
      msg[r] = qcollGetRecentErrMsg();
    }
    bool same = true;
    for (uint8_t b : out) same = same && b == 0xA5;
    untouched[r] = same;
  });
}

void expect_disagreement(const std::vector<RankChoice>& ch, const std::string& mention) {
  std::vector<qcollStatus> st;
  std::vector<std::string> msg;
  std::vector<bool> untouched;
  const auto t0 = std::chrono::steady_clock::now();
  run_mixed(ch, st, msg, untouched);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(s, 10.0) << "a disagreement must fail at once, not by the timeout";
  for (std::size_t r = 0; r < ch.size(); ++r) {
    EXPECT_EQ(st[r], QCOLL_RUNTIME_ERROR) << "rank " << r << ": " << msg[r];
    EXPECT_NE(msg[r].find("disagree"), std::string::npos) << msg[r];
    EXPECT_NE(msg[r].find(mention), std::string::npos) << mention << " in: " << msg[r];
    EXPECT_TRUE(untouched[r]) << "rank " << r << " wrote its output";
  }
}

TEST(FusedAgreement, FusedAgainstQuantizedOperator) {
  std::vector<RankChoice> ch(4);
  ch[2].fused = false;
  expect_disagreement(ch, "QuantizeReduceScatter");
}

TEST(FusedAgreement, ConfigInputDtypeAndTarget) {
  {
    std::vector<RankChoice> ch(4);
    ch[1].cfg.xDtype = QCOLL_DT_FLOAT8_E5M2;
    expect_disagreement(ch, "x dtype");
  }
  {
    std::vector<RankChoice> ch(4);
    ch[3].cfg = {QCOLL_DT_FLOAT8_E4M3FN, QCOLL_DT_FLOAT8_E8M0, 0.0f};
    expect_disagreement(ch, "scales dtype");
  }
  {
    std::vector<RankChoice> ch(2);
    ch[1].in = DType::Float16;
    expect_disagreement(ch, "input dtype");
  }
  {
    std::vector<RankChoice> ch(2);
    ch[0].cfg = {QCOLL_DT_HIFLOAT8, QCOLL_DT_FLOAT, 8.0f};
    ch[1].cfg = {QCOLL_DT_HIFLOAT8, QCOLL_DT_FLOAT, 0.0f};
    expect_disagreement(ch, "HiF8 target");
  }
  {
    std::vector<RankChoice> ch(2);
    ch[1].rows = 16;
    expect_disagreement(ch, "input shape");
  }
}

TEST(FusedAgreement, DefaultTargetAgreesWithItsValue) {
  std::vector<RankChoice> ch(2);
  ch[0].cfg = {QCOLL_DT_HIFLOAT8, QCOLL_DT_FLOAT, 0.0f};
  ch[1].cfg = {QCOLL_DT_HIFLOAT8, QCOLL_DT_FLOAT, qcoll::quant::default_hif8_target()};
  std::vector<qcollStatus> st;
  std::vector<std::string> msg;
  std::vector<bool> untouched;
  run_mixed(ch, st, msg, untouched);
  EXPECT_EQ(st[0], QCOLL_SUCCESS) << msg[0];
  EXPECT_EQ(st[1], QCOLL_SUCCESS) << msg[1];
}

// ---- The C++ wrappers -------------------------------------------------------------------

TEST(FusedCppApi, SameBitsAsTheCApiAndThrows) {
  qcoll::ThreadGroup group(harness::unique_name("fused-cpp"), 2);
  std::vector<std::string> errors(2);
  std::vector<std::thread> ts;
  for (int r = 0; r < 2; ++r)
    ts.emplace_back([&, r] {
      auto member = group.join(r);
      fused::Case c;
      c.mode = fused::kModes[4];
      c.in = DType::Float;
      c.out = DType::Float;
      c.shape = {4, 2048};
      const std::vector<uint8_t> in = fused::make_input(c, r);
      std::vector<float> a(2 * 2048), b(4 * 2048), ref(2 * 2048);
      const qcoll::QuantConfig cfg{c.mode.x, c.mode.scales, 0.0f};
      qcoll::quantize_reduce_scatter(qcoll::view(in, DType::Float, {4, 2048}), cfg, group,
                                     qcoll::view(a, DType::Float, {2, 2048}));
      qcoll::quantize_all_reduce(qcoll::view(in, DType::Float, {4, 2048}), cfg, group,
                                 qcoll::view(b, DType::Float, {4, 2048}));
      const qcoll::Status bad = qcoll::try_quantize_reduce_scatter(
          qcoll::view(in, DType::Float, {4, 2048}), qcoll::QuantConfig{DType::Int8, DType::Float8E8M0, 0.0f},
          group.name(), qcoll::view(a, DType::Float, {2, 2048}));
      if (bad.code != qcoll::StatusCode::ParamInvalid || bad.message.rfind("config.xDtype:", 0) != 0)
        errors[r] = "bad config: " + bad.message;
      qcoll::quant::QuantizedTensor q;
      if (!fused::quantize_input(c, in, q).ok()) errors[r] = "quantize";
      qcoll::quant_reduce_scatter(qcoll::view(q.q, c.mode.x, {4, 2048}),
                                  qcoll::view(q.mx_scales, c.mode.scales, {4, 32, 2}), group,
                                  qcoll::view(ref, DType::Float, {2, 2048}));
      if (std::memcmp(a.data(), ref.data(), a.size() * 4) != 0) errors[r] = "reduce-scatter bits differ";
      // The all-reduce's own block equals the reduce-scatter's.
      if (std::memcmp(b.data() + r * 2 * 2048, ref.data(), ref.size() * 4) != 0) errors[r] = "all-reduce bits differ";
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(errors[0], "");
  EXPECT_EQ(errors[1], "");
}

}  // namespace
