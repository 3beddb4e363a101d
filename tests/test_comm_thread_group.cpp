// The in-process transport and the group registry, used directly.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

#include "comm/collectives.hpp"
#include "comm/registry.hpp"
#include "comm/thread_group.hpp"
#include "ops/call_descriptor.hpp"

using namespace qcoll::comm;
using qcoll::Status;
using qcoll::ops::allgather_descriptors;
using qcoll::ops::CallDescriptor;
using namespace std::chrono_literals;

namespace {

std::unique_ptr<ThreadGroup> make_group(const std::string& name, int n) {
  std::unique_ptr<ThreadGroup> g;
  EXPECT_TRUE(ThreadGroup::create(name.c_str(), n, &g).ok());
  return g;
}

// Runs f(rank, communicator) on n threads joined to g.
template <class F>
void on_ranks(ThreadGroup& g, F f) {
  std::vector<std::thread> ts;
  for (int r = 0; r < g.size(); ++r)
    ts.emplace_back([&g, &f, r] {
      ASSERT_TRUE(g.join(r).ok());
      auto c = resolve(g.name());
      ASSERT_NE(c, nullptr);
      EXPECT_EQ(c->rank(), r);
      EXPECT_EQ(c->size(), g.size());
      EXPECT_STREQ(c->transport(), "threads");
      f(r, *c);
      EXPECT_TRUE(g.leave().ok());
    });
  for (auto& t : ts) t.join();
}

Clock::time_point soon() { return Clock::now() + 20s; }

TEST(ThreadGroupTransport, DescriptorAllgatherBackToBack) {
  auto g = make_group("tg-desc", 4);
  on_ranks(*g, [](int r, Communicator& c) {
    std::vector<CallDescriptor> all;
    for (int round = 0; round < 300; ++round) {
      CallDescriptor d;
      d.shape[0] = round * 10 + r;
      ASSERT_TRUE(allgather_descriptors(c, d, all, soon()).ok());
      ASSERT_EQ(all.size(), 4u);
      for (int k = 0; k < 4; ++k) ASSERT_EQ(all[k].shape[0], round * 10 + k) << "round " << round;
    }
  });
  EXPECT_FALSE(g->broken());
}

TEST(ThreadGroupTransport, ExchangeHandsEachRankItsBlockOfEveryPeer) {
  auto g = make_group("tg-exchange", 4);
  const std::size_t rows = 3, xrow = 16, srow = 4;
  on_ranks(*g, [&](int r, Communicator& c) {
    std::vector<uint8_t> x(4 * rows * xrow), s(4 * rows * srow);
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<uint8_t>(r * 64 + i / xrow);
    for (std::size_t i = 0; i < s.size(); ++i) s[i] = static_cast<uint8_t>(r * 64 + i / srow);
    ExchangeSpec spec{x.data(), xrow, s.data(), srow, rows};
    int calls = 0;
    Status st = exchange(
        c, spec,
        [&](const Chunk& ch) {
          ++calls;
          EXPECT_EQ(ch.row_begin, 0u);
          EXPECT_EQ(ch.rows, rows);
          for (int k = 0; k < 4; ++k)
            for (std::size_t t = 0; t < rows; ++t) {
              EXPECT_EQ(ch.x[k][t * xrow], k * 64 + r * rows + t);
              EXPECT_EQ(ch.scales[k][t * srow + 3], k * 64 + r * rows + t);
            }
          return Status::Ok();
        },
        soon());
    EXPECT_TRUE(st.ok()) << st.message;
    EXPECT_EQ(calls, 1);
    // A consumer error is returned after the protocol completed.
    st = exchange(
        c, spec, [](const Chunk&) { return Status::Error(qcoll::StatusCode::InnerError, "boom"); }, soon());
    EXPECT_EQ(st.code, qcoll::StatusCode::InnerError);
    EXPECT_TRUE(c.usable());
  });
}

TEST(ThreadGroupTransport, ExchangeFromAProducerThroughTheGroupsSlots) {
  // Rows written by a producer (as a fused operator would) go through the group's slot
  // buffers instead of being read in place; every rank still gets its block of every peer.
  auto g = make_group("tg-produce", 4);
  const std::size_t rows = 5, xrow = 1024, srow = 32;
  on_ranks(*g, [&](int r, Communicator& c) {
    auto xb = [&](int k, std::size_t row) { return static_cast<uint8_t>(k * 64 + row); };
    auto sb = [&](int k, std::size_t row) { return static_cast<uint8_t>(255 - k * 64 - row); };
    const RowProducer produce = [&](int dest, std::size_t row0, std::size_t n, const PartRegion& part) {
      for (std::size_t t = 0; t < n; ++t) {
        std::memset(part.seg[0] + t * xrow, xb(r, dest * rows + row0 + t), xrow);
        std::memset(part.seg[1] + t * srow, sb(r, dest * rows + row0 + t), srow);
      }
      return Status::Ok();
    };
    ExchangeSpec spec{nullptr, xrow, nullptr, srow, rows};
    for (int round = 0; round < 3; ++round) {
      int calls = 0;
      Status st = exchange(
          c, spec,
          [&](const Chunk& ch) {
            ++calls;
            for (int k = 0; k < 4; ++k)
              for (std::size_t t = 0; t < ch.rows; ++t) {
                EXPECT_EQ(ch.x[k][t * xrow + xrow - 1], xb(k, r * rows + ch.row_begin + t));
                EXPECT_EQ(ch.scales[k][t * srow], sb(k, r * rows + ch.row_begin + t));
              }
            return Status::Ok();
          },
          soon(), &produce);
      EXPECT_TRUE(st.ok()) << st.message;
      EXPECT_EQ(calls, 1);
    }
  });
  EXPECT_FALSE(g->broken());
}

TEST(ThreadGroupTransport, AllgatherInPlace) {
  auto g = make_group("tg-allgather", 8);
  on_ranks(*g, [](int r, Communicator& c) {
    std::vector<uint8_t> buf(8 * 100, 0xEE);
    std::memset(buf.data() + r * 100, r + 1, 100);
    ASSERT_TRUE(allgather_blocks(c, buf.data(), 100, soon()).ok());
    for (int k = 0; k < 8; ++k) EXPECT_EQ(buf[k * 100 + 99], k + 1);
  });
}

TEST(ThreadGroupTransport, TimeoutBreaksTheGroupAndNamesTheMissingRank) {
  auto g = make_group("tg-timeout", 3);
  std::vector<std::thread> ts;
  for (int r = 0; r < 2; ++r)  // rank 2 never comes
    ts.emplace_back([&, r] {
      ASSERT_TRUE(g->join(r).ok());
      auto c = resolve("tg-timeout");
      std::vector<CallDescriptor> all;
      const auto t0 = Clock::now();
      Status st = allgather_descriptors(*c, CallDescriptor{}, all, Clock::now() + 300ms);
      EXPECT_EQ(st.code, qcoll::StatusCode::RuntimeError);
      EXPECT_NE(st.message.find("rank(s) 2"), std::string::npos) << st.message;
      EXPECT_LT(Clock::now() - t0, 10s);
      EXPECT_FALSE(c->usable());
      EXPECT_NE(c->broken_reason().find("timed out"), std::string::npos);
      // Fails at once from now on.
      st = allgather_descriptors(*c, CallDescriptor{}, all, Clock::now() + 20s);
      EXPECT_EQ(st.code, qcoll::StatusCode::RuntimeError);
      EXPECT_NE(st.message.find("broken"), std::string::npos) << st.message;
      g->leave();
    });
  for (auto& t : ts) t.join();
  EXPECT_TRUE(g->broken());
}

TEST(ThreadGroupTransport, RanksOutOfStepBreakTheGroupInsteadOfPairingWrongSteps) {
  auto g = make_group("tg-step", 2);
  on_ranks(*g, [](int r, Communicator& c) {
    Status st;
    if (r == 0) {
      std::vector<CallDescriptor> all;
      st = allgather_descriptors(c, CallDescriptor{}, all, soon());
    } else {
      std::vector<uint8_t> buf(2 * 8);
      st = allgather_blocks(c, buf.data(), 8, soon());
    }
    EXPECT_EQ(st.code, qcoll::StatusCode::RuntimeError) << st.message;
    EXPECT_NE(c.broken_reason().find("out of step"), std::string::npos) << c.broken_reason();
  });
}

class FakeComm : public Communicator {
 public:
  explicit FakeComm(std::string n) : name_(std::move(n)) {}
  int rank() const override { return 0; }
  int size() const override { return 2; }
  const std::string& name() const override { return name_; }
  const char* transport() const override { return "fake"; }
  Status allgather_records(const void*, std::size_t, void*, Clock::time_point) override { return Status::Ok(); }
  Status begin_step(const StepShape&, const char*, Clock::time_point, Step*) override { return Status::Ok(); }
  PartRegion region(Step, int) override { return {}; }
  Status publish(Step) override { return Status::Ok(); }
  Status wait_step(Step, Clock::time_point) override { return Status::Ok(); }
  PartView view(Step, int) const override { return {}; }
  Status release(Step) override { return Status::Ok(); }

