// The ACL runtime on the host (docs/ascend.md §runtime): initialization, devices as rank
// slots of this process, contexts, streams (qcoll streams), memory that remembers each
// allocation's size, tensors, the per-thread message.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <new>
#include <set>
#include <string>
#include <vector>

#include "ascend/state.hpp"

namespace qcoll::ascend {
namespace {

thread_local std::string t_message;
thread_local int32_t t_device = -1;
thread_local void* t_context = nullptr;

struct Context {
  int32_t device;
};

struct Allocation {
  std::size_t size;
  bool host;  // aclrtMallocHost (else aclrtMalloc)
};

struct Runtime {
  std::mutex mu;
  bool initialized = false;
  std::map<const unsigned char*, Allocation> allocations;  // by start address
  std::set<Context*> contexts;
  std::map<void*, int32_t> streams;  // live streams and the device they were made on
};

Runtime& rt() {
  static Runtime* r = new Runtime;  // never destroyed: threads may outlive main's statics
  return *r;
}

constexpr std::size_t kAlignment = 64;

std::string hex_address(const void* p) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%p", p);
  return buf;
}

bool device_ok(int32_t id) { return id >= 0 && id < kDeviceCount; }
std::string device_rule(int32_t id) {
  return "deviceId: must be in [0, " + std::to_string(kDeviceCount - 1) + "], got " + std::to_string(id);
}

void* allocate(std::size_t size) { return ::operator new(size, std::align_val_t(kAlignment), std::nothrow); }

aclError malloc_impl(void** ptr, std::size_t size, bool host) {
  const char* fn = host ? "aclrtMallocHost" : "aclrtMalloc";
  if (ptr == nullptr)
    return fail(ACL_ERROR_INVALID_PARAM, std::string(fn) + ": pointer to the result must not be null");
  if (size == 0) return fail(ACL_ERROR_INVALID_PARAM, std::string(fn) + ": size must be > 0, got 0");
  void* p = allocate(size);
  if (p == nullptr)
    return fail(ACL_ERROR_BAD_ALLOC, std::string(fn) + ": out of memory for " + std::to_string(size) + " bytes");
  {
    std::lock_guard<std::mutex> lock(rt().mu);
    rt().allocations[static_cast<const unsigned char*>(p)] = Allocation{size, host};
  }
  *ptr = p;
  return succeed();
}

aclError free_impl(void* p, bool host) {
  const char* fn = host ? "aclrtFreeHost" : "aclrtFree";
  if (p == nullptr) return fail(ACL_ERROR_INVALID_PARAM, std::string(fn) + ": pointer must not be null");
  {
    std::lock_guard<std::mutex> lock(rt().mu);
    auto it = rt().allocations.find(static_cast<const unsigned char*>(p));
    if (it == rt().allocations.end() || it->second.host != host)
      return fail(ACL_ERROR_INVALID_PARAM, std::string(fn) + ": " + hex_address(p) + " is not the start of a live " +
                                               (host ? "aclrtMallocHost" : "aclrtMalloc") + " allocation");
    rt().allocations.erase(it);
  }
  ::operator delete(p, std::align_val_t(kAlignment));
  return succeed();
}

// The range [p, p + count) must lie in one aclrtMalloc allocation.
bool device_range_ok(const char* param, const void* p, std::size_t count, std::string* err) {
  const unsigned char* base = nullptr;
  std::size_t size = 0;
  if (!find_device_allocation(p, &base, &size)) {
    *err = std::string(param) + ": " + hex_address(p) + " is not device memory (not in an aclrtMalloc allocation)";
    return false;
  }
  const std::size_t at = static_cast<std::size_t>(static_cast<const unsigned char*>(p) - base);
  if (count > size - at) {
    *err = std::string(param) + ": " + std::to_string(count) + " bytes at offset " + std::to_string(at) +
           " extend past its aclrtMalloc allocation of " + std::to_string(size) + " bytes";
    return false;
  }
  return true;
}

aclError from_stream_status(qcollStatus st) {
  if (st == QCOLL_SUCCESS) return succeed();
  set_message(qcollGetRecentErrMsg());
  return st == QCOLL_PARAM_NULLPTR || st == QCOLL_PARAM_INVALID ? ACL_ERROR_INVALID_PARAM : ACL_ERROR_INTERNAL_ERROR;
}

// Which ends of an aclrtMemcpy kind are device memory (checked against the allocations).
bool memcpy_dst_is_device(int32_t k) {
  return k == ACL_MEMCPY_HOST_TO_DEVICE || k == ACL_MEMCPY_DEVICE_TO_DEVICE || k == ACL_MEMCPY_HOST_TO_BUF_TO_DEVICE ||
         k == ACL_MEMCPY_INNER_DEVICE_TO_DEVICE || k == ACL_MEMCPY_INTER_DEVICE_TO_DEVICE;
}
bool memcpy_src_is_device(int32_t k) {
  return k == ACL_MEMCPY_DEVICE_TO_HOST || k == ACL_MEMCPY_DEVICE_TO_DEVICE || k == ACL_MEMCPY_INNER_DEVICE_TO_DEVICE ||
         k == ACL_MEMCPY_INTER_DEVICE_TO_DEVICE;
}
}  // namespace

