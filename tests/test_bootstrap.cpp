// Communicators made from a unique id (qcollGetUniqueId / qcollCommInitRank) without MPI:
// the ranks are forked processes (or threads of one process). A normal run of both
// operators, synchronous and on a stream, is bit-identical to the thread transport; every
// way of getting the rendezvous wrong ends in bounded time with a clear error on every rank
// that came; nothing is left in /dev/shm.
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <string>
#include <thread>
#include <vector>

#include "comm/bootstrap.hpp"
#include "ops_harness.hpp"
#include "process_harness.hpp"
#include "qcoll/qcoll.h"
#include "qcoll/qcoll.hpp"

namespace {

using procs::Outcome;
using procs::since;

constexpr double kFast = 10.0;  // "at once": far below the 30 s timeout of those cases
// Time a loaded 2-core machine (or a sanitizer build) may add to a deadline before the
// ranks see it pass: a bound is the deadline plus this, never a fraction of a second.
constexpr double kSlack = 5.0;

class Bootstrap : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("HCCL_BUFFSIZE", "4", 1);  // 4 MB windows: small segments, chunked exchanges
    setenv("QCOLL_TIMEOUT_S", "30", 1);
  }
  void TearDown() override {
    unsetenv("HCCL_BUFFSIZE");
    unsetenv("QCOLL_TIMEOUT_S");
    EXPECT_TRUE(procs::left_in_dev_shm(qcoll::comm::bootstrap::segments_made_for_test()).empty())
        << "a segment of this process's root is still in /dev/shm";
  }
};

qcollUniqueId new_id() {
  qcollUniqueId id;
  EXPECT_EQ(qcollGetUniqueId(&id), QCOLL_SUCCESS) << qcollGetRecentErrMsg();
  return id;
}

// A child joining as `rank` of `nranks` (name "boot"), destroying at once.
Outcome join_only(const qcollUniqueId& id, int nranks, int rank, const char* name = "boot") {
  Outcome o;
  qcollComm* c = nullptr;
  const auto t0 = procs::Clock::now();
  const qcollStatus st = qcollCommInitRank(name, nranks, &id, rank, &c);
  o.set(st, since(t0));
  qcollCommDestroy(c);
  return o;
}

// ---- the id ----------------------------------------------------------------------------

TEST(UniqueId, HexRoundTripAndRefusals) {
  qcollUniqueId a = new_id(), b = new_id();
  EXPECT_NE(std::memcmp(a.internal, b.internal, sizeof a.internal), 0) << "two ids must differ";
  char hex[QCOLL_UNIQUE_ID_HEX_CHARS + 1];
  ASSERT_EQ(qcollUniqueIdToHex(&a, hex, sizeof hex), QCOLL_SUCCESS);
  EXPECT_EQ(std::strlen(hex), 256u);
  qcollUniqueId back;
  ASSERT_EQ(qcollUniqueIdFromHex(hex, &back), QCOLL_SUCCESS) << qcollGetRecentErrMsg();
  EXPECT_EQ(std::memcmp(a.internal, back.internal, sizeof a.internal), 0);
  // Upper case is accepted too.
  std::string upper(hex);
  for (char& ch : upper) ch = static_cast<char>(std::toupper(ch));
  ASSERT_EQ(qcollUniqueIdFromHex(upper.c_str(), &back), QCOLL_SUCCESS);
  EXPECT_EQ(std::memcmp(a.internal, back.internal, sizeof a.internal), 0);

  EXPECT_EQ(qcollUniqueIdToHex(&a, hex, 256), QCOLL_PARAM_INVALID);
  EXPECT_STREQ(qcollGetRecentErrMsg(), "hexSize: must be at least 257 (256 hex digits and a NUL), got 256");
  EXPECT_EQ(qcollUniqueIdFromHex("abc", &back), QCOLL_PARAM_INVALID);
  EXPECT_STREQ(qcollGetRecentErrMsg(), "hex: must be 256 hex digits (a unique id), got 3 characters");
  std::string bad(hex);
  bad[7] = 'g';
  EXPECT_EQ(qcollUniqueIdFromHex(bad.c_str(), &back), QCOLL_PARAM_INVALID);
  EXPECT_STREQ(qcollGetRecentErrMsg(), "hex: must be hex digits only, got 'g' at position 7");
  EXPECT_EQ(qcollUniqueIdFromHex(std::string(256, '0').c_str(), &back), QCOLL_PARAM_INVALID);
  EXPECT_EQ(std::string(qcollGetRecentErrMsg()).rfind("hex: must be a unique id made by qcollGetUniqueId", 0), 0u)
      << qcollGetRecentErrMsg();
  EXPECT_EQ(qcollUniqueIdFromHex(nullptr, &back), QCOLL_PARAM_NULLPTR);
  EXPECT_EQ(qcollGetUniqueId(nullptr), QCOLL_PARAM_NULLPTR);
  // C++: the same through UniqueId.
  const qcoll::UniqueId u = qcoll::UniqueId::create();
  EXPECT_EQ(qcoll::UniqueId::from_hex(u.hex()).bytes(), u.bytes());
  EXPECT_THROW(qcoll::UniqueId::from_hex("00"), qcoll::Error);
  EXPECT_THROW(qcoll::UniqueId::from_bytes(std::vector<uint8_t>(12)), qcoll::Error);
}

