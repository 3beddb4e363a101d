// The operators over one-rank-per-process communicators, run under mpirun with 2, 4 or 8
// processes (--extended: 16 or more, under the extended contract). For each transport (shm and mpi, forced with
// QCOLL_TRANSPORT at creation):
//   - both operators, every mode and output type, bit for bit against the contract's reference
//     (tests/oracle.hpp) and identical to the in-process thread transport;
//   - a tensor larger than the window (HCCL_BUFFSIZE=3): correct results;
//   - a window too small for one chunk (HCCL_BUFFSIZE=2): PARAM_INVALID naming HCCL_BUFFSIZE;
//   - 100 back-to-back calls with changing inputs, each result checked;
//   - the chunked exchange fed by a producer (rows written straight into the send slots).
// --fp4: the extended contract's 4-bit x on shm, mpi p2p, alltoall and two hosts (run_fp4);
// --many-ranks: 66 processes and more, fewer steps in flight (run_many).
// Finally: no qcoll segment is left in /dev/shm. Exit status 0 only if every rank passed.
#include <dirent.h>
#include <mpi.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>

#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "comm/collectives.hpp"
#include "comm/mpi/mpi_communicator.hpp"
#include "comm/mpi/process_communicator.hpp"
#include "comm/registry.hpp"
#include "mpi_test_support.hpp"
#include "qcoll/qcoll_mpi.h"
#include "qcoll/settings.hpp"

using namespace mpitest;

