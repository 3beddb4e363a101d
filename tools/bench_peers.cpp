// MPI peers of `qcoll bench`; see bench_peers.hpp.
#include "bench_peers.hpp"

#include <climits>
#include <cstring>
#include <string>

#include "cli_error.hpp"

#ifdef QCOLL_HAVE_MPI
#include <mpi.h>
#endif

namespace qcoll::cli {

const char* peer_name(PeerKind k) { return k == PeerKind::Fp32 ? "mpi-fp32" : "mpi-bf16"; }
std::size_t peer_elem_bytes(PeerKind k) { return k == PeerKind::Fp32 ? 4 : 2; }

float bf16_to_float(uint16_t b) {
  const uint32_t u = static_cast<uint32_t>(b) << 16;
  float f;
  std::memcpy(&f, &u, sizeof f);
  return f;
}

uint16_t float_to_bf16(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  if ((u & 0x7FFFFFFFu) > 0x7F800000u) return static_cast<uint16_t>((u >> 16) | 0x0040u);  // quiet NaN
  u += 0x7FFFu + ((u >> 16) & 1u);  // round to nearest, ties to even (overflow rounds to Inf)
  return static_cast<uint16_t>(u >> 16);
}

void bf16_sum(const uint16_t* in, uint16_t* inout, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i) inout[i] = float_to_bf16(bf16_to_float(in[i]) + bf16_to_float(inout[i]));
}

#ifdef QCOLL_HAVE_MPI

namespace {

void bf16_sum_op(void* in, void* inout, int* len, MPI_Datatype*) {
  bf16_sum(static_cast<const uint16_t*>(in), static_cast<uint16_t*>(inout), static_cast<std::size_t>(*len));
}

int checked_count(std::size_t count) {
  if (count > static_cast<std::size_t>(INT_MAX))
    throw CliError(ErrorKind::Argument, "peer collective: " + std::to_string(count) +
                                            " elements exceed MPI's int count (at most " + std::to_string(INT_MAX) +
                                            ")");
  return static_cast<int>(count);
}

void check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  MPI_Error_string(rc, text, &len);
  throw CliError(ErrorKind::Argument, std::string(what) + " failed: " + std::string(text, static_cast<std::size_t>(len)));
}

}  // namespace

struct MpiPeers::Impl {
  MPI_Datatype bf16 = MPI_DATATYPE_NULL;
  MPI_Op bf16_sum = MPI_OP_NULL;
  MPI_Datatype type(PeerKind k) const { return k == PeerKind::Fp32 ? MPI_FLOAT : bf16; }
  MPI_Op op(PeerKind k) const { return k == PeerKind::Fp32 ? MPI_SUM : bf16_sum; }
};

MpiPeers::MpiPeers() : impl_(new Impl) {
  MPI_Type_contiguous(1, MPI_UINT16_T, &impl_->bf16);
  MPI_Type_commit(&impl_->bf16);
  MPI_Op_create(&bf16_sum_op, /*commute=*/1, &impl_->bf16_sum);
}

MpiPeers::~MpiPeers() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) {
    MPI_Op_free(&impl_->bf16_sum);
    MPI_Type_free(&impl_->bf16);
  }
  delete impl_;
}

void MpiPeers::reduce_scatter(PeerKind k, const void* in, void* out, std::size_t recv_count) {
  check(MPI_Reduce_scatter_block(in, out, checked_count(recv_count), impl_->type(k), impl_->op(k), MPI_COMM_WORLD),
        "MPI_Reduce_scatter_block");
}

void MpiPeers::all_reduce(PeerKind k, const void* in, void* out, std::size_t count) {
  check(MPI_Allreduce(in, out, checked_count(count), impl_->type(k), impl_->op(k), MPI_COMM_WORLD), "MPI_Allreduce");
}

#else  // no MPI in this build: the peers cannot be made

struct MpiPeers::Impl {};
MpiPeers::MpiPeers() { throw CliError(ErrorKind::Argument, "the MPI peers need an MPI build of qcoll"); }
MpiPeers::~MpiPeers() = default;
void MpiPeers::reduce_scatter(PeerKind, const void*, void*, std::size_t) {}
void MpiPeers::all_reduce(PeerKind, const void*, void*, std::size_t) {}

#endif

}  // namespace qcoll::cli
