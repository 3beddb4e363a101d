// Phase one checks: each rule of contract.md §validation in order. Messages name the parameter, the
// rule, the value seen and the value expected.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

#include "comm/collectives.hpp"
#include "comm/communicator.hpp"
#include "ops/call_descriptor.hpp"
#include "ops/tensor_desc.hpp"
#include "qcoll/contract.hpp"
#include "qcoll/dtype.hpp"
#include "qcoll/settings.hpp"
#include "qcoll/status.hpp"

namespace qcoll::ops {

using OpKind = contract::Op;  // 1, 2 quantized; 3, 4 fused (= CallDescriptor::op)
using contract::op_name;      // "QuantReduceScatter", ..., "QuantizeAllReduce"

// The fields of a fused call's qcollQuantConfig, as given (checked by rule 4).
struct QuantConfigDesc {
  int32_t x_dtype = -1;
  int32_t scales_dtype = -1;
  float hif8_target = 0.0f;
};

struct OpRequest {
  OpKind op = OpKind::ReduceScatter;
  const TensorDesc* x = nullptr;            // quantized operators: x; fused operators: the float input
  const TensorDesc* scales = nullptr;       // quantized operators only
  const QuantConfigDesc* config = nullptr;  // fused operators only
  const char* group = nullptr;
  const char* reduce_op = nullptr;
  const TensorDesc* output = nullptr;
  bool has_workspace_size_out = true;  // the workspaceSize out-pointer is non-null
  bool has_executor_out = true;        // the executor out-pointer is non-null
};

// A call that passed every rule.
struct ValidatedCall {
  OpKind op = OpKind::ReduceScatter;
  settings::Contract contract = settings::Contract::Vendor;  // QCOLL_CONTRACT, read once in phase one
  std::shared_ptr<comm::Communicator> comm;
  DType x_dtype = DType::Int8;        // fused operators: the config's xDtype
  DType scales_dtype = DType::Float;  // fused operators: the config's scalesDtype
  DType out_dtype = DType::Float;
  DType in_dtype = DType::Float;                               // fused operators: the float input's dtype
  float hif8_target = 0.0f;                                    // fused operators: the effective KG HiF8 target (else 0)
  settings::AllReduce all_reduce = settings::AllReduce::Auto;  // QCOLL_ALL_REDUCE, read in phase one
  int ndim = 2;
  int64_t shape[3] = {0, 0, 0};  // x's shape
  std::size_t rows = 0;          // BS (B*S for 3-D x)
  std::size_t H = 0;
  const uint8_t* x = nullptr;       // data + offset's bytes (fused operators: the float input)
  const uint8_t* scales = nullptr;  // null for the fused operators
  uint8_t* out = nullptr;

  bool fused() const;
  OpKind quantized_op() const;  // ReduceScatter / AllReduce, whether fused or not
  std::size_t nranks() const { return static_cast<std::size_t>(comm->size()); }
  std::size_t rows_per_rank() const { return rows / nranks(); }
  std::size_t x_row_bytes() const;       // contract::x_row_bytes: H, or H/2 for a 4-bit x
  std::size_t scales_row_bytes() const;  // contract::scales_row_bytes
  std::size_t out_elem_bytes() const;
  std::size_t out_bytes() const;  // bytes of the whole output
  comm::ExchangeSpec exchange_spec() const;
  CallDescriptor descriptor() const;
};

// Checks rules 1-11 in order; on success fills *call.
Status validate(const OpRequest& req, ValidatedCall* call);

}  // namespace qcoll::ops