namespace {

int g_rank = 0, g_size = 0;
int g_fake_per_host = 0;  // > 0: the communicators made now take hosts of this many ranks

// Ranks of MPI_COMM_WORLD whose processor name (host name) is this rank's: what
// qcollMpiCommLocalSize must report (two_hosts.sh gives each host its own name).
int ranks_on_my_host() {
  char mine[MPI_MAX_PROCESSOR_NAME] = {0};
  int len = 0;
  MPI_Get_processor_name(mine, &len);
  std::vector<char> all(static_cast<std::size_t>(g_size) * MPI_MAX_PROCESSOR_NAME);
  MPI_Allgather(mine, MPI_MAX_PROCESSOR_NAME, MPI_CHAR, all.data(), MPI_MAX_PROCESSOR_NAME, MPI_CHAR, MPI_COMM_WORLD);
  int same = 0;
  for (int k = 0; k < g_size; ++k)
    same += std::string(&all[static_cast<std::size_t>(k) * MPI_MAX_PROCESSOR_NAME]) == mine;
  return same;
}

qcollMpiComm* create(const char* name, const char* transport, const char* buffsize_mb, Tally& t) {
  setenv("QCOLL_TRANSPORT", transport, 1);
  setenv("HCCL_BUFFSIZE", buffsize_mb, 1);
  qcollMpiComm* c = nullptr;
  const qcollStatus st = qcollMpiCommCreateWorld(name, &c);
  t.check(st == QCOLL_SUCCESS, "create %s (%s, %s MB): status %d: %s", name, transport, buffsize_mb, st,
          qcollGetRecentErrMsg());
  if (c)
    t.check(std::string(qcollMpiCommTransport(c)) == transport, "%s: transport %s, expected %s", name,
            qcollMpiCommTransport(c), transport);
  int expected_local = ranks_on_my_host();  // collective: every rank calls it
  if (g_fake_per_host > 0)
    expected_local = std::min(g_fake_per_host, g_size - g_rank / g_fake_per_host * g_fake_per_host);
  if (c) {
    int32_t local = -1;
    const qcollStatus ls = qcollMpiCommLocalSize(c, &local);
    t.check(ls == QCOLL_SUCCESS && local == expected_local,
            "%s: local size %d (status %d), expected %d ranks on this host", name, local, ls, expected_local);
  }
  return c;
}

std::vector<Inputs> inputs_of_all_ranks(const Mode& m, std::size_t BS, std::size_t H, uint64_t seed) {
  std::vector<Inputs> all;
  for (int k = 0; k < g_size; ++k) all.push_back(make_inputs(m, BS, H, seed, k));
  return all;
}

// This rank's output of the same call on an in-process thread group of g_size threads.
std::vector<uint8_t> thread_transport_output(Op op, const Mode& m, std::vector<Inputs>& all, std::size_t BS,
                                             std::size_t H, Tally& t, int ndim = 2) {
  const std::string name = "threads-" + std::to_string(g_rank);
  qcollThreadGroup* g = nullptr;
  std::vector<uint8_t> mine;
  if (!t.check(qcollThreadGroupCreate(name.c_str(), g_size, &g) == QCOLL_SUCCESS, "thread group: %s",
               qcollGetRecentErrMsg()))
    return mine;
  std::vector<std::vector<uint8_t>> outs(g_size);
  std::vector<qcollStatus> sts(g_size, -1);
  std::vector<std::thread> threads;
  for (int r = 0; r < g_size; ++r) {
    threads.emplace_back([&, r] {
      if (qcollThreadGroupJoin(g, r) != QCOLL_SUCCESS) return;
      sts[r] = call_op(op, m, all[r], BS, H, g_size, name.c_str(), outs[r], nullptr, ndim);
      qcollThreadGroupLeave(g);
    });
  }
  for (auto& th : threads) th.join();
  qcollThreadGroupDestroy(g);
  t.check(sts[g_rank] == QCOLL_SUCCESS, "thread transport %s %s: status %d", op_name(op), m.name().c_str(),
          sts[g_rank]);
  return outs[g_rank];
}

// ndim 3: x of shape (2, BS/2, H) (call_op).
void check_call(Op op, const Mode& m, std::size_t BS, std::size_t H, uint64_t seed, const char* group, const char* what,
                Tally& t, bool compare_threads, int ndim = 2) {
  std::vector<Inputs> all = inputs_of_all_ranks(m, BS, H, seed);
  std::vector<uint8_t> out;
  const qcollStatus st = call_op(op, m, all[g_rank], BS, H, g_size, group, out, nullptr, ndim);
  if (!t.check(st == QCOLL_SUCCESS, "%s: %s %s BS=%zu H=%zu %d-D: status %d: %s", what, op_name(op), m.name().c_str(),
               BS, H, ndim, st, last_error().c_str()))
    return;
  const long long d = first_difference(m, out, expected(op, m, all, BS, H, g_rank));
  t.check(d < 0, "%s: %s %s BS=%zu H=%zu %d-D: differs from the reference at element %lld", what, op_name(op),
          m.name().c_str(), BS, H, ndim, d);
  if (compare_threads) {
    const long long dt = first_difference(m, out, thread_transport_output(op, m, all, BS, H, t, ndim));
    t.check(dt < 0, "%s: %s %s %d-D: differs from the thread transport at element %lld", what, op_name(op),
            m.name().c_str(), ndim, dt);
  }
}

// One all-gather step of 512 bytes of `fill` on the communicator: begun; published and waited
// for only when `finish` (otherwise the caller finishes it). Returns the step's number.
uint64_t gather_step(qcoll::comm::Communicator& c, uint8_t fill, bool finish, Tally& t) {
  qcoll::comm::StepShape shape;
  shape.kind = qcoll::comm::StepShape::Kind::Same;
  shape.seg_bytes[0] = 512;
  qcoll::comm::Communicator::Step s = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  qcoll::Status st = c.begin_step(shape, "a test step", deadline, &s);
  if (st.ok()) {
    std::fill_n(c.region(s, 0).seg[0], 512, fill);
    st = c.publish(s);
  }
  if (st.ok() && finish) {
    st = c.wait_step(s, deadline);
    if (st.ok()) st = c.release(s);
  }
  t.check(st.ok(), "step %llu: %s", static_cast<unsigned long long>(s), st.message.c_str());
  return s;
}

// MpiCommunicator::begin_step: once every step begun was waited for, the next begins at slot
// 0 (a step number that is a multiple of the steps in flight), so that calls of one step
// reuse one warm slot; a step begun while another is in flight takes the next number. What
// arrives is what was sent.
void check_steps_start_at_slot0(const std::string& name, Tally& t) {
  const auto comm = qcoll::comm::resolve(name);
  if (!t.check(comm != nullptr, "resolve %s", name.c_str())) return;
  const uint64_t depth = static_cast<uint64_t>(comm->traits().max_steps_in_flight);
  const uint64_t a = gather_step(*comm, 1, true, t);
  const uint64_t b = gather_step(*comm, 2, true, t);
  const uint64_t c = gather_step(*comm, 3, false, t);  // in flight while d begins
  const uint64_t d = gather_step(*comm, 4, false, t);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  std::size_t wrong = 0;
  for (uint64_t s : {c, d}) {
    t.check(comm->wait_step(s, deadline).ok(), "wait for step %llu", static_cast<unsigned long long>(s));
    for (int k = 0; k < g_size; ++k)
      wrong += static_cast<std::size_t>(std::count_if(comm->view(s, k).seg[0], comm->view(s, k).seg[0] + 512,
                                                      [&](uint8_t v) { return v != (s == c ? 3 : 4); }));
    t.check(comm->release(s).ok(), "release step %llu", static_cast<unsigned long long>(s));
  }
  const uint64_t e = gather_step(*comm, 5, true, t);
  t.check(b % depth == 0 && b > a && c % depth == 0 && c > b && d == c + 1 && e % depth == 0 && e > d && wrong == 0,
          "steps of %llu in flight: %llu, %llu, %llu, %llu, %llu (expected the 2nd, 3rd and 5th at a "
          "multiple of %llu, the 4th right after the 3rd), %zu wrong bytes received",
          static_cast<unsigned long long>(depth), static_cast<unsigned long long>(a),
          static_cast<unsigned long long>(b), static_cast<unsigned long long>(c), static_cast<unsigned long long>(d),
          static_cast<unsigned long long>(e), static_cast<unsigned long long>(depth), wrong);
}

// One communicator at a time (at most 8 ranks x 4 MB of /dev/shm for this program, which
// also fits a container's default 64 MB /dev/shm next to Open MPI's own segments).
void run_transport(const char* transport, Tally& t) {
  const std::string base = std::string("qc-") + transport;
  const std::size_t n = static_cast<std::size_t>(g_size);
  uint64_t seed = 1;

  // Every mode, both operators, 2-D inputs of 2n rows: one chunk of a 4 MB window.
  const std::string one_chunk = base + "-4";
  if (qcollMpiComm* c = create(one_chunk.c_str(), transport, "4", t)) {
    for (const Mode& m : all_modes()) {
      for (Op op : {Op::ReduceScatter, Op::AllReduce}) {
        check_call(op, m, 2 * n, 1024, seed++, one_chunk.c_str(), transport, t, true);
      }
    }
    // Many chunks, the ring of steps in flight wrapping around: 256 rows per rank (160 for 8
    // ranks, to keep the test short) of 2048 bytes + scales, 5 to 8 chunks of >= 64 KiB per
    // peer on mpi; compared with the thread transport up to 4 ranks, with the oracle always.
    for (Op op : {Op::ReduceScatter, Op::AllReduce}) {
      check_call(op, Mode{qcoll::DType::Float8E4M3FN, qcoll::DType::Float8E8M0, qcoll::DType::BFloat16},
                 (n <= 4 ? 256 : 160) * n, 2048, seed++, one_chunk.c_str(),
                 (std::string(transport) + " pipelined").c_str(), t, n <= 4);
    }
    qcollMpiCommDestroy(c);
  }
  const std::string small = base + "-3";
  if (qcollMpiComm* c = create(small.c_str(), transport, "3", t)) {
    // Larger than the window: 640 rows x (1024 + scales) bytes spread over >= 2 chunks of 0.5 MB.
    for (const Mode& m : {Mode{qcoll::DType::Int8, qcoll::DType::Float, qcoll::DType::BFloat16},
                          Mode{qcoll::DType::Float8E4M3FN, qcoll::DType::Float8E8M0, qcoll::DType::Float}}) {
      for (Op op : {Op::ReduceScatter, Op::AllReduce}) {
        check_call(op, m, 640, 1024, seed++, small.c_str(), (std::string(transport) + " chunked").c_str(), t, false);
      }
    }
    // The exchange fed by a producer (as a fused operator would be), through the small window.
    if (auto comm = qcoll::comm::resolve(small)) {
      const std::size_t rpr = 400, xrb = 1024, srb = 32;  // > one 0.5 MB slot even for 2 ranks
      auto xb = [](std::size_t k, std::size_t row, std::size_t j) {
        return static_cast<uint8_t>(k * 37 + row * 3 + j);
      };
      const qcoll::comm::RowProducer produce = [&](int dest, std::size_t row0, std::size_t rows,
                                                   const qcoll::comm::PartRegion& part) {
        for (std::size_t r = 0; r < rows; ++r) {
          const std::size_t row = dest * rpr + row0 + r;
          for (std::size_t j = 0; j < xrb; ++j) part.seg[0][r * xrb + j] = xb(g_rank, row, j);
          for (std::size_t j = 0; j < srb; ++j) part.seg[1][r * srb + j] = xb(g_rank, row, j + 7);
        }
        return qcoll::Status::Ok();
      };
      std::size_t bad = 0, next = 0, chunks = 0;
      const qcoll::comm::ExchangeSpec spec{nullptr, xrb, nullptr, srb, rpr};
      const qcoll::Status st = qcoll::comm::exchange(
          *comm, spec,
          [&](const qcoll::comm::Chunk& ch) {
            bad += ch.row_begin != next;
            next += ch.rows;
            ++chunks;
            for (std::size_t k = 0; k < n; ++k)
              for (std::size_t r = 0; r < ch.rows; ++r) {
                const std::size_t row = g_rank * rpr + ch.row_begin + r;
                for (std::size_t j = 0; j < xrb; ++j) bad += ch.x[k][r * xrb + j] != xb(k, row, j);
                for (std::size_t j = 0; j < srb; ++j) bad += ch.scales[k][r * srb + j] != xb(k, row, j + 7);
              }
            return qcoll::Status::Ok();
          },
          std::chrono::steady_clock::now() + std::chrono::seconds(60), &produce);
      t.check(st.ok() && bad == 0 && next == rpr && chunks > 1,
              "%s: exchange from a producer: status %s, %zu wrong bytes, %zu of %zu rows, %zu chunks", transport,
              st.message.c_str(), bad, next, rpr, chunks);
    }
    if (std::string(transport) == "mpi") check_steps_start_at_slot0(small, t);
    // 100 back-to-back calls, inputs and operator changing every call, through the small window.
    const std::vector<Mode> modes = all_modes();
    for (int call = 0; call < 100; ++call) {
      const Mode& m = modes[call % modes.size()];
      const Op op = call % 2 ? Op::AllReduce : Op::ReduceScatter;
      const std::size_t BS = n * (1 + call % 3);
      check_call(op, m, BS, 1024 + 128 * (call % 4), 1000 + call, small.c_str(),
                 (std::string(transport) + " back-to-back #" + std::to_string(call)).c_str(), t, false);
    }
    qcollMpiCommDestroy(c);
  }
  // Window too small for one chunk: PARAM_INVALID in phase one, naming HCCL_BUFFSIZE.
  const std::string tiny = base + "-2";
  if (qcollMpiComm* c = create(tiny.c_str(), transport, "2", t)) {
    const Mode m{qcoll::DType::Int8, qcoll::DType::Float, qcoll::DType::Float};
    std::vector<Inputs> all = inputs_of_all_ranks(m, 2 * n, 1024, 99);
    std::vector<uint8_t> out;
    int phase = 0;
    const qcollStatus st = call_op(Op::ReduceScatter, m, all[g_rank], 2 * n, 1024, g_size, tiny.c_str(), out, &phase);
    const std::string msg = last_error();
    t.check(st == QCOLL_PARAM_INVALID && phase == 1 && msg.find("HCCL_BUFFSIZE") != std::string::npos,
            "%s: window of 2 MB: expected PARAM_INVALID naming HCCL_BUFFSIZE in phase one, got %d in phase %d: %s",
            transport, st, phase, msg.c_str());
    qcollMpiCommDestroy(c);
  }
}

// The hosts schedule's forwarding on one machine: the mpi transport with the ranks taken as
// hosts of `per_host` ranks each (the last one may have fewer), so that an all-gather part
// crosses to each other "host" once and is forwarded there. The all-reduce (the operator
// with an all-gather) in every mode, in one chunk and in many, bit for bit against the
// reference and the thread transport; then back-to-back calls of both operators.
void run_fake_hosts(int per_host, Tally& t) {
  g_fake_per_host = per_host;
  qcoll::comm::mpi::testing::set_ranks_per_host_for_test(per_host);
  setenv("QCOLL_MPI_SCHEDULE", "hosts", 1);
  const std::string name = "qc-hosts-" + std::to_string(per_host);
  const std::size_t n = static_cast<std::size_t>(g_size);
  uint64_t seed = 500;
  if (qcollMpiComm* c = create(name.c_str(), "mpi", "4", t)) {
    const std::string what = "mpi, hosts of " + std::to_string(per_host);
    for (const Mode& m : all_modes())
      check_call(Op::AllReduce, m, 2 * n, 1024, seed++, name.c_str(), what.c_str(), t, true);
    check_call(Op::AllReduce, Mode{qcoll::DType::Float8E4M3FN, qcoll::DType::Float8E8M0, qcoll::DType::Float},
               (n <= 4 ? 256 : 160) * n, 2048, seed++, name.c_str(), (what + ", pipelined").c_str(), t, n <= 4);
    const std::vector<Mode> modes = all_modes();
    for (int call = 0; call < 24; ++call) {
      const Op op = call % 2 ? Op::AllReduce : Op::ReduceScatter;
      check_call(op, modes[call % modes.size()], n * (1 + call % 3), 1024 + 128 * (call % 4), 900 + call, name.c_str(),
                 (what + ", back-to-back #" + std::to_string(call)).c_str(), t, false);
    }
    qcollMpiCommDestroy(c);
  }
  qcoll::comm::mpi::testing::set_ranks_per_host_for_test(0);
  g_fake_per_host = 0;
}

// The hosts schedule bundles an exchange step's parts per host (one message to each other
// host, forwarded there) when every host is a consecutive range of ranks, as the hook makes
// them: with two hosts or more and `per_host` >= 2, every rank sends bundles in every
// reduce-scatter. Fails when the calls since `before` sent none (bundling silently off).
void check_bundled(int per_host, long long before, Tally& t) {
  const int hosts = (g_size + per_host - 1) / per_host;
  if (hosts < 2 || per_host < 2) return;
  const long long sent = qcoll::comm::mpi::testing::bundles_posted_for_test() - before;
  t.check(sent > 0, "hosts of %d: this rank sent no bundle (the exchange was not bundled per host)", per_host);
}

// The extended contract's rank counts (--extended, contract.md §ext-ranks; mpirun -np 16 and
// more): shapes small enough for 16 processes on 2 cores. Every mode and both operators in
// one chunk, the first against the thread transport too; both operators chunked through a
// 3 MB window (640 rows: 40 per rank); back-to-back calls of changing shapes.
void run_extended(const char* transport, Tally& t) {
  const std::string base = std::string("qc-ext-") + transport;
  const std::size_t n = static_cast<std::size_t>(g_size);
  uint64_t seed = 2000;
  if (qcollMpiComm* c = create((base + "-4").c_str(), transport, "4", t)) {
    bool first = true;
    for (const Mode& m : all_modes())
      for (Op op : {Op::ReduceScatter, Op::AllReduce}) {
        check_call(op, m, 2 * n, 1024, seed++, (base + "-4").c_str(), transport, t, first);
        first = false;
      }
    qcollMpiCommDestroy(c);
  }
  if (qcollMpiComm* c = create((base + "-3").c_str(), transport, "3", t)) {
    const std::string what = std::string(transport) + " chunked";
    for (Op op : {Op::ReduceScatter, Op::AllReduce})
      check_call(op, Mode{qcoll::DType::Float8E4M3FN, qcoll::DType::Float8E8M0, qcoll::DType::BFloat16},
                 std::max<std::size_t>(640, 2 * n), 1024, seed++, (base + "-3").c_str(), what.c_str(), t, false);
    const std::vector<Mode> modes = all_modes();
    for (int call = 0; call < 6; ++call)
      check_call(call % 2 ? Op::AllReduce : Op::ReduceScatter, modes[call % modes.size()], n * (1 + call % 3),
                 1024 + 128 * (call % 4), seed++, (base + "-3").c_str(),
                 (std::string(transport) + " back-to-back #" + std::to_string(call)).c_str(), t, false);
    qcollMpiCommDestroy(c);
  }
}

// The extended contract's 4-bit x (--fp4, contract.md §ext-fp4; any rank count): every FP4
// mode (E2M1 and E1M2 x, KG and MX scales) and output dtype, both operators, 2-D and 3-D x,
// in one chunk, bit for bit against the reference (tests/oracle.hpp, the 4-bit codes from
// tests/fp4_oracle.hpp's value lists), the first call against the thread transport too; then
// (up to 8 ranks) both operators through a 3 MB window, in several chunks.
void run_fp4(const char* transport, const std::string& what, Tally& t) {
  const std::string base = std::string("qc-fp4-") + transport;
  const std::size_t n = static_cast<std::size_t>(g_size);
  uint64_t seed = 3000;
  if (qcollMpiComm* c = create((base + "-4").c_str(), transport, "4", t)) {
    // (More than 8 ranks, to stay short on 2 cores: fp32 and bf16 outputs, each mode and
    // operator in one of 2-D and 3-D, in turn, none against the thread transport, no call of
    // several chunks.)
    bool first = n <= 8;
    int q = 0;  // (mode, operator) pairs so far
    for (const Mode& m : fp4_modes())
      for (Op op : {Op::ReduceScatter, Op::AllReduce}) {
        if (n > 8 && m.out == qcoll::DType::Float16) continue;
        for (int ndim : {2, 3}) {
          if (n > 8 && ndim != 2 + (q + q / 2) % 2) continue;  // 2, 3, 3, 2, 2, 3, ...
          check_call(op, m, 2 * n, ndim == 2 ? 1024 : 2048, seed++, (base + "-4").c_str(), what.c_str(), t, first,
                     ndim);
          first = false;
        }
        ++q;
      }
    qcollMpiCommDestroy(c);
  }
  if (n > 8) return;  // (27 s for the chunked all-reduce at 16 ranks on 2 loaded cores)
  if (qcollMpiComm* c = create((base + "-3").c_str(), transport, "3", t)) {
    // 640 rows (or 2 a rank) of 1024 bytes + scales: more than one chunk of the 3 MB window.
    const std::string chunked = what + " chunked";
    int i = 0;
    for (Op op : {Op::ReduceScatter, Op::AllReduce}) {
      const Mode m = fp4_modes()[i++ == 0 ? 3 : 4];  // e1m2/e8m0->fp32, e2m1/fp32->bf16
      check_call(op, m, std::max<std::size_t>(640, 2 * n), 2048, seed++, (base + "-3").c_str(), chunked.c_str(), t,
                 false, op == Op::AllReduce ? 3 : 2);
    }
    qcollMpiCommDestroy(c);
  }
}

// ---- Many processes (--many-ranks[=K]: mpirun -np 66 and more, contract.md §ext-ranks) ----

// Rows [row0, row0 + rows) of rank k's inputs, each row a function of (seed, row, rank) alone,
// so that a process can make the rows it checks of every rank without making all of them.
Inputs input_rows(const Mode& m, std::size_t row0, std::size_t rows, std::size_t H, uint64_t seed, int rank) {
  Inputs in;
  for (std::size_t r = row0; r < row0 + rows; ++r) {
    const Inputs one = make_inputs(m, 1, H, seed * 1000003 + r, rank);
    in.x.insert(in.x.end(), one.x.begin(), one.x.end());
    in.scales.insert(in.scales.end(), one.scales.begin(), one.scales.end());
  }
  return in;
}

// Block `block` (rows block*rpr ...) of the sum over the n ranks, from the reference.
std::vector<uint8_t> expected_block(const Mode& m, int n, std::size_t rpr, std::size_t H, uint64_t seed, int block) {
  std::vector<std::vector<uint8_t>> xs, ss;
  for (int k = 0; k < n; ++k) {
    Inputs in = input_rows(m, block * rpr, rpr, H, seed, k);
    xs.push_back(std::move(in.x));
    ss.push_back(std::move(in.scales));
  }
  return oracle::reduce_rows(m.x, m.scales, m.out, xs, ss, H, 0, rpr);
}

// One call on the n ranks of `comm` (rank `me`), rpr rows a rank: the reduce-scatter's block
// against the reference; the all-reduce's blocks me and me + 1 (so every block is checked by
// two ranks), and every rank's output the same bits (a hash of it compared over `comm`).
void check_many(Op op, const Mode& m, std::size_t rpr, std::size_t H, uint64_t seed, MPI_Comm comm, const char* group,
                const std::string& what, Tally& t) {
  int me = 0, n = 0;
  MPI_Comm_rank(comm, &me);
  MPI_Comm_size(comm, &n);
  Inputs mine = input_rows(m, 0, rpr * n, H, seed, me);
  std::vector<uint8_t> out;
  MPI_Barrier(comm);
  const double t0 = MPI_Wtime();
  const qcollStatus st = call_op(op, m, mine, rpr * n, H, n, group, out);
  if (me == 0)
    std::printf("  %s %s %s, %d ranks, %zu rows a rank: %.2f s\n", what.c_str(), op_name(op), m.name().c_str(), n, rpr,
                MPI_Wtime() - t0);
  if (!t.check(st == QCOLL_SUCCESS, "%s: %s %s, %d ranks: status %d: %s", what.c_str(), op_name(op), m.name().c_str(),
               n, st, last_error().c_str()))
    return;
  const std::size_t block_bytes = rpr * H * qcoll::dtype_size(m.out);
  const std::vector<int> blocks = op == Op::ReduceScatter ? std::vector<int>{me} : std::vector<int>{me, (me + 1) % n};
  for (int b : blocks) {
    const std::size_t at = op == Op::ReduceScatter ? 0 : b * block_bytes;
    const std::vector<uint8_t> got(out.begin() + at, out.begin() + at + block_bytes);
    const long long d = first_difference(m, got, expected_block(m, n, rpr, H, seed, b));
    t.check(d < 0, "%s: %s %s, %d ranks: block %d differs from the reference at element %lld", what.c_str(),
            op_name(op), m.name().c_str(), n, b, d);
  }
  if (op == Op::AllReduce) {
    uint64_t h = 1469598103934665603ULL;  // FNV-1a
    for (uint8_t b : out) h = (h ^ b) * 1099511628211ULL;
    std::vector<uint64_t> all(n);
    MPI_Allgather(&h, 1, MPI_UINT64_T, all.data(), 1, MPI_UINT64_T, comm);
    t.check(std::all_of(all.begin(), all.end(), [&](uint64_t v) { return v == all[0]; }),
            "%s: all-reduce %s, %d ranks: the ranks' outputs differ", what.c_str(), m.name().c_str(), n);
  }
}

// On the n ranks of `comm`, for the schedules p2p (the default on one host) and alltoall: the
// steps in flight are MpiCommunicator::steps_in_flight(n), fewer than kDepth; tiny calls
// (2 rows a rank of 1024) of both operators, 8-bit and FP4, each rank's result against the
// reference. (Calls of several chunks a peer cost minutes at 90 processes on 2 cores, mostly
// the reference: the ring of fewer steps in flight wrapping around is mpi.transport.np16.extended's
// mpi-depth-3 case.)
void run_many(MPI_Comm comm, Tally& t) {
  int n = 0;
  MPI_Comm_size(comm, &n);
  using qcoll::DType;
  using qcoll::comm::mpi::MpiCommunicator;
  setenv("QCOLL_TRANSPORT", "mpi", 1);
  setenv("HCCL_BUFFSIZE", "4", 1);
  setenv("QCOLL_MPI_CHUNK_KIB", "16", 1);
  uint64_t seed = 7000;
  for (const char* schedule : {"p2p", "alltoall"}) {
    const double t0 = MPI_Wtime();
    setenv("QCOLL_MPI_SCHEDULE", schedule, 1);
    const std::string name = "qc-many-" + std::to_string(n) + "-" + schedule;
    const std::string what = std::string("mpi-") + schedule;
    qcollMpiComm* c = nullptr;
    const qcollStatus st = qcollMpiCommCreate(name.c_str(), comm, &c);
    if (!t.check(st == QCOLL_SUCCESS, "create %s: status %d: %s", name.c_str(), st, qcollGetRecentErrMsg())) continue;
    if (g_rank == 0) std::printf("  %s, %d ranks: created in %.2f s\n", what.c_str(), n, MPI_Wtime() - t0);
    const auto comm_ptr = qcoll::comm::resolve(name);
    const int depth = comm_ptr ? comm_ptr->traits().max_steps_in_flight : -1;
    t.check(depth == MpiCommunicator::steps_in_flight(n) && depth < MpiCommunicator::kDepth,
            "%s, %d ranks: %d steps in flight, expected %d (< %d)", what.c_str(), n, depth,
            MpiCommunicator::steps_in_flight(n), MpiCommunicator::kDepth);
    const Mode tiny[] = {{DType::Int8, DType::Float, DType::BFloat16},
                         {DType::Float4E2M1, DType::Float8E8M0, DType::Float},
                         {DType::Float4E1M2, DType::Float, DType::Float16},
                         {DType::Float8E4M3FN, DType::Float8E8M0, DType::BFloat16}};
    for (int i = 0; i < 4; ++i)
      check_many(i % 2 ? Op::AllReduce : Op::ReduceScatter, tiny[i], 2, 1024, seed++, comm, name.c_str(), what, t);
    qcollMpiCommDestroy(c);
    MPI_Barrier(comm);
    if (g_rank == 0)
      std::printf("%d ranks, %s (%d steps in flight): %.1f s\n", n, what.c_str(), depth, MPI_Wtime() - t0);
  }
  unsetenv("QCOLL_MPI_SCHEDULE");
  unsetenv("QCOLL_MPI_CHUNK_KIB");
}

// This run's qcoll segments (named with its QCOLL_SHM_TAG when it has one, so that other
// programs' segments do not count) in /dev/shm that are still there 3 s after first seen: a
// segment exists for a moment while any communicator is made (a test running beside this one
// may be making one right now).
int count_left_qcoll_segments() {
  const std::string tag = qcoll::settings::shm_tag();
  const std::string prefix = "qcoll-" + (tag.empty() ? std::string() : tag + "-");
  std::vector<std::string> seen;
  if (DIR* d = opendir("/dev/shm")) {
    while (dirent* e = readdir(d)) {
      if (std::string(e->d_name).rfind(prefix, 0) == 0) seen.push_back(e->d_name);
    }
    closedir(d);
  }
  if (seen.empty()) return 0;
  std::this_thread::sleep_for(std::chrono::seconds(3));
  int left = 0;
  for (const std::string& name : seen) left += access(("/dev/shm/" + name).c_str(), F_OK) == 0;
  return left;
}

// Ranks on several hosts (tests/mpi/two_hosts.sh): auto picks MPI, shm is refused.
void check_several_hosts(Tally& t) {
  setenv("HCCL_BUFFSIZE", "8", 1);
  setenv("QCOLL_TRANSPORT", "auto", 1);
  qcollMpiComm* c = nullptr;
  qcollStatus st = qcollMpiCommCreateWorld("qc-auto", &c);
  if (t.check(st == QCOLL_SUCCESS, "auto on several hosts: status %d: %s", st, qcollGetRecentErrMsg())) {
    t.check(std::string(qcollMpiCommTransport(c)) == "mpi", "auto on several hosts: transport %s, expected mpi",
            qcollMpiCommTransport(c));
    int32_t local = -1;
    qcollMpiCommLocalSize(c, &local);
    t.check(local > 0 && local < g_size, "auto on several hosts: local size %d, expected fewer than %d", local, g_size);
    qcollMpiCommDestroy(c);
  }
  setenv("QCOLL_TRANSPORT", "shm", 1);
  c = nullptr;
  st = qcollMpiCommCreateWorld("qc-shm-refused", &c);
  t.check(st == QCOLL_PARAM_INVALID && c == nullptr, "shm on several hosts: expected PARAM_INVALID, got %d: %s", st,
          qcollGetRecentErrMsg());
}

// /dev/shm too small for the windows (tests/mpi/small_devshm.sh: 64 MB, HCCL_BUFFSIZE 200:
// 4 x 200 MB of windows). The windows are reserved as the calls need them, so auto and shm
// forced both create the shm transport; small calls fit; a call whose windows do not fit in
// /dev/shm (4 ranks x ~21 MB for 2048 x 4096) moves in smaller chunks, the all-reduce result
// staged in process memory, with the same bits.
void check_small_devshm(Tally& t) {
  setenv("HCCL_BUFFSIZE", "200", 1);
  for (const char* transport : {"auto", "shm"}) {
    setenv("QCOLL_TRANSPORT", transport, 1);
    const std::string group = std::string("qc-small-") + transport;
    qcollMpiComm* c = nullptr;
    qcollStatus st = qcollMpiCommCreateWorld(group.c_str(), &c);
    if (!t.check(st == QCOLL_SUCCESS, "%s with a small /dev/shm: status %d: %s", transport, st, qcollGetRecentErrMsg()))
      continue;
    t.check(std::string(qcollMpiCommTransport(c)) == "shm", "%s with a small /dev/shm: transport %s, expected shm",
            transport, qcollMpiCommTransport(c));
    const std::size_t n = static_cast<std::size_t>(g_size);
    const Mode m{qcoll::DType::HiFloat8, qcoll::DType::Float, qcoll::DType::Float16};
    const std::string what = std::string("small /dev/shm, ") + transport;
    for (Op op : {Op::ReduceScatter, Op::AllReduce}) {
      check_call(op, m, 4 * n, 2048, 77, group.c_str(), what.c_str(), t, false);
      check_call(op, m, 2048, 4096, 78, group.c_str(), (what + ", beyond /dev/shm").c_str(), t, false);
      check_call(op, m, 4 * n, 2048, 79, group.c_str(), (what + ", small again").c_str(), t, false);
    }
    qcollMpiCommDestroy(c);
  }
}

}  // namespace

