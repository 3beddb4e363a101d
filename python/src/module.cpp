// The extension module qcoll._core: thin bindings over the C++ core. The Python package
// (python/qcoll) converts arrays and dtypes and allocates outputs; this module checks sizes,
// fills the buffers it is given and releases the GIL around anything that can block.
#include "bindings.hpp"
#include "qcoll/qcoll.h"

NB_MODULE(_core, m) {
  using namespace qcoll::python;
  bind_status_error(m);
  bind_formats(m);
  bind_quant(m);
  bind_comm(m);  // before bind_ops: the operators take a Stream
  bind_ops(m);
  bind_contract(m);
  bind_external(m);
  m.attr("version") = qcollGetVersion();  // the VERSION file, through the C library
  // The MPI communicators are in qcoll._mpi (mpi_module.cpp), loaded by qcoll.mpi.
}
