// Group names -> communicators: one map per thread (in-process thread ranks) and one for the
// whole process (one rank per process). resolve() tries the calling thread's map first.
#include "comm/registry.hpp"

#include <cstring>
#include <map>
#include <mutex>

namespace qcoll::comm {
namespace {

using NameMap = std::map<std::string, std::shared_ptr<Communicator>, std::less<>>;

NameMap& thread_map() {
  thread_local NameMap map;
  return map;
}

struct ProcessMap {
  std::mutex mu;
  NameMap map;
};

ProcessMap& process_map() {
  static ProcessMap* pm = new ProcessMap;  // never destroyed: usable from exit-time destructors
  return *pm;
}

Status already_registered(const std::string& name, const char* where) {
  return Status::Error(StatusCode::ParamInvalid,
                       "group: a communicator named '" + name + "' is already registered for this " + where);
}

}  // namespace

Status check_group_name(const char* name, const char* param) {
  if (name == nullptr) return Status::Error(StatusCode::ParamInvalid, std::string(param) + ": must not be null");
  const std::size_t len = std::strlen(name);
  if (len == 0) return Status::Error(StatusCode::ParamInvalid, std::string(param) + ": name must not be empty");
  if (len > kMaxGroupNameLen)
    return Status::Error(StatusCode::ParamInvalid, std::string(param) + ": name must be shorter than " +
                                                       std::to_string(kMaxGroupNameLen + 1) + " characters, got " +
                                                       std::to_string(len) + " characters");
  return Status::Ok();
}

Status register_for_thread(std::shared_ptr<Communicator> c) {
  if (!c) return Status::Error(StatusCode::InnerError, "register_for_thread: null communicator");
  auto [it, inserted] = thread_map().emplace(c->name(), c);
  (void)it;
  if (!inserted) return already_registered(c->name(), "thread");
  return Status::Ok();
}

void unregister_for_thread(std::string_view name) {
  auto& m = thread_map();
  auto it = m.find(name);
  if (it == m.end()) return;
  // Release the communicator after the map no longer refers to it: its destructor may
  // look at the registry again.
  std::shared_ptr<Communicator> keep = std::move(it->second);
  m.erase(it);
}

Status register_for_process(std::shared_ptr<Communicator> c) {
  if (!c) return Status::Error(StatusCode::InnerError, "register_for_process: null communicator");
  auto& pm = process_map();
  std::lock_guard<std::mutex> lock(pm.mu);
  auto [it, inserted] = pm.map.emplace(c->name(), c);
  (void)it;
  if (!inserted) return already_registered(c->name(), "process");
  return Status::Ok();
}

void unregister_for_process(std::string_view name) {
  auto& pm = process_map();
  std::shared_ptr<Communicator> keep;
  std::lock_guard<std::mutex> lock(pm.mu);
  auto it = pm.map.find(name);
  if (it == pm.map.end()) return;
  keep = std::move(it->second);
  pm.map.erase(it);
}

std::shared_ptr<Communicator> resolve(std::string_view name) {
  auto& tm = thread_map();
  if (auto it = tm.find(name); it != tm.end()) return it->second;
  auto& pm = process_map();
  std::lock_guard<std::mutex> lock(pm.mu);
  if (auto it = pm.map.find(name); it != pm.map.end()) return it->second;
  return nullptr;
}

}  // namespace qcoll::comm
