// The extension module qcoll._mpi: the MPI communicators, apart from qcoll._core so that
// `import qcoll` needs no MPI library. Imported only by qcoll.mpi, after it opened the MPI
// library (qcoll/mpi.py); the errors become qcoll.Error as in _core.
#include "bindings.hpp"

NB_MODULE(_mpi, m) {
  using namespace qcoll::python;
  bind_status_error(m);
  bind_mpi(m);
}
