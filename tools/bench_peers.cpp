// Peers of `qcoll bench`; see bench_peers.hpp.
#include "bench_peers.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <string>

#include "cli_error.hpp"
#include "peer_plugin.h"
#include "peer_sums.hpp"
#include "rank_runner_mpi.hpp"

#ifdef QCOLL_HAVE_MPI
#include <mpi.h>
#endif

namespace qcoll::cli {

std::string default_plugin_path(const std::string& family) {
  const bool ccl = family == "oneccl";
  if (const char* p = std::getenv(ccl ? "QCOLL_CCL_PEER" : "QCOLL_GLOO_PEER"); p != nullptr && *p != '\0') return p;
  std::string dir;
  if (const char* d = std::getenv("QCOLL_PEERS_DIR"); d != nullptr && *d != '\0')
    dir = d;
  else if (const char* h = std::getenv("HOME"); h != nullptr && *h != '\0')
    dir = std::string(h) + "/.local/qcoll-peers";
  else
    dir = ".qcoll-peers";
  return dir + (ccl ? "/lib/libqcoll_ccl_peer.so" : "/lib/libqcoll_gloo_peer.so");
}

#ifdef QCOLL_HAVE_MPI

namespace {

// The peers' user-defined sums. Under SMPI the simulated MPI applies an MPI_Op inside the
// collective, where no computation is timed: its reductions would cost no simulated time,
// while qcoll's sum, made outside MPI calls, is timed. So in the SMPI build the sum times
// itself (smpi_bench_begin / smpi_bench_end: the measured CPU time becomes the rank's
// simulated computation, as for the application's own code), and the fp32 peer uses this
// timed sum instead of MPI_SUM (the same fp32 adds). docs/scale.md, "The peers' sums".
template <class T, void (*Sum)(const T*, T*, std::size_t)>
void sum_op(void* in, void* inout, int* len, MPI_Datatype*) {
#ifdef QCOLL_SMPI
  smpi_bench_begin();
#endif
  Sum(static_cast<const T*>(in), static_cast<T*>(inout), static_cast<std::size_t>(*len));
#ifdef QCOLL_SMPI
  smpi_bench_end();
#endif
}

int checked_count(std::size_t count) {
  if (count > static_cast<std::size_t>(INT_MAX))
    throw CliError(ErrorKind::Argument, "peer collective: " + std::to_string(count) +
                                            " elements exceed MPI's int count (at most " + std::to_string(INT_MAX) +
                                            ")");
  return static_cast<int>(count);
}

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw CliError(ErrorKind::Argument,
                 std::string(what) + " failed: " + std::string(text, static_cast<std::size_t>(len)));
}

const char* suffix(DType input) { return input == DType::Float ? "-fp32" : "-bf16"; }

class MpiPeer final : public Peer {
 public:
  explicit MpiPeer(DType input) : input_(input), name_(std::string("mpi") + suffix(input)) {
    if (input == DType::Float) {
      type_ = MPI_FLOAT;
#ifdef QCOLL_SMPI
      MPI_Op_create(&sum_op<float, fp32_sum>, /*commute=*/1, &op_);
      owns_op_ = true;
#else
      op_ = MPI_SUM;
#endif
    } else {
      MPI_Type_contiguous(1, MPI_UINT16_T, &type_);
      MPI_Type_commit(&type_);
      owns_type_ = true;
      MPI_Op_create(&sum_op<uint16_t, bf16_sum>, /*commute=*/1, &op_);
      owns_op_ = true;
    }
  }
  ~MpiPeer() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (finalized) return;
    if (owns_op_) MPI_Op_free(&op_);
    if (owns_type_) MPI_Type_free(&type_);
  }
  const std::string& name() const override { return name_; }
  DType input() const override { return input_; }
  void reduce_scatter(const void* in, void* out, std::size_t recv_count) override {
    check(MPI_Reduce_scatter_block(in, out, checked_count(recv_count), type_, op_, MPI_COMM_WORLD),
          "MPI_Reduce_scatter_block");
  }
  void all_reduce(const void* in, void* out, std::size_t count) override {
    check(MPI_Allreduce(in, out, checked_count(count), type_, op_, MPI_COMM_WORLD), "MPI_Allreduce");
  }

