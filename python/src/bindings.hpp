// qcoll._core: the pieces of the extension module, one file each.
#pragma once
#include <nanobind/nanobind.h>

#include <cstddef>

#include "qcoll/contract.hpp"
#include "qcoll/dtype.hpp"

namespace qcoll::python {

namespace nb = nanobind;

void bind_status_error(nb::module_& m);  // status_error.cpp
void bind_formats(nb::module_& m);       // formats_bindings.cpp
void bind_quant(nb::module_& m);         // quant_bindings.cpp
void bind_ops(nb::module_& m);           // ops_bindings.cpp
void bind_contract(nb::module_& m);      // contract_bindings.cpp
void bind_comm(nb::module_& m);          // comm_bindings.cpp
void bind_external(nb::module_& m);      // external_bindings.cpp
void bind_mpi(nb::module_& m);           // mpi_bindings.cpp (module qcoll._mpi, mpi_module.cpp)

// Raises InvalidParameterError unless a quantize / dequantize call is valid under the current
// contract (contract::check_quant_call; the setting read only for a call the vendor refuses).
// contract_bindings.cpp.
void check_quant_current(DType x_dtype, DType scales_dtype, std::size_t H, float hif8_target,
                         const contract::QuantParamNames& names = {});

}  // namespace qcoll::python
