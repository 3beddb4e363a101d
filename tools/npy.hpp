// Reading and writing NumPy .npy files (format versions 1.0, 2.0 and 3.0).
//
// The reader parses from a memory buffer and is strict: it accepts only C-ordered arrays of
// the element types the qcoll tools use, checks every length against the buffer, and throws
// NpyError (message "<name>: <problem>") on anything else. It never reads out of bounds.
#pragma once
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace qcoll::npy {

// The element types the tools read and write.
enum class ElemType : uint8_t {
  Float32,  // '<f4'
  Float16,  // '<f2'
  UInt16,   // '<u2' (bfloat16 bit patterns)
  Int8,     // '|i1'
  UInt8,    // '|u1'
};

std::size_t elem_size(ElemType t);
// The descr the writer uses: "<f4", "<f2", "<u2", "|i1", "|u1".
const char* descr(ElemType t);
// A readable name for messages: "float32", "float16", "uint16", "int8", "uint8".
const char* elem_name(ElemType t);

struct Array {
  ElemType type = ElemType::Float32;
  std::vector<int64_t> shape;  // empty: a scalar (one element)
  std::vector<uint8_t> data;   // little-endian elements, C order

  std::size_t count() const;  // product of shape (1 for a scalar)
};

class NpyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Packed 4-bit data (contract.md §ext-fp4-layout) in .npy files: uint8 arrays whose last
// dimension is H/2 for a tensor of logical shape (..., H), two codes a byte, the element of
// even flat index in bits 0-3. The logical shape of such an array (its last dimension
// doubled), and the array's shape for a logical one (the last dimension halved: the caller
// checks it is even). An empty shape stays empty.
std::vector<int64_t> fp4_logical_shape(const std::vector<int64_t>& packed);
std::vector<int64_t> fp4_packed_shape(const std::vector<int64_t>& logical);

// Limits the reader enforces.
constexpr std::size_t kMaxHeaderLen = 1 << 20;  // bytes of the header dict
constexpr std::size_t kMaxDims = 32;

// Parses a whole .npy file held in [buf, buf + len). `name` (usually the file path) starts
// every error message.
Array parse(const uint8_t* buf, std::size_t len, std::string_view name);
// Reads and parses a file.
Array read_file(const std::string& path);

// The bytes of a .npy file holding `a` (version 1.0, or 2.0 when the header does not fit
// 1.0's 16-bit length; the header is padded so the data starts at a multiple of 64).
// Throws NpyError if a.data.size() does not match the shape.
std::vector<uint8_t> serialize(const Array& a);
// Writes bytes to `path` (creating or truncating it). Throws NpyError on failure.
void write_bytes(const std::string& path, const std::vector<uint8_t>& bytes);

}  // namespace qcoll::npy
