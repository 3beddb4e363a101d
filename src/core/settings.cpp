// The environment settings: one rule, one default and one message each (see
// qcoll/settings.hpp). The rules' words live in kRules and nowhere else.
#include "qcoll/settings.hpp"

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <set>

namespace qcoll::settings {
namespace {

struct Rule {
  const char* name;
  const char* rule;      // completes "must be ..."
  const char* fallback;  // completes "using ..." (warned settings only)
};

constexpr Rule kRules[] = {
    {kTimeoutName, "a number of seconds in (0, 1e6]", "60 s"},
    {kRankThreadsName, "auto, 0 or a whole number in [1, 64]", "auto"},
    {kBuffSizeName, "a whole number of MB in [1, 1048576]", "200"},
    {kTransportName, "auto, shm or mpi", "auto"},
    {kKernelName, "auto or scalar", "auto"},
    {kMpiScheduleName, "hosts, p2p or alltoall", "hosts"},
    {kAllReduceName, "auto, reduce-scatter or gather", "auto"},
    {kMpiChunkName, "a whole number of KiB in [16, 65536]", "64"},
    {kShmTagName, "1 to 16 ASCII letters and digits", "no tag"},
    {kContractName, "vendor or extended", "vendor"},
};

const Rule& rule_of(const char* name) {
  for (const Rule& r : kRules)
    if (std::strcmp(r.name, name) == 0) return r;
  return kRules[0];  // unreachable for the names of this file
}

bool unset_or_empty(const char* text) { return text == nullptr || *text == '\0'; }

// A whole decimal number in [lo, hi], nothing else (no sign: strtoull would take one).
std::optional<unsigned long long> parse_whole(const char* text, unsigned long long lo, unsigned long long hi) {
  if (*text == '-' || *text == '+') return std::nullopt;
  errno = 0;
  char* end = nullptr;
  const unsigned long long v = std::strtoull(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < lo || v > hi) return std::nullopt;
  return v;
}

// Prints the warning for (name, text) once per process.
void warn_once(const char* name, const char* text) {
  static std::mutex mu;
  static std::set<std::string> warned;
  std::lock_guard<std::mutex> lk(mu);
  if (warned.insert(std::string(name) + '=' + text).second)
    std::fprintf(stderr, "qcoll: warning: %s\n", bad_value_warning(name, text).c_str());
}

}  // namespace

std::string bad_value_warning(const char* name, const char* text) {
  const Rule& r = rule_of(name);
  return std::string(name) + ": must be " + r.rule + ", got '" + text + "'; using " + r.fallback;
}

std::string bad_value_error(const char* name, const char* text) {
  return std::string(name) + ": must be " + rule_of(name).rule + ", got \"" + text + "\"";
}

// ---- QCOLL_TIMEOUT_S ----

std::optional<double> parse_timeout_seconds(const char* text) {
  if (text == nullptr) return kDefaultTimeoutSeconds;
  char* end = nullptr;
  const double v = std::strtod(text, &end);
  if (end == text || *end != '\0' || !std::isfinite(v) || v <= 0.0 || v > kMaxTimeoutSeconds) return std::nullopt;
  return v;
}

double timeout_seconds() {
  const char* text = std::getenv(kTimeoutName);
  if (auto v = parse_timeout_seconds(text)) return *v;
  warn_once(kTimeoutName, text);
  return kDefaultTimeoutSeconds;
}

std::chrono::nanoseconds call_timeout() {
  return std::chrono::nanoseconds(static_cast<int64_t>(std::llround(timeout_seconds() * 1e9)));
}

// ---- QCOLL_RANK_THREADS ----

std::optional<int> parse_rank_threads(const char* text) {
  if (text == nullptr || std::strcmp(text, "auto") == 0 || std::strcmp(text, "0") == 0) return 0;
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || v < 1 || v > kMaxRankThreads) return std::nullopt;
  return static_cast<int>(v);
}

int rank_threads() {
  const char* text = std::getenv(kRankThreadsName);
  if (auto v = parse_rank_threads(text)) return *v;
  warn_once(kRankThreadsName, text);
  return 0;
}

// ---- HCCL_BUFFSIZE ----

std::optional<std::size_t> parse_buffsize_mib(const char* text) {
  if (unset_or_empty(text)) return kDefaultBuffSizeMiB;
  const auto mb = parse_whole(text, 1, kMaxBuffSizeMiB);
  if (!mb) return std::nullopt;
  return static_cast<std::size_t>(*mb);
}

Status window_bytes(std::size_t& bytes) {
  const char* text = std::getenv(kBuffSizeName);
  const auto mb = parse_buffsize_mib(text);
  if (!mb) {
    bytes = kDefaultBuffSizeMiB << 20;
    return Status::Error(StatusCode::ParamInvalid, bad_value_error(kBuffSizeName, text));
  }
  bytes = *mb << 20;
  return Status::Ok();
}

// ---- QCOLL_TRANSPORT ----

const char* transport_name(Transport t) {
  switch (t) {
    case Transport::Shm:
      return "shm";
    case Transport::Mpi:
      return "mpi";
    case Transport::Auto:
      break;
  }
  return "auto";
}

std::optional<Transport> parse_transport(const char* text) {
  if (unset_or_empty(text)) return Transport::Auto;
  for (Transport t : {Transport::Auto, Transport::Shm, Transport::Mpi})
    if (std::strcmp(text, transport_name(t)) == 0) return t;
  return std::nullopt;
}

