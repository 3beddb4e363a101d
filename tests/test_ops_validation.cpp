// Phase one checks (contract.md §validation), one table row per rule: expected status and a message that
// starts with the parameter's name and mentions the value seen. Every rank of the group
// makes the same (bad) call, as a collective call must.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <vector>

#include "ops_harness.hpp"

using harness::GroupArg;
using harness::Op;

namespace {

struct Call {
  Op op = Op::ReduceScatter;
  int nranks = 4;
  std::vector<int64_t> xshape{8, 1024}, sshape{8, 8}, oshape{2, 1024};
  qcollDataType xdt = QCOLL_DT_INT8, sdt = QCOLL_DT_FLOAT, odt = QCOLL_DT_FLOAT16;
  std::vector<int64_t> xstrides, ostrides;  // empty: contiguous
  int xformat = QCOLL_FORMAT_ND;
  std::vector<int64_t> xstorage;  // empty: same as the shape
  bool null_x = false, null_scales = false, null_out = false, null_ws = false, null_exec = false, null_xdata = false,
       null_reduce = false;
  std::string reduce_op = "sum";
  GroupArg group = GroupArg::Own;
};

using Case = harness::RuleCase<Call>;

// Phase one on every rank; returns each rank's status and message.
void run_phase_one(const Call& c, std::vector<qcollStatus>& st, std::vector<std::string>& msg,
                   bool run_phase_two = false) {
  harness::on_every_rank(c.nranks, st, msg, [&](int r, const harness::Group& g) {
    std::vector<uint8_t> xb = harness::scratch(c.xshape), sb = harness::scratch(c.sshape),
                         ob = harness::scratch(c.oshape);
    auto strides = [](const std::vector<int64_t>& given) { return given.empty() ? nullptr : given.data(); };
    const auto& storage = c.xstorage.empty() ? c.xshape : c.xstorage;
    harness::Tensor tx(qcollCreateTensor(c.xshape.data(), c.xshape.size(), c.xdt, strides(c.xstrides), 0,
                                         qcollFormat(c.xformat), storage.data(), storage.size(),
                                         c.null_xdata ? nullptr : xb.data()));
    harness::Tensor ts(c.sshape, c.sdt, sb.data());
    harness::Tensor to(qcollCreateTensor(c.oshape.data(), c.oshape.size(), c.odt, strides(c.ostrides), 0,
                                         QCOLL_FORMAT_ND, c.oshape.data(), c.oshape.size(), ob.data()));
    EXPECT_NE(tx.get(), nullptr) << qcollGetRecentErrMsg();
    const char* group = harness::group_arg(c.group, g);
    uint64_t ws = 0;
    qcollOpExecutor* exec = nullptr;
    auto prepare =
        c.op == Op::ReduceScatter ? qcollQuantReduceScatterGetWorkspaceSize : qcollQuantAllReduceGetWorkspaceSize;
    st[r] = prepare(c.null_x ? nullptr : tx.get(), c.null_scales ? nullptr : ts.get(), group,
                    c.null_reduce ? nullptr : c.reduce_op.c_str(), c.null_out ? nullptr : to.get(),
                    c.null_ws ? nullptr : &ws, c.null_exec ? nullptr : &exec);
    msg[r] = qcollGetRecentErrMsg();
    if (st[r] == QCOLL_SUCCESS) {
      EXPECT_EQ(msg[r], "");
      EXPECT_NE(exec, nullptr);
      if (run_phase_two) {
        std::vector<uint8_t> w(ws);
        auto run = c.op == Op::ReduceScatter ? qcollQuantReduceScatter : qcollQuantAllReduce;
        st[r] = run(ws ? w.data() : nullptr, ws, exec, nullptr);
        msg[r] = qcollGetRecentErrMsg();
      } else {
        EXPECT_EQ(qcollDestroyExecutor(exec), QCOLL_SUCCESS);
      }
    } else {
      EXPECT_EQ(exec, nullptr);
    }
  });
}

const std::vector<Case>& cases() {
  static const std::vector<Case> k = {
      // Rule 1
      {"NullX", [](Call& c) { c.null_x = true; }, QCOLL_PARAM_NULLPTR, "x", {"null"}},
      {"NullScales", [](Call& c) { c.null_scales = true; }, QCOLL_PARAM_NULLPTR, "scales", {"null"}},
      {"NullOutput", [](Call& c) { c.null_out = true; }, QCOLL_PARAM_NULLPTR, "output", {"null"}},
      {"NullWorkspaceSize", [](Call& c) { c.null_ws = true; }, QCOLL_PARAM_NULLPTR, "workspaceSize", {"null"}},
      {"NullExecutor", [](Call& c) { c.null_exec = true; }, QCOLL_PARAM_NULLPTR, "executor", {"null"}},
      {"NullXData", [](Call& c) { c.null_xdata = true; }, QCOLL_PARAM_NULLPTR, "x", {"data"}},
      // Rule 2
      {"ReduceOpMax", [](Call& c) { c.reduce_op = "max"; }, QCOLL_PARAM_INVALID, "reduceOp", {"\"sum\"", "\"max\""}},
      {"ReduceOpNull", [](Call& c) { c.null_reduce = true; }, QCOLL_PARAM_INVALID, "reduceOp", {"null"}},
      {"ReduceOpBeforeShape",
       [](Call& c) {
         c.reduce_op = "SUM";
         c.xshape = {8, 1025};
       },
       QCOLL_PARAM_INVALID,
       "reduceOp",
       {"SUM"}},
      // Rule 3
      {"GroupNull", [](Call& c) { c.group = GroupArg::Null; }, QCOLL_PARAM_INVALID, "group", {"null"}},
      {"GroupUnknown", [](Call& c) { c.group = GroupArg::Unknown; }, QCOLL_PARAM_INVALID, "group", {"no-such-group"}},
      {"GroupName128", [](Call& c) { c.group = GroupArg::Long128; }, QCOLL_PARAM_INVALID, "group", {"128"}},
      {"GroupSize3",
       [](Call& c) {
         c.nranks = 3;
         c.xshape = {6, 1024};
         c.sshape = {6, 8};
       },
       QCOLL_PARAM_INVALID,
       "group",
       {"2, 4 or 8", "3"}},
      // Rule 4
      {"XDtypeFloat16", [](Call& c) { c.xdt = QCOLL_DT_FLOAT16; }, QCOLL_PARAM_INVALID, "x", {"float16"}},
      {"ScalesDtypeFloat16", [](Call& c) { c.sdt = QCOLL_DT_FLOAT16; }, QCOLL_PARAM_INVALID, "scales", {"float16"}},
      {"Int8WithE8M0",
       [](Call& c) {
         c.sdt = QCOLL_DT_FLOAT8_E8M0;
         c.sshape = {8, 16, 2};
       },
       QCOLL_PARAM_INVALID,
       "scales",
       {"float8_e8m0", "int8"}},
      {"HiF8WithE8M0",
       [](Call& c) {
         c.xdt = QCOLL_DT_HIFLOAT8;
         c.sdt = QCOLL_DT_FLOAT8_E8M0;
         c.sshape = {8, 16, 2};
       },
       QCOLL_PARAM_INVALID,
       "scales",
       {"hifloat8"}},
      {"OutputInt8", [](Call& c) { c.odt = QCOLL_DT_INT8; }, QCOLL_PARAM_INVALID, "output", {"int8"}},
      // 50: not an enumerator, but inside the enum's value range (0..63), so a C++ enum object
      // may hold it (99 may not: UBSan). test_api_c_callers passes values beyond, as C does.
      {"UnknownDtype", [](Call& c) { c.xdt = qcollDataType(50); }, QCOLL_PARAM_INVALID, "x", {"50"}},
      {"DtypeBeforeShape",
       [](Call& c) {
         c.odt = QCOLL_DT_UINT8;
         c.xshape = {8, 1025};
       },
       QCOLL_PARAM_INVALID,
       "output",
       {"uint8"}},
      // Rule 5
      {"X1D", [](Call& c) { c.xshape = {8192}; }, QCOLL_PARAM_INVALID, "x", {"1-D", "[8192]"}},
      {"X4D",
       [](Call& c) {
         c.xshape = {2, 2, 2, 1024};
       },
       QCOLL_PARAM_INVALID,
       "x",
       {"4-D"}},
      {"XZeroDim",
       [](Call& c) {
         c.xshape = {0, 1024};
       },
       QCOLL_PARAM_INVALID,
       "x",
       {"empty", "[0, 1024]"}},
      // An empty tensor is PARAM_INVALID even when its data pointer is null (nothing to point at).
      {"XZeroDimNullData",
       [](Call& c) {
         c.xshape = {0, 1024};
         c.null_xdata = true;
       },
       QCOLL_PARAM_INVALID,
       "x",
       {"empty", "[0, 1024]"}},
      // Rule 6
      {"RowsNotMultiple",
       [](Call& c) {
         c.xshape = {6, 1024};
       },
       QCOLL_PARAM_INVALID,
       "x",
       {"BS", "6", "4"}},
      {"RowsNotMultiple3D",
       [](Call& c) {
         c.xshape = {2, 3, 1024};
       },
       QCOLL_PARAM_INVALID,
       "x",
       {"B*S", "6"}},
      {"RowsNotMultipleAllReduce",
       [](Call& c) {
         c.op = Op::AllReduce;
         c.xshape = {6, 1024};
         c.oshape = {6, 1024};
       },
       QCOLL_PARAM_INVALID,
       "x",
       {"6"}},
      // Rule 7
      {"H1025",
       [](Call& c) {
         c.xshape = {8, 1025};
       },
       QCOLL_PARAM_INVALID,
       "x",
       {"x: H must be a multiple of 128 in [1024, 8192], got 1025"}},
      {"H896",
       [](Call& c) {
         c.xshape = {8, 896};
       },
       QCOLL_PARAM_INVALID,
       "x",
       {"896"}},
      {"H8320",
       [](Call& c) {
         c.xshape = {8, 8320};
       },
       QCOLL_PARAM_INVALID,
       "x",
       {"8320"}},
      // Rule 8
      {"ScalesShapeKG",
       [](Call& c) {
         c.sshape = {8, 4};
       },
       QCOLL_PARAM_INVALID,
       "scales",
       {"[8, 8]", "[8, 4]"}},
      {"ScalesRankKG",
       [](Call& c) {
         c.sshape = {1, 8, 8};
       },
       QCOLL_PARAM_INVALID,
       "scales",
       {"[1, 8, 8]"}},
      {"ScalesShapeMX",
       [](Call& c) {
         c.xdt = QCOLL_DT_FLOAT8_E4M3FN;
         c.sdt = QCOLL_DT_FLOAT8_E8M0;
         c.sshape = {8, 32};
       },
       QCOLL_PARAM_INVALID,
       "scales",
       {"[8, 16, 2]", "[8, 32]"}},
      {"ScalesShape3D",
       [](Call& c) {
         c.xshape = {2, 4, 1024};
         c.sshape = {8, 8};
       },
       QCOLL_PARAM_INVALID,
       "scales",
       {"[2, 4, 8]"}},
      // Rule 9
      {"OutputShapeRS",
       [](Call& c) {
         c.oshape = {8, 1024};
       },
       QCOLL_PARAM_INVALID,
       "output",
       {"[2, 1024]", "[8, 1024]"}},
      {"OutputShapeRS3D",
       [](Call& c) {
         c.xshape = {2, 4, 1024};
         c.sshape = {2, 4, 8};
         c.oshape = {1, 2, 1024};
       },
       QCOLL_PARAM_INVALID,
       "output",
       {"[2, 1024]"}},
      {"OutputShapeAR",
       [](Call& c) {
         c.op = Op::AllReduce;
         c.oshape = {2, 1024};
       },
       QCOLL_PARAM_INVALID,
       "output",
       {"[8, 1024]", "[2, 1024]"}},
      {"OutputShapeAR3D",
       [](Call& c) {
         c.op = Op::AllReduce;
         c.xshape = {2, 4, 1024};
         c.sshape = {2, 4, 8};
         c.oshape = {8, 1024};
       },
       QCOLL_PARAM_INVALID,
       "output",
       {"[2, 4, 1024]"}},
      // Rule 10
      {"XNotContiguous",
       [](Call& c) {
         c.xstrides = {2048, 1};
         c.xstorage = {16, 1024};
       },
       QCOLL_PARAM_INVALID,
       "x",
       {"contiguous", "[2048, 1]"}},
      {"XTransposed",
       [](Call& c) {
         c.xstrides = {1, 8};
       },
       QCOLL_PARAM_INVALID,
       "x",
       {"contiguous"}},
      {"OutputNotContiguous",
       [](Call& c) {
         c.ostrides = {1, 2};
       },
       QCOLL_PARAM_INVALID,
       "output",
       {"contiguous"}},
      {"XFormatNotND", [](Call& c) { c.xformat = 0; }, QCOLL_PARAM_INVALID, "x", {"format", "ND"}},
      {"XStorageTooSmall",
       [](Call& c) {
         c.xstorage = {4, 1024};
       },
       QCOLL_PARAM_INVALID,
       "x",
       {"storage"}},
  };
  return k;
}

QCOLL_RULE_TABLE_TESTS(Validation, cases, run_phase_one);

// Calls that must pass: group sizes 2/4/8, 3-D x, MX, both operators, a 127-character name.
TEST(ValidationOk, GroupSizesShapesAndOperators) {
  for (int n : {2, 4, 8})
    for (Op op : {Op::ReduceScatter, Op::AllReduce})
      for (int ndim : {2, 3}) {
        Call c;
        c.op = op;
        c.nranks = n;
        c.xshape = ndim == 2 ? std::vector<int64_t>{8, 2048} : std::vector<int64_t>{2, 4, 2048};
        c.sshape = ndim == 2 ? std::vector<int64_t>{8, 16} : std::vector<int64_t>{2, 4, 16};
        c.oshape = op == Op::ReduceScatter ? std::vector<int64_t>{8 / n, 2048} : c.xshape;
        std::vector<qcollStatus> st;
        std::vector<std::string> msg;
        run_phase_one(c, st, msg, /*run_phase_two=*/true);
        for (int r = 0; r < n; ++r) EXPECT_EQ(st[r], QCOLL_SUCCESS) << "n=" << n << " rank " << r << ": " << msg[r];
      }
}

// ---- Rule 3 under each contract (contract.md §rule-3, §ext-ranks) ----

// A call of n ranks with BS rows (H 1024, int8 KG).
Call rank_count_call(Op op, int n, int64_t bs) {
  Call c;
  c.op = op;
  c.nranks = n;
  c.xshape = {bs, 1024};
  c.sshape = {bs, 8};
  c.oshape = op == Op::ReduceScatter ? std::vector<int64_t>{bs / n, 1024} : c.xshape;
  return c;
}

// vendor (the default, and chosen): n outside {2, 4, 8} keeps today's refusal, word for word.
TEST(ValidationRankCount, VendorRefusesOtherCounts) {
  for (qcollContract contract : {QCOLL_CONTRACT_FROM_ENV, QCOLL_CONTRACT_VENDOR})
    for (int n : {1, 3, 16}) {
      harness::ContractScope scope(contract);
      std::vector<qcollStatus> st;
      std::vector<std::string> msg;
      run_phase_one(rank_count_call(Op::ReduceScatter, n, 2 * n), st, msg);
      const std::string tail = "' must have 2, 4 or 8 ranks, got " + std::to_string(n);
      for (int r = 0; r < n; ++r) {
        EXPECT_EQ(st[r], QCOLL_PARAM_INVALID) << "n=" << n << ": " << msg[r];
        EXPECT_EQ(msg[r].rfind("group: communicator '", 0), 0u) << msg[r];
        EXPECT_TRUE(msg[r].size() > tail.size() && msg[r].ends_with(tail)) << msg[r];
      }
    }
}

// extended: any n in [2, 1024] passes both phases, both operators; n = 1 is refused.
TEST(ValidationRankCount, ExtendedAcceptsAnyCount) {
  harness::ContractScope scope(QCOLL_CONTRACT_EXTENDED);
  for (int n : {2, 3, 5, 6, 7, 16})
    for (Op op : {Op::ReduceScatter, Op::AllReduce}) {
      std::vector<qcollStatus> st;
      std::vector<std::string> msg;
      run_phase_one(rank_count_call(op, n, 2 * n), st, msg, /*run_phase_two=*/true);
      for (int r = 0; r < n; ++r) EXPECT_EQ(st[r], QCOLL_SUCCESS) << "n=" << n << " rank " << r << ": " << msg[r];
    }
  std::vector<qcollStatus> st;
  std::vector<std::string> msg;
  run_phase_one(rank_count_call(Op::AllReduce, 1, 2), st, msg);
  EXPECT_EQ(st[0], QCOLL_PARAM_INVALID);
  EXPECT_TRUE(msg[0].starts_with("group: communicator '")) << msg[0];
  EXPECT_TRUE(msg[0].ends_with("' must have a rank count in [2, 1024] (QCOLL_CONTRACT=extended), got 1")) << msg[0];
}

// Rule 6 holds under both contracts: BS a multiple of n.
TEST(ValidationRankCount, RowsNotMultipleUnderBoth) {
  struct Row {
    qcollContract contract;
    int n;
    int64_t bs;
  };
  for (const Row& k : {Row{QCOLL_CONTRACT_VENDOR, 4, 6}, Row{QCOLL_CONTRACT_EXTENDED, 4, 6},
                       Row{QCOLL_CONTRACT_EXTENDED, 3, 8}, Row{QCOLL_CONTRACT_EXTENDED, 16, 24}})
    for (Op op : {Op::ReduceScatter, Op::AllReduce}) {
      harness::ContractScope scope(k.contract);
      std::vector<qcollStatus> st;
      std::vector<std::string> msg;
      Call c = rank_count_call(op, k.n, k.bs);
      c.oshape = op == Op::ReduceScatter ? std::vector<int64_t>{1, 1024} : c.xshape;
      run_phase_one(c, st, msg);
      const std::string want =
          "x: BS must be a multiple of the group size " + std::to_string(k.n) + ", got BS = " + std::to_string(k.bs);
      for (int r = 0; r < k.n; ++r) {
        EXPECT_EQ(st[r], QCOLL_PARAM_INVALID) << msg[r];
        EXPECT_TRUE(msg[r].starts_with(want)) << msg[r];
      }
    }
}

// A bad QCOLL_CONTRACT fails the call, naming the setting and the text (settings.hpp).
TEST(ValidationRankCount, BadContractSettingFailsTheCall) {
  const char* old = std::getenv("QCOLL_CONTRACT");
  const std::string saved = old ? old : "";
  setenv("QCOLL_CONTRACT", "Extended", 1);
  std::vector<qcollStatus> st;
  std::vector<std::string> msg;
  run_phase_one(rank_count_call(Op::ReduceScatter, 4, 8), st, msg);
  if (old)
    setenv("QCOLL_CONTRACT", saved.c_str(), 1);
  else
    unsetenv("QCOLL_CONTRACT");
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(st[r], QCOLL_PARAM_INVALID);
    EXPECT_TRUE(msg[r].starts_with("QCOLL_CONTRACT: must be vendor or extended, got \"Extended\"")) << msg[r];
  }
}

