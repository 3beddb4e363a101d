// The operators under the two contracts (docs/contract.md §ext): QCOLL_CONTRACT is read once
// per call in phase one; under vendor the 4-bit x dtypes are refused with today's messages
// (§ext-fp4-vendor), under extended they pass phase one, their rows are H/2 bytes
// (§ext-fp4-layout) and the window rule takes xDataSize = BS·H/2 (§ext-fp4-window); the
// contract is part of the call agreement (§ext-agreement: the descriptors, and the message
// naming both values; the forked-process case is in test_faults_shm.cpp).
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "comm/registry.hpp"
#include "comm/shm_communicator.hpp"
#include "comm/shm_segment.hpp"
#include "comm/window_plan.hpp"
#include "ops/agreement.hpp"
#include "ops/plan.hpp"
#include "ops_harness.hpp"
#include "qcoll/contract.hpp"
#include "qcoll/qcoll.hpp"
#include "qcoll/settings.hpp"

using harness::Op;
using qcoll::settings::Contract;

namespace {

// The program's choice of contract for one test (process-wide: every rank thread keeps it).
class ContractScope {
 public:
  explicit ContractScope(std::optional<Contract> c) { qcoll::set_contract(c); }
  ~ContractScope() { qcoll::set_contract(std::nullopt); }
  ContractScope(const ContractScope&) = delete;
  ContractScope& operator=(const ContractScope&) = delete;
};

constexpr qcollDataType kFp4[] = {QCOLL_DT_FLOAT4_E2M1, QCOLL_DT_FLOAT4_E1M2};

std::string fp4_name(qcollDataType t) { return t == QCOLL_DT_FLOAT4_E2M1 ? "float4_e2m1" : "float4_e1m2"; }

// One quantized call of 4 ranks: x (BS, H) of x_dtype with KG or MX scales, output bf16.
struct Call {
  Op op = Op::ReduceScatter;
  int nranks = 4;
  int64_t rows = 8, H = 1024;
  qcollDataType xdt = QCOLL_DT_FLOAT4_E2M1;
  bool mx = false;
  int64_t x_offset = 0;
  std::vector<int64_t> xstorage;  // empty: the shape
};

std::vector<int64_t> scales_shape(const Call& c) {
  return c.mx ? std::vector<int64_t>{c.rows, c.H / 64, 2} : std::vector<int64_t>{c.rows, c.H / 128};
}

// Phase one on every rank (an accepted call's executor is destroyed: every rank does so).
void phase_one(const Call& c, std::vector<qcollStatus>& st, std::vector<std::string>& msg) {
  harness::on_every_rank(c.nranks, st, msg, [&](int r, const harness::Group& g) {
    const std::vector<int64_t> xs{c.rows, c.H}, ss = scales_shape(c);
    const std::vector<int64_t> os = c.op == Op::ReduceScatter ? std::vector<int64_t>{c.rows / c.nranks, c.H} : xs;
    std::vector<uint8_t> xb = harness::scratch(xs), sb = harness::scratch(ss), ob = harness::scratch(os);
    const auto& storage = c.xstorage.empty() ? xs : c.xstorage;
    harness::Tensor tx(qcollCreateTensor(xs.data(), xs.size(), c.xdt, nullptr, c.x_offset, QCOLL_FORMAT_ND,
                                         storage.data(), storage.size(), xb.data()));
    harness::Tensor ts(ss, c.mx ? QCOLL_DT_FLOAT8_E8M0 : QCOLL_DT_FLOAT, sb.data());
    harness::Tensor to(os, QCOLL_DT_BFLOAT16, ob.data());
    uint64_t ws = 0;
    qcollOpExecutor* e = nullptr;
    auto prepare =
        c.op == Op::ReduceScatter ? qcollQuantReduceScatterGetWorkspaceSize : qcollQuantAllReduceGetWorkspaceSize;
    st[r] = prepare(tx.get(), ts.get(), g.name(), "sum", to.get(), &ws, &e);
    msg[r] = qcollGetRecentErrMsg();
    if (st[r] == QCOLL_SUCCESS) {
      EXPECT_EQ(qcollDestroyExecutor(e), QCOLL_SUCCESS);
    }
  });
}

// Every rank saw `code` and exactly `message`.
void expect_every_rank(const Call& c, qcollStatus code, const std::string& message) {
  std::vector<qcollStatus> st;
  std::vector<std::string> msg;
  phase_one(c, st, msg);
  for (int r = 0; r < c.nranks; ++r) {
    EXPECT_EQ(st[r], code) << "rank " << r << ": " << msg[r];
    EXPECT_EQ(msg[r], message) << "rank " << r;
  }
}

const std::string kVendorX = "int8, hifloat8, float8_e4m3fn or float8_e5m2";
const std::string kExtendedX = "int8, hifloat8, float8_e4m3fn, float8_e5m2, float4_e2m1 or float4_e1m2";
const std::string kExtendedMxX = "float8_e4m3fn, float8_e5m2, float4_e2m1 or float4_e1m2";

// ---- Under vendor: the refusals of today (§ext-fp4-vendor) ----

TEST(OpsContract, VendorRefusesFp4XWithTodaysMessage) {
  for (std::optional<Contract> how : {std::optional<Contract>{}, std::optional<Contract>{Contract::Vendor}}) {
    ContractScope scope(how);
    for (qcollDataType t : kFp4)
      for (bool mx : {false, true})
        for (Op op : {Op::ReduceScatter, Op::AllReduce}) {
          Call c;
          c.op = op;
          c.xdt = t;
          c.mx = mx;
          SCOPED_TRACE(fp4_name(t) + (mx ? " MX" : " KG"));
          // The rule-4 message of every x dtype outside the vendor's list (e.g. float16).
          expect_every_rank(c, QCOLL_PARAM_INVALID, "x: dtype must be " + kVendorX + ", got " + fp4_name(t));
        }
  }
}

// ---- Under extended ----

TEST(OpsContract, ExtendedAcceptsFp4XInBothModesAndOperators) {
  ContractScope scope(Contract::Extended);
  for (qcollDataType t : kFp4)
    for (bool mx : {false, true})
      for (Op op : {Op::ReduceScatter, Op::AllReduce})
        for (int64_t H : {1024, 8192}) {
          Call c;
          c.op = op;
          c.xdt = t;
          c.mx = mx;
          c.H = H;
          SCOPED_TRACE(fp4_name(t) + (mx ? " MX" : " KG") + " H=" + std::to_string(H));
          expect_every_rank(c, QCOLL_SUCCESS, "");
        }
}

// The rule-4 messages list the dtypes of the call's contract (vendor: today's lists).
TEST(OpsContract, MessagesListTheContractsDtypes) {
  struct Lists {
    Contract contract;
    std::string x, mx_x;
  };
  for (const Lists& l : {Lists{Contract::Vendor, kVendorX, "float8_e4m3fn or float8_e5m2"},
                         Lists{Contract::Extended, kExtendedX, kExtendedMxX}}) {
    ContractScope scope(l.contract);
    Call c;
    c.xdt = QCOLL_DT_FLOAT16;
    expect_every_rank(c, QCOLL_PARAM_INVALID, "x: dtype must be " + l.x + ", got float16");
    c.xdt = QCOLL_DT_HIFLOAT8;
    c.mx = true;
    expect_every_rank(c, QCOLL_PARAM_INVALID,
                      "scales: float8_e8m0 (MX) scales need x dtype " + l.mx_x + ", got x dtype hifloat8");
  }
}

TEST(OpsContract, ExtendedKeepsTheShapeRules) {
  ContractScope scope(Contract::Extended);
  Call c;
  c.H = 1000;  // §ext-fp4-h: the operators' H rule holds
  std::vector<qcollStatus> st;
  std::vector<std::string> msg;
  phase_one(c, st, msg);
  for (int r = 0; r < c.nranks; ++r) {
    EXPECT_EQ(st[r], QCOLL_PARAM_INVALID);
    EXPECT_EQ(msg[r].rfind("x: H must be a multiple of 128", 0), 0u) << msg[r];
  }
}

// §ext-fp4-layout: two elements a byte, so a 4-bit x starts on a byte (an even offset).
TEST(OpsContract, Fp4XOffsetMustBeEven) {
  ContractScope scope(Contract::Extended);
  Call c;
  c.x_offset = 3;
  c.xstorage = {9, 1024};  // holds offset + elements
  expect_every_rank(c, QCOLL_PARAM_INVALID,
                    "x: offset must be even for float4_e2m1 (two elements a byte: the tensor starts on a byte), got 3");
  c.x_offset = 1024;
  expect_every_rank(c, QCOLL_SUCCESS, "");
}

TEST(OpsContract, BadContractSettingIsRefusedByPhaseOne) {
  ContractScope scope(std::nullopt);
  setenv("QCOLL_CONTRACT", "Extended", 1);
  Call c;
  c.xdt = QCOLL_DT_INT8;
  expect_every_rank(c, QCOLL_PARAM_INVALID, "QCOLL_CONTRACT: must be vendor or extended, got \"Extended\"");
  setenv("QCOLL_CONTRACT", "extended", 1);
  c.xdt = QCOLL_DT_FLOAT4_E1M2;
  expect_every_rank(c, QCOLL_SUCCESS, "");
  unsetenv("QCOLL_CONTRACT");
  expect_every_rank(c, QCOLL_PARAM_INVALID, "x: dtype must be " + kVendorX + ", got float4_e1m2");
}

// The fused operators' config (rule 4): FP4 x dtypes only under extended.
void fused_phase_one(qcollDataType xdt, qcollDataType sdt, std::vector<qcollStatus>& st,
                     std::vector<std::string>& msg) {
  harness::on_every_rank(2, st, msg, [&](int r, const harness::Group& g) {
    const std::vector<int64_t> xs{4, 1024}, os{2, 1024};
    std::vector<uint8_t> in(4 * 1024 * 4), out(2 * 1024 * 2);
    harness::Tensor ti(xs, QCOLL_DT_FLOAT, in.data()), to(os, QCOLL_DT_BFLOAT16, out.data());
    const qcollQuantConfig cfg{xdt, sdt, 0.0f};
    uint64_t ws = 0;
    qcollOpExecutor* e = nullptr;
    st[r] = qcollQuantizeReduceScatterGetWorkspaceSize(ti.get(), &cfg, g.name(), "sum", to.get(), &ws, &e);
    msg[r] = qcollGetRecentErrMsg();
    if (st[r] == QCOLL_SUCCESS) {
      EXPECT_EQ(qcollDestroyExecutor(e), QCOLL_SUCCESS);
    }
  });
}

TEST(OpsContract, FusedConfigTakesFp4OnlyUnderExtended) {
  for (qcollDataType t : kFp4)
    for (qcollDataType sdt : {QCOLL_DT_FLOAT, QCOLL_DT_FLOAT8_E8M0}) {
      SCOPED_TRACE(fp4_name(t));
      std::vector<qcollStatus> st;
      std::vector<std::string> msg;
      {
        ContractScope scope(Contract::Vendor);
        fused_phase_one(t, sdt, st, msg);
        // The quantizers' vendor message (contract::check_quant_config), with its hint.
        const std::string want =
            (sdt == QCOLL_DT_FLOAT ? "config.xDtype: KG (float scales) takes " + kVendorX + ", got "
                                   : "config.xDtype: MX (float8_e8m0 scales) takes float8_e4m3fn or float8_e5m2, "
                                     "got ") +
            fp4_name(t) + "; " + fp4_name(t) + " needs QCOLL_CONTRACT=extended";
        for (int r = 0; r < 2; ++r) {
          EXPECT_EQ(st[r], QCOLL_PARAM_INVALID);
          EXPECT_EQ(msg[r], want);
        }
      }
      ContractScope scope(Contract::Extended);
      fused_phase_one(t, sdt, st, msg);
      for (int r = 0; r < 2; ++r) EXPECT_EQ(st[r], QCOLL_SUCCESS) << msg[r];
    }
}

// ---- The C++ API's views: a 4-bit tensor's bytes are its packed ones ----

TEST(OpsContract, CppViewsOfFp4AreElementsOverTwoBytes) {
  std::vector<uint8_t> packed(8 * 1024 / 2);
  const qcoll::TensorView v = qcoll::view(packed, qcoll::DType::Float4E2M1, {8, 1024});
  EXPECT_EQ(v.numel(), 8u * 1024);
  EXPECT_EQ(v.nbytes(), 8u * 1024 / 2);
  std::vector<uint8_t> unpacked(8 * 1024);
  try {
    (void)qcoll::view(unpacked, qcoll::DType::Float4E1M2, {8, 1024});
    ADD_FAILURE() << "a view of 8192 bytes for 8192 4-bit elements must be refused";
  } catch (const qcoll::Error& e) {
    EXPECT_EQ(e.code(), qcoll::StatusCode::ParamInvalid);
    EXPECT_EQ(e.message(), "view: 8192 bytes of data, but shape of 8192 float4_e1m2 elements needs 4096");
  }
}

TEST(OpsContract, CppOperatorRefusesFp4XUnderVendor) {
  ContractScope scope(Contract::Vendor);
  qcoll::ThreadGroup g(harness::unique_name("cpp-fp4"), 2);
  std::vector<qcoll::Status> st(2);
  std::vector<std::thread> ts;
  for (int r = 0; r < 2; ++r)
    ts.emplace_back([&, r] {
      auto m = g.join(r);
      std::vector<uint8_t> x(4 * 1024 / 2), s(4 * 8 * 4), out(2 * 1024 * 2);
      st[r] = qcoll::try_quant_reduce_scatter(qcoll::view(x, qcoll::DType::Float4E2M1, {4, 1024}),
                                              qcoll::view(s, qcoll::DType::Float, {4, 8}), g.name(),
                                              qcoll::view(out, qcoll::DType::BFloat16, {2, 1024}));
    });
  for (auto& t : ts) t.join();
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(st[r].code, qcoll::StatusCode::ParamInvalid);
    EXPECT_EQ(st[r].message, "x: dtype must be " + kVendorX + ", got float4_e2m1");
  }
}

