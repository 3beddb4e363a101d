#include "workspace_pool.hpp"

#include <algorithm>
#include <mutex>
#include <unordered_map>
#include <utility>
#include <vector>

namespace qcoll::python {
namespace {

struct Pool {
  uint64_t id = 0;
  std::vector<std::unique_ptr<Workspace>> idle;
};

std::mutex g_mutex;
std::unordered_map<std::string, Pool> g_pools;
uint64_t g_next_id = 1;

}  // namespace

std::unique_ptr<Workspace> acquire_workspace(const std::string& group, std::size_t bytes) {
  if (bytes == 0) return nullptr;
  uint64_t id;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    Pool& pool = g_pools[group];
    if (pool.id == 0) pool.id = g_next_id++;
    id = pool.id;
    // The smallest idle buffer that fits.
    auto best = pool.idle.end();
    for (auto it = pool.idle.begin(); it != pool.idle.end(); ++it)
      if ((*it)->capacity >= bytes && (best == pool.idle.end() || (*it)->capacity < (*best)->capacity)) best = it;
    if (best != pool.idle.end()) {
      std::unique_ptr<Workspace> ws = std::move(*best);
      pool.idle.erase(best);
      return ws;
    }
  }
  auto ws = std::make_unique<Workspace>();
  ws->data.reset(new uint8_t[bytes]);  // default-initialised: no zero fill, no page touched
  ws->capacity = bytes;
  ws->group = group;
  ws->pool_id = id;
  return ws;
}

void give_back_workspace(std::unique_ptr<Workspace> ws) {
  if (!ws) return;
  std::unique_ptr<Workspace> dropped;  // freed outside the lock
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_pools.find(ws->group);
  if (it == g_pools.end() || it->second.id != ws->pool_id) {
    dropped = std::move(ws);
    return;
  }
  auto& idle = it->second.idle;
  idle.push_back(std::move(ws));
  if (idle.size() > kIdlePerGroup) {
    auto smallest = std::min_element(idle.begin(), idle.end(),
                                     [](const auto& a, const auto& b) { return a->capacity < b->capacity; });
    dropped = std::move(*smallest);
    idle.erase(smallest);
  }
}

void release_workspaces(const std::string& group) {
  Pool dropped;
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    auto it = g_pools.find(group);
    if (it == g_pools.end()) return;
    dropped = std::move(it->second);
    g_pools.erase(it);
  }
}

std::pair<std::size_t, std::size_t> idle_workspaces(const std::string& group) {
  std::lock_guard<std::mutex> lock(g_mutex);
  auto it = g_pools.find(group);
  if (it == g_pools.end()) return {0, 0};
  std::size_t bytes = 0;
  for (const auto& ws : it->second.idle) bytes += ws->capacity;
  return {it->second.idle.size(), bytes};
}

}  // namespace qcoll::python
