#include "ops/tensor_desc.hpp"

#include <cstdint>

namespace qcoll::ops {

std::string shape_string(const std::vector<int64_t>& dims) {
  std::string s = "[";
  for (std::size_t i = 0; i < dims.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(dims[i]);
  }
  return s + "]";
}

std::vector<int64_t> contiguous_strides(const std::vector<int64_t>& dims) {
  // Saturates instead of overflowing (signed overflow is undefined): any caller's dims,
  // e.g. qcollCreateTensor without strides, may multiply past 2^63. Such shapes never pass
  // phase one (x has at most 2^48 elements; scales and output must match x).
  constexpr int64_t kMax = INT64_MAX;
  std::vector<int64_t> st(dims.size(), 1);
  for (std::size_t i = dims.size(); i-- > 1;) {
    int64_t next;
    st[i - 1] = __builtin_mul_overflow(st[i], dims[i], &next) ? kMax : next;
  }
  return st;
}

}  // namespace qcoll::ops