// Arguments a rank refuses by itself, at once (a root is told, nobody waits).
TEST_F(Bootstrap, LocalRefusalsAreImmediate) {
  qcollUniqueId id = new_id();
  qcollComm* c = nullptr;
  struct Bad {
    const char* name;
    int32_t nranks, rank;
    const qcollUniqueId* id;
    qcollStatus code;
    const char* message;
  };
  qcollUniqueId zero{};
  const std::string long_name(128, 'n');
  const Bad cases[] = {
      {"boot", 2, 0, nullptr, QCOLL_PARAM_NULLPTR, "id: must not be null"},
      {"boot", 2, 0, &zero, QCOLL_PARAM_INVALID,
       "id: must be a unique id made by qcollGetUniqueId, got bytes starting 0000000000000000"},
      {"", 2, 0, &id, QCOLL_PARAM_INVALID, "name: name must not be empty"},
      {long_name.c_str(), 2, 0, &id, QCOLL_PARAM_INVALID,
       "name: name must be shorter than 128 characters, got 128 characters"},
      {"boot", 0, 0, &id, QCOLL_PARAM_INVALID, "nranks: must be in [1, 1024], got 0"},
      {"boot", 2000, 0, &id, QCOLL_PARAM_INVALID, "nranks: must be in [1, 1024], got 2000"},
      {"boot", 4, 4, &id, QCOLL_PARAM_INVALID, "rank: must be in [0, 3] for nranks 4, got 4"},
      {"boot", 4, -1, &id, QCOLL_PARAM_INVALID, "rank: must be in [0, 3] for nranks 4, got -1"},
  };
  for (const Bad& b : cases) {
    const auto t0 = procs::Clock::now();
    EXPECT_EQ(qcollCommInitRank(b.name, b.nranks, b.id, b.rank, &c), b.code) << b.message;
    EXPECT_STREQ(qcollGetRecentErrMsg(), b.message);
    EXPECT_EQ(c, nullptr);
    EXPECT_LT(since(t0), kFast);
  }
  EXPECT_EQ(qcollCommInitRank("boot", 2, &id, 0, nullptr), QCOLL_PARAM_NULLPTR);
  setenv("QCOLL_TRANSPORT", "mpi", 1);
  EXPECT_EQ(qcollCommInitRank("boot", 2, &id, 0, &c), QCOLL_PARAM_INVALID);
  EXPECT_EQ(std::string(qcollGetRecentErrMsg()).rfind("QCOLL_TRANSPORT: must be auto or shm", 0), 0u)
      << qcollGetRecentErrMsg();
  unsetenv("QCOLL_TRANSPORT");
  setenv("HCCL_BUFFSIZE", "0", 1);
  EXPECT_EQ(qcollCommInitRank("boot", 2, &id, 0, &c), QCOLL_PARAM_INVALID);
  EXPECT_EQ(std::string(qcollGetRecentErrMsg()).rfind("HCCL_BUFFSIZE: must be", 0), 0u) << qcollGetRecentErrMsg();
  EXPECT_EQ(qcollCommDestroy(nullptr), QCOLL_SUCCESS);
}

