// Helpers for the operator tests: a thread group whose ranks run a function each, RAII C
// tensors, both phases of an operator in one call, and the phase-one rule tables of
// test_ops_validation.cpp and test_ops_fused.cpp (RuleCase, QCOLL_RULE_TABLE_TESTS).
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "qcoll/qcoll.h"

namespace harness {

enum class Op { ReduceScatter, AllReduce };

inline std::string unique_name(const std::string& base) {
  static std::atomic<int> counter{0};
  return base + "-" + std::to_string(counter++);
}

// A C thread group; run(f) starts one thread per rank, joins it as that rank, calls f(rank).
class Group {
 public:
  explicit Group(int n, std::string name = unique_name("g")) : name_(std::move(name)), n_(n) {
    EXPECT_EQ(qcollThreadGroupCreate(name_.c_str(), n, &g_), QCOLL_SUCCESS) << qcollGetRecentErrMsg();
  }
  ~Group() { qcollThreadGroupDestroy(g_); }
  Group(const Group&) = delete;
  Group& operator=(const Group&) = delete;

  const char* name() const { return name_.c_str(); }
  int size() const { return n_; }
  qcollThreadGroup* handle() const { return g_; }

  template <class F>
  void run(F f, const std::vector<int>& ranks = {}) {
    std::vector<int> rs = ranks;
    if (rs.empty())
      for (int r = 0; r < n_; ++r) rs.push_back(r);
    std::vector<std::thread> ts;
    for (int r : rs)
      ts.emplace_back([this, r, &f] {
        ASSERT_EQ(qcollThreadGroupJoin(g_, r), QCOLL_SUCCESS) << qcollGetRecentErrMsg();
        f(r);
        EXPECT_EQ(qcollThreadGroupLeave(g_), QCOLL_SUCCESS) << qcollGetRecentErrMsg();
      });
    for (auto& t : ts) t.join();
  }

 private:
  std::string name_;
  int n_;
  qcollThreadGroup* g_ = nullptr;
};

// The program's contract (qcollSetContract) for a scope; the environment's again after it.
class ContractScope {
 public:
  explicit ContractScope(qcollContract c) { EXPECT_EQ(qcollSetContract(c), QCOLL_SUCCESS) << qcollGetRecentErrMsg(); }
  ~ContractScope() { qcollSetContract(QCOLL_CONTRACT_FROM_ENV); }
  ContractScope(const ContractScope&) = delete;
  ContractScope& operator=(const ContractScope&) = delete;
};
// The contract a group of n ranks needs: vendor for 2, 4 and 8, else extended (contract.md §ext-ranks).
inline qcollContract contract_for_ranks(int n) {
  return n == 2 || n == 4 || n == 8 ? QCOLL_CONTRACT_VENDOR : QCOLL_CONTRACT_EXTENDED;
}

// A contiguous C tensor over `data` (nullptr handle stays nullptr).
class Tensor {
 public:
  Tensor() = default;
  Tensor(const std::vector<int64_t>& dims, qcollDataType dt, void* data)
      : t_(qcollCreateContiguousTensor(dims.data(), dims.size(), dt, data)) {}
  explicit Tensor(qcollTensor* t) : t_(t) {}
  ~Tensor() { qcollDestroyTensor(t_); }
  Tensor(Tensor&& o) noexcept : t_(o.t_) { o.t_ = nullptr; }
  Tensor& operator=(Tensor&& o) noexcept {
    std::swap(t_, o.t_);
    return *this;
  }
  qcollTensor* get() const { return t_; }