TEST(ValidationOk, MXAndLimitsOfH) {
  for (int64_t H : {1024, 8192}) {
    Call c;
    c.xdt = QCOLL_DT_FLOAT8_E5M2;
    c.sdt = QCOLL_DT_FLOAT8_E8M0;
    c.odt = QCOLL_DT_BFLOAT16;
    c.xshape = {8, H};
    c.sshape = {8, H / 64, 2};
    c.oshape = {2, H};
    std::vector<qcollStatus> st;
    std::vector<std::string> msg;
    run_phase_one(c, st, msg, true);
    for (int r = 0; r < 4; ++r) EXPECT_EQ(st[r], QCOLL_SUCCESS) << msg[r];
  }
}

TEST(ValidationOk, GroupName127Characters) {
  const std::string name(127, 'n');
  harness::Group g(2, name);
  std::vector<uint8_t> x(2 * 1024), s(2 * 8 * 4), out(1024 * 4, 0);
  std::vector<qcollStatus> st(2, -1);
  g.run([&](int r) {
    harness::Tensor tx({2, 1024}, QCOLL_DT_INT8, x.data()), ts({2, 8}, QCOLL_DT_FLOAT, s.data());
    std::vector<uint8_t> o(1024 * 4);
    harness::Tensor to({1, 1024}, QCOLL_DT_FLOAT, o.data());
    st[r] = harness::call_op(Op::ReduceScatter, tx.get(), ts.get(), name.c_str(), to.get());
  });
  EXPECT_EQ(st[0], QCOLL_SUCCESS);
  EXPECT_EQ(st[1], QCOLL_SUCCESS);
  qcollThreadGroup* g128 = nullptr;
  EXPECT_EQ(qcollThreadGroupCreate(std::string(128, 'n').c_str(), 2, &g128), QCOLL_PARAM_INVALID);
  EXPECT_EQ(std::string(qcollGetRecentErrMsg()).rfind("name:", 0), 0u) << qcollGetRecentErrMsg();
  EXPECT_EQ(g128, nullptr);
}

