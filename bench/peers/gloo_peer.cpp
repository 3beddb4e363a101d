// The torch gloo peer plugin of `qcoll bench` (tools/peer_plugin.h): c10d::ProcessGroupGloo
// (torch's CPU collectives) reduce_scatter and allreduce on fp32 and bf16 tensors, sum, in
// qcoll bench's own processes. Built against the installed torch's C++ headers by
// bench/install_peers.sh when torch is importable, never by qcoll's CMake build.
//
// Rendezvous: rank 0 makes a file for a c10d::FileStore and gives its path to qcoll bench,
// which sends it to the other ranks over MPI; every rank opens the store and joins the
// process group over TCP on the loopback device (one host).
//
// gloo reduces in place: all_reduce copies the input into the output first, and that copy
// is part of the peer's time (MPI and oneCCL take separate input and output buffers).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include <ATen/ATen.h>
#include <torch/version.h>
#include <torch/csrc/distributed/c10d/FileStore.hpp>
#include <torch/csrc/distributed/c10d/ProcessGroupGloo.hpp>

#include "plugin_support.hpp"

namespace {

std::string g_store_path;  // rank 0 made it and removes it
bool g_owner = false;
c10::intrusive_ptr<c10d::ProcessGroupGloo> g_pg;

using qcoll_peer::fail;
using qcoll_peer::guarded;
using qcoll_peer::last_error;

at::ScalarType type_of(int dtype) { return dtype == QCOLL_PEER_BF16 ? at::kBFloat16 : at::kFloat; }

at::Tensor wrap(const void* p, size_t count, int dtype) {
  return at::from_blob(const_cast<void*>(p), {static_cast<int64_t>(count)}, at::TensorOptions().dtype(type_of(dtype)));
}

const char* version() { return TORCH_VERSION; }

int main_address(void* buf, size_t cap, size_t* len) {
  char path[] = "/tmp/qcoll-gloo-store-XXXXXX";
  const int fd = mkstemp(path);
  if (fd < 0) return fail("mkstemp failed");
  close(fd);
  std::remove(path);  // the FileStore creates it
  g_store_path = path;
  g_owner = true;
  if (g_store_path.size() + 1 > cap) return fail("the store path does not fit");
  std::memcpy(buf, g_store_path.c_str(), g_store_path.size() + 1);
  *len = g_store_path.size() + 1;
  return 0;
}

int init(int rank, int size, const void* address, size_t len) {
  return guarded("c10d::ProcessGroupGloo", [&] {
    if (len == 0 || static_cast<const char*>(address)[len - 1] != '\0') return fail("bad store path");
    const std::string path(static_cast<const char*>(address));
    auto store = c10::make_intrusive<c10d::FileStore>(path, size);
    auto opts = c10d::ProcessGroupGloo::Options::create();
    // GLOO_SOCKET_IFNAME (as torch.distributed reads it): the interface between hosts;
    // unset, loopback (every rank on this host).
    const char* ifname = std::getenv("GLOO_SOCKET_IFNAME");
    opts->devices.push_back(ifname != nullptr && *ifname != '\0'
                                ? c10d::ProcessGroupGloo::createDeviceForInterface(ifname)
                                : c10d::ProcessGroupGloo::createDeviceForHostname("127.0.0.1"));
    g_pg = c10::make_intrusive<c10d::ProcessGroupGloo>(store, rank, size, opts);
    return 0;
  });
}

int reduce_scatter(const void* in, void* out, size_t recv_count, int dtype) {
  return guarded("ProcessGroupGloo::reduce_scatter", [&] {
    if (!g_pg) return fail("init was not called");
    at::Tensor o = wrap(out, recv_count, dtype);
    at::Tensor i = wrap(in, recv_count * static_cast<size_t>(g_pg->getSize()), dtype);
    g_pg->reduce_scatter_single(o, i)->wait();
    return 0;
  });
}

int all_reduce(const void* in, void* out, size_t count, int dtype) {
  return guarded("ProcessGroupGloo::allreduce", [&] {
    if (!g_pg) return fail("init was not called");
    std::memcpy(out, in, count * (dtype == QCOLL_PEER_BF16 ? 2 : 4));
    std::vector<at::Tensor> t = {wrap(out, count, dtype)};
    g_pg->allreduce(t)->wait();
    return 0;
  });
}

void finalize() {
  g_pg.reset();
  if (g_owner) std::remove(g_store_path.c_str());
}

const qcoll_peer_plugin_v1 kPlugin = {
    QCOLL_PEER_PLUGIN_ABI, "gloo", version, main_address, init, reduce_scatter, all_reduce, last_error, finalize,
};

}  // namespace

extern "C" __attribute__((visibility("default"))) const qcoll_peer_plugin_v1* qcoll_peer_plugin(void) {
  return &kPlugin;
}