// ---- The plan: rows of H/2 bytes and the window rule with xDataSize = BS·H/2 ----

// Rank 0 of a 2-rank shm segment with a window of `mb` MB, registered for this process
// (phase one alone never talks to the peer).
class ShmRank0 {
 public:
  explicit ShmRank0(std::size_t mb) : window_(mb << 20) {
    using namespace qcoll::comm;
    EXPECT_TRUE(random_shm_name(shm_).ok());
    EXPECT_TRUE(create_shm(shm_, ShmCommunicator::segment_bytes(2, window_), m_).ok());
    ShmCommunicator::init_segment(m_.data(), 2, window_);
    unlink_shm(shm_);
    name_ = harness::unique_name("shm-plan");
    comm_ = std::make_shared<ShmCommunicator>(name_, 0, 2, window_, ShmMapping(m_.data(), m_.bytes()));
    EXPECT_TRUE(register_for_process(comm_).ok());
  }
  ~ShmRank0() {
    qcoll::comm::unregister_for_process(name_);
    comm_.reset();
  }
  const char* name() const { return name_.c_str(); }

 private:
  std::size_t window_;
  std::string shm_, name_;
  qcoll::comm::ShmMapping m_;
  std::shared_ptr<qcoll::comm::ShmCommunicator> comm_;
};

