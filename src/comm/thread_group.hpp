// The in-process transport: n threads of one process act as the ranks of a group.
//
// The step primitives of communicator.hpp over step counters in shared memory of the
// process, guarded by one mutex. Zero copy: a rank exposes pointers into its own buffers
// (its input rows, its output block) and its peers read them in place; drain() keeps every
// buffer valid until all ranks finished reading. Slots for data that must be written
// somewhere (records, region()) are heap buffers of the group, grown on demand. Every wait is bounded by the call's
// deadline. A timeout leaves the ranks out of step, so it breaks the whole group for good: every later call on any rank
// fails at once with RUNTIME_ERROR saying why; destroy the group and create a new one.
#pragma once
#include <memory>
#include <string>
#include "qcoll/contract.hpp"
#include "qcoll/status.hpp"

namespace qcoll::comm {

// The user's handle on a group (qcollThreadGroup). It reserves the name among live thread
// groups until destroyed; threads that joined keep their rank usable after that.
class ThreadGroup {
 public:
  // name: non-empty, shorter than 128 characters, unique among live thread groups;
  // 1 <= nranks <= kMaxThreadGroupSize.
  static Status create(const char* name, int nranks, std::unique_ptr<ThreadGroup>* out);
  ~ThreadGroup();
  ThreadGroup(const ThreadGroup&) = delete;
  ThreadGroup& operator=(const ThreadGroup&) = delete;

  const std::string& name() const;
  int size() const;
  // Registers rank `rank`'s communicator under the group's name for the calling thread.
  // A rank can be joined by one thread at a time.
  Status join(int rank);
  // Unregisters the name for the calling thread (which must have joined this group).
  Status leave();
  // True after a timeout broke the group.
  bool broken() const;

  struct State;

 private:
  explicit ThreadGroup(std::shared_ptr<State> s) : state_(std::move(s)) {}
  std::shared_ptr<State> state_;
};

constexpr int kMaxThreadGroupSize = contract::kMaxCommRanks;

}  // namespace qcoll::comm
