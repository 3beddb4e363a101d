// The workspaces of the operators' phase two, kept per group name from one call to the
// next (calls of one shape ask for one size): allocating and zero-filling tens of MB per
// call cost as much as the operator itself (docs/python.md §speed). A buffer is taken out
// of its group's pool for the call (or for as long as a stream holds the call) and put
// back after, so that the ranks of a thread group, threads of this process, never share
// one. Bounded: at most kIdlePerGroup idle buffers per group (the largest kept); released
// with the group (release_workspaces from every group class's destroy).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

namespace qcoll::python {

inline constexpr std::size_t kIdlePerGroup = 8;

// Uninitialised memory: phase two writes every byte it later reads.
struct Workspace {
  std::unique_ptr<uint8_t[]> data;
  std::size_t capacity = 0;
  std::string group;
  uint64_t pool_id = 0;  // the pool it came from (a released pool takes nothing back)
};

// A buffer of at least `bytes` for a call on `group` (nullptr for 0 bytes).
std::unique_ptr<Workspace> acquire_workspace(const std::string& group, std::size_t bytes);
// Back to its pool (freed when the pool was released or is full). Thread-safe, no GIL needed.
void give_back_workspace(std::unique_ptr<Workspace> ws);
// Drops the pool of `group` (buffers still in use are freed when given back).
void release_workspaces(const std::string& group);
// Idle buffers and their bytes in the pool of `group` (tests).
std::pair<std::size_t, std::size_t> idle_workspaces(const std::string& group);

}  // namespace qcoll::python
