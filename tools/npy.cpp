// .npy reader and writer; see npy.hpp. The header dict is parsed by a small recursive-descent
// parser that accepts exactly the Python literal subset .npy files use.
#include "npy.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <limits>
#include <optional>

namespace qcoll::npy {
namespace {

constexpr uint8_t kMagic[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};

[[noreturn]] void fail(std::string_view name, const std::string& problem) {
  std::string m(name);
  m += ": ";
  m += problem;
  throw NpyError(m);
}

// A printable rendering of untrusted text for messages (at most 40 characters).
std::string quoted(std::string_view s) {
  std::string out = "'";
  std::size_t n = 0;
  for (unsigned char c : s) {
    if (++n > 40) {
      out += "...";
      break;
    }
    if (c >= 0x20 && c < 0x7F && c != '\'') {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", c);
      out += buf;
    }
  }
  return out + "'";
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (std::size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

struct Header {
  std::optional<std::string> descr;
  std::optional<bool> fortran_order;
  std::optional<std::vector<int64_t>> shape;
};

// Parser of "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }".
class DictParser {
 public:
  DictParser(std::string_view text, std::string_view name) : s_(text), name_(name) {}

  Header parse() {
    Header h;
    skip_ws();
    expect('{', "the header must be a Python dict starting with '{'");
    skip_ws();
    while (!at('}')) {
      std::string key = parse_string("a dict key");
      skip_ws();
      expect(':', "expected ':' after key " + quoted(key));
      skip_ws();
      if (key == "descr") {
        if (h.descr) bad("duplicate key 'descr'");
        if (!at('\'') && !at('"')) bad("'descr' must be a string such as '<f4' (structured dtypes are not supported)");
        h.descr = parse_string("the 'descr' value");
      } else if (key == "fortran_order") {
        if (h.fortran_order) bad("duplicate key 'fortran_order'");
        h.fortran_order = parse_bool();
      } else if (key == "shape") {
        if (h.shape) bad("duplicate key 'shape'");
        h.shape = parse_shape();
      } else {
        bad("unexpected key " + quoted(key) + " (expected 'descr', 'fortran_order', 'shape')");
      }
      skip_ws();
      if (at(',')) {
        ++pos_;
        skip_ws();
      } else if (!at('}')) {
        bad("expected ',' or '}' in the header dict");
      }
    }
    ++pos_;  // '}'
    skip_ws();
    if (pos_ != s_.size()) bad("unexpected text after the header dict");
    if (!h.descr) bad("the header has no 'descr' key");
    if (!h.fortran_order) bad("the header has no 'fortran_order' key");
    if (!h.shape) bad("the header has no 'shape' key");
    return h;
  }

 private:
  [[noreturn]] void bad(const std::string& problem) {
    fail(name_, "bad .npy header: " + problem + " (at byte " + std::to_string(pos_) + " of the dict)");
  }
  bool at(char c) const { return pos_ < s_.size() && s_[pos_] == c; }
  void expect(char c, const std::string& what) {
    if (!at(c)) bad(what);
    ++pos_;
  }
  void skip_ws() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  std::string parse_string(const char* what) {
    if (!at('\'') && !at('"')) bad(std::string("expected a quoted string as ") + what);
    char q = s_[pos_++];
    std::size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] != q) {
      if (s_[pos_] == '\\') bad("escape sequences are not supported in strings");
      if (s_[pos_] == '\n') bad("unterminated string");
      ++pos_;
    }
    if (pos_ >= s_.size()) bad("unterminated string");
    std::string out(s_.substr(start, pos_ - start));
    ++pos_;
    return out;
  }
  bool parse_bool() {
    if (s_.substr(pos_, 4) == "True") {
      pos_ += 4;
      return true;
    }
    if (s_.substr(pos_, 5) == "False") {
      pos_ += 5;
      return false;
    }
    bad("'fortran_order' must be True or False");
  }
  int64_t parse_int() {
    if (pos_ >= s_.size() || s_[pos_] < '0' || s_[pos_] > '9') bad("shape entries must be non-negative integers");
    uint64_t v = 0;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      uint64_t d = static_cast<uint64_t>(s_[pos_] - '0');
      if (v > (static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) - d) / 10) bad("shape entry too large");
      v = v * 10 + d;
      ++pos_;
    }
    if (at('L')) ++pos_;  // Python 2 long suffix, as old NumPy versions wrote it
    return static_cast<int64_t>(v);
  }
  std::vector<int64_t> parse_shape() {
    expect('(', "'shape' must be a tuple such as (2, 3)");
    std::vector<int64_t> dims;
    skip_ws();
    bool trailing_comma = false;
    while (!at(')')) {
      if (dims.size() >= kMaxDims) bad("'shape' has more than " + std::to_string(kMaxDims) + " dimensions");
      dims.push_back(parse_int());
      skip_ws();
      trailing_comma = false;
      if (at(',')) {
        ++pos_;
        trailing_comma = true;
        skip_ws();
      } else if (!at(')')) {
        bad("expected ',' or ')' in 'shape'");
      }
    }
    ++pos_;
    // Python reads "(3)" as the integer 3, not a tuple.
    if (dims.size() == 1 && !trailing_comma) bad("'shape' must be a tuple: write (3,) for one dimension");
    return dims;
  }

