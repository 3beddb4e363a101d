// A POSIX shared-memory segment for the ranks of one host: created by one process under a
// random, unguessable name with mode 0600, opened by the others, and unlinked as soon as
// every process has mapped it, so that nothing is left in /dev/shm whatever happens next.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>

#include "qcoll/status.hpp"

namespace qcoll::comm {

class ShmMapping {
 public:
  ShmMapping() = default;
  // `fd` (owned, closed with the mapping; -1: none) lets allocate() reserve more of the file.
  ShmMapping(void* base, std::size_t bytes, int fd = -1) : base_(base), bytes_(bytes), fd_(fd) {}
  ShmMapping(const ShmMapping&) = delete;
  ShmMapping& operator=(const ShmMapping&) = delete;
  ShmMapping(ShmMapping&& o) noexcept;
  ShmMapping& operator=(ShmMapping&& o) noexcept;
  ~ShmMapping();

  unsigned char* data() const { return static_cast<unsigned char*>(base_); }
  std::size_t bytes() const { return bytes_; }
  explicit operator bool() const { return base_ != nullptr; }
  int fd() const { return fd_; }

  // Reserves bytes [offset, offset + len) of the segment in /dev/shm (posix_fallocate), so
  // that writing them can never raise SIGBUS. Without a file descriptor the whole segment
  // counts as reserved (it was, at creation). INNER_ERROR naming /dev/shm on failure;
  // *no_space tells whether /dev/shm was too small.
  Status allocate(std::size_t offset, std::size_t len, bool* no_space = nullptr) const;
  // Bytes of the segment that /dev/shm holds now (st_blocks), or 0 without a descriptor.
  std::size_t allocated_bytes() const;

 private:
  void* base_ = nullptr;
  std::size_t bytes_ = 0;
  int fd_ = -1;
};

// n random bytes from getrandom (INNER_ERROR if the kernel has none to give).
Status random_bytes(unsigned char* out, std::size_t n);
// Two lowercase hex digits per byte.
std::string hex_string(const unsigned char* p, std::size_t n);

// "/qcoll-" followed by 32 random hex digits (128 bits from getrandom), or with a
// QCOLL_SHM_TAG T (qcoll/settings.hpp) "/qcoll-T-" followed by them.
Status random_shm_name(std::string& name);

// Creates `name` exclusively (mode 0600) with `bytes` bytes, reserves the first
// min(reserve_bytes, bytes) of them (posix_fallocate, so a full /dev/shm is an error here and
// never a SIGBUS later; the rest stays sparse until ShmMapping::allocate) and maps it. The
// memory reads as zero. On failure nothing is left behind; *no_space (if given) tells whether
// /dev/shm was too small.
Status create_shm(const std::string& name, std::size_t bytes, ShmMapping& out, bool* no_space = nullptr,
                  std::size_t reserve_bytes = SIZE_MAX);

// Opens and maps an existing segment of exactly `bytes` bytes.
Status open_shm(const std::string& name, std::size_t bytes, ShmMapping& out);

// Removes the name (the memory lives on while mapped). Missing names are not an error.
void unlink_shm(const std::string& name);

}  // namespace qcoll::comm
