// Unique ids: their bytes, hex form and the root's address (comm/bootstrap.hpp).
#include <cstring>

#include "comm/bootstrap.hpp"
#include "comm/bootstrap_wire.hpp"
#include "comm/shm_segment.hpp"

namespace qcoll::comm::bootstrap {

namespace wire {

socklen_t root_address(const IdLayout& id, sockaddr_un& out) {
  std::memset(&out, 0, sizeof out);
  out.sun_family = AF_UNIX;
  const std::string name = "qcoll-boot-" + hex_string(id.nonce, kNonceBytes);
  // Abstract namespace: a leading NUL, then the name (not NUL-terminated).
  std::memcpy(out.sun_path + 1, name.data(), name.size());
  return static_cast<socklen_t>(offsetof(sockaddr_un, sun_path) + 1 + name.size());
}

Status read_id(const Id& id, IdLayout& out, const char* param) {
  std::memcpy(&out, id.bytes, sizeof out);
  if (std::memcmp(out.magic, kIdMagic, sizeof kIdMagic) != 0)
    return Status::Error(StatusCode::ParamInvalid,
                         std::string(param) + ": must be a unique id made by qcollGetUniqueId, got bytes starting " +
                             hex_string(id.bytes, 8));
  if (out.version != kVersion)
    return Status::Error(StatusCode::ParamInvalid, std::string(param) + ": must be an id of format version " +
                                                       std::to_string(kVersion) + " (this build of qcoll), got " +
                                                       std::to_string(out.version));
  return Status::Ok();
}

}  // namespace wire

std::string to_hex(const Id& id) { return hex_string(id.bytes, kIdBytes); }

Status from_hex(const char* text, Id& out, const char* param) {
  if (text == nullptr) return Status::Error(StatusCode::ParamNullptr, std::string(param) + ": must not be null");
  const std::size_t len = std::strlen(text);
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  if (len != 2 * kIdBytes)
    return Status::Error(StatusCode::ParamInvalid, std::string(param) + ": must be " + std::to_string(2 * kIdBytes) +
                                                       " hex digits (a unique id), got " + std::to_string(len) +
                                                       " characters");
  Id id;
  for (std::size_t i = 0; i < kIdBytes; ++i) {
    const int hi = digit(text[2 * i]), lo = digit(text[2 * i + 1]);
    if (hi < 0 || lo < 0) {
      const std::size_t at = hi < 0 ? 2 * i : 2 * i + 1;
      return Status::Error(StatusCode::ParamInvalid, std::string(param) + ": must be hex digits only, got '" +
                                                         std::string(1, text[at]) + "' at position " +
                                                         std::to_string(at));
    }
    id.bytes[i] = static_cast<unsigned char>(hi * 16 + lo);
  }
  wire::IdLayout layout;
  if (Status s = wire::read_id(id, layout, param); !s.ok()) return s;
  out = id;
  return Status::Ok();
}

std::string default_name(const Id& id) {
  wire::IdLayout layout;
  std::memcpy(&layout, id.bytes, sizeof layout);
  return "uid-" + hex_string(layout.nonce, wire::kNonceBytes);
}

}  // namespace qcoll::comm::bootstrap
