// ml_dtypes' float4_e2m1fn, computed live in a Python child process (python3, or
// QCOLL_TEST_PYTHON), for E2M1's encoder to be compared with (tests/test_formats_fp4.cpp,
// tests/test_formats_exhaustive.cpp). No generated table is stored in the repository.
#pragma once
#include <unistd.h>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

namespace ml_dtypes_child {

inline std::string python() {
  const char* p = std::getenv("QCOLL_TEST_PYTHON");
  return p != nullptr && *p != '\0' ? p : "python3";
}

inline bool ml_dtypes_available() {
  const std::string cmd = python() + " -c 'import numpy, ml_dtypes; ml_dtypes.float4_e2m1fn' >/dev/null 2>&1";
  return std::system(cmd.c_str()) == 0;
}

// The fp32 bit patterns start + i * stride (mod 2^32), i < count.
struct Range {
  uint32_t start = 0, stride = 1;
  uint64_t count = 0;
};

// argv: a file of uint32 bit patterns, then start stride count triples. Writes one byte a
// pattern, ml_dtypes' float4_e2m1fn code of that fp32: the file's patterns, then each range's.
inline constexpr const char* kScript = R"(import sys
import numpy as np, ml_dtypes
out = sys.stdout.buffer
def emit(bits):
    out.write(bits.view(np.float32).astype(ml_dtypes.float4_e2m1fn).view(np.uint8).tobytes())
emit(np.fromfile(sys.argv[1], dtype='<u4'))
args = [int(a) for a in sys.argv[2:]]
chunk = 1 << 22
for start, stride, count in zip(args[0::3], args[1::3], args[2::3]):
    for i in range(0, count, chunk):
        idx = np.arange(i, min(i + chunk, count), dtype=np.uint64)
        emit(((start + stride * idx) & 0xFFFFFFFF).astype(np.uint32))
out.flush()
)";

struct Comparison {
  bool ran = false;
  std::string error;
  uint64_t compared = 0;  // non-NaN inputs (a NaN has no finite value to agree on)
  uint64_t nans = 0;
  uint64_t mismatches = 0;
  std::string first_mismatch;
};

namespace detail {

// A temporary file holding `bytes`, removed with the object.
struct TempFile {
  char path[40] = "/tmp/qcoll-ml-dtypes-XXXXXX";
  bool ok = false;
  explicit TempFile(const std::string& bytes) {
    const int fd = mkstemp(path);
    if (fd < 0) return;
    ok = write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size());
    close(fd);
  }
  ~TempFile() { unlink(path); }
};

}  // namespace detail

// encode (the library's E2M1 encoder) against ml_dtypes: the patterns, then the ranges.
inline Comparison compare(uint8_t (*encode)(float), const std::vector<uint32_t>& patterns,
                          const std::vector<Range>& ranges) {
  Comparison r;
  std::string pattern_bytes;
  for (uint32_t b : patterns)
    for (int k = 0; k < 4; ++k) pattern_bytes.push_back(static_cast<char>(b >> (8 * k)));
  const detail::TempFile script(kScript), input(pattern_bytes);
  if (!script.ok || !input.ok) {
    r.error = "cannot write the temporary files";
    return r;
  }
  std::string cmd = python() + " " + script.path + " " + input.path;
  uint64_t total = patterns.size();
  for (const Range& g : ranges) {
    cmd += " " + std::to_string(g.start) + " " + std::to_string(g.stride) + " " + std::to_string(g.count);
    total += g.count;
  }
  FILE* p = popen(cmd.c_str(), "r");
  if (p == nullptr) {
    r.error = "popen failed: " + cmd;
    return r;
  }
  // The k-th pattern of the whole sequence.
  std::size_t range = 0;
  uint64_t in_range = 0;
  auto next_bits = [&](uint64_t k) -> uint32_t {
    if (k < patterns.size()) return patterns[k];
    while (in_range == ranges[range].count) {
      ++range;
      in_range = 0;
    }
    const Range& g = ranges[range];
    return g.start + static_cast<uint32_t>(in_range++) * g.stride;
  };
  std::vector<uint8_t> buf(1 << 20);
  uint64_t i = 0;
  while (i < total) {
    const std::size_t got = std::fread(buf.data(), 1, buf.size(), p);
    if (got == 0) break;
    for (std::size_t k = 0; k < got && i < total; ++k, ++i) {
      const uint32_t bits = next_bits(i);
      const float x = std::bit_cast<float>(bits);
      if (std::isnan(x)) {
        ++r.nans;
        continue;
      }
      ++r.compared;
      const uint8_t mine = encode(x);
      if (mine != buf[k] && r.mismatches++ == 0) {
        std::ostringstream s;
        s << std::hexfloat << "x=" << x << " (bits 0x" << std::hex << bits << "): qcoll 0x" << unsigned{mine}
          << ", ml_dtypes 0x" << unsigned{buf[k]};
        r.first_mismatch = s.str();
      }
    }
  }
  const int status = pclose(p);
  r.ran = status == 0 && i == total;
  if (!r.ran)
    r.error = cmd + ": exit status " + std::to_string(status) + ", " + std::to_string(i) + " of " +
              std::to_string(total) + " codes read";
  return r;
}

}  // namespace ml_dtypes_child
