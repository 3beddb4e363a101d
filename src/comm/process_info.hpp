// Facts about other processes of this host that the process-per-rank transports need:
// whether a pid is still alive, and which pid namespace this process lives in (a pid means
// something only within its own namespace).
#pragma once
#include <cstdint>

namespace qcoll::comm {

// False once `pid` has exited: gone, or a zombie its parent has not reaped yet.
bool process_alive(int32_t pid);

// Inode of this process's pid namespace, 0 if unknown.
uint64_t pid_namespace();

}  // namespace qcoll::comm