  std::string_view s_;
  std::string_view name_;
  std::size_t pos_ = 0;
};

ElemType parse_descr(const std::string& d, std::string_view name) {
  const std::string supported = " (supported: '<f4', '<f2', '<u2', '|i1', '|u1')";
  if (d.size() == 3) {
    char order = d[0];
    std::string_view code = std::string_view(d).substr(1);
    bool one_byte = code == "i1" || code == "u1";
    if (one_byte) {
      if (order != '|' && order != '<' && order != '>' && order != '=')
        fail(name, "unsupported dtype " + quoted(d) + supported);
      return code == "i1" ? ElemType::Int8 : ElemType::UInt8;
    }
    if (code == "f4" || code == "f2" || code == "u2") {
      if (order == '>')
        fail(name, "big-endian dtype " + quoted(d) + " is not supported; store the array little-endian ('<" +
                       std::string(code) + "')");
      if (order != '<')
        fail(name, "dtype " + quoted(d) + " must state little-endian byte order ('<" + std::string(code) + "')");
      return code == "f4" ? ElemType::Float32 : code == "f2" ? ElemType::Float16 : ElemType::UInt16;
    }
  }
  fail(name, "unsupported dtype " + quoted(d) + supported);
}

uint32_t read_le(const uint8_t* p, int n) {
  uint32_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

}  // namespace

std::size_t elem_size(ElemType t) {
  switch (t) {
    case ElemType::Float32:
      return 4;
    case ElemType::Float16:
    case ElemType::UInt16:
      return 2;
    case ElemType::Int8:
    case ElemType::UInt8:
      return 1;
  }
  return 0;
}

const char* descr(ElemType t) {
  switch (t) {
    case ElemType::Float32:
      return "<f4";
    case ElemType::Float16:
      return "<f2";
    case ElemType::UInt16:
      return "<u2";
    case ElemType::Int8:
      return "|i1";
    case ElemType::UInt8:
      return "|u1";
  }
  return "?";
}

const char* elem_name(ElemType t) {
  switch (t) {
    case ElemType::Float32:
      return "float32";
    case ElemType::Float16:
      return "float16";
    case ElemType::UInt16:
      return "uint16";
    case ElemType::Int8:
      return "int8";
    case ElemType::UInt8:
      return "uint8";
  }
  return "?";
}

std::size_t Array::count() const {
  std::size_t n = 1;
  for (int64_t d : shape) n *= static_cast<std::size_t>(d);
  return n;
}

std::vector<int64_t> fp4_logical_shape(const std::vector<int64_t>& packed) {
  std::vector<int64_t> s = packed;
  if (!s.empty()) s.back() *= 2;
  return s;
}

std::vector<int64_t> fp4_packed_shape(const std::vector<int64_t>& logical) {
  std::vector<int64_t> s = logical;
  if (!s.empty()) s.back() /= 2;
  return s;
}

