// qcollCreateTensor & co.: describe a tensor the way aclCreateTensor does. The arguments
// are checked and copied here; whether the operators accept the tensor (dtype, shape,
// contiguity) is decided by their phase one.
#include <cstring>
#include <string>

#include "api/handles.hpp"

namespace {

using qcoll::ops::kMaxTensorDims;

qcollTensor* fail(const std::string& msg) {
  qcoll::api::set_message(msg);
  return nullptr;
}

bool check_dims(const char* param, const int64_t* dims, uint64_t n, std::string* err) {
  if (n > kMaxTensorDims) {
    *err = std::string(param) + ": at most " + std::to_string(kMaxTensorDims) + " dimensions, got " + std::to_string(n);
    return false;
  }
  if (n > 0 && dims == nullptr) {
    *err = std::string(param) + ": null with " + std::to_string(n) + " dimensions";
    return false;
  }
  for (uint64_t i = 0; i < n; ++i)
    if (dims[i] < 0) {
      *err = std::string(param) + ": dimension " + std::to_string(i) + " must be >= 0, got " + std::to_string(dims[i]);
      return false;
    }
  return true;
}

qcollTensor* create(const int64_t* viewDims, uint64_t viewDimsNum, int32_t dataType, const int64_t* stride,
                    int64_t offset, int32_t format, const int64_t* storageDims, uint64_t storageDimsNum,
                    void* tensorData) {
  std::string err;
  if (!check_dims("viewDims", viewDims, viewDimsNum, &err)) return fail(err);
  if (!check_dims("storageDims", storageDims, storageDimsNum, &err)) return fail(err);
  if (offset < 0) return fail("offset: must be >= 0, got " + std::to_string(offset));
  auto t = std::make_unique<qcollTensor>();
  auto& d = t->desc;
  d.dtype = dataType;
  d.dims.assign(viewDims, viewDims + viewDimsNum);
  if (stride != nullptr)
    d.strides.assign(stride, stride + viewDimsNum);
  else
    d.strides = qcoll::ops::contiguous_strides(d.dims);
  d.offset = offset;
  d.format = format;
  if (storageDimsNum > 0) d.storage_dims.assign(storageDims, storageDims + storageDimsNum);
  d.data = tensorData;
  qcoll::api::set_message("");
  return t.release();
}

qcollTensor* create_guarded(const int64_t* viewDims, uint64_t viewDimsNum, int32_t dataType, const int64_t* stride,
                            int64_t offset, int32_t format, const int64_t* storageDims, uint64_t storageDimsNum,
                            void* tensorData) {
  try {
    return create(viewDims, viewDimsNum, dataType, stride, offset, format, storageDims, storageDimsNum, tensorData);
  } catch (const std::bad_alloc&) {
    return fail("out of memory");
  } catch (...) {
    return fail("internal error while creating a tensor");
  }
}

}  // namespace

extern "C" {

// A C caller may pass any int as an enum. qcoll.h gives the enums int32_t as their fixed
// underlying type in C++, so every value is well defined; they are read here as plain
// integers (memcpy) and phase one reports unknown values.
static_assert(sizeof(qcollDataType) == sizeof(int32_t) && sizeof(qcollFormat) == sizeof(int32_t));
#define QCOLL_RAW_ENUM(name) \
  int32_t raw_##name;        \
  std::memcpy(&raw_##name, &name, sizeof raw_##name)

qcollTensor* qcollCreateTensor(const int64_t* viewDims, uint64_t viewDimsNum, qcollDataType dataType,
                               const int64_t* stride, int64_t offset, qcollFormat format, const int64_t* storageDims,
                               uint64_t storageDimsNum, void* tensorData) {
  QCOLL_RAW_ENUM(dataType);
  QCOLL_RAW_ENUM(format);
  return create_guarded(viewDims, viewDimsNum, raw_dataType, stride, offset, raw_format, storageDims, storageDimsNum,
                        tensorData);
}

qcollTensor* qcollCreateContiguousTensor(const int64_t* dims, uint64_t dimsNum, qcollDataType dataType,
                                         void* tensorData) {
  QCOLL_RAW_ENUM(dataType);
  return create_guarded(dims, dimsNum, raw_dataType, nullptr, 0, QCOLL_FORMAT_ND, dims, dimsNum, tensorData);
}
#undef QCOLL_RAW_ENUM

qcollStatus qcollDestroyTensor(const qcollTensor* tensor) {
  delete tensor;
  qcoll::api::set_message("");
  return QCOLL_SUCCESS;
}

}  // extern "C"