// ---- a normal run: bit-identical to the thread transport -----------------------------------

std::vector<procs::Call> normal_calls() {
  using procs::make_call;
  return {
      make_call(true, QCOLL_DT_FLOAT8_E4M3FN, QCOLL_DT_FLOAT, QCOLL_DT_BFLOAT16, 16, 1024),
      make_call(false, QCOLL_DT_INT8, QCOLL_DT_FLOAT, QCOLL_DT_FLOAT, 16, 2048),
      make_call(true, QCOLL_DT_HIFLOAT8, QCOLL_DT_FLOAT, QCOLL_DT_FLOAT16, 32, 1024),
      make_call(false, QCOLL_DT_FLOAT8_E5M2, QCOLL_DT_FLOAT8_E8M0, QCOLL_DT_BFLOAT16, 16, 1024),
      // Larger than one slot of the 4 MB window: the exchange is chunked.
      make_call(false, QCOLL_DT_INT8, QCOLL_DT_FLOAT, QCOLL_DT_BFLOAT16, 256, 4096),
      make_call(true, QCOLL_DT_FLOAT8_E4M3FN, QCOLL_DT_FLOAT8_E8M0, QCOLL_DT_FLOAT, 256, 4096),
  };
}

void normal_run(int n) {
  const auto calls = normal_calls();
  std::vector<std::size_t> offset;
  std::size_t total = 0;
  for (const auto& c : calls) {
    offset.push_back(total);
    total += n * faults::out_bytes(c, n);
  }
  // [0, total): the synchronous results; [total, 2 total): the same calls on a stream.
  procs::SharedBuf shared(2 * total);
  ASSERT_NE(shared.data(), nullptr);
  std::memset(shared.data(), faults::kSentinel, 2 * total);
  const qcollUniqueId id = new_id();  // this process is the root; the children are the ranks
  const std::string name = "boot-normal-" + std::to_string(n);
  auto outcomes = procs::run_children(n, [&](int r) {
    Outcome o;
    qcollComm* c = nullptr;
    const auto t0 = procs::Clock::now();
    qcollStatus st = qcollCommInitRank(name.c_str(), n, &id, r, &c);
    o.set(st, since(t0));
    if (st != QCOLL_SUCCESS) return o;
    int32_t rank = -1, size = -1;
    const char* transport = nullptr;
    qcollGroupInfo(name.c_str(), &rank, &size, &transport);
    if (rank != r || size != n || std::string(transport) != "shm" || name != qcollCommName(c)) ++o.checks_failed;
    for (std::size_t k = 0; k < calls.size(); ++k) {
      procs::RankInputs in(r, calls[k], 7 + static_cast<uint32_t>(k));
      const std::size_t ob = faults::out_bytes(calls[k], n);
      st = procs::call(calls[k], in, n, name.c_str(), shared.data() + offset[k] + r * ob);
      if (st != QCOLL_SUCCESS) {
        o.set(st, since(t0));
        return o;
      }
    }
    // All of them again, enqueued on one stream, then one synchronize.
    qcollStream s = nullptr;
    qcollStreamCreate(&s);
    std::vector<std::unique_ptr<procs::RankInputs>> keep;
    for (std::size_t k = 0; k < calls.size(); ++k) {
      keep.push_back(std::make_unique<procs::RankInputs>(r, calls[k], 7 + static_cast<uint32_t>(k)));
      const std::size_t ob = faults::out_bytes(calls[k], n);
      if (procs::call(calls[k], *keep.back(), n, name.c_str(), shared.data() + total + offset[k] + r * ob, s) !=
          QCOLL_SUCCESS)
        ++o.checks_failed;
    }
    st = qcollStreamSynchronize(s, -1);
    if (st != QCOLL_SUCCESS) o.set(st, since(t0));
    qcollStreamDestroy(s);
    qcollCommDestroy(c);
    return o;
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(outcomes[r].status, QCOLL_SUCCESS) << "rank " << r << ": " << outcomes[r].text();
    EXPECT_EQ(outcomes[r].checks_failed, 0) << "rank " << r;
  }
  // The same calls over the thread transport, in this process.
  harness::Group g(n);
  for (std::size_t k = 0; k < calls.size(); ++k) {
    const std::size_t ob = faults::out_bytes(calls[k], n);
    std::vector<std::vector<uint8_t>> want(n, std::vector<uint8_t>(ob, faults::kSentinel));
    g.run([&](int r) {
      procs::RankInputs in(r, calls[k], 7 + static_cast<uint32_t>(k));
      EXPECT_EQ(procs::call(calls[k], in, n, g.name(), want[r].data()), QCOLL_SUCCESS) << qcollGetRecentErrMsg();
    });
    for (int r = 0; r < n; ++r) {
      EXPECT_EQ(std::memcmp(shared.data() + offset[k] + r * ob, want[r].data(), ob), 0)
          << "call " << k << ", rank " << r << ": shm differs from threads";
      EXPECT_EQ(std::memcmp(shared.data() + total + offset[k] + r * ob, want[r].data(), ob), 0)
          << "call " << k << ", rank " << r << ": shm on a stream differs from threads";
    }
  }
  // And one against the plain reference, so that "equal" is not "equally wrong".
  for (int r = 0; r < n; ++r) {
    const auto ref = faults::reference_output(calls[0], n, r, 7);
    const std::size_t ob = faults::out_bytes(calls[0], n);
    EXPECT_EQ(std::memcmp(shared.data() + offset[0] + r * ob, ref.data(), ob), 0) << "rank " << r;
  }
}

TEST_F(Bootstrap, NormalRunTwoRanks) { normal_run(2); }
TEST_F(Bootstrap, NormalRunFourRanks) { normal_run(4); }
TEST_F(Bootstrap, NormalRunEightRanks) { normal_run(8); }
// The extended contract's rank counts (contract.md §ext-ranks): 16 forked ranks on one segment.
TEST_F(Bootstrap, NormalRunSixteenRanksExtended) {
  harness::ContractScope contract(QCOLL_CONTRACT_EXTENDED);  // inherited by the forked ranks
  normal_run(16);
}

// The usual way: rank 0 makes the id and hands it to the others (here: hex through pipes).
TEST_F(Bootstrap, RankZeroMakesTheIdAndPassesItAsHex) {
  constexpr int n = 4;
  int pipes[n][2];
  for (auto& p : pipes) ASSERT_EQ(pipe(p), 0);
  const procs::Call c = procs::make_call(false, QCOLL_DT_FLOAT8_E4M3FN, QCOLL_DT_FLOAT, QCOLL_DT_BFLOAT16, 16, 1024);
  auto outcomes = procs::run_children(n, [&](int r) {
    Outcome o;
    char hex[QCOLL_UNIQUE_ID_HEX_CHARS + 1] = {};
    qcollUniqueId id;
    if (r == 0) {
      qcollGetUniqueId(&id);
      qcollUniqueIdToHex(&id, hex, sizeof hex);
      for (int k = 1; k < n; ++k)
        if (write(pipes[k][1], hex, sizeof hex) != static_cast<ssize_t>(sizeof hex)) ++o.checks_failed;
    } else if (read(pipes[r][0], hex, sizeof hex) != static_cast<ssize_t>(sizeof hex) ||
               qcollUniqueIdFromHex(hex, &id) != QCOLL_SUCCESS) {
      o.set(qcollUniqueIdFromHex(hex, &id), 0);
      return o;
    }
    qcollComm* comm = nullptr;
    const auto t0 = procs::Clock::now();
    qcollStatus st = qcollCommInitRank(nullptr, n, &id, r, &comm);  // the name derived from the id
    o.set(st, since(t0));
    if (st != QCOLL_SUCCESS) return o;
    const std::string name = qcollCommName(comm);
    if (name.rfind("uid-", 0) != 0 || name.size() != 36) ++o.checks_failed;
    procs::RankInputs in(r, c, 3);
    std::vector<uint8_t> out(faults::out_bytes(c, n), faults::kSentinel);
    st = procs::call(c, in, n, name.c_str(), out.data());
    o.set(st, since(t0));
    if (out != faults::reference_output(c, n, r, 3)) ++o.checks_failed;
    qcollCommDestroy(comm);
    return o;
  });
  for (int r = 0; r < n; ++r) {
    EXPECT_EQ(outcomes[r].status, QCOLL_SUCCESS) << "rank " << r << ": " << outcomes[r].text();
    EXPECT_EQ(outcomes[r].checks_failed, 0) << "rank " << r;
  }
  for (auto& p : pipes) {
    close(p[0]);
    close(p[1]);
  }
}

// ---- getting it wrong: every rank that came fails, in bounded time ------------------------------

TEST_F(Bootstrap, WrongRank) {
  const qcollUniqueId id = new_id();
  auto o = procs::run_children(2, [&](int i) { return join_only(id, 2, i == 0 ? 0 : 5); });
  EXPECT_EQ(o[1].status, QCOLL_PARAM_INVALID) << o[1].text();
  EXPECT_STREQ(o[1].message, "rank: must be in [0, 1] for nranks 2, got 5");
  // Rank 0 was told (if it was there first), or it finds the rendezvous failed.
  EXPECT_EQ(o[0].status, QCOLL_RUNTIME_ERROR) << o[0].text();
  EXPECT_NE(std::string(o[0].message).find("joining as rank 5 failed its own checks: rank: must be in [0, 1]"),
            std::string::npos)
      << o[0].text();
  for (const auto& x : o) EXPECT_LT(x.seconds, kFast) << x.text();
}

TEST_F(Bootstrap, DuplicateRank) {
  const qcollUniqueId id = new_id();
  auto o = procs::run_children(3, [&](int i) { return join_only(id, 3, i == 2 ? 1 : i); });
  const std::string rule = "rank: must be unique among the ranks of an id, got 1 twice (pids ";
  for (int i = 0; i < 3; ++i) {
    const std::string msg = o[i].message;
    if (i == 0 && o[i].status == QCOLL_RUNTIME_ERROR) {
      // Rank 0 came after the second rank 1: it is told the rendezvous failed, and why.
      EXPECT_EQ(msg.rfind("id: its rendezvous failed earlier (" + rule, 0), 0u) << o[i].text();
    } else {
      // The two ranks 1 (and rank 0 when it was there first) are told the rule.
      EXPECT_EQ(o[i].status, QCOLL_PARAM_INVALID) << o[i].text();
      EXPECT_EQ(msg.rfind(rule, 0), 0u) << o[i].text();
    }
    EXPECT_LT(o[i].seconds, kFast) << o[i].text();
  }
}

TEST_F(Bootstrap, MismatchedNranks) {
  const qcollUniqueId id = new_id();
  auto o = procs::run_children(2, [&](int i) { return join_only(id, i == 0 ? 2 : 4, i); });
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(o[i].status, QCOLL_PARAM_INVALID) << o[i].text();
    const std::string m = o[i].message;
    EXPECT_EQ(m.rfind("nranks: must be the same on every rank of an id, got ", 0), 0u) << m;
    EXPECT_NE(m.find("2 (rank 0, pid "), std::string::npos) << m;
    EXPECT_NE(m.find("4 (rank 1, pid "), std::string::npos) << m;
    EXPECT_LT(o[i].seconds, kFast) << o[i].text();
  }
}

