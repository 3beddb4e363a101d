// qcoll C++ API: quantized reduce-scatter and all-reduce (from quantized data, or fused with
// the quantization of a float tensor), over the C API (qcoll.h).
//
//   qcoll::ThreadGroup group("tp", 4);                       // once, any thread
//   // in each of 4 threads, rank r:
//   auto member = group.join(r);                              // this thread is rank r
//   qcoll::quant_reduce_scatter(qcoll::view(xq, qcoll::DType::Float8E4M3FN, {BS, H}),
//                               qcoll::view(scales, qcoll::DType::Float, {BS, H / 128}),
//                               group, qcoll::view(out, qcoll::DType::BFloat16, {BS / 4, H}));
//
// Every operator call is collective: all ranks of the group make the same call. Errors
// throw qcoll::Error (code + message); the try_ variants return a qcoll::Status instead.
// Processes (or threads) of one host without MPI: qcoll::UniqueId + qcoll::Comm. Launching
// on a stream and synchronizing later: qcoll::Stream (docs/api.md §bootstrap, §streams).
#pragma once
#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include "qcoll/dtype.hpp"
#include "qcoll/settings.hpp"
#include "qcoll/status.hpp"

struct qcollThreadGroup;
struct qcollComm;

namespace qcoll {

// An error status as an exception. what() is "<STATUS_NAME>: <message>".
class Error : public std::runtime_error {
 public:
  Error(StatusCode code, const std::string& message);
  explicit Error(const Status& st) : Error(st.code, st.message) {}
  StatusCode code() const noexcept { return code_; }
  const std::string& message() const noexcept { return message_; }

 private:
  StatusCode code_;
  std::string message_;
};

// Throws Error if !st.ok().
void throw_if_error(const Status& st);

// A contiguous ND tensor over memory it does not own. The operators never write x or
// scales, so views of const data are fine for them.
struct TensorView {
  void* data = nullptr;
  DType dtype = DType::Float;
  std::vector<int64_t> shape;

  std::size_t numel() const;   // product of shape (1 for an empty shape)
  std::size_t nbytes() const;  // dtype_bytes(dtype, numel()): numel() / 2 for a 4-bit dtype (packed)
};

// A view of `bytes` bytes at `data`; throws Error(PARAM_INVALID) unless
// bytes == dtype_bytes(dtype, numel(shape)) (numel * element size; a 4-bit dtype's data is
// packed, two elements a byte: contract.md §ext-fp4-layout).
TensorView view_bytes(const void* data, std::size_t bytes, DType dtype, std::vector<int64_t> shape);

template <class T>
TensorView view(std::span<T> data, DType dtype, std::vector<int64_t> shape) {
  return view_bytes(data.data(), data.size_bytes(), dtype, std::move(shape));
}
template <class T>
TensorView view(std::vector<T>& data, DType dtype, std::vector<int64_t> shape) {
  return view_bytes(data.data(), data.size() * sizeof(T), dtype, std::move(shape));
}
template <class T>
TensorView view(const std::vector<T>& data, DType dtype, std::vector<int64_t> shape) {
  return view_bytes(data.data(), data.size() * sizeof(T), dtype, std::move(shape));
}

// Shape of QuantReduceScatter's output for x of shape x_shape over nranks ranks:
// (BS/nranks, H). Throws Error(PARAM_INVALID) if x_shape is not 2-D/3-D or BS % nranks != 0.
std::vector<int64_t> reduce_scatter_output_shape(const std::vector<int64_t>& x_shape, int nranks);

// An in-process group of thread ranks (qcollThreadGroupCreate). The name stays reserved
// until the group and every Membership of it are gone.
class ThreadGroup {
 public:
  // Throws Error: name empty or >= 128 characters, nranks outside [1, 1024], name in use.
  ThreadGroup(const std::string& name, int nranks);
  ThreadGroup(ThreadGroup&&) noexcept = default;
  ThreadGroup& operator=(ThreadGroup&&) noexcept = default;

