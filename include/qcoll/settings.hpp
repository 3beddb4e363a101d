// qcoll: the environment settings (contract.md §settings), each parsed here and nowhere
// else, with one accepted range and one message.
//
// Every setting has a parse_*() function with the rule alone (text == nullptr means unset;
// nullopt means the text breaks the rule) and a reader that takes the environment. A value
// that breaks the rule is either
//   - ignored with a warning on stderr, once per process and distinct value:
//       qcoll: warning: NAME: must be RULE, got 'TEXT'; using DEFAULT
//     (QCOLL_TIMEOUT_S, QCOLL_RANK_THREADS, QCOLL_KERNEL), or
//   - an error (PARAM_INVALID) with the message  NAME: must be RULE, got "TEXT"
//     (HCCL_BUFFSIZE, QCOLL_TRANSPORT: they size and choose a communicator, QCOLL_CONTRACT:
//     it decides what a call may do; a guess would be worse than a refusal).
#pragma once
#include <chrono>
#include <cstddef>
#include <optional>
#include <string>

#include "qcoll/status.hpp"

namespace qcoll::settings {

// ---- QCOLL_TIMEOUT_S: how long a call (and communicator creation) waits for its peers ----
// Seconds, fractional allowed ("2", "0.5"), finite, in (0, 1e6]. Unset: 60. Read at every call.
inline constexpr const char* kTimeoutName = "QCOLL_TIMEOUT_S";
inline constexpr double kDefaultTimeoutSeconds = 60.0;
inline constexpr double kMaxTimeoutSeconds = 1e6;
std::optional<double> parse_timeout_seconds(const char* text);
double timeout_seconds();                 // the environment's value, or 60 (warning if bad)
std::chrono::nanoseconds call_timeout();  // the same, as a duration

// ---- QCOLL_RANK_THREADS: threads one rank uses for its dequantize-and-reduce ----
// A whole number in [1, 64]; "auto", "0" or unset: auto (0 here; the caller shares the
// cores among its local ranks). Read at every call.
inline constexpr const char* kRankThreadsName = "QCOLL_RANK_THREADS";
inline constexpr int kMaxRankThreads = 64;
std::optional<int> parse_rank_threads(const char* text);  // 0 = auto
int rank_threads();                                       // 0 = auto (also for a bad value)

// ---- HCCL_BUFFSIZE: the staging window per rank, in MB ----
// A whole number in [1, 1048576] (no sign, no spaces); unset or empty: 200. Read when a
// communicator is created. The rule on what a window must hold: qcoll/contract.hpp.
inline constexpr const char* kBuffSizeName = "HCCL_BUFFSIZE";
inline constexpr std::size_t kDefaultBuffSizeMiB = 200;
inline constexpr std::size_t kMaxBuffSizeMiB = std::size_t{1} << 20;  // 1 TiB
std::optional<std::size_t> parse_buffsize_mib(const char* text);
// The window in bytes, or PARAM_INVALID naming HCCL_BUFFSIZE and the text seen.
Status window_bytes(std::size_t& bytes);

// ---- QCOLL_TRANSPORT: the transport of a process communicator ----
// auto (shm when every rank is on one host, else mpi), shm or mpi; unset or empty: auto.
// Read when a communicator is created.
inline constexpr const char* kTransportName = "QCOLL_TRANSPORT";
enum class Transport : int { Auto = 0, Shm = 1, Mpi = 2 };
const char* transport_name(Transport t);  // "auto", "shm", "mpi"
std::optional<Transport> parse_transport(const char* text);
// The choice, or PARAM_INVALID naming QCOLL_TRANSPORT and the text seen.
Status transport(Transport& t);

// ---- QCOLL_KERNEL: the dequantize-and-reduce path ----
// auto (the best SIMD target of this CPU) or scalar (the reference path); unset or empty:
// auto. Read once per process, at the first call.
inline constexpr const char* kKernelName = "QCOLL_KERNEL";
enum class Kernel : int { Auto = 0, Scalar = 1 };
std::optional<Kernel> parse_kernel(const char* text);
Kernel kernel();  // the first call's reading, for the whole process (warning if bad)

// ---- QCOLL_MPI_SCHEDULE: how the MPI transport moves a data step ----
// hosts (point-to-point like p2p, but an all-gather step crosses to each other host once and
// is forwarded to that host's other ranks there), p2p (point-to-point MPI_Isend/MPI_Irecv
// with every peer, several steps in flight) or alltoall (MPI_Ialltoall / MPI_Iallgather per
// step); unset or empty: hosts. Read when an MPI communicator is created; never changes the
// bits.
inline constexpr const char* kMpiScheduleName = "QCOLL_MPI_SCHEDULE";
enum class MpiSchedule : int { P2p = 0, Alltoall = 1, Hosts = 2 };
std::optional<MpiSchedule> parse_mpi_schedule(const char* text);
MpiSchedule mpi_schedule();  // the environment's value, or hosts (warning if bad)

// ---- QCOLL_MPI_CHUNK_KIB: the least message of the MPI transport's chunked steps ----
// KiB that one message (one peer's part of a chunk) carries at least, a whole number in
// [16, 65536]; unset or empty: 64. Larger suits faster links (fewer messages, less CPU per
// byte; measured: 256 on 10 Gbit/s), smaller slower ones (more overlap). Read when an MPI
// communicator is created; the ranks take the largest value any of them has. Never changes
// the bits.
inline constexpr const char* kMpiChunkName = "QCOLL_MPI_CHUNK_KIB";
inline constexpr std::size_t kDefaultMpiChunkKiB = 64;
std::optional<std::size_t> parse_mpi_chunk_kib(const char* text);
std::size_t mpi_chunk_kib();  // the environment's value, or 64 (warning if bad)

// ---- QCOLL_ALL_REDUCE: how an all-reduce moves its data ----
// auto (ranks on several hosts: whichever of the two below moves clearly fewer bytes across
// hosts; else reduce-scatter), reduce-scatter (the quantized rows reduce-scattered, then
// the reduced blocks, in the output dtype, all-gathered) or gather (every rank's quantized
// tensor all-gathered; every rank reduces every row); unset or empty: auto. Read in phase
// one of each all-reduce; the ranks must agree (the call agreement checks it). Never
// changes the bits: every rank sums the same rows in rank order either way.
inline constexpr const char* kAllReduceName = "QCOLL_ALL_REDUCE";
enum class AllReduce : int { Auto = 0, ReduceScatter = 1, Gather = 2 };
const char* all_reduce_name(AllReduce a);  // "auto", "reduce-scatter", "gather"
std::optional<AllReduce> parse_all_reduce(const char* text);
AllReduce all_reduce();  // the environment's value, or auto (warning if bad)

// ---- QCOLL_SHM_TAG: a tag in the names of qcoll's shared-memory segments ----
// 1 to 16 ASCII letters and digits; unset or empty: no tag. With tag T a segment is named
// /dev/shm/qcoll-T-<32 hex digits>, without one /dev/shm/qcoll-<32 hex digits>, so that a
// test run (or an administrator) can tell its own segments from other programs'. Read when
// a segment is made; a bad value is ignored with a warning. Never changes the bits.
inline constexpr const char* kShmTagName = "QCOLL_SHM_TAG";
inline constexpr std::size_t kMaxShmTagChars = 16;
std::optional<std::string> parse_shm_tag(const char* text);  // "" = no tag
std::string shm_tag();                                       // the environment's value, or "" (warning if bad)

// ---- QCOLL_CONTRACT: the contract a call keeps (contract.md §settings, §ext) ----
// vendor (today's contract: the vendor's rules, bit for bit and refusal for refusal) or
// extended (vendor plus exactly the extensions of contract.md §ext: the 4-bit x formats and
// any rank count in [2, 1024]); unset or empty: vendor. Case-sensitive, like the other
// settings. A program may choose instead of the environment (set_contract_override; C:
// qcollSetContract, C++: qcoll::set_contract): that choice, while set, takes precedence over
// QCOLL_CONTRACT. Read at every call; part of the call agreement (ranks that differ fail
// the call, naming both values). The rules that depend on it: qcoll/contract.hpp.
inline constexpr const char* kContractName = "QCOLL_CONTRACT";
enum class Contract : int { Vendor = 0, Extended = 1 };
const char* contract_name(Contract c);  // "vendor", "extended"
std::optional<Contract> parse_contract(const char* text);
// The program's choice for the whole process, or nullopt (the default): QCOLL_CONTRACT decides.
void set_contract_override(std::optional<Contract> c);
std::optional<Contract> contract_override();
// The contract of a call: the program's choice if set, else QCOLL_CONTRACT's; for a bad
// value PARAM_INVALID naming QCOLL_CONTRACT and the text seen (c is then vendor).
Status contract(Contract& c);

// ---- The message shapes above, for the settings and their tests ----
// "NAME: must be RULE, got 'TEXT'; using FALLBACK" (without the "qcoll: warning: " prefix).
std::string bad_value_warning(const char* name, const char* text);
// "NAME: must be RULE, got \"TEXT\"".
std::string bad_value_error(const char* name, const char* text);

}  // namespace qcoll::settings