 private:
  qcollTensor* t_ = nullptr;
};

// Both phases; returns the first non-zero status.
inline qcollStatus call_op(Op op, const qcollTensor* x, const qcollTensor* s, const char* group, qcollTensor* out,
                           const char* reduce_op = "sum") {
  uint64_t ws = 0;
  qcollOpExecutor* e = nullptr;
  qcollStatus st = op == Op::ReduceScatter
                       ? qcollQuantReduceScatterGetWorkspaceSize(x, s, group, reduce_op, out, &ws, &e)
                       : qcollQuantAllReduceGetWorkspaceSize(x, s, group, reduce_op, out, &ws, &e);
  if (st != QCOLL_SUCCESS) return st;
  std::vector<uint8_t> w(ws);
  return op == Op::ReduceScatter ? qcollQuantReduceScatter(ws ? w.data() : nullptr, ws, e, nullptr)
                                 : qcollQuantAllReduce(ws ? w.data() : nullptr, ws, e, nullptr);
}

inline int64_t numel(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (auto d : shape) n *= d;
  return n;
}

// Room for a tensor of `shape` of any dtype up to 4 bytes, with slack (a table's bad shapes
// and strides must not make a rank read or write outside it).
inline std::vector<uint8_t> scratch(const std::vector<int64_t>& shape) {
  return std::vector<uint8_t>(std::max<int64_t>(numel(shape), 1) * 4 + 4096);
}

// The group argument of a table's call: the group's own name, null, a name no group has,
// or a name of 128 characters (one over the limit).
enum class GroupArg { Own, Null, Unknown, Long128 };
inline const char* group_arg(GroupArg a, const Group& g) {
  static const std::string long_name(128, 'a');
  switch (a) {
    case GroupArg::Own:
      return g.name();
    case GroupArg::Null:
      return nullptr;
    case GroupArg::Unknown:
      return "no-such-group";
    case GroupArg::Long128:
      return long_name.c_str();
  }
  return nullptr;
}

// Runs f(rank, group) on every rank of a new group of n, st and msg sized for each rank's
// status and message (st starts at -1: a rank that never set it fails the checks).
template <class F>
void on_every_rank(int n, std::vector<qcollStatus>& st, std::vector<std::string>& msg, F f) {
  Group g(n);
  st.assign(n, -1);
  msg.assign(n, "");
  g.run([&](int r) { f(r, g); });
}

// A row of a phase-one validation table: how a default call of type Call is changed, and
// what every rank must then see.
template <class Call>
struct RuleCase {
  std::string name;
  std::function<void(Call&)> change;
  qcollStatus code;
  std::string param;                  // the message starts with "<param>:"
  std::vector<std::string> mentions;  // and contains each of these
};

// Checks every rank's status and message against a table row (QCOLL_TEST_VERBOSE prints rank
// 0's message).
template <class Call>
void expect_rejected(const RuleCase<Call>& k, const std::vector<qcollStatus>& st, const std::vector<std::string>& msg) {
  if (std::getenv("QCOLL_TEST_VERBOSE")) std::printf("%s: %s\n", k.name.c_str(), msg[0].c_str());
  for (std::size_t r = 0; r < st.size(); ++r) {
    EXPECT_EQ(st[r], k.code) << "rank " << r << ": " << msg[r];
    EXPECT_EQ(msg[r].rfind(k.param + ":", 0), 0u) << "rank " << r << ": " << msg[r];
    for (const auto& m : k.mentions) EXPECT_NE(msg[r].find(m), std::string::npos) << m << " in: " << msg[r];
  }
}

// A table row's call, made by run(call, st, msg) on every rank, then checked.
template <class Call, class Run>
void check_rule_case(const RuleCase<Call>& k, Run run) {
  Call c;
  k.change(c);
  std::vector<qcollStatus> st;
  std::vector<std::string> msg;
  run(c, st, msg);
  expect_rejected(k, st, msg);
}

}  // namespace harness

// One test per row of a rule table (`table()` returns the rows): Rules/Suite.RejectedWithCodeAndMessage/<row name>,
// each making the row's call with run(call, st, msg) and checking it (check_rule_case).
#define QCOLL_RULE_TABLE_TESTS(Suite, table, run)                                                      \
  class Suite : public ::testing::TestWithParam<std::decay_t<decltype(table()[0])>> {};                \
  TEST_P(Suite, RejectedWithCodeAndMessage) {                                                          \
    harness::check_rule_case(GetParam(), [](const auto& c, auto& st, auto& msg) { run(c, st, msg); }); \
  }                                                                                                    \
  INSTANTIATE_TEST_SUITE_P(Rules, Suite, ::testing::ValuesIn(table()), [](const auto& info) { return info.param.name; })