  const std::string& name() const { return name_; }
  int size() const { return size_; }

  // The calling thread's membership as one rank; leaves the group when destroyed (on the
  // thread that joined).
  class Membership {
   public:
    Membership(Membership&& o) noexcept;
    Membership& operator=(Membership&& o) noexcept;
    Membership(const Membership&) = delete;
    Membership& operator=(const Membership&) = delete;
    ~Membership();
    int rank() const { return rank_; }
    void leave();  // early leave (same thread); idempotent

   private:
    friend class ThreadGroup;
    Membership(std::shared_ptr<qcollThreadGroup> g, int rank) : group_(std::move(g)), rank_(rank) {}
    std::shared_ptr<qcollThreadGroup> group_;
    int rank_ = -1;
  };

  // Registers the calling thread as `rank` (throws Error: rank out of range, rank already
  // joined, thread already in a group of this name).
  [[nodiscard]] Membership join(int rank);

 private:
  std::shared_ptr<qcollThreadGroup> handle_;
  std::string name_;
  int size_ = 0;
};

// ---- Processes of one host without MPI (qcollGetUniqueId / qcollCommInitRank) ----
//
//   qcoll::UniqueId id = qcoll::UniqueId::create();      // one process; pass id.hex() on
//   qcoll::Comm comm("tp", 4, qcoll::UniqueId::from_hex(hex), rank);   // every rank
//   qcoll::quant_all_reduce(x, scales, comm, out);
//
// A unique id: 128 opaque bytes, copyable as they are or as 256 hex digits.
class UniqueId {
 public:
  static constexpr std::size_t kBytes = 128;
  UniqueId() = default;  // zero bytes: not an id (joining with it is PARAM_INVALID)
  // A fresh id; this process serves its rendezvous until every rank joined (keep it alive).
  static UniqueId create();
  // Throws Error(PARAM_INVALID) unless hex is 256 hex digits of an id.
  static UniqueId from_hex(const std::string& hex);
  // Throws Error(PARAM_INVALID) unless there are exactly 128 bytes.
  static UniqueId from_bytes(std::span<const uint8_t> bytes);
  std::string hex() const;
  const std::array<uint8_t, kBytes>& bytes() const { return bytes_; }

 private:
  std::array<uint8_t, kBytes> bytes_{};
};

// Rank `rank` of a communicator of `nranks` processes (or threads) on this host, made from
// a unique id (qcollCommInitRank: collective, bounded by QCOLL_TIMEOUT_S; throws Error).
// Its name is the operators' group; the destructor releases it (qcollCommDestroy).
class Comm {
 public:
  Comm(const std::string& name, int nranks, const UniqueId& id, int rank);
  Comm(Comm&& o) noexcept;
  Comm& operator=(Comm&& o) noexcept;
  Comm(const Comm&) = delete;
  Comm& operator=(const Comm&) = delete;
  ~Comm();

  const std::string& name() const { return name_; }
  int rank() const { return rank_; }
  int size() const { return size_; }
  qcollComm* handle() const { return comm_; }

 private:
  qcollComm* comm_ = nullptr;
  std::string name_;
  int rank_ = -1;
  int size_ = 0;
};

// A stream (qcollStreamCreate): the operator overloads that take one enqueue the call and
// return; calls on one stream run in order, different streams concurrently. The stream
// keeps the workspace of each call; x, scales and out must stay valid until synchronize()
// returned. The destructor waits for the calls still queued (their failures are lost:
// synchronize first to see them).
class Stream {
 public:
  Stream();
  Stream(Stream&& o) noexcept;
  Stream& operator=(Stream&& o) noexcept;
  Stream(const Stream&) = delete;
  Stream& operator=(const Stream&) = delete;
  ~Stream();

