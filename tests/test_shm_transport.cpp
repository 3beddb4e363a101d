// The shared-memory transport without MPI: ranks are forked processes that share one
// segment. Checks the window rule (contract.md §window), chunked exchange of any size, back-to-
// back calls with changing data, and that a dead or absent peer gives RUNTIME_ERROR in time.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "comm/collectives.hpp"
#include "comm/shm_communicator.hpp"
#include "comm/shm_segment.hpp"
#include "comm/window_plan.hpp"
#include "ops/call_descriptor.hpp"
#include "qcoll/settings.hpp"

namespace qcoll::comm {
namespace {

using namespace std::chrono_literals;
using ops::allgather_descriptors;
using ops::CallDescriptor;

// ---- the window rule, against a brute-force reading of the rule ----------------------------

std::size_t up512(std::size_t v) { return (v + 511) / 512 * 512; }

// The largest r with 2 * (n * (up512(r*xrb) + up512(r*srb)) + 1 MB) <= window, capped at rows.
std::size_t rule11_rows(std::size_t window, int n, std::size_t xrb, std::size_t srb, std::size_t rows) {
  std::size_t best = 0;
  for (std::size_t r = 1; r <= rows; ++r) {
    if (2 * (n * (up512(r * xrb) + up512(r * srb)) + (1u << 20)) <= window) best = r;
  }
  return best;
}

TEST(WindowPlan, MaxChunkRowsFollowsTheVendorRule) {
  struct Case {
    std::size_t mb;
    int n;
    std::size_t h;
    bool mx;
    std::size_t rows;
  };
  const Case cases[] = {{3, 4, 1024, false, 512}, {3, 8, 8192, false, 64},     {3, 2, 5120, true, 1000},
                        {4, 4, 4096, true, 300},  {200, 8, 8192, false, 4096}, {200, 2, 1024, false, 16},
                        {2, 2, 1024, false, 8},   {1, 8, 8192, true, 8}};
  for (const Case& c : cases) {
    ExchangeSpec spec;
    spec.x_row_bytes = c.h;
    spec.s_row_bytes = c.mx ? c.h / 32 : c.h / 128 * 4;
    spec.rows_per_rank = c.rows;
    const std::size_t window = c.mb << 20;
    EXPECT_EQ(max_chunk_rows_for_window(window, c.n, spec),
              rule11_rows(window, c.n, spec.x_row_bytes, spec.s_row_bytes, c.rows))
        << c.mb << " MB, n=" << c.n << ", H=" << c.h;
  }
}

TEST(WindowPlan, WholeTensorFitsExactlyWhenTheVendorInequalityHolds) {
  // HCCL_BUFFSIZE >= 2*(xDataSize + scalesDataSize + 1 MB): BS = 1024 rows of H = 1024 int8
  // with fp32 scales per 128: x 1 MiB, scales 32 KiB -> needs 2*(1 MiB + 32 KiB + 1 MiB) = 4.0625 MiB.
  ExchangeSpec spec{nullptr, 1024, nullptr, 32, 256};  // 4 ranks x 256 rows
  EXPECT_EQ(max_chunk_rows_for_window(5u << 20, 4, spec), 256u);
  EXPECT_LT(max_chunk_rows_for_window(4u << 20, 4, spec), 256u);
}

TEST(WindowPlan, TooSmallWindowMessageNamesHcclBuffsize) {
  ExchangeSpec spec{nullptr, 8192, nullptr, 256, 4};
  EXPECT_EQ(max_chunk_rows_for_window(2u << 20, 8, spec), 0u);
  const std::string m = window_too_small_message(2u << 20, 8, spec);
  EXPECT_NE(m.find("HCCL_BUFFSIZE"), std::string::npos) << m;
  EXPECT_NE(m.find("got 2"), std::string::npos) << m;
}

TEST(WindowPlan, ReadsHcclBuffsize) {
  std::size_t w = 0;
  unsetenv("HCCL_BUFFSIZE");
  ASSERT_TRUE(read_buffsize_env(w).ok());
  EXPECT_EQ(w, 200u << 20);
  setenv("HCCL_BUFFSIZE", "3", 1);
  ASSERT_TRUE(read_buffsize_env(w).ok());
  EXPECT_EQ(w, 3u << 20);
  for (const char* bad : {"0", "-1", "abc", "3MB", "1.5", "99999999999"}) {
    setenv("HCCL_BUFFSIZE", bad, 1);
    const Status s = read_buffsize_env(w);
    EXPECT_EQ(s.code, StatusCode::ParamInvalid) << bad;
    EXPECT_NE(s.message.find("HCCL_BUFFSIZE"), std::string::npos);
    EXPECT_NE(s.message.find(bad), std::string::npos);
  }
  unsetenv("HCCL_BUFFSIZE");
}

TEST(ShmSegment, NameIsRandomModeIsPrivateAndUnlinkRemovesIt) {
  std::string a, b;
  ASSERT_TRUE(random_shm_name(a).ok());
  ASSERT_TRUE(random_shm_name(b).ok());
  EXPECT_NE(a, b);
  const std::string tag = qcoll::settings::shm_tag();  // the tests run with one (cmake/test_env.cmake)
  EXPECT_EQ(a.size(), 7u + (tag.empty() ? 0u : tag.size() + 1) + 32u) << a;
  ShmMapping m;
  ASSERT_TRUE(create_shm(a, 1 << 16, m).ok());
  struct stat st {};
  ASSERT_EQ(stat(("/dev/shm" + a).c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(create_shm(a, 1 << 16, m).code, StatusCode::InnerError);  // exclusive
  unlink_shm(a);
  EXPECT_NE(stat(("/dev/shm" + a).c_str(), &st), 0);
}

// ---- forked ranks --------------------------------------------------------------------------

// Runs body(comm) in `n` forked processes sharing one segment; returns each child's exit code.
// `sparse`: as the transport makes it (only the control blocks reserved; every rank grows
// its window through its own descriptor); otherwise the whole segment is reserved up front.
std::vector<int> run_ranks(int n, std::size_t window, const std::function<int(ShmCommunicator&)>& body,
                           bool sparse = false, const std::function<void(const ShmMapping&)>& after = nullptr) {
  std::string name;
  EXPECT_TRUE(random_shm_name(name).ok());
  const std::size_t bytes = ShmCommunicator::segment_bytes(n, window);
  ShmMapping m;
  EXPECT_TRUE(create_shm(name, bytes, m, nullptr, sparse ? ShmCommunicator::control_bytes(n) : SIZE_MAX).ok());
  ShmCommunicator::init_segment(m.data(), n, window);
  unlink_shm(name);  // the children inherit the mapping: no name needs to stay in /dev/shm
  std::vector<pid_t> pids;
  for (int r = 0; r < n; ++r) {
    const pid_t pid = fork();
    if (pid == 0) {
      // This process's copy of the inherited mapping (and, sparse, of the descriptor).
      ShmMapping mine(m.data(), m.bytes(), sparse ? dup(m.fd()) : -1);
      int code = 0;
      {
        ShmCommunicator c("g", r, n, window, std::move(mine));
        code = c.valid() ? body(c) : 90;
      }
      _exit(code);
    }
    pids.push_back(pid);
  }
  std::vector<int> codes;
  for (pid_t p : pids) {
    int st = 0;
    waitpid(p, &st, 0);
    codes.push_back(WIFEXITED(st) ? WEXITSTATUS(st) : 100 + (WIFSIGNALED(st) ? WTERMSIG(st) : 0));
  }
  if (after) after(m);
  return codes;
}

// Byte j of row `row` in source rank k's x for call `call`: a formula the test knows.
uint8_t x_byte(int k, std::size_t row, std::size_t j, int call) {
  return static_cast<uint8_t>(k * 131 + row * 7 + j * 3 + call * 29 + (j >> 8));
}
uint8_t s_byte(int k, std::size_t row, std::size_t j, int call) {
  return static_cast<uint8_t>(k * 17 + row * 11 + j * 5 + call * 3 + 1);
}

// One exchange on rank c.rank(); 0 when every received byte is right.
// With `produce`, the rows are written into the slots by a producer (as a fused operator
// would), the own rows too, instead of being read from the input.
int exchange_and_check(ShmCommunicator& c, std::size_t xrb, std::size_t srb, std::size_t rpr, int call,
                       std::size_t* chunks = nullptr, bool produce = false) {
  const int n = c.size();
  std::vector<uint8_t> x(n * rpr * xrb), s(n * rpr * srb);
  for (std::size_t row = 0; row < n * rpr; ++row) {
    for (std::size_t j = 0; j < xrb; ++j) x[row * xrb + j] = x_byte(c.rank(), row, j, call);
    for (std::size_t j = 0; j < srb; ++j) s[row * srb + j] = s_byte(c.rank(), row, j, call);
  }
  ExchangeSpec spec{x.data(), xrb, s.data(), srb, rpr};
  std::size_t next_row = 0, nchunks = 0;
  int bad = 0;
  const RowProducer producer = [&](int dest, std::size_t row0, std::size_t rows, const PartRegion& part) {
    const std::size_t first = dest * rpr + row0;
    for (std::size_t r = 0; r < rows; ++r) {
      for (std::size_t j = 0; j < xrb; ++j) part.seg[0][r * xrb + j] = x_byte(c.rank(), first + r, j, call);
      for (std::size_t j = 0; j < srb; ++j) part.seg[1][r * srb + j] = s_byte(c.rank(), first + r, j, call);
    }
    return Status::Ok();
  };
  if (produce) spec.x = spec.scales = nullptr;  // everything comes from the producer
  Status st = exchange(
      c, spec,
      [&](const Chunk& ch) {
        if (ch.row_begin != next_row) ++bad;
        next_row += ch.rows;
        ++nchunks;
        for (int k = 0; k < n; ++k) {
          for (std::size_t r = 0; r < ch.rows; ++r) {
            const std::size_t row = c.rank() * rpr + ch.row_begin + r;
            for (std::size_t j = 0; j < xrb; ++j) bad += ch.x[k][r * xrb + j] != x_byte(k, row, j, call);
            for (std::size_t j = 0; j < srb; ++j) bad += ch.scales[k][r * srb + j] != s_byte(k, row, j, call);
          }
        }
        return Status::Ok();
      },
      Clock::now() + 20s, produce ? &producer : nullptr);
  if (chunks) *chunks = nchunks;
  if (!st.ok()) return 10;
  if (next_row != rpr) return 11;
  return bad ? 12 : 0;
}

TEST(ShmTransport, ExchangeLargerThanTheWindowMovesInChunks) {
  // 3 MB window: 0.5 MB per slot for data. 4 ranks x 300 rows x (5120 + 160) bytes ~ 6.3 MB.
  const auto codes = run_ranks(4, 3u << 20, [](ShmCommunicator& c) {
    std::size_t chunks = 0;
    const int r = exchange_and_check(c, 5120, 160, 300, 0, &chunks);
    return r ? r : (chunks >= 10 ? 0 : 13);
  });
  for (int code : codes) EXPECT_EQ(code, 0);
}

TEST(ShmTransport, ExchangeFromAProducerMovesInChunks) {
  const auto codes = run_ranks(4, 3u << 20, [](ShmCommunicator& c) {
    std::size_t chunks = 0;
    const int r = exchange_and_check(c, 5120, 160, 300, 1, &chunks, true);
    return r ? r : (chunks >= 10 ? 0 : 13);
  });
  for (int code : codes) EXPECT_EQ(code, 0);
}

TEST(ShmTransport, BackToBackCallsNeverSeeStaleData) {
  const auto codes = run_ranks(4, 3u << 20, [](ShmCommunicator& c) {
    for (int call = 0; call < 100; ++call) {
      std::vector<CallDescriptor> all;
      CallDescriptor d;
      d.op = 1;
      d.shape[0] = call * 10 + c.rank();
      if (!allgather_descriptors(c, d, all, Clock::now() + 20s).ok()) return 20;
      for (int k = 0; k < c.size(); ++k) {
        if (all[k].shape[0] != call * 10 + k) return 21;
      }
      // Row counts change between calls, so chunk boundaries move too.
      if (int r = exchange_and_check(c, 1024, 32, 40 + (call % 7) * 20, call)) return r;
      std::vector<uint32_t> blocks(c.size() * 1000);
      for (int i = 0; i < 1000; ++i) blocks[c.rank() * 1000 + i] = call * 100000 + c.rank() * 1000 + i;
      if (!allgather_blocks(c, blocks.data(), 4000, Clock::now() + 20s).ok()) return 22;
      for (int k = 0; k < c.size(); ++k)
        for (int i = 0; i < 1000; ++i)
          if (blocks[k * 1000 + i] != static_cast<uint32_t>(call * 100000 + k * 1000 + i)) return 23;
    }
    return 0;
  });
  for (int code : codes) EXPECT_EQ(code, 0);
}

TEST(ShmTransport, AllgatherLargerThanASlot) {
  const auto codes = run_ranks(2, 1u << 20, [](ShmCommunicator& c) {
    const std::size_t block = 3 * (1u << 20) + 123;  // six slots' worth
    std::vector<uint8_t> buf(2 * block);
    for (std::size_t i = 0; i < block; ++i) buf[c.rank() * block + i] = static_cast<uint8_t>(i * 13 + c.rank());
    if (!allgather_blocks(c, buf.data(), block, Clock::now() + 20s).ok()) return 30;
    for (int k = 0; k < 2; ++k)
      for (std::size_t i = 0; i < block; ++i)
        if (buf[k * block + i] != static_cast<uint8_t>(i * 13 + k)) return 31;
    return 0;
  });
  for (int code : codes) EXPECT_EQ(code, 0);
}

TEST(ShmTransport, SegmentNamesCarryTheShmTag) {
  const char* before = std::getenv("QCOLL_SHM_TAG");
  const std::string keep = before ? before : "";
  std::string name;
  setenv("QCOLL_SHM_TAG", "tagA1", 1);
  ASSERT_TRUE(qcoll::comm::random_shm_name(name).ok());
  EXPECT_EQ(name.rfind("/qcoll-tagA1-", 0), 0u) << name;
  EXPECT_EQ(name.size(), std::string("/qcoll-tagA1-").size() + 32) << name;
  unsetenv("QCOLL_SHM_TAG");
  ASSERT_TRUE(qcoll::comm::random_shm_name(name).ok());
  EXPECT_EQ(name.rfind("/qcoll-", 0), 0u) << name;
  EXPECT_EQ(name.size(), std::string("/qcoll-").size() + 32) << name;
  if (before) setenv("QCOLL_SHM_TAG", keep.c_str(), 1);
}

TEST(ShmTransport, WindowTooSmallIsParamInvalid) {
  const auto codes = run_ranks(2, 2u << 20, [](ShmCommunicator& c) {
    std::vector<uint8_t> x(2 * 4 * 1024), s(2 * 4 * 32);
    ExchangeSpec spec{x.data(), 1024, s.data(), 32, 4};
    if (max_chunk_rows(c, spec) != 0) return 40;
    Status st = exchange(
        c, spec, [](const Chunk&) { return Status::Ok(); }, Clock::now() + 5s);
    return st.code == StatusCode::ParamInvalid && st.message.find("HCCL_BUFFSIZE") != std::string::npos ? 0 : 41;
  });
  for (int code : codes) EXPECT_EQ(code, 0);
}

TEST(ShmTransport, PeerThatExitsMakesOthersFailFast) {
  const auto codes = run_ranks(4, 3u << 20, [](ShmCommunicator& c) {
    if (c.rank() == 3) {
      c.abandon_for_test();  // as if killed: it leaves no mark in the segment
      return 0;
    }
    usleep(100 * 1000);  // rank 3 is gone by now
    const auto t0 = Clock::now();
    std::vector<CallDescriptor> all;
    Status st = allgather_descriptors(c, CallDescriptor{}, all, Clock::now() + 30s);
    const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    if (st.code != StatusCode::RuntimeError) return 50;
    if (secs > 5) return 51;  // found by the liveness check, long before the deadline
    if (c.usable()) return 52;
    return 0;
  });
  for (int code : codes) EXPECT_EQ(code, 0);
}

TEST(ShmTransport, PeerThatNeverCallsTimesOut) {
  // Rank 1 stays alive, never calling, until rank 0 is done (a flag in memory the forked
  // ranks share), so rank 0 sees a timeout and not an exit however loaded the machine is.
  void* page = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(page, MAP_FAILED);
  auto* done = new (page) std::atomic<int>(0);
  const auto codes = run_ranks(2, 1u << 20, [done](ShmCommunicator& c) {
    if (c.rank() == 1) {
      const auto t0 = Clock::now();
      while (done->load() == 0 && Clock::now() - t0 < 60s) usleep(10 * 1000);  // alive, but never calls
      return 0;
    }
    const auto t0 = Clock::now();
    std::vector<CallDescriptor> all;
    Status st = allgather_descriptors(c, CallDescriptor{}, all, Clock::now() + 500ms);
    const double secs = std::chrono::duration<double>(Clock::now() - t0).count();
    int code = 0;
    if (st.code != StatusCode::RuntimeError || st.message.find("timed out") == std::string::npos)
      code = 60;
    else if (secs < 0.5 || secs > 0.5 + 5.0)
      code = 61;  // the deadline, plus a loaded machine's slack
    else if (c.usable())
      code = 62;
    // Broken: every later call fails at once (long before its 10 s deadline).
    else if (allgather_descriptors(c, CallDescriptor{}, all, Clock::now() + 10s).code != StatusCode::RuntimeError)
      code = 63;
    done->store(1);
    return code;
  });
  munmap(page, 4096);
  for (int code : codes) EXPECT_EQ(code, 0);
}

TEST(ShmTransport, ConsumerErrorIsReturnedAfterTheProtocolCompletes) {
  const auto codes = run_ranks(2, 3u << 20, [](ShmCommunicator& c) {
    std::vector<uint8_t> x(2 * 600 * 1024), s(2 * 600 * 32);
    ExchangeSpec spec{x.data(), 1024, s.data(), 32, 600};
    int calls = 0;
    Status st = exchange(
        c, spec,
        [&](const Chunk&) {
          ++calls;
          return c.rank() == 0 ? Status::Error(StatusCode::InnerError, "consumer says no") : Status::Ok();
        },
        Clock::now() + 20s);
    if (c.rank() == 0 && (st.code != StatusCode::InnerError || calls != 1)) return 70;
    if (c.rank() == 1 && !st.ok()) return 71;
    // Both still in step: a second call works.
    return exchange_and_check(c, 1024, 32, 100, 5);
  });
  for (int code : codes) EXPECT_EQ(code, 0);
}

// ---- window memory in proportion to use -----------------------------------------------------

// Every rank's value of v, in rank order.
std::vector<uint64_t> gather(ShmCommunicator& c, uint64_t v) {
  std::vector<uint64_t> all(c.size());
  if (!c.allgather_records(&v, sizeof v, all.data(), Clock::now() + 20s).ok()) all.clear();
  return all;
}

TEST(ShmWindow, SmallCallReservesLittleALargerCallGrowsItOnEveryRank) {
  constexpr std::size_t kWindow = 200u << 20;  // HCCL_BUFFSIZE 200: 800 MB of address space for 4 ranks
  std::size_t after_all = 0;
  const auto codes = run_ranks(
      4, kWindow,
      [](ShmCommunicator& c) {
        if (c.reserved_bytes() != 0) return 80;  // nothing but the control blocks at creation
        // 16 x 4096 int8 over 4 ranks: 4 rows of 4 KB (+ scales) per destination.
        if (int r = exchange_and_check(c, 4096, 128, 4, 0)) return r;
        const std::size_t small = c.reserved_bytes();
        if (small == 0 || small > (1u << 20)) return 81;  // a slot pair of 64 KB steps, not 200 MB
        // 256 x 5120 rows per destination: about 5.4 MB per slot, one chunk.
        std::size_t chunks = 0;
        if (int r = exchange_and_check(c, 5120, 160, 256, 1, &chunks)) return r;
        if (chunks != 1) return 82;
        const std::size_t large = c.reserved_bytes();
        if (large < 2 * 4 * 256 * (5120 + 160) || large > (16u << 20)) return 83;
        // Every rank settled on the same slot capacity.
        const std::vector<uint64_t> caps = gather(c, c.slot_capacity());
        if (caps.size() != 4) return 84;
        for (uint64_t cap : caps)
          if (cap != caps[0] || cap < 4 * 256 * (5120 + 160)) return 85;
        // Smaller calls afterwards reuse it (no shrinking, still correct).
        if (int r = exchange_and_check(c, 4096, 128, 4, 2)) return r;
        if (c.reserved_bytes() != large) return 86;
        return 0;
      },
      /*sparse=*/true, [&](const ShmMapping& m) { after_all = m.allocated_bytes(); });
  for (int code : codes) EXPECT_EQ(code, 0);
  // /dev/shm holds what the calls used (4 ranks x ~11 MB), not 4 x 200 MB.
  EXPECT_GT(after_all, 4u * 2 * 4 * 256 * 5120);
  EXPECT_LT(after_all, 4u * (16u << 20));
}

TEST(ShmWindow, SharedBlocksAreReadInPlaceByEveryRank) {
  const auto codes = run_ranks(
      3, 64u << 20,
      [](ShmCommunicator& c) {
        const std::size_t block = (3u << 20) + 100;
        std::vector<uint8_t> x(3 * 8 * 512), s(3 * 8 * 16);
        ExchangeSpec spec{x.data(), 512, s.data(), 16, 8};
        if (!reserve_for_exchange(c, spec, block, Clock::now() + 20s).ok()) return 90;
        if (c.shared_capacity() < block) return 91;
        for (int call = 0; call < 3; ++call) {
          uint8_t* mine = c.shared_block(c.rank());
          for (std::size_t i = 0; i < block; ++i) mine[i] = static_cast<uint8_t>(i * 7 + c.rank() * 31 + call);
          if (gather(c, 1).size() != 3) return 92;  // a step: every rank wrote its block
          for (int k = 0; k < 3; ++k) {
            const uint8_t* theirs = c.shared_block(k);
            for (std::size_t i = 0; i < block; ++i)
              if (theirs[i] != static_cast<uint8_t>(i * 7 + k * 31 + call)) return 93;
          }
          if (gather(c, 2).size() != 3) return 94;  // a step: every rank read every block
        }
        return 0;
      },
      /*sparse=*/true);
  for (int code : codes) EXPECT_EQ(code, 0);
}

TEST(ShmWindow, ARankWithoutRoomMakesEveryRankMoveSmallerChunks) {
  const auto codes = run_ranks(
      4, 64u << 20,
      [](ShmCommunicator& c) {
        if (c.rank() == 2) c.limit_window_for_test(1u << 20);  // as if /dev/shm had 1 MB left for it
        std::size_t chunks = 0;
        // 300 x 5120 rows per destination: 6.3 MB per slot in one chunk; 0.5 MB slots give ~13.
        if (int r = exchange_and_check(c, 5120, 160, 300, 3, &chunks)) return r;
        if (chunks < 10) return 95;
        const std::vector<uint64_t> caps = gather(c, c.slot_capacity());
        if (caps.size() != 4) return 96;
        for (uint64_t cap : caps)
          if (cap != caps[0] || cap > (1u << 20) / 2) return 97;
        // The all-gather moves in pieces of what every rank has, too.
        std::vector<uint8_t> buf(4 * (2u << 20));
        for (std::size_t i = 0; i < (2u << 20); ++i)
          buf[c.rank() * (2u << 20) + i] = static_cast<uint8_t>(i + c.rank());
        if (!allgather_blocks(c, buf.data(), 2u << 20, Clock::now() + 20s).ok()) return 98;
        for (int k = 0; k < 4; ++k)
          for (std::size_t i = 0; i < (2u << 20); ++i)
            if (buf[k * (2u << 20) + i] != static_cast<uint8_t>(i + k)) return 99;
        return 0;
      },
      /*sparse=*/true);
  for (int code : codes) EXPECT_EQ(code, 0);
}

TEST(ShmWindow, NoRoomForOneRowIsAClearErrorOnEveryRank) {
  const auto codes = run_ranks(
      2, 64u << 20,
      [](ShmCommunicator& c) {
        if (c.rank() == 1) c.limit_window_for_test(0);
        std::vector<uint8_t> x(2 * 4 * 1024), s(2 * 4 * 32);
        ExchangeSpec spec{x.data(), 1024, s.data(), 32, 4};
        Status st = exchange(
            c, spec, [](const Chunk&) { return Status::Ok(); }, Clock::now() + 20s);
        if (st.code != StatusCode::InnerError || st.message.find("/dev/shm") == std::string::npos) return 100;
        if (!c.usable()) return 101;  // nothing moved: the ranks are still in step
        return gather(c, 7).size() == 2 ? 0 : 102;
      },
      /*sparse=*/true);
  for (int code : codes) EXPECT_EQ(code, 0);
}

}  // namespace
}  // namespace qcoll::comm
