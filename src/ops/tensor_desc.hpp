// What the operators know about a tensor: the fields of aclCreateTensor, copied.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace qcoll::ops {

constexpr std::size_t kMaxTensorDims = 8;
constexpr int32_t kFormatND = 2;  // ACL_FORMAT_ND

struct TensorDesc {
  int32_t dtype = -1;            // a qcoll::DType value (checked by the operators)
  std::vector<int64_t> dims;     // view shape
  std::vector<int64_t> strides;  // in elements
  int64_t offset = 0;            // in elements, from data
  int32_t format = kFormatND;
  std::vector<int64_t> storage_dims;  // empty: not given
  void* data = nullptr;
};

// "[8, 1024]"
std::string shape_string(const std::vector<int64_t>& dims);
// Row-major strides of a contiguous tensor of this shape (saturating at INT64_MAX where the
// product of dimensions overflows).
std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& dims);

}  // namespace qcoll::ops
