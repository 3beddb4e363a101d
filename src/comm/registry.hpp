// Group names -> communicators. A name registered for a thread (in-process thread ranks) is
// visible to that thread only; a name registered for the process (one rank per process:
// shared memory, MPI) to every thread of it. Lookups try the thread first.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include "comm/communicator.hpp"
#include "qcoll/contract.hpp"
#include "qcoll/status.hpp"

namespace qcoll::comm {

using contract::kMaxGroupNameLen;  // names must be shorter than 128 characters

// Checks a group name: non-empty and shorter than 128 characters. `param` names the
// argument in the message (e.g. "group", "name").
Status check_group_name(const char* name, const char* param);

Status register_for_thread(std::shared_ptr<Communicator> c);  // error if the thread already has the name
void unregister_for_thread(std::string_view name);
Status register_for_process(std::shared_ptr<Communicator> c);  // error if the process already has the name
void unregister_for_process(std::string_view name);
std::shared_ptr<Communicator> resolve(std::string_view name);  // nullptr if unknown

}  // namespace qcoll::comm
