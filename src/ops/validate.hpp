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
#include "qcoll/status.hpp"

namespace qcoll::ops {

using OpKind = contract::Op;  // ReduceScatter = 1, AllReduce = 2 (= CallDescriptor::op)
using contract::op_name;      // "QuantReduceScatter", "QuantAllReduce"

struct OpRequest {
  OpKind op = OpKind::ReduceScatter;
  const TensorDesc* x = nullptr;
  const TensorDesc* scales = nullptr;
  const char* group = nullptr;
  const char* reduce_op = nullptr;
  const TensorDesc* output = nullptr;
  bool has_workspace_size_out = true;  // the workspaceSize out-pointer is non-null
  bool has_executor_out = true;        // the executor out-pointer is non-null
};

// A call that passed every rule.
struct ValidatedCall {
  OpKind op = OpKind::ReduceScatter;
  std::shared_ptr<comm::Communicator> comm;
  DType x_dtype = DType::Int8;
  DType scales_dtype = DType::Float;
  DType out_dtype = DType::Float;
  int ndim = 2;
  int64_t shape[3] = {0, 0, 0};   // x's shape
  std::size_t rows = 0;           // BS (B*S for 3-D x)
  std::size_t H = 0;
  const uint8_t* x = nullptr;     // data + offset, in bytes
  const uint8_t* scales = nullptr;
  uint8_t* out = nullptr;

  std::size_t nranks() const { return static_cast<std::size_t>(comm->size()); }
  std::size_t rows_per_rank() const { return rows / nranks(); }
  std::size_t scales_row_bytes() const;  // contract::scales_row_bytes
  std::size_t out_elem_bytes() const;
  std::size_t out_bytes() const;          // bytes of the whole output
  comm::ExchangeSpec exchange_spec() const;
  CallDescriptor descriptor() const;
};

// Checks rules 1-11 in order; on success fills *call.
Status validate(const OpRequest& req, ValidatedCall* call);

}  // namespace qcoll::ops