// ---- Tensors, groups and executors at the C boundary ----------------------------------

TEST(CApi, CreateTensorChecksArguments) {
  int64_t dims[9] = {2, 1024, 1, 1, 1, 1, 1, 1, 1};
  uint8_t buf[16];
  EXPECT_EQ(qcollCreateTensor(dims, 9, QCOLL_DT_INT8, nullptr, 0, QCOLL_FORMAT_ND, nullptr, 0, buf), nullptr);
  EXPECT_NE(std::string(qcollGetRecentErrMsg()).find("viewDims"), std::string::npos);
  int64_t neg[2] = {2, -1};
  EXPECT_EQ(qcollCreateContiguousTensor(neg, 2, QCOLL_DT_INT8, buf), nullptr);
  EXPECT_NE(std::string(qcollGetRecentErrMsg()).find("-1"), std::string::npos);
  EXPECT_EQ(qcollCreateTensor(nullptr, 2, QCOLL_DT_INT8, nullptr, 0, QCOLL_FORMAT_ND, nullptr, 0, buf), nullptr);
  EXPECT_EQ(qcollCreateTensor(dims, 2, QCOLL_DT_INT8, nullptr, -3, QCOLL_FORMAT_ND, nullptr, 0, buf), nullptr);
  EXPECT_NE(std::string(qcollGetRecentErrMsg()).find("offset"), std::string::npos);
  qcollTensor* t = qcollCreateContiguousTensor(dims, 2, QCOLL_DT_INT8, buf);
  ASSERT_NE(t, nullptr);
  EXPECT_STREQ(qcollGetRecentErrMsg(), "");
  EXPECT_EQ(qcollDestroyTensor(t), QCOLL_SUCCESS);
  EXPECT_EQ(qcollDestroyTensor(nullptr), QCOLL_SUCCESS);
}

