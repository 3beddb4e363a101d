// The bytes of a unique id and of the rendezvous messages (comm/bootstrap.hpp describes the
// protocol). Plain data, sent as it is between processes of one host (one build of qcoll:
// the version field refuses another).
#pragma once
#include <sys/socket.h>
#include <sys/un.h>

#include <cstdint>
#include <string>

#include "comm/bootstrap.hpp"

namespace qcoll::comm::bootstrap::wire {

inline constexpr char kIdMagic[8] = {'q', 'c', 'o', 'l', 'l', 'U', 'I', 'D'};
inline constexpr uint32_t kVersion = 1;
inline constexpr std::size_t kNonceBytes = 16;

// The 128 bytes of a unique id.
struct IdLayout {
  char magic[8];
  uint32_t version;
  int32_t creator_pid;
  uint64_t creator_pid_ns;  // pid namespace of the creator (0: unknown)
  uint32_t creator_uid;
  uint32_t reserved0;
  unsigned char nonce[kNonceBytes];  // names the root's socket
  unsigned char reserved[kIdBytes - 48];
};
static_assert(sizeof(IdLayout) == kIdBytes, "a unique id is 128 bytes");

enum Kind : uint32_t {
  kHello = 0x51480001,
  kSegment = 0x51480002,
  kMapped = 0x51480003,
  kGo = 0x51480004,
  kAbort = 0x51480005
};

inline constexpr std::size_t kNameBytes = 128;
inline constexpr std::size_t kMessageBytes = 512;

struct Hello {  // rank -> root
  uint32_t kind = kHello;
  uint32_t version = kVersion;
  unsigned char nonce[kNonceBytes] = {};
  int32_t nranks = 0;
  int32_t rank = 0;
  int32_t local_code = 0;  // 0: this rank passed its own checks; else its status (see message)
  int32_t pid = 0;
  uint64_t window_bytes = 0;
  int64_t wait_ms = 0;  // how long this rank waits from now on (its QCOLL_TIMEOUT_S)
  char name[kNameBytes] = {};
  char message[kMessageBytes] = {};
};

struct Reply {  // root -> rank: kSegment, kGo or kAbort
  uint32_t kind = kAbort;
  int32_t code = 0;              // kAbort: the status the rank returns
  int32_t ranks_in_process = 1;  // kSegment, kGo
  int32_t reserved = 0;
  char shm_name[64] = {};            // kSegment
  char message[kMessageBytes] = {};  // kAbort
};

struct Mapped {  // rank -> root
  uint32_t kind = kMapped;
  int32_t code = 0;
  char message[kMessageBytes] = {};
};

// The id's fields, or PARAM_INVALID naming `param` when the bytes are not an id of this
// format version.
Status read_id(const Id& id, IdLayout& out, const char* param);

// The root's address: "\0qcoll-boot-<32 hex digits of the nonce>" (abstract namespace).
socklen_t root_address(const IdLayout& id, sockaddr_un& out);

// Copies text into a fixed-size field, cut to fit and always NUL-terminated.
template <std::size_t N>
void put(char (&field)[N], const std::string& text) {
  const std::size_t n = text.size() < N - 1 ? text.size() : N - 1;
  text.copy(field, n);
  field[n] = '\0';
}
template <std::size_t N>
std::string get(const char (&field)[N]) {
  std::size_t n = 0;
  while (n < N && field[n] != '\0') ++n;
  return std::string(field, n);
}

}  // namespace qcoll::comm::bootstrap::wire
