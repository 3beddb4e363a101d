#include "comm/shm_segment.hpp"

#include "comm/text.hpp"
#include "qcoll/settings.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

namespace qcoll::comm {

namespace {

Status sys_error(const std::string& what, int err) {
  return Status::Error(StatusCode::InnerError, what + ": " + std::strerror(err));
}

// On success the mapping owns fd.
Status map_fd(int fd, std::size_t bytes, ShmMapping& out) {
  void* p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
  if (p == MAP_FAILED) return sys_error("shared memory: mmap of " + std::to_string(bytes) + " bytes", errno);
  out = ShmMapping(p, bytes, fd);
  return Status::Ok();
}

}  // namespace

ShmMapping::ShmMapping(ShmMapping&& o) noexcept
    : base_(std::exchange(o.base_, nullptr)), bytes_(std::exchange(o.bytes_, 0)), fd_(std::exchange(o.fd_, -1)) {}

ShmMapping& ShmMapping::operator=(ShmMapping&& o) noexcept {
  if (this != &o) {
    if (base_ != nullptr) munmap(base_, bytes_);
    if (fd_ >= 0) close(fd_);
    base_ = std::exchange(o.base_, nullptr);
    bytes_ = std::exchange(o.bytes_, 0);
    fd_ = std::exchange(o.fd_, -1);
  }
  return *this;
}

ShmMapping::~ShmMapping() {
  if (base_ != nullptr) munmap(base_, bytes_);
  if (fd_ >= 0) close(fd_);
}

Status ShmMapping::allocate(std::size_t offset, std::size_t len, bool* no_space) const {
  if (no_space) *no_space = false;
  if (fd_ < 0 || len == 0) return Status::Ok();
  const int rc = posix_fallocate(fd_, static_cast<off_t>(offset), static_cast<off_t>(len));
  if (rc == 0) return Status::Ok();
  if (no_space) *no_space = rc == ENOSPC;
  return Status::Error(StatusCode::InnerError, "shared memory: cannot reserve " + mb_text(len) +
                                                   " MB more in /dev/shm (" + std::strerror(rc) + ")");
}

std::size_t ShmMapping::allocated_bytes() const {
  struct stat st {};
  if (fd_ < 0 || fstat(fd_, &st) != 0) return 0;
  return static_cast<std::size_t>(st.st_blocks) * 512;
}

Status random_bytes(unsigned char* out, std::size_t n) {
  std::size_t got = 0;
  while (got < n) {
    const ssize_t r = getrandom(out + got, n - got, 0);
    if (r < 0) {
      if (errno == EINTR) continue;
      return sys_error("getrandom", errno);
    }
    got += static_cast<std::size_t>(r);
  }
  return Status::Ok();
}

std::string hex_string(const unsigned char* p, std::size_t n) {
  static const char hex[] = "0123456789abcdef";
  std::string s;
  s.reserve(2 * n);
  for (std::size_t i = 0; i < n; ++i) {
    s += hex[p[i] >> 4];
    s += hex[p[i] & 15];
  }
  return s;
}

Status random_shm_name(std::string& name) {
  unsigned char bytes[16];
  if (Status s = random_bytes(bytes, sizeof bytes); !s.ok())
    return Status::Error(s.code, "shared memory: " + s.message);
  const std::string tag = settings::shm_tag();
  name = "/qcoll-" + (tag.empty() ? std::string() : tag + "-") + hex_string(bytes, sizeof bytes);
  return Status::Ok();
}

Status create_shm(const std::string& name, std::size_t bytes, ShmMapping& out, bool* no_space,
                  std::size_t reserve_bytes) {
  const std::size_t reserve = reserve_bytes < bytes ? reserve_bytes : bytes;
  if (no_space) *no_space = false;
  const int fd = shm_open(name.c_str(), O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, S_IRUSR | S_IWUSR);
  if (fd < 0) return sys_error("shared memory: shm_open(" + name + ", O_CREAT|O_EXCL, 0600)", errno);
  Status s;
  if (fchmod(fd, S_IRUSR | S_IWUSR) != 0) {
    s = sys_error("shared memory: fchmod 0600", errno);
  } else if (ftruncate(fd, static_cast<off_t>(bytes)) != 0) {
    s = sys_error("shared memory: ftruncate to " + std::to_string(bytes) + " bytes", errno);
  } else if (const int rc = reserve > 0 ? posix_fallocate(fd, 0, static_cast<off_t>(reserve)) : 0; rc != 0) {
    if (no_space) *no_space = rc == ENOSPC;
    s = Status::Error(StatusCode::InnerError, "shared memory: cannot reserve " + mb_text(reserve) +
                                                  " MB in /dev/shm (" + std::strerror(rc) +
                                                  "); lower HCCL_BUFFSIZE (MB per rank) or enlarge /dev/shm");
  } else {
    s = map_fd(fd, bytes, out);
  }
  if (!s.ok()) {
    close(fd);
    unlink_shm(name);
  }
  return s;
}

Status open_shm(const std::string& name, std::size_t bytes, ShmMapping& out) {
  const int fd = shm_open(name.c_str(), O_RDWR | O_CLOEXEC, 0);
  if (fd < 0) return sys_error("shared memory: shm_open(" + name + ")", errno);
  Status s;
  struct stat st {};
  if (fstat(fd, &st) != 0) {
    s = sys_error("shared memory: fstat", errno);
  } else if (static_cast<std::size_t>(st.st_size) != bytes) {
    s = Status::Error(StatusCode::InnerError, "shared memory: segment " + name + " has " + std::to_string(st.st_size) +
                                                  " bytes, expected " + std::to_string(bytes));
  } else {
    s = map_fd(fd, bytes, out);
  }
  if (!s.ok()) close(fd);
  return s;
}

void unlink_shm(const std::string& name) {
  if (!name.empty()) shm_unlink(name.c_str());
}

}  // namespace qcoll::comm
