// libFuzzer target: the .npy reader (tools/npy.hpp) on arbitrary bytes.
//
// parse() must either throw NpyError (never another exception, never crash, never read out
// of bounds: ASan) or return an array that is consistent: data size = element count x
// element size = the bytes after the header, and serialize() of it parses back to the same
// array. Huge shapes must be rejected before any allocation (libFuzzer's -malloc_limit_mb
// catches a reader that allocates what the header claims instead of what the file holds).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "npy.hpp"

namespace npy = qcoll::npy;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  npy::Array a;
  try {
    a = npy::parse(data, size, "fuzz.npy");
  } catch (const npy::NpyError& e) {
    if (std::string(e.what()).rfind("fuzz.npy: ", 0) != 0) {
      std::fprintf(stderr, "fuzz_npy: message does not start with the file name: %s\n", e.what());
      std::abort();
    }
    return 0;
  }
  if (a.data.size() != a.count() * npy::elem_size(a.type) || a.data.size() > size) {
    std::fprintf(stderr, "fuzz_npy: accepted array with %zu data bytes for %zu elements\n", a.data.size(), a.count());
    std::abort();
  }
  for (int64_t d : a.shape)
    if (d < 0) {
      std::fprintf(stderr, "fuzz_npy: accepted a negative dimension\n");
      std::abort();
    }
  // The accepted data are the file's last bytes.
  if (!a.data.empty() && std::memcmp(a.data.data(), data + size - a.data.size(), a.data.size()) != 0) std::abort();
  const std::vector<uint8_t> again = npy::serialize(a);
  const npy::Array b = npy::parse(again.data(), again.size(), "fuzz.npy");
  if (b.type != a.type || b.shape != a.shape || b.data != a.data) {
    std::fprintf(stderr, "fuzz_npy: serialize/parse round trip changed the array\n");
    std::abort();
  }
  return 0;
}