TEST_F(Bootstrap, MismatchedNameOrBuffsize) {
  const qcollUniqueId id = new_id();
  auto o = procs::run_children(2, [&](int i) { return join_only(id, 2, i, i == 0 ? "boot-a" : "boot-b"); });
  for (const auto& x : o) {
    EXPECT_EQ(x.status, QCOLL_PARAM_INVALID) << x.text();
    EXPECT_EQ(std::string(x.message).rfind("name: must be the same on every rank of an id, got 'boot-", 0), 0u)
        << x.text();
  }
  const qcollUniqueId id2 = new_id();
  o = procs::run_children(2, [&](int i) {
    if (i == 1) setenv("HCCL_BUFFSIZE", "5", 1);
    return join_only(id2, 2, i);
  });
  for (const auto& x : o) {
    EXPECT_EQ(x.status, QCOLL_PARAM_INVALID) << x.text();
    EXPECT_EQ(std::string(x.message).rfind("HCCL_BUFFSIZE: must be the same on every rank of an id, got ", 0), 0u)
        << x.text();
  }
}

TEST_F(Bootstrap, StaleIdAlreadyUsed) {
  // This process's root answers late comers for QCOLL_TIMEOUT_S after the rendezvous: 5 s,
  // so "used again at once" lands inside that window even on a loaded machine.
  setenv("QCOLL_TIMEOUT_S", "5", 1);
  const qcollUniqueId id = new_id();
  auto o = procs::run_children(2, [&](int i) { return join_only(id, 2, i); });
  for (const auto& x : o) ASSERT_EQ(x.status, QCOLL_SUCCESS) << x.text();
  const auto done = procs::Clock::now();
  // Used again at once: the root says so.
  o = procs::run_children(1, [&](int) { return join_only(id, 2, 0); });
  EXPECT_EQ(o[0].status, QCOLL_PARAM_INVALID) << o[0].text();
  EXPECT_EQ(std::string(o[0].message).rfind("id: already used: communicator 'boot' of 2 ranks was made from it", 0), 0u)
      << o[0].text();
  EXPECT_LT(o[0].seconds, kFast);
  // Later (the 5 s window past, plus 1.5 s) the root has closed: nobody serves it.
  while (since(done) < 6.5) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  o = procs::run_children(1, [&](int) { return join_only(id, 2, 1); });
  EXPECT_EQ(o[0].status, QCOLL_PARAM_INVALID) << o[0].text();
  EXPECT_EQ(std::string(o[0].message).rfind("id: stale: nobody serves its rendezvous any more", 0), 0u) << o[0].text();
  EXPECT_LT(o[0].seconds, kFast);
}