// Usage: test_mpi_transport [--several-hosts] [--small-devshm] [--extended] [--fp4] [--many-ranks[=K]] [TRANSPORT...]
// (--many-ranks: the extended contract and run_many alone, on the world and then its first K
// ranks; for mpirun -np 66 and more: fewer steps in flight)
// (--extended: the extended contract and run_extended, by default on shm, mpi, mpi-hosts-4
// and mpi-depth-3; --fp4: the extended contract and run_fp4, by default on shm, mpi-p2p,
// mpi-alltoall and, with 4 ranks or more, mpi-hosts-(n/2): two hosts; both: both runs on
// --extended's transports)
// (TRANSPORT: shm, mpi (the default schedule, hosts), mpi-p2p, mpi-alltoall, mpi-gather
// (QCOLL_ALL_REDUCE=gather, QCOLL_MPI_CHUNK_KIB differing between ranks), or
// mpi-hosts-K (the hosts schedule with hosts of K ranks on this machine, run_fake_hosts);
// default shm mpi mpi-gather, and mpi-hosts-2 and mpi-hosts-3 with 4 ranks or more; none with
// --small-devshm)
int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
  MPI_Comm_size(MPI_COMM_WORLD, &g_size);
  Tally t(g_rank);
  setenv("QCOLL_TIMEOUT_S", "60", 1);
  bool several_hosts = false, small_devshm = false, extended = false, fp4 = false, many = false;
  int many_sub = 0;  // --many-ranks=K: also on the first K ranks
  std::vector<std::string> transports;
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--several-hosts") {
      several_hosts = true;
    } else if (std::string(argv[i]) == "--extended") {
      extended = true;
    } else if (std::string(argv[i]) == "--fp4") {
      fp4 = true;
    } else if (std::string(argv[i]).rfind("--many-ranks", 0) == 0) {
      many = true;
      many_sub = argv[i][12] == '=' ? std::atoi(argv[i] + 13) : 0;
    } else if (std::string(argv[i]) == "--small-devshm") {
      small_devshm = true;
    } else {
      transports.push_back(argv[i]);
    }
  }
  if (many) {
    // The world, then (K) its first K ranks (the others wait).
    qcollSetContract(QCOLL_CONTRACT_EXTENDED);
    run_many(MPI_COMM_WORLD, t);
    if (many_sub >= 2 && many_sub < g_size) {
      MPI_Comm sub = MPI_COMM_NULL;
      MPI_Comm_split(MPI_COMM_WORLD, g_rank < many_sub ? 0 : MPI_UNDEFINED, g_rank, &sub);
      if (sub != MPI_COMM_NULL) {
        run_many(sub, t);
        MPI_Comm_free(&sub);
      }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    const int rc = t.finish("test_mpi_transport --many-ranks");
    MPI_Finalize();
    return rc;
  }
  if (fp4 && !extended) {
    qcollSetContract(QCOLL_CONTRACT_EXTENDED);
    if (transports.empty()) {
      transports = {"shm", "mpi-p2p", "mpi-alltoall"};
      if (g_size >= 4) transports.push_back("mpi-hosts-" + std::to_string(g_size / 2));
    }
  }
  if (extended) {
    qcollSetContract(QCOLL_CONTRACT_EXTENDED);
    if (transports.empty() && !small_devshm) transports = {"shm", "mpi", "mpi-hosts-4", "mpi-depth-3"};
    // The steps in flight by rank count: 4 up to 65 ranks (at most 512 transfers posted), then fewer.
    using qcoll::comm::mpi::MpiCommunicator;
    for (auto [n, want] : {std::pair{2, 4}, {16, 4}, {65, 4}, {66, 3}, {86, 3}, {87, 2}, {129, 2}, {1024, 2}})
      t.check(MpiCommunicator::steps_in_flight(n) == want, "steps in flight for %d ranks: %d, expected %d", n,
              MpiCommunicator::steps_in_flight(n), want);
  }
  if (transports.empty() && !small_devshm) {
    transports = {"shm", "mpi", "mpi-gather"};
    if (g_size >= 4) transports.insert(transports.end(), {"mpi-hosts-2", "mpi-hosts-3"});
  }
  if (several_hosts) check_several_hosts(t);
  if (small_devshm) check_small_devshm(t);
  for (const std::string& name : transports) {
    const double t0 = MPI_Wtime();
    const long long bundles0 = qcoll::comm::mpi::testing::bundles_posted_for_test();
    if (extended || fp4) {
      // "mpi-hosts-K": the hosts schedule with hosts of K ranks; "mpi-depth-K": K steps in
      // flight, as with many more ranks (MpiCommunicator::steps_in_flight); "mpi-S": schedule S.
      const bool hosts = name.rfind("mpi-hosts-", 0) == 0, depth = name.rfind("mpi-depth-", 0) == 0;
      const bool mpi_variant = name.rfind("mpi-", 0) == 0;
      g_fake_per_host = hosts ? std::atoi(name.c_str() + 10) : 0;
      qcoll::comm::mpi::testing::set_ranks_per_host_for_test(g_fake_per_host);
      qcoll::comm::mpi::testing::set_steps_in_flight_for_test(depth ? std::atoi(name.c_str() + 10) : 0);
      if (mpi_variant && !depth)
        setenv("QCOLL_MPI_SCHEDULE", hosts ? "hosts" : name.c_str() + 4, 1);
      else
        unsetenv("QCOLL_MPI_SCHEDULE");
      if (extended) run_extended(mpi_variant ? "mpi" : name.c_str(), t);
      if (fp4) run_fp4(mpi_variant ? "mpi" : name.c_str(), name, t);
      qcoll::comm::mpi::testing::set_ranks_per_host_for_test(0);
      qcoll::comm::mpi::testing::set_steps_in_flight_for_test(0);
      g_fake_per_host = 0;
    } else if (name.rfind("mpi-hosts-", 0) == 0) {
      run_fake_hosts(std::atoi(name.c_str() + 10), t);
    } else if (name == "mpi-gather") {
      // The all-reduce as an all-gather of the quantized inputs (QCOLL_ALL_REDUCE=gather),
      // and QCOLL_MPI_CHUNK_KIB different on every rank (16 KiB on even ranks, 1 MiB on
      // odd ones): the ranks must settle on one chunking, or their steps would not match.
      unsetenv("QCOLL_MPI_SCHEDULE");
      setenv("QCOLL_ALL_REDUCE", "gather", 1);
      setenv("QCOLL_MPI_CHUNK_KIB", g_rank % 2 ? "1024" : "16", 1);
      run_transport("mpi", t);
      unsetenv("QCOLL_ALL_REDUCE");
      unsetenv("QCOLL_MPI_CHUNK_KIB");
    } else {
      // "mpi-p2p", "mpi-alltoall": the mpi transport with that QCOLL_MPI_SCHEDULE ("mpi": unset, hosts).
      const bool mpi_variant = name.rfind("mpi-", 0) == 0;
      const std::string transport = mpi_variant ? "mpi" : name;
      if (mpi_variant)
        setenv("QCOLL_MPI_SCHEDULE", name.c_str() + 4, 1);
      else
        unsetenv("QCOLL_MPI_SCHEDULE");
      run_transport(transport.c_str(), t);
    }
    if (name.rfind("mpi-hosts-", 0) == 0) check_bundled(std::atoi(name.c_str() + 10), bundles0, t);
    MPI_Barrier(MPI_COMM_WORLD);
    if (g_rank == 0) std::printf("transport %s: %.1f s\n", name.c_str(), MPI_Wtime() - t0);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (g_rank == 0) {
    const int left = count_left_qcoll_segments();
    t.check(left == 0, "%d qcoll segment(s) left in /dev/shm", left);
  }
  const int rc = t.finish("test_mpi_transport");
  MPI_Finalize();
  return rc;
}
