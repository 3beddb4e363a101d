"""qcoll: quantized reduce-scatter and all-reduce, exact to the bit, on ordinary CPUs.

Python bindings over the C++ core: number formats (decode/encode), quantizers (KG, MX),
and the operators quant_reduce_scatter / quant_all_reduce (from quantized data) and
reduce_scatter / all_reduce (fused: from a float tensor) over groups of threads of this
process (ThreadGroup, run_ranks), processes of one host joined by a unique id (UniqueId,
init_comm) or MPI processes (qcoll.mpi, needs an MPI library and mpi4py; ``import qcoll``
needs neither); on a Stream the operators return a
Work at once.
"""

from . import _build, _core
from ._dtypes import DType, to_dtype
from .comm import Comm, UniqueId, init_comm
from .errors import (
    CommunicationError,
    Error,
    InternalError,
    InvalidParameterError,
    NullPointerError,
)
from .formats import decode, encode, max_finite
from .groups import ThreadGroup, run_ranks
from .ops import all_reduce, quant_all_reduce, quant_reduce_scatter, reduce_scatter
from .quant import default_hif8_target, dequantize, quantize_kg, quantize_mx
from .streams import Stream, Work
from .settings import get_contract, set_contract
from . import npu  # torch_npu's npu_quant_reduce_scatter / npu_quant_all_reduce (docs/ascend.md)

#: The C library's version (the repository's VERSION file, as the wheel's and `qcoll --version`).
__version__ = _core.version

#: True when this qcoll was built with the MPI transport (qcoll._mpi). qcoll.mpi needs it, an
#: MPI library at run time and mpi4py; qcoll.mpi.missing() says what of these is missing.
HAS_MPI = bool(_build.MPI_SONAME)

__all__ = [
    "DType", "to_dtype",
    "Error", "NullPointerError", "InvalidParameterError", "CommunicationError", "InternalError",
    "decode", "encode", "max_finite",
    "quantize_kg", "quantize_mx", "dequantize", "default_hif8_target",
    "ThreadGroup", "run_ranks",
    "UniqueId", "Comm", "init_comm",
    "Stream", "Work",
    "quant_reduce_scatter", "quant_all_reduce", "reduce_scatter", "all_reduce",
    "set_contract", "get_contract",
    "HAS_MPI", "npu",
]