TEST_F(Bootstrap, StaleIdCreatorGone) {
  // A child makes the id, hands it over and exits; then two ranks try to use it.
  procs::SharedBuf shared(sizeof(qcollUniqueId));
  auto made = procs::run_children(1, [&](int) {
    Outcome o;
    o.set(qcollGetUniqueId(reinterpret_cast<qcollUniqueId*>(shared.data())), 0);
    return o;
  });
  ASSERT_EQ(made[0].status, QCOLL_SUCCESS) << made[0].text();  // run_children reaped it
  const qcollUniqueId id = *reinterpret_cast<qcollUniqueId*>(shared.data());
  auto o = procs::run_children(2, [&](int i) { return join_only(id, 2, i); });
  for (const auto& x : o) {
    EXPECT_EQ(x.status, QCOLL_PARAM_INVALID) << x.text();
    EXPECT_EQ(std::string(x.message).rfind("id: stale: the process that made it (pid ", 0), 0u) << x.text();
    EXPECT_NE(std::string(x.message).find("has exited"), std::string::npos) << x.text();
    EXPECT_LT(x.seconds, kFast);
  }
}

TEST_F(Bootstrap, LateRankFailsEveryoneInBoundedTime) {
  // The ranks wait 1 s (the shortest QCOLL_TIMEOUT_S of the ranks bounds the rendezvous);
  // this process's root keeps answering late comers for its own 5 s after that.
  setenv("QCOLL_TIMEOUT_S", "5", 1);
  const qcollUniqueId id = new_id();
  // Ranks 0..2 of 4 come; rank 3 does not.
  auto o = procs::run_children(3, [&](int i) {
    setenv("QCOLL_TIMEOUT_S", "1", 1);
    return join_only(id, 4, i);
  });
  for (const auto& x : o) {
    EXPECT_EQ(x.status, QCOLL_RUNTIME_ERROR) << x.text();
    EXPECT_NE(std::string(x.message).find("timed out after 1.0 s (QCOLL_TIMEOUT_S of rank "), std::string::npos)
        << x.text();
    EXPECT_NE(std::string(x.message).find("rank(s) 3 of 4 did not join"), std::string::npos) << x.text();
    EXPECT_GE(x.seconds, 0.5);
    EXPECT_LT(x.seconds, 1.0 + kSlack);
  }
  // Rank 3, too late: the root still answers for a while and says what happened.
  o = procs::run_children(1, [&](int) { return join_only(id, 4, 3); });
  EXPECT_EQ(o[0].status, QCOLL_RUNTIME_ERROR) << o[0].text();
  EXPECT_EQ(std::string(o[0].message).rfind("id: its rendezvous failed earlier (", 0), 0u) << o[0].text();
  EXPECT_LT(o[0].seconds, kFast);
}