Status transport(Transport& t) {
  const char* text = std::getenv(kTransportName);
  const auto v = parse_transport(text);
  t = v.value_or(Transport::Auto);
  if (!v) return Status::Error(StatusCode::ParamInvalid, bad_value_error(kTransportName, text));
  return Status::Ok();
}

// ---- QCOLL_KERNEL ----

std::optional<Kernel> parse_kernel(const char* text) {
  if (unset_or_empty(text) || std::strcmp(text, "auto") == 0) return Kernel::Auto;
  if (std::strcmp(text, "scalar") == 0) return Kernel::Scalar;
  return std::nullopt;
}

Kernel kernel() {
  static const Kernel k = [] {
    const char* text = std::getenv(kKernelName);
    if (auto v = parse_kernel(text)) return *v;
    warn_once(kKernelName, text);
    return Kernel::Auto;
  }();
  return k;
}

// ---- QCOLL_MPI_SCHEDULE ----

std::optional<MpiSchedule> parse_mpi_schedule(const char* text) {
  if (unset_or_empty(text) || std::strcmp(text, "hosts") == 0) return MpiSchedule::Hosts;
  if (std::strcmp(text, "p2p") == 0) return MpiSchedule::P2p;
  if (std::strcmp(text, "alltoall") == 0) return MpiSchedule::Alltoall;
  return std::nullopt;
}

MpiSchedule mpi_schedule() {
  const char* text = std::getenv(kMpiScheduleName);
  if (auto v = parse_mpi_schedule(text)) return *v;
  warn_once(kMpiScheduleName, text);
  return MpiSchedule::Hosts;
}

// ---- QCOLL_MPI_CHUNK_KIB ----

std::optional<std::size_t> parse_mpi_chunk_kib(const char* text) {
  if (unset_or_empty(text)) return kDefaultMpiChunkKiB;
  if (*text < '0' || *text > '9') return std::nullopt;  // no leading spaces either
  const auto kib = parse_whole(text, 16, 65536);
  if (!kib) return std::nullopt;
  return static_cast<std::size_t>(*kib);
}

std::size_t mpi_chunk_kib() {
  const char* text = std::getenv(kMpiChunkName);
  if (auto v = parse_mpi_chunk_kib(text)) return *v;
  warn_once(kMpiChunkName, text);
  return kDefaultMpiChunkKiB;
}

// ---- QCOLL_ALL_REDUCE ----

const char* all_reduce_name(AllReduce a) {
  switch (a) {
    case AllReduce::ReduceScatter:
      return "reduce-scatter";
    case AllReduce::Gather:
      return "gather";
    case AllReduce::Auto:
      break;
  }
  return "auto";
}

std::optional<AllReduce> parse_all_reduce(const char* text) {
  if (unset_or_empty(text)) return AllReduce::Auto;
  for (AllReduce a : {AllReduce::Auto, AllReduce::ReduceScatter, AllReduce::Gather})
    if (std::strcmp(text, all_reduce_name(a)) == 0) return a;
  return std::nullopt;
}

AllReduce all_reduce() {
  const char* text = std::getenv(kAllReduceName);
  if (auto v = parse_all_reduce(text)) return *v;
  warn_once(kAllReduceName, text);
  return AllReduce::Auto;
}

// ---- QCOLL_SHM_TAG ----

std::optional<std::string> parse_shm_tag(const char* text) {
  if (unset_or_empty(text)) return std::string();
  const std::size_t n = std::strlen(text);
  if (n > kMaxShmTagChars) return std::nullopt;
  for (std::size_t i = 0; i < n; ++i) {
    const char ch = text[i];
    const bool alnum = (ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
    if (!alnum) return std::nullopt;
  }
  return std::string(text);
}

std::string shm_tag() {
  const char* text = std::getenv(kShmTagName);
  if (auto v = parse_shm_tag(text)) return *v;
  warn_once(kShmTagName, text);
  return std::string();
}

// ---- QCOLL_CONTRACT ----

namespace {
// The program's choice: -1 none (QCOLL_CONTRACT decides), else a Contract's value.
std::atomic<int> g_contract_override{-1};
}  // namespace

const char* contract_name(Contract c) { return c == Contract::Extended ? "extended" : "vendor"; }

std::optional<Contract> parse_contract(const char* text) {
  if (unset_or_empty(text)) return Contract::Vendor;
  for (Contract c : {Contract::Vendor, Contract::Extended})
    if (std::strcmp(text, contract_name(c)) == 0) return c;
  return std::nullopt;
}

void set_contract_override(std::optional<Contract> c) {
  g_contract_override.store(c ? static_cast<int>(*c) : -1, std::memory_order_relaxed);
}

std::optional<Contract> contract_override() {
  const int v = g_contract_override.load(std::memory_order_relaxed);
  if (v < 0) return std::nullopt;
  return static_cast<Contract>(v);
}

Status contract(Contract& c) {
  if (auto o = contract_override()) {
    c = *o;
    return Status::Ok();
  }
  const char* text = std::getenv(kContractName);
  const auto v = parse_contract(text);
  c = v.value_or(Contract::Vendor);
  if (!v) return Status::Error(StatusCode::ParamInvalid, bad_value_error(kContractName, text));
  return Status::Ok();
}

}  // namespace qcoll::settings