 private:
  std::string name_;
};

TEST(Registry, ThreadFirstThenProcess) {
  auto proc = std::make_shared<FakeComm>("reg-shared");
  auto mine = std::make_shared<FakeComm>("reg-shared");
  ASSERT_TRUE(register_for_process(proc).ok());
  EXPECT_FALSE(register_for_process(proc).ok());
  ASSERT_TRUE(register_for_thread(mine).ok());
  EXPECT_FALSE(register_for_thread(mine).ok());
  EXPECT_EQ(resolve("reg-shared"), mine);
  std::thread([&] { EXPECT_EQ(resolve("reg-shared"), proc); }).join();
  unregister_for_thread("reg-shared");
  EXPECT_EQ(resolve("reg-shared"), proc);
  unregister_for_process("reg-shared");
  EXPECT_EQ(resolve("reg-shared"), nullptr);
  unregister_for_process("reg-shared");  // unknown names are ignored
}

TEST(Registry, GroupNameRules) {
  EXPECT_TRUE(check_group_name(std::string(127, 'a').c_str(), "group").ok());
  Status st = check_group_name(std::string(128, 'a').c_str(), "group");
  EXPECT_EQ(st.code, qcoll::StatusCode::ParamInvalid);
  EXPECT_EQ(st.message, "group: name must be shorter than 128 characters, got 128 characters");
  EXPECT_EQ(check_group_name("", "name").code, qcoll::StatusCode::ParamInvalid);
  EXPECT_EQ(check_group_name(nullptr, "group").message, "group: must not be null");
}

}  // namespace