TEST_F(Bootstrap, TheRankWithTheShortestTimeoutSetsTheBound) {
  const qcollUniqueId id = new_id();
  auto o = procs::run_children(2, [&](int i) {
    if (i == 1) setenv("QCOLL_TIMEOUT_S", "0.5", 1);  // the others wait 30 s
    return join_only(id, 3, i);
  });
  for (const auto& x : o) {
    EXPECT_EQ(x.status, QCOLL_RUNTIME_ERROR) << x.text();
    EXPECT_NE(std::string(x.message).find("timed out after 0.5 s (QCOLL_TIMEOUT_S of rank 1): rank(s) 2 of 3"),
              std::string::npos)
        << x.text();
    EXPECT_LT(x.seconds, 0.5 + kSlack);
  }
}

TEST_F(Bootstrap, ARankThatDiesMakesTheOthersFailAtOnce) {
  const qcollUniqueId id = new_id();
  // Rank 2 joins in a child that is killed while it waits (rank 3 never comes).
  std::atomic<bool> killed{false};
  auto o = procs::run_children(
      3, [&](int i) { return join_only(id, 4, i); }, 60,
      [&](const std::vector<pid_t>& pids) {
        // Once all three have joined (this process is their root), kill rank 2.
        qcoll::comm::bootstrap::Id raw;
        std::memcpy(raw.bytes, id.internal, sizeof raw.bytes);
        const auto t0 = procs::Clock::now();
        while (qcoll::comm::bootstrap::joined_for_test(raw) < 3 && since(t0) < 20)
          std::this_thread::sleep_for(std::chrono::milliseconds(5));
        kill(pids[2], SIGKILL);
        killed = true;
      });
  ASSERT_TRUE(killed);
  EXPECT_EQ(o[2].status, -1);  // killed: no report
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(o[i].status, QCOLL_RUNTIME_ERROR) << o[i].text();
    EXPECT_NE(std::string(o[i].message).find("rank 2 (pid "), std::string::npos) << o[i].text();
    EXPECT_NE(std::string(o[i].message).find("left the rendezvous before it completed"), std::string::npos)
        << o[i].text();
    EXPECT_LT(o[i].seconds, kFast) << o[i].text();
  }
}

