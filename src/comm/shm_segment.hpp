// A POSIX shared-memory segment for the ranks of one host: created by one process under a
// random, unguessable name with mode 0600, opened by the others, and unlinked as soon as
// every process has mapped it, so that nothing is left in /dev/shm whatever happens next.
#pragma once
#include <cstddef>
#include <string>

#include "qcoll/status.hpp"

namespace qcoll::comm {

class ShmMapping {
 public:
  ShmMapping() = default;
  ShmMapping(void* base, std::size_t bytes) : base_(base), bytes_(bytes) {}
  ShmMapping(const ShmMapping&) = delete;
  ShmMapping& operator=(const ShmMapping&) = delete;
  ShmMapping(ShmMapping&& o) noexcept;
  ShmMapping& operator=(ShmMapping&& o) noexcept;
  ~ShmMapping();

  unsigned char* data() const { return static_cast<unsigned char*>(base_); }
  std::size_t bytes() const { return bytes_; }
  explicit operator bool() const { return base_ != nullptr; }

 private:
  void* base_ = nullptr;
  std::size_t bytes_ = 0;
};

// n random bytes from getrandom (INNER_ERROR if the kernel has none to give).
Status random_bytes(unsigned char* out, std::size_t n);
// Two lowercase hex digits per byte.
std::string hex_string(const unsigned char* p, std::size_t n);

// "/qcoll-" followed by 32 random hex digits (128 bits from getrandom).
Status random_shm_name(std::string& name);

// Creates `name` exclusively (mode 0600), reserves `bytes` (posix_fallocate, so a full
// /dev/shm is an error here and never a SIGBUS later) and maps it. The memory reads as zero.
// On failure nothing is left behind; *no_space (if given) tells whether /dev/shm was too small.
Status create_shm(const std::string& name, std::size_t bytes, ShmMapping& out, bool* no_space = nullptr);

// Opens and maps an existing segment of exactly `bytes` bytes.
Status open_shm(const std::string& name, std::size_t bytes, ShmMapping& out);

// Removes the name (the memory lives on while mapped). Missing names are not an error.
void unlink_shm(const std::string& name);

}  // namespace qcoll::comm