TEST(CApi, ThreadGroupLifecycle) {
  qcollThreadGroup* g = nullptr;
  EXPECT_EQ(qcollThreadGroupCreate("lifecycle", 2, nullptr), QCOLL_PARAM_NULLPTR);
  EXPECT_EQ(qcollThreadGroupCreate("lifecycle", 0, &g), QCOLL_PARAM_INVALID);
  EXPECT_EQ(qcollThreadGroupCreate("lifecycle", 1025, &g), QCOLL_PARAM_INVALID);
  EXPECT_EQ(qcollThreadGroupCreate("", 2, &g), QCOLL_PARAM_INVALID);
  EXPECT_EQ(qcollThreadGroupCreate(nullptr, 2, &g), QCOLL_PARAM_INVALID);
  ASSERT_EQ(qcollThreadGroupCreate("lifecycle", 2, &g), QCOLL_SUCCESS);
  qcollThreadGroup* dup = nullptr;
  EXPECT_EQ(qcollThreadGroupCreate("lifecycle", 2, &dup), QCOLL_PARAM_INVALID);
  EXPECT_NE(std::string(qcollGetRecentErrMsg()).find("already exists"), std::string::npos);
  EXPECT_EQ(qcollThreadGroupJoin(g, 2), QCOLL_PARAM_INVALID);
  EXPECT_EQ(qcollThreadGroupJoin(g, -1), QCOLL_PARAM_INVALID);
  EXPECT_EQ(qcollThreadGroupLeave(g), QCOLL_PARAM_INVALID);  // not joined
  ASSERT_EQ(qcollThreadGroupJoin(g, 0), QCOLL_SUCCESS);
  EXPECT_EQ(qcollThreadGroupJoin(g, 1), QCOLL_PARAM_INVALID);  // this thread already has the name
  std::thread([&] {
    EXPECT_EQ(qcollThreadGroupJoin(g, 0), QCOLL_PARAM_INVALID);  // rank 0 taken
    EXPECT_EQ(qcollThreadGroupJoin(g, 1), QCOLL_SUCCESS);
  }).join();  // the thread exits without leaving: its rank is released with its registry
  std::thread([&] {
    EXPECT_EQ(qcollThreadGroupJoin(g, 1), QCOLL_SUCCESS) << qcollGetRecentErrMsg();
    EXPECT_EQ(qcollThreadGroupLeave(g), QCOLL_SUCCESS);
  }).join();
  EXPECT_EQ(qcollThreadGroupLeave(g), QCOLL_SUCCESS);
  EXPECT_EQ(qcollThreadGroupDestroy(g), QCOLL_SUCCESS);
  ASSERT_EQ(qcollThreadGroupCreate("lifecycle", 2, &g), QCOLL_SUCCESS);  // the name is free again
  EXPECT_EQ(qcollThreadGroupDestroy(g), QCOLL_SUCCESS);
  EXPECT_EQ(qcollThreadGroupJoin(nullptr, 0), QCOLL_PARAM_NULLPTR);
}