// ---- several ranks as threads of one process -------------------------------------------------

TEST_F(Bootstrap, ThreadsOfOneProcess) {
  constexpr int n = 4;
  const qcollUniqueId id = new_id();
  const procs::Call c = procs::make_call(true, QCOLL_DT_INT8, QCOLL_DT_FLOAT, QCOLL_DT_FLOAT16, 32, 1024);
  std::vector<qcollStatus> st(n, -1), op(n, -1), destroyed(n, -1);
  std::vector<std::vector<uint8_t>> out(n, std::vector<uint8_t>(faults::out_bytes(c, n), faults::kSentinel));
  std::vector<qcollComm*> comms(n, nullptr);
  std::atomic<int> ready{0};
  std::atomic<bool> checked{false};
  std::vector<std::thread> ts;
  for (int r = 0; r < n; ++r)
    ts.emplace_back([&, r] {
      st[r] = qcollCommInitRank("boot-threads", n, &id, r, &comms[r]);
      if (st[r] == QCOLL_SUCCESS) {
        procs::RankInputs in(r, c, 11);
        op[r] = procs::call(c, in, n, "boot-threads", out[r].data());
      }
      ++ready;
      while (!checked) std::this_thread::sleep_for(std::chrono::milliseconds(1));
      destroyed[r] = qcollCommDestroy(comms[r]);
    });
  while (ready < n) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  // Registered for each joining thread only: not for this one, and destroyed on its own thread.
  EXPECT_EQ(qcollGroupInfo("boot-threads", nullptr, nullptr, nullptr), QCOLL_PARAM_INVALID);
  if (comms[0] != nullptr) {
    EXPECT_EQ(qcollCommDestroy(comms[0]), QCOLL_PARAM_INVALID);
    EXPECT_EQ(std::string(qcollGetRecentErrMsg()).rfind("comm: must be destroyed on the thread that created it", 0), 0u)
        << qcollGetRecentErrMsg();
  }
  checked = true;
  for (auto& t : ts) t.join();
  for (int r = 0; r < n; ++r) {
    ASSERT_EQ(st[r], QCOLL_SUCCESS) << "rank " << r;
    EXPECT_EQ(op[r], QCOLL_SUCCESS) << "rank " << r;
    EXPECT_EQ(out[r], faults::reference_output(c, n, r, 11)) << "rank " << r;
    EXPECT_EQ(destroyed[r], QCOLL_SUCCESS) << "rank " << r;
  }
  // A handle whose thread has exited may be destroyed anywhere (the registration went with it).
  ts.clear();
  const qcollUniqueId id2 = new_id();
  std::vector<qcollComm*> left(2, nullptr);
  for (int r = 0; r < 2; ++r)
    ts.emplace_back([&, r] { st[r] = qcollCommInitRank("boot-threads", 2, &id2, r, &left[r]); });
  for (auto& t : ts) t.join();
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(st[r], QCOLL_SUCCESS);
    EXPECT_EQ(qcollCommDestroy(left[r]), QCOLL_SUCCESS) << qcollGetRecentErrMsg();
  }
}