  // Waits for every call enqueued so far; throws Error with the first failure among them.
  void synchronize();
  // The same, at most `timeout`: false when the time ran out (the calls go on).
  bool synchronize(std::chrono::milliseconds timeout);
  void* handle() const;  // the qcollStream

  struct Impl;  // the library's side (the workspaces it keeps)
  Impl* impl() const { return impl_.get(); }

 private:
  std::unique_ptr<Impl> impl_;
};

// The operators (collective; every rank calls with the same dtypes and shapes).
// `group` names a communicator registered for the calling thread or process.
void quant_reduce_scatter(const TensorView& x, const TensorView& scales, const std::string& group,
                          const TensorView& out, const std::string& reduce_op = "sum");
void quant_all_reduce(const TensorView& x, const TensorView& scales, const std::string& group, const TensorView& out,
                      const std::string& reduce_op = "sum");
Status try_quant_reduce_scatter(const TensorView& x, const TensorView& scales, const std::string& group,
                                const TensorView& out, const std::string& reduce_op = "sum") noexcept;
Status try_quant_all_reduce(const TensorView& x, const TensorView& scales, const std::string& group,
                            const TensorView& out, const std::string& reduce_op = "sum") noexcept;

inline void quant_reduce_scatter(const TensorView& x, const TensorView& scales, const ThreadGroup& group,
                                 const TensorView& out, const std::string& reduce_op = "sum") {
  quant_reduce_scatter(x, scales, group.name(), out, reduce_op);
}
inline void quant_all_reduce(const TensorView& x, const TensorView& scales, const ThreadGroup& group,
                             const TensorView& out, const std::string& reduce_op = "sum") {
  quant_all_reduce(x, scales, group.name(), out, reduce_op);
}

inline void quant_reduce_scatter(const TensorView& x, const TensorView& scales, const Comm& group,
                                 const TensorView& out, const std::string& reduce_op = "sum") {
  quant_reduce_scatter(x, scales, group.name(), out, reduce_op);
}
inline void quant_all_reduce(const TensorView& x, const TensorView& scales, const Comm& group, const TensorView& out,
                             const std::string& reduce_op = "sum") {
  quant_all_reduce(x, scales, group.name(), out, reduce_op);
}

// On a stream: phase one here (its errors throw), phase two enqueued (its errors come from
// stream.synchronize()).
void quant_reduce_scatter(const TensorView& x, const TensorView& scales, const std::string& group,
                          const TensorView& out, Stream& stream, const std::string& reduce_op = "sum");
void quant_all_reduce(const TensorView& x, const TensorView& scales, const std::string& group, const TensorView& out,
                      Stream& stream, const std::string& reduce_op = "sum");
inline void quant_reduce_scatter(const TensorView& x, const TensorView& scales, const Comm& group,
                                 const TensorView& out, Stream& stream, const std::string& reduce_op = "sum") {
  quant_reduce_scatter(x, scales, group.name(), out, stream, reduce_op);
}
inline void quant_all_reduce(const TensorView& x, const TensorView& scales, const Comm& group, const TensorView& out,
                             Stream& stream, const std::string& reduce_op = "sum") {
  quant_all_reduce(x, scales, group.name(), out, stream, reduce_op);
}
inline void quant_reduce_scatter(const TensorView& x, const TensorView& scales, const ThreadGroup& group,
                                 const TensorView& out, Stream& stream, const std::string& reduce_op = "sum") {
  quant_reduce_scatter(x, scales, group.name(), out, stream, reduce_op);
}
inline void quant_all_reduce(const TensorView& x, const TensorView& scales, const ThreadGroup& group,
                             const TensorView& out, Stream& stream, const std::string& reduce_op = "sum") {
  quant_all_reduce(x, scales, group.name(), out, stream, reduce_op);
}

// The fused operators (qcollQuantizeReduceScatter / qcollQuantizeAllReduce): quantize a
// float, float16 or bfloat16 `input` of shape (BS, H) or (B, S, H) in the mode `config`
// names, exchange and reduce, in one collective call. Same bits as quant::quantize* of
// `input` followed by quant_reduce_scatter / quant_all_reduce.
struct QuantConfig {
  DType x_dtype = DType::Int8;        // Int8, HiFloat8, Float8E4M3FN, Float8E5M2
  DType scales_dtype = DType::Float;  // Float (KG, group 128) or Float8E8M0 (MX, group 32)
  float hif8_target = 0.0f;           // KG HiFloat8 only; 0 = the default
};
void quantize_reduce_scatter(const TensorView& input, const QuantConfig& config, const std::string& group,
                             const TensorView& out, const std::string& reduce_op = "sum");
void quantize_all_reduce(const TensorView& input, const QuantConfig& config, const std::string& group,
                         const TensorView& out, const std::string& reduce_op = "sum");
Status try_quantize_reduce_scatter(const TensorView& input, const QuantConfig& config, const std::string& group,
                                   const TensorView& out, const std::string& reduce_op = "sum") noexcept;
Status try_quantize_all_reduce(const TensorView& input, const QuantConfig& config, const std::string& group,
                               const TensorView& out, const std::string& reduce_op = "sum") noexcept;
// On a stream (as quant_reduce_scatter on a stream).
void quantize_reduce_scatter(const TensorView& input, const QuantConfig& config, const std::string& group,
                             const TensorView& out, Stream& stream, const std::string& reduce_op = "sum");
void quantize_all_reduce(const TensorView& input, const QuantConfig& config, const std::string& group,
                         const TensorView& out, Stream& stream, const std::string& reduce_op = "sum");

// The same with a group object (ThreadGroup, Comm) instead of its name.
template <class Group>
requires requires(const Group& g) { g.name(); }
void quantize_reduce_scatter(const TensorView& input, const QuantConfig& config, const Group& group,
                             const TensorView& out, const std::string& reduce_op = "sum") {
  quantize_reduce_scatter(input, config, group.name(), out, reduce_op);
}
template <class Group>
requires requires(const Group& g) { g.name(); }
void quantize_all_reduce(const TensorView& input, const QuantConfig& config, const Group& group, const TensorView& out,
                         const std::string& reduce_op = "sum") {
  quantize_all_reduce(input, config, group.name(), out, reduce_op);
}
template <class Group>
requires requires(const Group& g) { g.name(); }
void quantize_reduce_scatter(const TensorView& input, const QuantConfig& config, const Group& group,
                             const TensorView& out, Stream& stream, const std::string& reduce_op = "sum") {
  quantize_reduce_scatter(input, config, group.name(), out, stream, reduce_op);
}
template <class Group>
requires requires(const Group& g) { g.name(); }
void quantize_all_reduce(const TensorView& input, const QuantConfig& config, const Group& group, const TensorView& out,
                         Stream& stream, const std::string& reduce_op = "sum") {
  quantize_all_reduce(input, config, group.name(), out, stream, reduce_op);
}

// The communicator `group` as the calling thread sees it (qcollGroupInfo); nullopt when no
// communicator of that name is registered for this thread or process.
struct GroupInfo {
  int rank = 0;
  int size = 0;
  std::string transport;  // "threads", "shm", "mpi"
};
std::optional<GroupInfo> group_info(const std::string& group);

// The kernels' path on this CPU ("scalar" or the SIMD target, e.g. "AVX3_DL", "AVX2").
std::string kernel_target();

// The contract of this process's later calls (qcollSetContract / qcollGetContract;
// docs/contract.md §ext): a choice, or nullopt to let QCOLL_CONTRACT decide again.
using settings::Contract;
void set_contract(std::optional<Contract> contract);
// The contract a call made now keeps; throws Error (PARAM_INVALID) for a bad QCOLL_CONTRACT
// (not contract(): qcoll::contract is the contract module's namespace).
Contract current_contract();

}  // namespace qcoll