struct PlanCall {
  qcoll::ops::TensorDesc x, s, out;
  qcoll::ops::OpRequest req;
  std::vector<uint8_t> xb, sb, ob;
};

// A reduce-scatter request of x (rows, H) of x_dtype with KG scales, on group `name`.
std::unique_ptr<PlanCall> plan_call(const char* group, qcoll::DType xdt, int64_t rows, int64_t H) {
  auto p = std::make_unique<PlanCall>();
  auto desc = [](qcoll::ops::TensorDesc& d, qcoll::DType t, std::vector<int64_t> dims, std::vector<uint8_t>& b) {
    b.assign(static_cast<std::size_t>(harness::numel(dims)) * 4, 0);
    d.dtype = static_cast<int32_t>(t);
    d.dims = std::move(dims);
    d.strides = qcoll::ops::contiguous_strides(d.dims);
    d.data = b.data();
  };
  desc(p->x, xdt, {rows, H}, p->xb);
  desc(p->s, qcoll::DType::Float, {rows, H / 128}, p->sb);
  desc(p->out, qcoll::DType::BFloat16, {rows / 2, H}, p->ob);
  p->req.op = qcoll::contract::Op::ReduceScatter;
  p->req.x = &p->x;
  p->req.scales = &p->s;
  p->req.output = &p->out;
  p->req.group = group;
  p->req.reduce_op = "sum";
  return p;
}