// C++: qcoll::Comm from a qcoll::UniqueId, two thread ranks.
TEST_F(Bootstrap, CppComm) {
  const qcoll::UniqueId id = qcoll::UniqueId::create();
  const procs::Call c = procs::make_call(false, QCOLL_DT_FLOAT8_E4M3FN, QCOLL_DT_FLOAT, QCOLL_DT_BFLOAT16, 8, 1024);
  std::vector<std::string> errors(2);
  std::vector<std::vector<uint8_t>> out(2, std::vector<uint8_t>(faults::out_bytes(c, 2)));
  std::vector<std::thread> ts;
  for (int r = 0; r < 2; ++r)
    ts.emplace_back([&, r] {
      try {
        qcoll::Comm comm("boot-cpp", 2, qcoll::UniqueId::from_hex(id.hex()), r);
        if (comm.rank() != r || comm.size() != 2 || comm.name() != "boot-cpp") errors[r] = "rank/size/name";
        procs::RankInputs in(r, c, 5);
        auto x = qcoll::view(in.x, qcoll::DType::Float8E4M3FN, {8, 1024});
        auto s = qcoll::view(in.scales, qcoll::DType::Float, {8, 8});
        auto o = qcoll::view(out[r], qcoll::DType::BFloat16, {8, 1024});
        qcoll::quant_all_reduce(x, s, comm, o);
        qcoll::Stream stream;
        std::vector<uint8_t> out2(out[r].size());
        qcoll::quant_all_reduce(x, s, comm, qcoll::view(out2, qcoll::DType::BFloat16, {8, 1024}), stream);
        stream.synchronize();
        if (out2 != out[r]) errors[r] = "stream result differs";
      } catch (const std::exception& e) {
        errors[r] = e.what();
      }
    });
  for (auto& t : ts) t.join();
  for (int r = 0; r < 2; ++r) {
    EXPECT_EQ(errors[r], "") << "rank " << r;
    EXPECT_EQ(out[r], faults::reference_output(c, 2, r, 5)) << "rank " << r;
  }
  // A rank alone times out with the C++ exception carrying the status.
  setenv("QCOLL_TIMEOUT_S", "0.3", 1);
  try {
    qcoll::Comm lonely("boot-cpp-lonely", 2, qcoll::UniqueId::create(), 0);
    ADD_FAILURE() << "a rank alone must not get a communicator";
  } catch (const qcoll::Error& e) {
    EXPECT_EQ(e.code(), qcoll::StatusCode::RuntimeError);
    EXPECT_NE(e.message().find("rank(s) 1 of 2 did not join"), std::string::npos) << e.what();
  }
}

}  // namespace