void set_message(std::string msg) { t_message = std::move(msg); }
int fail(int code, std::string msg) {
  t_message = std::move(msg);
  return code;
}
int succeed() {
  t_message.clear();
  return 0;
}
int32_t current_device() { return t_device; }

int32_t from_qcoll(qcollStatus st) {
  if (st == QCOLL_SUCCESS) return succeed();
  set_message(qcollGetRecentErrMsg());
  return st;
}

bool find_device_allocation(const void* p, const unsigned char** base, std::size_t* size) {
  const auto* q = static_cast<const unsigned char*>(p);
  std::lock_guard<std::mutex> lock(rt().mu);
  auto& m = rt().allocations;
  auto it = m.upper_bound(q);
  if (it == m.begin()) return false;
  --it;
  if (it->second.host || q >= it->first + it->second.size) return false;
  *base = it->first;
  *size = it->second.size;
  return true;
}

}  // namespace qcoll::ascend

using namespace qcoll::ascend;

extern "C" {

aclError aclInit(const char* /*configPath: nothing to configure on the host*/) {
  std::lock_guard<std::mutex> lock(rt().mu);
  if (rt().initialized) return fail(ACL_ERROR_REPEAT_INITIALIZE, "aclInit: already initialized (aclFinalize first)");
  rt().initialized = true;
  return succeed();
}

aclError aclFinalize(void) {
  std::lock_guard<std::mutex> lock(rt().mu);
  if (!rt().initialized) return fail(ACL_ERROR_UNINITIALIZE, "aclFinalize: aclInit was not called");
  rt().initialized = false;
  return succeed();
}

aclError aclrtGetDeviceCount(uint32_t* count) {
  if (count == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "count: must not be null");
  *count = kDeviceCount;
  return succeed();
}

aclError aclrtSetDevice(int32_t deviceId) {
  if (!device_ok(deviceId)) return fail(ACL_ERROR_RT_INVALID_DEVICEID, "aclrtSetDevice: " + device_rule(deviceId));
  t_device = deviceId;
  t_context = nullptr;
  return succeed();
}

aclError aclrtResetDevice(int32_t deviceId) {
  if (!device_ok(deviceId)) return fail(ACL_ERROR_RT_INVALID_DEVICEID, "aclrtResetDevice: " + device_rule(deviceId));
  if (t_device == deviceId) {
    t_device = -1;
    t_context = nullptr;
  }
  return succeed();
}

aclError aclrtGetDevice(int32_t* deviceId) {
  if (deviceId == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "deviceId: must not be null");
  if (t_device < 0)
    return fail(ACL_ERROR_RT_CONTEXT_NULL,
                "aclrtGetDevice: the calling thread has no current device "
                "(aclrtSetDevice or aclrtSetCurrentContext first)");
  *deviceId = t_device;
  return succeed();
}

aclError aclrtCreateContext(aclrtContext* context, int32_t deviceId) {
  if (context == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "context: must not be null");
  if (!device_ok(deviceId)) return fail(ACL_ERROR_RT_INVALID_DEVICEID, "aclrtCreateContext: " + device_rule(deviceId));
  auto* c = new (std::nothrow) Context{deviceId};
  if (c == nullptr) return fail(ACL_ERROR_BAD_ALLOC, "aclrtCreateContext: out of memory");
  {
    std::lock_guard<std::mutex> lock(rt().mu);
    rt().contexts.insert(c);
  }
  *context = c;
  t_context = c;  // as on the device: the new context is the thread's current one
  t_device = deviceId;
  return succeed();
}

aclError aclrtDestroyContext(aclrtContext context) {
  {
    std::lock_guard<std::mutex> lock(rt().mu);
    auto it = rt().contexts.find(static_cast<Context*>(context));
    if (it == rt().contexts.end())
      return fail(ACL_ERROR_INVALID_PARAM,
                  "context: must be a live context from aclrtCreateContext, got " + hex_address(context));
    rt().contexts.erase(it);
  }
  if (t_context == context) t_context = nullptr;  // the device stays current
  delete static_cast<Context*>(context);
  return succeed();
}

aclError aclrtSetCurrentContext(aclrtContext context) {
  std::lock_guard<std::mutex> lock(rt().mu);
  auto it = rt().contexts.find(static_cast<Context*>(context));
  if (it == rt().contexts.end())
    return fail(ACL_ERROR_INVALID_PARAM,
                "context: must be a live context from aclrtCreateContext, got " + hex_address(context));
  t_context = context;
  t_device = (*it)->device;
  return succeed();
}

aclError aclrtGetCurrentContext(aclrtContext* context) {
  if (context == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "context: must not be null");
  if (t_context == nullptr)
    return fail(ACL_ERROR_RT_CONTEXT_NULL, "aclrtGetCurrentContext: the calling thread has no current context");
  *context = t_context;
  return succeed();
}

aclError aclrtCreateStream(aclrtStream* stream) {
  if (stream == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "stream: must not be null");
  qcollStream s = nullptr;
  if (qcollStatus st = qcollStreamCreate(&s); st != QCOLL_SUCCESS) return from_stream_status(st);
  {
    std::lock_guard<std::mutex> lock(rt().mu);
    rt().streams[s] = t_device;
  }
  *stream = s;
  return succeed();
}

aclError aclrtDestroyStream(aclrtStream stream) {
  {
    std::lock_guard<std::mutex> lock(rt().mu);
    if (rt().streams.erase(stream) == 0)
      return fail(ACL_ERROR_INVALID_PARAM,
                  "stream: must be a live stream from aclrtCreateStream, got " + hex_address(stream));
  }
  return from_stream_status(qcollStreamDestroy(stream));  // waits for the calls still queued
}

aclError aclrtSynchronizeStreamWithTimeout(aclrtStream stream, int32_t timeout) {
  if (timeout < -1)
    return fail(ACL_ERROR_INVALID_PARAM, "timeout: must be -1 (no limit) or >= 0 ms, got " + std::to_string(timeout));
  if (stream != nullptr) {
    std::lock_guard<std::mutex> lock(rt().mu);
    if (rt().streams.count(stream) == 0)
      return fail(ACL_ERROR_INVALID_PARAM,
                  "stream: must be NULL or a live stream from aclrtCreateStream, got " + hex_address(stream));
  }
  int32_t timed_out = 0;
  const qcollStatus st = qcollStreamSynchronizeEx(stream, timeout, &timed_out);
  if (st == QCOLL_SUCCESS) return succeed();
  set_message(qcollGetRecentErrMsg());
  if (timed_out) return ACL_ERROR_RT_STREAM_SYNC_TIMEOUT;
  return st;  // the failed call's aclnn status (161001, 161002, 361001, 561000)
}

aclError aclrtSynchronizeStream(aclrtStream stream) { return aclrtSynchronizeStreamWithTimeout(stream, -1); }

aclError aclrtSynchronizeDevice(void) {
  std::vector<void*> mine;
  {
    std::lock_guard<std::mutex> lock(rt().mu);
    for (auto& [s, dev] : rt().streams)
      if (dev == t_device) mine.push_back(s);
  }
  aclError first = ACL_SUCCESS;
  std::string msg;
  for (void* s : mine) {
    const aclError e = aclrtSynchronizeStreamWithTimeout(s, -1);
    if (e != ACL_SUCCESS && first == ACL_SUCCESS) {
      first = e;
      msg = aclGetRecentErrMsg();
    }
  }
  return first == ACL_SUCCESS ? succeed() : fail(first, msg);
}

aclError aclrtMalloc(void** devPtr, size_t size, aclrtMemMallocPolicy /*policy: one kind of memory here*/) {
  return malloc_impl(devPtr, size, false);
}
aclError aclrtFree(void* devPtr) { return free_impl(devPtr, false); }
aclError aclrtMallocHost(void** hostPtr, size_t size) { return malloc_impl(hostPtr, size, true); }
aclError aclrtFreeHost(void* hostPtr) { return free_impl(hostPtr, true); }

aclError aclrtMemcpy(void* dst, size_t destMax, const void* src, size_t count, aclrtMemcpyKind kind) {
  int32_t k = 0;
  std::memcpy(&k, &kind, sizeof k);  // a C caller may pass any int
  if (dst == nullptr || src == nullptr)
    return fail(ACL_ERROR_INVALID_PARAM, std::string(dst ? "src" : "dst") + ": must not be null");
  if (count > destMax)
    return fail(ACL_ERROR_INVALID_PARAM,
                "count: must be <= destMax " + std::to_string(destMax) + ", got " + std::to_string(count));
  if (k < ACL_MEMCPY_HOST_TO_HOST || k > ACL_MEMCPY_INTER_DEVICE_TO_DEVICE)
    return fail(ACL_ERROR_INVALID_PARAM, "kind: must be an aclrtMemcpyKind (0..7), got " + std::to_string(k));
  std::string err;
  if (count > 0 && memcpy_dst_is_device(k) && !device_range_ok("dst", dst, count, &err))
    return fail(ACL_ERROR_INVALID_PARAM, "aclrtMemcpy: " + err);
  if (count > 0 && memcpy_src_is_device(k) && !device_range_ok("src", src, count, &err))
    return fail(ACL_ERROR_INVALID_PARAM, "aclrtMemcpy: " + err);
  if (count > 0) std::memmove(dst, src, count);
  return succeed();
}

aclError aclrtMemset(void* devPtr, size_t maxCount, int32_t value, size_t count) {
  if (devPtr == nullptr) return fail(ACL_ERROR_INVALID_PARAM, "devPtr: must not be null");
  if (count > maxCount)
    return fail(ACL_ERROR_INVALID_PARAM,
                "count: must be <= maxCount " + std::to_string(maxCount) + ", got " + std::to_string(count));
  std::string err;
  if (count > 0 && !device_range_ok("devPtr", devPtr, count, &err))
    return fail(ACL_ERROR_INVALID_PARAM, "aclrtMemset: " + err);
  std::memset(devPtr, value & 0xFF, count);
  return succeed();
}

const char* aclGetRecentErrMsg(void) { return t_message.c_str(); }

aclTensor* aclCreateTensor(const int64_t* viewDims, uint64_t viewDimsNum, aclDataType dataType, const int64_t* stride,
                           int64_t offset, aclFormat format, const int64_t* storageDims, uint64_t storageDimsNum,
                           void* tensorData) {
  int32_t dt = 0, fmt = 0;  // read as integers: a C caller may pass any value
  std::memcpy(&dt, &dataType, sizeof dt);
  std::memcpy(&fmt, &format, sizeof fmt);
  qcollDataType qdt;
  qcollFormat qfmt;
  std::memcpy(&qdt, &dt, sizeof dt);
  std::memcpy(&qfmt, &fmt, sizeof fmt);
  qcollTensor* q =
      qcollCreateTensor(viewDims, viewDimsNum, qdt, stride, offset, qfmt, storageDims, storageDimsNum, tensorData);
  if (q == nullptr) {
    set_message(std::string("aclCreateTensor: ") + qcollGetRecentErrMsg());
    return nullptr;
  }
  auto* t = new (std::nothrow) aclTensor;
  if (t == nullptr) {
    qcollDestroyTensor(q);
    set_message("aclCreateTensor: out of memory");
    return nullptr;
  }
  t->q = q;
  t->dims.assign(viewDims, viewDims + viewDimsNum);
  t->dtype = dt;
  t->format = fmt;
  t->offset = offset;
  t->data = tensorData;
  succeed();
  return t;
}

aclnnStatus aclDestroyTensor(const aclTensor* tensor) {
  if (tensor == nullptr) return succeed();
  qcollDestroyTensor(tensor->q);
  delete tensor;
  return succeed();
}

}  // extern "C"