 private:
  DType input_;
  std::string name_;
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
  MPI_Op op_ = MPI_OP_NULL;
  bool owns_op_ = false;
  bool owns_type_ = false;
};

// ---- plugin peers (oneCCL) ----

// A loaded and initialised plugin; finalised when the last of its peers goes. The shared
// object stays loaded (unloading a communication library at exit is asking for trouble).
struct Plugin {
  const qcoll_peer_plugin_v1* api = nullptr;
  ~Plugin() {
    if (api) api->finalize();
  }
};

class PluginPeer final : public Peer {
 public:
  PluginPeer(std::shared_ptr<Plugin> plugin, DType input)
      : plugin_(std::move(plugin)), input_(input), name_(std::string(plugin_->api->name) + suffix(input)) {}
  const std::string& name() const override { return name_; }
  DType input() const override { return input_; }
  void reduce_scatter(const void* in, void* out, std::size_t recv_count) override {
    check(plugin_->api->reduce_scatter(in, out, recv_count, dtype()));
  }
  void all_reduce(const void* in, void* out, std::size_t count) override {
    check(plugin_->api->all_reduce(in, out, count, dtype()));
  }

 private:
  int dtype() const { return input_ == DType::Float ? QCOLL_PEER_FP32 : QCOLL_PEER_BF16; }
  void check(int rc) const {
    if (rc != 0) throw CliError(ErrorKind::Argument, name_ + ": " + plugin_->api->last_error());
  }
  std::shared_ptr<Plugin> plugin_;
  DType input_;
  std::string name_;
};

// True on every rank iff ok on every rank; `why` becomes the first failing rank's reason.
bool agree(bool ok, std::string& why) {
  int mine = ok ? INT_MAX : 0, rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (!ok) mine = rank;
  int first = 0;
  MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (first == INT_MAX) return true;
  char text[512] = {};
  if (rank == first) why.copy(text, sizeof text - 1);
  MPI_Bcast(text, sizeof text, MPI_CHAR, first, MPI_COMM_WORLD);
  why = std::string(text) + (first == 0 ? "" : " (rank " + std::to_string(first) + ")");
  return false;
}

// The oneCCL settings; a value already in the environment wins. Set after MPI_Init, so Open
// MPI never sees them.
//   - the transport that makes the PyPI build run on one host: OFI over libfabric's shm
//     provider, no launcher of its own (the ranks are mpirun's);
//   - CCL_YIELD=sched_yield: oneCCL's threads poll with `pause` by default, which on ranks
//     that oversubscribe the cores starves every other thread, oneCCL's peers and qcoll
//     alike (measured here at load 25, n=2, 16x4096 reduce-scatter: oneCCL 116 ms and qcoll
//     52 ms with the default, 0.15 ms and 0.08 ms with sched_yield);
//   - CCL_LOG_LEVEL=error: no warnings about endpoint names in the table.
constexpr const char* kCclSettings[][2] = {{"CCL_ATL_TRANSPORT", "ofi"}, {"FI_PROVIDER", "shm"},
                                           {"CCL_ATL_SHM", "1"},         {"CCL_PROCESS_LAUNCHER", "none"},
                                           {"CCL_YIELD", "sched_yield"}, {"CCL_LOG_LEVEL", "error"}};

nlohmann::ordered_json ccl_settings() {
  nlohmann::ordered_json settings;
  for (const auto& kv : kCclSettings) {
    setenv(kv[0], kv[1], /*overwrite=*/0);
    settings[kv[0]] = std::getenv(kv[0]);
  }
  for (const char* extra : {"CCL_WORKER_COUNT", "CCL_WORKER_AFFINITY", "CCL_WORKER_WAIT"})
    if (const char* v = std::getenv(extra)) settings[extra] = v;
  return settings;
}