TEST(OpsContract, PlanMovesFp4RowsOfHalfTheBytes) {
  ContractScope scope(Contract::Extended);
  ShmRank0 shm(3);  // a slot of 3/2 - 1 = 0.5 MB
  const int64_t rows = 2048, H = 8192;
  qcoll::ops::CallPlan p4, p8;
  auto c4 = plan_call(shm.name(), qcoll::DType::Float4E2M1, rows, H);
  auto c8 = plan_call(shm.name(), qcoll::DType::Int8, rows, H);
  ASSERT_TRUE(qcoll::ops::make_plan(c4->req, &p4).ok());
  ASSERT_TRUE(qcoll::ops::make_plan(c8->req, &p8).ok());
  EXPECT_EQ(p4.call.contract, Contract::Extended);
  EXPECT_EQ(p4.descriptor.contract, static_cast<int32_t>(Contract::Extended));
  EXPECT_EQ(p4.spec.x_row_bytes, static_cast<std::size_t>(H / 2));
  EXPECT_EQ(p8.spec.x_row_bytes, static_cast<std::size_t>(H));
  EXPECT_EQ(p4.spec.s_row_bytes, p8.spec.s_row_bytes);
  // The window rule (§ext-fp4-window): the chunk that fits the slot, in rows of
  // H/2 + H/128*4 bytes per rank for FP4, is larger than for 8 bits; and it fits.
  const std::size_t slot = qcoll::contract::window_slot_bytes(3u << 20);
  ASSERT_GT(p4.spec.max_rows, 0u);
  EXPECT_GT(p4.spec.max_rows, p8.spec.max_rows);
  EXPECT_LE(qcoll::comm::chunk_layout(2, p4.spec.max_rows, H / 2, H / 32).total_bytes, slot);
  EXPECT_GT(qcoll::comm::chunk_layout(2, p8.spec.max_rows + 1, H, H / 32).total_bytes, slot) << "int8 rows bound";
}

