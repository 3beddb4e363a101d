// What a soak reports at its start and end (issue 18): resident memory, open file
// descriptors, and /dev/shm: the bytes this process's own qcoll segments hold (found through
// its open descriptors, as they are unlinked once mapped) and the whole file system's use
// (shared with every other program on the machine: context, not a check). Plus the bound
// of a long soak: QCOLL_SOAK_CALLS (calls) and QCOLL_SOAK_SECONDS (stop earlier once this
// long has passed; 0: no time bound).
#pragma once
#include <dirent.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>

namespace soak {

struct Stats {
  long rss_kib = 0;
  int fds = 0;
  long long qcoll_shm_bytes = 0;  // allocated blocks of the qcoll segments this process holds open
  int qcoll_shm_segments = 0;
  long long devshm_used_bytes = 0;  // the whole /dev/shm (every program)

  std::string text() const {
    char b[256];
    std::snprintf(b, sizeof b, "RSS %ld KiB, %d open fds, %d qcoll segment(s) holding %lld KiB, /dev/shm used %lld KiB",
                  rss_kib, fds, qcoll_shm_segments, qcoll_shm_bytes / 1024, devshm_used_bytes / 1024);
    return b;
  }
};

inline long resident_kib() {
  std::ifstream f("/proc/self/statm");
  long size = 0, resident = 0;
  f >> size >> resident;
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

inline Stats sample() {
  Stats s;
  s.rss_kib = resident_kib();
  if (DIR* d = opendir("/proc/self/fd")) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == '.') continue;
      ++s.fds;
      char target[512];
      const std::string link = std::string("/proc/self/fd/") + e->d_name;
      const ssize_t n = readlink(link.c_str(), target, sizeof target - 1);
      if (n <= 0) continue;
      target[n] = 0;
      struct stat st {};
      if (std::strncmp(target, "/dev/shm/qcoll-", 15) == 0 && stat(link.c_str(), &st) == 0) {
        ++s.qcoll_shm_segments;
        s.qcoll_shm_bytes += static_cast<long long>(st.st_blocks) * 512;
      }
    }
    closedir(d);
    --s.fds;  // the directory stream's own descriptor
  }
  struct statvfs v {};
  if (statvfs("/dev/shm", &v) == 0)
    s.devshm_used_bytes = static_cast<long long>(v.f_blocks - v.f_bfree) * static_cast<long long>(v.f_frsize);
  return s;
}

inline long env_long(const char* name, long fallback) {
  const char* v = std::getenv(name);
  return v != nullptr && *v != '\0' ? std::atol(v) : fallback;
}

}  // namespace soak