namespace {

// The header's text (the dict, ending in a newline) after the magic, version and length.
// Sets *prefix to the bytes before it.
std::string_view header_text(const uint8_t* buf, std::size_t len, std::string_view name, std::size_t* prefix) {
  if (buf == nullptr && len != 0) fail(name, "no data");
  if (len < 10) fail(name, "too short to be a .npy file (" + std::to_string(len) + " bytes)");
  if (std::memcmp(buf, kMagic, sizeof kMagic) != 0)
    fail(name, "not a .npy file (the magic string \\x93NUMPY is missing)");
  const int major = buf[6], minor = buf[7];
  if ((major != 1 && major != 2 && major != 3) || minor != 0)
    fail(name, "unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                   " (supported: 1.0, 2.0, 3.0)");
  *prefix = major == 1 ? 10 : 12;
  if (len < *prefix) fail(name, "truncated .npy header (" + std::to_string(len) + " bytes)");
  const std::size_t header_len = read_le(buf + 8, major == 1 ? 2 : 4);
  if (header_len == 0) fail(name, "the .npy header length is 0");
  if (header_len > kMaxHeaderLen)
    fail(name, "the .npy header length " + std::to_string(header_len) + " exceeds the limit of " +
                   std::to_string(kMaxHeaderLen) + " bytes");
  if (header_len > len - *prefix)
    fail(name, "truncated .npy header: it claims " + std::to_string(header_len) + " bytes, the file has " +
                   std::to_string(len - *prefix) + " after the prefix");
  std::string_view text(reinterpret_cast<const char*>(buf + *prefix), header_len);
  if (text.back() != '\n') fail(name, "bad .npy header: it must end with a newline");
  return text;
}

// The data of `a` must be exactly the `have` bytes after the header.
void check_data_size(const Array& a, std::size_t have, std::string_view name) {
  uint64_t bytes = elem_size(a.type);
  for (int64_t d : a.shape) {
    if (__builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes))
      fail(name, "shape " + shape_text(a.shape) + " is too large (its size overflows 64 bits)");
  }
  if (bytes > have)
    fail(name, "truncated data: shape " + shape_text(a.shape) + " of " + descr(a.type) + " needs " +
                   std::to_string(bytes) + " bytes, the file has " + std::to_string(have));
  if (bytes < have)
    fail(name, std::to_string(have - bytes) + " unexpected bytes after the data of shape " + shape_text(a.shape) +
                   " of " + descr(a.type));
}

}  // namespace

Array parse(const uint8_t* buf, std::size_t len, std::string_view name) {
  std::size_t prefix = 0;
  const std::string_view text = header_text(buf, len, name, &prefix);
  Header h = DictParser(text, name).parse();
  Array a;
  a.type = parse_descr(*h.descr, name);
  if (*h.fortran_order)
    fail(
        name,
        "fortran_order True (column-major) arrays are not supported; save a C-ordered array (numpy.ascontiguousarray)");
  a.shape = *h.shape;
  const std::size_t data_at = prefix + text.size();
  check_data_size(a, len - data_at, name);
  a.data.assign(buf + data_at, buf + len);
  return a;
}

Array read_file(const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) fail(path, std::string("cannot open: ") + std::strerror(errno));
  std::vector<uint8_t> bytes;
  uint8_t chunk[1 << 16];
  for (;;) {
    std::size_t n = std::fread(chunk, 1, sizeof chunk, f);
    bytes.insert(bytes.end(), chunk, chunk + n);
    if (n < sizeof chunk) break;
  }
  bool err = std::ferror(f) != 0;
  int e = errno;
  std::fclose(f);
  if (err) fail(path, std::string("read error: ") + std::strerror(e));
  return parse(bytes.data(), bytes.size(), path);
}

std::vector<uint8_t> serialize(const Array& a) {
  uint64_t bytes = elem_size(a.type);
  for (int64_t d : a.shape) {
    if (d < 0 || __builtin_mul_overflow(bytes, static_cast<uint64_t>(d), &bytes))
      throw NpyError("npy: cannot write shape " + shape_text(a.shape));
  }
  if (bytes != a.data.size())
    throw NpyError("npy: shape " + shape_text(a.shape) + " of " + descr(a.type) + " needs " + std::to_string(bytes) +
                   " bytes of data, got " + std::to_string(a.data.size()));
  std::string dict =
      "{'descr': '" + std::string(descr(a.type)) + "', 'fortran_order': False, 'shape': " + shape_text(a.shape) + ", }";
  // Pad with spaces and end with '\n' so that prefix + header is a multiple of 64.
  std::size_t prefix = 10;
  std::size_t total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  if (total - prefix > 0xFFFF) {
    prefix = 12;
    total = (prefix + dict.size() + 1 + 63) / 64 * 64;
  }
  std::size_t header_len = total - prefix;
  std::vector<uint8_t> out(total + a.data.size(), ' ');
  std::memcpy(out.data(), kMagic, sizeof kMagic);
  out[6] = prefix == 10 ? 1 : 2;
  out[7] = 0;
  for (std::size_t i = 0; i < prefix - 8; ++i) out[8 + i] = static_cast<uint8_t>(header_len >> (8 * i));
  std::memcpy(out.data() + prefix, dict.data(), dict.size());  // then spaces up to the newline
  out[total - 1] = '\n';
  if (!a.data.empty()) std::memcpy(out.data() + total, a.data.data(), a.data.size());
  return out;
}

void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) fail(path, std::string("cannot create: ") + std::strerror(errno));
  std::size_t n = std::fwrite(bytes.data(), 1, bytes.size(), f);
  int e = errno;
  bool ok = n == bytes.size();
  if (std::fclose(f) != 0 && ok) {
    ok = false;
    e = errno;
  }
  if (!ok) fail(path, std::string("write error: ") + std::strerror(e));
}

}  // namespace qcoll::npy
