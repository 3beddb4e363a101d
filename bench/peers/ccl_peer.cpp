// The oneCCL peer plugin of `qcoll bench` (tools/peer_plugin.h): Intel oneCCL's CPU
// reduce_scatter and allreduce on fp32 and bf16 data, sum. Built against oneCCL's own
// headers by bench/install_peers.sh, never by qcoll's CMake build, and loaded by
// `qcoll bench` at run time.
//
// Rendezvous: rank 0 makes the main key-value store (ccl::create_main_kvs) and gives its
// address to qcoll bench, which sends it to the other ranks over MPI; they attach with
// ccl::create_kvs(address); then every rank makes the communicator. The transport settings
// (CCL_ATL_TRANSPORT=ofi, FI_PROVIDER=shm, ...) are the environment's, set by qcoll bench
// before it loads this plugin.
#include <cstring>
#include <memory>
#include <optional>
#include <string>

#include "oneapi/ccl.hpp"
#include "plugin_support.hpp"

namespace {

std::string g_version;
std::shared_ptr<ccl::kvs> g_kvs;
std::optional<ccl::communicator> g_comm;

using qcoll_peer::fail;
using qcoll_peer::guarded;
using qcoll_peer::last_error;

ccl::datatype type_of(int dtype) { return dtype == QCOLL_PEER_BF16 ? ccl::datatype::bfloat16 : ccl::datatype::float32; }

const char* version() {
  if (g_version.empty()) {
    try {
      const ccl::library_version v = ccl::get_library_version();
      g_version = std::to_string(v.major) + "." + std::to_string(v.minor) + "." + std::to_string(v.update);
    } catch (...) {
      g_version = "?";
    }
  }
  return g_version.c_str();
}

int main_address(void* buf, size_t cap, size_t* len) {
  return guarded("ccl::create_main_kvs", [&] {
    ccl::init();
    g_kvs = ccl::create_main_kvs();
    const ccl::kvs::address_type addr = g_kvs->get_address();
    if (addr.size() > cap) return fail("the KVS address does not fit");
    std::memcpy(buf, addr.data(), addr.size());
    *len = addr.size();
    return 0;
  });
}

int init(int rank, int size, const void* address, size_t len) {
  return guarded("ccl::create_communicator", [&] {
    if (!g_kvs) {
      ccl::init();
      ccl::kvs::address_type addr{};
      if (len != addr.size())
        return fail("the KVS address has " + std::to_string(len) + " bytes, expected " + std::to_string(addr.size()));
      std::memcpy(addr.data(), address, len);
      g_kvs = ccl::create_kvs(addr);
    }
    g_comm.emplace(ccl::create_communicator(size, rank, g_kvs));
    return 0;
  });
}

int reduce_scatter(const void* in, void* out, size_t recv_count, int dtype) {
  return guarded("ccl::reduce_scatter", [&] {
    if (!g_comm) return fail("ccl::reduce_scatter: init was not called");
    ccl::reduce_scatter(in, out, recv_count, type_of(dtype), ccl::reduction::sum, *g_comm).wait();
    return 0;
  });
}

int all_reduce(const void* in, void* out, size_t count, int dtype) {
  return guarded("ccl::allreduce", [&] {
    if (!g_comm) return fail("ccl::allreduce: init was not called");
    ccl::allreduce(in, out, count, type_of(dtype), ccl::reduction::sum, *g_comm).wait();
    return 0;
  });
}

void finalize() {
  g_comm.reset();
  g_kvs.reset();
}

const qcoll_peer_plugin_v1 kPlugin = {
    QCOLL_PEER_PLUGIN_ABI, "oneccl", version, main_address, init, reduce_scatter, all_reduce, last_error, finalize,
};

}  // namespace

extern "C" __attribute__((visibility("default"))) const qcoll_peer_plugin_v1* qcoll_peer_plugin(void) {
  return &kPlugin;
}