TEST(CApi, ExecutorMisuse) {
  harness::Group g(2);
  std::vector<uint8_t> x(2 * 1024), s(2 * 8 * 4);
  std::vector<qcollStatus> wrong_op(2, -1), null_exec(2, -1), stream(2, -1);
  g.run([&](int r) {
    harness::Tensor tx({2, 1024}, QCOLL_DT_INT8, x.data()), ts({2, 8}, QCOLL_DT_FLOAT, s.data());
    std::vector<uint8_t> o(1024 * 4);
    harness::Tensor to({1, 1024}, QCOLL_DT_FLOAT, o.data());
    uint64_t ws = 0;
    qcollOpExecutor* e = nullptr;
    // Never run: destroyed.
    ASSERT_EQ(qcollQuantReduceScatterGetWorkspaceSize(tx.get(), ts.get(), g.name(), "sum", to.get(), &ws, &e),
              QCOLL_SUCCESS);
    EXPECT_EQ(ws, 0u);  // threads never stage
    EXPECT_EQ(qcollDestroyExecutor(e), QCOLL_SUCCESS);
    // Run by the other operator's function: PARAM_INVALID on every rank (all misuse it).
    ASSERT_EQ(qcollQuantReduceScatterGetWorkspaceSize(tx.get(), ts.get(), g.name(), "sum", to.get(), &ws, &e),
              QCOLL_SUCCESS);
    wrong_op[r] = qcollQuantAllReduce(nullptr, 0, e, nullptr);
    EXPECT_NE(std::string(qcollGetRecentErrMsg()).find("executor:"), std::string::npos);
    null_exec[r] = qcollQuantReduceScatter(nullptr, 0, nullptr, nullptr);
    // A stream: only synchronous execution.
    ASSERT_EQ(qcollQuantReduceScatterGetWorkspaceSize(tx.get(), ts.get(), g.name(), "sum", to.get(), &ws, &e),
              QCOLL_SUCCESS);
    int fake_stream = 0;
    stream[r] = qcollQuantReduceScatter(nullptr, 0, e, &fake_stream);
    EXPECT_EQ(std::string(qcollGetRecentErrMsg()).rfind("stream:", 0), 0u) << qcollGetRecentErrMsg();
  });
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(wrong_op[r], QCOLL_PARAM_INVALID);
    EXPECT_EQ(null_exec[r], QCOLL_PARAM_NULLPTR);
    EXPECT_EQ(stream[r], QCOLL_PARAM_INVALID);
  }
}

TEST(CApi, StatusNames) {
  EXPECT_STREQ(qcollStatusName(QCOLL_SUCCESS), "SUCCESS");
  EXPECT_STREQ(qcollStatusName(QCOLL_PARAM_NULLPTR), "PARAM_NULLPTR");
  EXPECT_STREQ(qcollStatusName(QCOLL_PARAM_INVALID), "PARAM_INVALID");
  EXPECT_STREQ(qcollStatusName(QCOLL_RUNTIME_ERROR), "RUNTIME_ERROR");
  EXPECT_STREQ(qcollStatusName(QCOLL_INNER_ERROR), "INNER_ERROR");
  EXPECT_STREQ(qcollStatusName(12345), "UNKNOWN");
}

}  // namespace
