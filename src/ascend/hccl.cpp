// HCCL communicators on qcoll's (docs/ascend.md §hccl): HcclCommInitAll makes a qcoll thread
// group whose ranks are devices of this process; HcclGetRootInfo / HcclCommInitRootInfo carry
// a qcoll unique id to the ranks of one host (qcollCommInitRank).
#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "ascend/state.hpp"
#include "hccl/hccl.h"
#include "qcoll/contract.hpp"

namespace qcoll::ascend {
namespace {

// The communicators of one HcclCommInitAll: a thread group, rank i on devices[i].
struct World {
  uint64_t seq = 0;
  std::string name;
  qcollThreadGroup* group = nullptr;
  std::vector<int32_t> devices;
  ~World() { qcollThreadGroupDestroy(group); }
};

// What an HcclComm points at: one rank of a World, or a process communicator.
struct Comm {
  std::shared_ptr<World> world;  // HcclCommInitAll
  qcollComm* process = nullptr;  // HcclCommInitRootInfo
  std::string name;
  uint32_t rank = 0;
  uint32_t size = 0;
};

struct Registry {
  std::mutex mu;
  uint64_t next_seq = 1;
  std::set<Comm*> comms;
  std::map<std::string, std::shared_ptr<World>> worlds;  // by name, while a rank lives
};
Registry& reg() {
  static Registry* r = new Registry;
  return *r;
}

// The rank of each World this thread joined, by the World's seq.
thread_local std::map<uint64_t, int> t_joined;

constexpr char kRootMagic[16] = "qcoll-hccl-root";  // 15 characters and a NUL

HcclResult from_qcoll_hccl(qcollStatus st, const char* fn) {
  if (st == QCOLL_SUCCESS) return static_cast<HcclResult>(succeed());
  set_message(std::string(fn) + ": " + qcollGetRecentErrMsg());
  switch (st) {
    case QCOLL_PARAM_NULLPTR:
      return HCCL_E_PTR;
    case QCOLL_PARAM_INVALID:
      return HCCL_E_PARA;
    case QCOLL_RUNTIME_ERROR:
      return HCCL_E_TIMEOUT;
    default:
      return HCCL_E_INTERNAL;
  }
}

HcclResult hfail(HcclResult r, std::string msg) { return static_cast<HcclResult>(fail(r, std::move(msg))); }

std::string list(const std::vector<int32_t>& v) {
  std::string s = "[";
  for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

// The live Comm behind an HcclComm, or null (message set).
Comm* live(HcclComm comm, const char* fn) {
  std::lock_guard<std::mutex> lock(reg().mu);
  auto* c = static_cast<Comm*>(comm);
  if (reg().comms.count(c) == 0) {
    set_message(std::string(fn) + ": comm: must be a live communicator from HcclCommInitAll or HcclCommInitRootInfo");
    return nullptr;
  }
  return c;
}

}  // namespace

Status resolve_group(const char* group, int* nranks) {
  std::shared_ptr<World> w;
  {
    std::lock_guard<std::mutex> lock(reg().mu);
    auto it = reg().worlds.find(group);
    if (it != reg().worlds.end()) w = it->second;
  }
  if (!w) {  // a communicator of processes, or one made with qcoll's own API
    int32_t size = 0;
    if (qcollGroupInfo(group, nullptr, &size, nullptr) != QCOLL_SUCCESS)
      return Status::Error(StatusCode::ParamInvalid,
                           std::string("group: no communicator named '") + group +
                               "' (HcclGetCommName of a live HcclComm) for this thread or process");
    *nranks = size;
    return Status::Ok();
  }
  const int32_t dev = current_device();
  if (dev < 0)
    return Status::Error(StatusCode::ParamInvalid,
                         std::string("group: the calling thread has no current device (aclrtSetDevice or ") +
                             "aclrtSetCurrentContext first); communicator '" + group + "' has its ranks on devices " +
                             list(w->devices));
  auto pos = std::find(w->devices.begin(), w->devices.end(), dev);
  if (pos == w->devices.end())
    return Status::Error(StatusCode::ParamInvalid, "group: device " + std::to_string(dev) +
                                                       " of the calling thread is not a rank of communicator '" +
                                                       group + "' (devices " + list(w->devices) + ")");
  const int rank = static_cast<int>(pos - w->devices.begin());
  auto joined = t_joined.find(w->seq);
  if (joined == t_joined.end() || joined->second != rank) {
    if (joined != t_joined.end()) {
      qcollThreadGroupLeave(w->group);  // the thread moved to another device of the group
      t_joined.erase(joined);
    }
    if (qcollThreadGroupJoin(w->group, rank) != QCOLL_SUCCESS)
      return Status::Error(StatusCode::ParamInvalid, std::string("group: the calling thread cannot act as device ") +
                                                         std::to_string(dev) + " (rank " + std::to_string(rank) +
                                                         ") of '" + group + "': " + qcollGetRecentErrMsg());
    t_joined[w->seq] = rank;
  }
  *nranks = static_cast<int>(w->devices.size());
  return Status::Ok();
}

}  // namespace qcoll::ascend

using namespace qcoll::ascend;

extern "C" {

HcclResult HcclCommInitAll(uint32_t ndev, int32_t* devices, HcclComm* comms) {
  if (devices == nullptr) return hfail(HCCL_E_PTR, "HcclCommInitAll: devices: must not be null");
  if (comms == nullptr) return hfail(HCCL_E_PTR, "HcclCommInitAll: comms: must not be null");
  if (ndev < 1 || ndev > static_cast<uint32_t>(kDeviceCount))
    return hfail(HCCL_E_PARA, "HcclCommInitAll: ndev: must be in [1, " + std::to_string(kDeviceCount) + "], got " +
                                  std::to_string(ndev));
  std::vector<int32_t> devs(devices, devices + ndev);
  for (uint32_t i = 0; i < ndev; ++i) {
    if (devs[i] < 0 || devs[i] >= kDeviceCount)
      return hfail(HCCL_E_PARA, "HcclCommInitAll: devices[" + std::to_string(i) + "]: must be in [0, " +
                                    std::to_string(kDeviceCount - 1) + "], got " + std::to_string(devs[i]));
    for (uint32_t j = 0; j < i; ++j)
      if (devs[j] == devs[i])
        return hfail(HCCL_E_PARA, "HcclCommInitAll: devices: must be distinct, got " + std::to_string(devs[i]) +
                                      " twice " + list(devs));
  }
  auto w = std::make_shared<World>();
  w->devices = devs;
  {
    std::lock_guard<std::mutex> lock(reg().mu);
    w->seq = reg().next_seq++;
  }
  w->name = "hccl_world_" + std::to_string(w->seq);
  if (qcollStatus st = qcollThreadGroupCreate(w->name.c_str(), static_cast<int32_t>(ndev), &w->group);
      st != QCOLL_SUCCESS)
    return from_qcoll_hccl(st, "HcclCommInitAll");
  std::lock_guard<std::mutex> lock(reg().mu);
  reg().worlds[w->name] = w;
  for (uint32_t i = 0; i < ndev; ++i) {
    auto* c = new Comm;
    c->world = w;
    c->name = w->name;
    c->rank = i;
    c->size = ndev;
    reg().comms.insert(c);
    comms[i] = c;
  }
  return static_cast<HcclResult>(succeed());
}

HcclResult HcclGetRootInfo(HcclRootInfo* rootInfo) {
  if (rootInfo == nullptr) return hfail(HCCL_E_PTR, "HcclGetRootInfo: rootInfo: must not be null");
  qcollUniqueId id;
  if (qcollStatus st = qcollGetUniqueId(&id); st != QCOLL_SUCCESS) return from_qcoll_hccl(st, "HcclGetRootInfo");
  static_assert(sizeof kRootMagic + sizeof id.internal <= HCCL_ROOT_INFO_BYTES);
  std::memset(rootInfo->internal, 0, HCCL_ROOT_INFO_BYTES);
  std::memcpy(rootInfo->internal, kRootMagic, sizeof kRootMagic);
  std::memcpy(rootInfo->internal + sizeof kRootMagic, id.internal, sizeof id.internal);
  return static_cast<HcclResult>(succeed());
}

HcclResult HcclCommInitRootInfo(uint32_t nRanks, const HcclRootInfo* rootInfo, uint32_t rank, HcclComm* comm) {
  if (rootInfo == nullptr) return hfail(HCCL_E_PTR, "HcclCommInitRootInfo: rootInfo: must not be null");
  if (comm == nullptr) return hfail(HCCL_E_PTR, "HcclCommInitRootInfo: comm: must not be null");
  if (std::memcmp(rootInfo->internal, kRootMagic, sizeof kRootMagic) != 0)
    return hfail(HCCL_E_PARA, "HcclCommInitRootInfo: rootInfo: not a root info from HcclGetRootInfo");
  if (nRanks > static_cast<uint32_t>(qcoll::contract::kMaxCommRanks) || rank >= nRanks)
    return hfail(HCCL_E_PARA, "HcclCommInitRootInfo: rank: must be in [0, nRanks) with nRanks in [1, " +
                                  std::to_string(qcoll::contract::kMaxCommRanks) + "], got rank " +
                                  std::to_string(rank) + " of " + std::to_string(nRanks));
  qcollUniqueId id;
  std::memcpy(id.internal, rootInfo->internal + sizeof kRootMagic, sizeof id.internal);
  qcollComm* qc = nullptr;
  if (qcollStatus st = qcollCommInitRank(nullptr, static_cast<int32_t>(nRanks), &id, static_cast<int32_t>(rank), &qc);
      st != QCOLL_SUCCESS)
    return from_qcoll_hccl(st, "HcclCommInitRootInfo");
  auto* c = new Comm;
  c->process = qc;
  c->name = qcollCommName(qc);
  c->rank = rank;
  c->size = nRanks;
  {
    std::lock_guard<std::mutex> lock(reg().mu);
    reg().comms.insert(c);
  }
  *comm = c;
  return static_cast<HcclResult>(succeed());
}

HcclResult HcclGetCommName(HcclComm comm, char* commName) {
  if (commName == nullptr) return hfail(HCCL_E_PTR, "HcclGetCommName: commName: must not be null");
  Comm* c = live(comm, "HcclGetCommName");
  if (c == nullptr) return HCCL_E_PARA;
  std::memcpy(commName, c->name.c_str(), c->name.size() + 1);  // names are < 128 characters
  return static_cast<HcclResult>(succeed());
}

HcclResult HcclGetRankSize(HcclComm comm, uint32_t* rankSize) {
  if (rankSize == nullptr) return hfail(HCCL_E_PTR, "HcclGetRankSize: rankSize: must not be null");
  Comm* c = live(comm, "HcclGetRankSize");
  if (c == nullptr) return HCCL_E_PARA;
  *rankSize = c->size;
  return static_cast<HcclResult>(succeed());
}

HcclResult HcclGetRankId(HcclComm comm, uint32_t* rank) {
  if (rank == nullptr) return hfail(HCCL_E_PTR, "HcclGetRankId: rank: must not be null");
  Comm* c = live(comm, "HcclGetRankId");
  if (c == nullptr) return HCCL_E_PARA;
  *rank = c->rank;
  return static_cast<HcclResult>(succeed());
}

HcclResult HcclCommDestroy(HcclComm comm) {
  std::shared_ptr<World> last;  // released outside the lock
  qcollComm* process = nullptr;
  {
    std::lock_guard<std::mutex> lock(reg().mu);
    auto* c = static_cast<Comm*>(comm);
    if (reg().comms.erase(c) == 0)
      return hfail(HCCL_E_PARA,
                   "HcclCommDestroy: comm: must be a live communicator from HcclCommInitAll or HcclCommInitRootInfo");
    if (c->world) {
      const bool others =
          std::any_of(reg().comms.begin(), reg().comms.end(), [&](const Comm* o) { return o->world == c->world; });
      if (!others) {
        last = c->world;
        reg().worlds.erase(c->world->name);
      }
    }
    process = c->process;
    delete c;
  }
  if (process != nullptr) return from_qcoll_hccl(qcollCommDestroy(process), "HcclCommDestroy");
  return static_cast<HcclResult>(succeed());
}

}  // extern "C"