TEST(OpsContract, WindowRuleNamesTheFp4RowBytes) {
  ContractScope scope(Contract::Extended);
  ShmRank0 shm(2);  // 2 MB: no slot holds a row
  auto c = plan_call(shm.name(), qcoll::DType::Float4E1M2, 8, 1024);
  qcoll::ops::CallPlan p;
  const qcoll::Status st = qcoll::ops::make_plan(c->req, &p);
  EXPECT_EQ(st.code, qcoll::StatusCode::ParamInvalid);
  EXPECT_NE(st.message.find("cannot hold one chunk (one row: 512 bytes of x and 32 bytes of scales per rank"),
            std::string::npos)
      << st.message;
}

// ---- The agreement (§ext-agreement) ----

qcoll::ops::CallDescriptor descriptor(Contract c, int32_t local_status = 0) {
  qcoll::ops::CallDescriptor d;
  d.op = 1;
  d.x_dtype = static_cast<int32_t>(qcoll::DType::Int8);
  d.scales_dtype = static_cast<int32_t>(qcoll::DType::Float);
  d.out_dtype = static_cast<int32_t>(qcoll::DType::BFloat16);
  d.ndim = 2;
  d.shape[0] = 8;
  d.shape[1] = 1024;
  d.contract = static_cast<int32_t>(c);
  d.local_status = local_status;
  return d;
}

TEST(OpsContract, AgreementNamesBothContracts) {
  using qcoll::ops::check_agreement;
  std::vector<qcoll::ops::CallDescriptor> all(4, descriptor(Contract::Vendor));
  EXPECT_TRUE(check_agreement(all, "g").ok());
  all[2] = descriptor(Contract::Extended);
  EXPECT_FALSE(qcoll::ops::same_call(all[0], all[2]));
  qcoll::Status st = check_agreement(all, "g");
  EXPECT_EQ(st.code, qcoll::StatusCode::RuntimeError);
  EXPECT_EQ(st.message,
            "group 'g': ranks disagree on the contract: QCOLL_CONTRACT: extended (rank 2) vs vendor (rank 0); every "
            "rank must keep the same contract; no rank moved data");
  // A rank that refused the call under its contract (FP4 x under vendor): the difference of
  // contracts is what the others hear.
  all.assign(2, descriptor(Contract::Extended));
  all[0] = descriptor(Contract::Vendor, static_cast<int32_t>(qcoll::StatusCode::ParamInvalid));
  st = check_agreement(all, "g");
  EXPECT_NE(st.message.find("QCOLL_CONTRACT: extended (rank 1) vs vendor (rank 0)"), std::string::npos) << st.message;
  // A rank that could not read its contract is compared with nobody's (its own failure counts).
  all[0] = descriptor(Contract::Vendor, static_cast<int32_t>(qcoll::StatusCode::ParamInvalid));
  all[0].contract = qcoll::ops::kContractUnknown;
  st = check_agreement(all, "g");
  EXPECT_NE(st.message.find("failed its checks on rank 0 (PARAM_INVALID)"), std::string::npos) << st.message;
}

}  // namespace