// Loads the plugin at `path` and joins every rank to it; nullptr (and `why`) if any rank
// cannot, the same on every rank.
std::shared_ptr<Plugin> load_plugin(const std::string& path, std::string& why, nlohmann::ordered_json& info) {
  int rank = 0, size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  auto plugin = std::make_shared<Plugin>();
  bool ok = true;
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) {
    ok = false;
    const char* e = dlerror();
    why = std::string("cannot load ") + path + ": " + (e ? e : "?") + " (bench/install_peers.sh builds it)";
  } else if (auto fn = reinterpret_cast<qcoll_peer_plugin_fn>(dlsym(handle, QCOLL_PEER_PLUGIN_SYMBOL)); fn == nullptr) {
    ok = false;
    why = path + ": no symbol " QCOLL_PEER_PLUGIN_SYMBOL;
  } else if (plugin->api = fn(); plugin->api == nullptr || plugin->api->abi != QCOLL_PEER_PLUGIN_ABI) {
    plugin->api = nullptr;
    ok = false;
    why = path + ": plugin ABI differs from this qcoll's (" + std::to_string(QCOLL_PEER_PLUGIN_ABI) + ")";
  }
  if (!agree(ok, why)) return nullptr;

  // Rendezvous: rank 0's address to every rank, then every rank joins.
  char address[QCOLL_PEER_ADDRESS_MAX] = {};
  size_t len = 0;
  int rc = rank == 0 ? plugin->api->main_address(address, sizeof address, &len) : 0;
  if (rank == 0 && rc != 0) why = plugin->api->last_error();
  if (!agree(rc == 0, why)) {
    plugin->api = nullptr;
    return nullptr;
  }
  unsigned long long wire_len = len;
  MPI_Bcast(&wire_len, 1, MPI_UNSIGNED_LONG_LONG, 0, MPI_COMM_WORLD);
  MPI_Bcast(address, static_cast<int>(wire_len), MPI_BYTE, 0, MPI_COMM_WORLD);
  rc = plugin->api->init(rank, size, address, static_cast<size_t>(wire_len));
  if (rc != 0) why = plugin->api->last_error();
  if (!agree(rc == 0, why)) {
    plugin->api = nullptr;  // a half-made communicator is not finalised collectively
    return nullptr;
  }
  info["version"] = plugin->api->version();
  info["plugin"] = path;
  return plugin;
}

}  // namespace

PeerSet make_peers(const std::vector<std::string>& families, const std::vector<DType>& inputs,
                   const PluginPaths& paths) {
  PeerSet set;
  auto wanted = [&](const char* f) { return std::find(families.begin(), families.end(), f) != families.end(); };
  if (wanted("mpi")) {
    for (DType in : inputs) set.peers.push_back(std::make_unique<MpiPeer>(in));
    int version = 0, subversion = 0;
    MPI_Get_version(&version, &subversion);
    char lib[MPI_MAX_LIBRARY_VERSION_STRING] = {};
    int len = 0;
    MPI_Get_library_version(lib, &len);
    std::string text(lib, static_cast<std::size_t>(len));
    set.info["mpi"]["version"] = text.substr(0, text.find_first_of(",\n"));
  }
  for (const char* family : {"oneccl", "gloo"}) {
    if (!wanted(family)) continue;
    const bool ccl = std::string(family) == "oneccl";
    const std::string& given = ccl ? paths.oneccl : paths.gloo;
    std::string why;
    nlohmann::ordered_json info;
    if (ccl) info["settings"] = ccl_settings();  // before oneCCL is loaded: it reads them then
    if (auto plugin = load_plugin(given.empty() ? default_plugin_path(family) : given, why, info)) {
      for (DType in : inputs) set.peers.push_back(std::make_unique<PluginPeer>(plugin, in));
      set.info[family] = info;
    } else {
      set.unavailable[family] = why;
    }
  }
  return set;
}

#else  // no MPI in this build: the peers cannot be made

PeerSet make_peers(const std::vector<std::string>&, const std::vector<DType>&, const PluginPaths&) {
  throw CliError(ErrorKind::Argument, std::string("the peers: ") + kNoMpi);
}

#endif

}  // namespace qcoll::cli
