// Helpers for the operator tests: a thread group whose ranks run a function each, RAII C
// tensors, and both phases of an operator in one call.
#pragma once
#include <gtest/gtest.h>

#include <atomic>
#include <string>
#include <thread>
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
inline qcollStatus call_op(Op op, const qcollTensor* x, const qcollTensor* s, const char* group,
                           qcollTensor* out, const char* reduce_op = "sum") {
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

}  // namespace harness
