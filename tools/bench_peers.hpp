// The reference collectives ("peers") that `qcoll bench` times beside qcoll's operators, on
// the same MPI_COMM_WORLD ranks: Open MPI's MPI_Reduce_scatter_block / MPI_Allreduce on
// fp32 (MPI_FLOAT, MPI_SUM), and the same calls on bfloat16 data with a user-defined sum
// (each pair added in fp32, rounded back to bf16 to nearest even). Only with an MPI build.
#pragma once
#include <cstddef>
#include <cstdint>

namespace qcoll::cli {

enum class PeerKind { Fp32, Bf16 };
const char* peer_name(PeerKind k);  // "mpi-fp32", "mpi-bf16"
std::size_t peer_elem_bytes(PeerKind k);

// inout[i] = bf16(float(in[i]) + float(inout[i])) for i < count: the 16-bit peer's reduction.
void bf16_sum(const uint16_t* in, uint16_t* inout, std::size_t count);
uint16_t float_to_bf16(float f);  // round to nearest even; NaN stays a quiet NaN
float bf16_to_float(uint16_t b);

// Owns the bf16 datatype and sum operator while MPI is initialised (create after MPI_Init,
// destroy before MPI_Finalize). Calls are collective over MPI_COMM_WORLD.
class MpiPeers {
 public:
  MpiPeers();
  ~MpiPeers();
  MpiPeers(const MpiPeers&) = delete;
  MpiPeers& operator=(const MpiPeers&) = delete;

  // in: size*recv_count elements; out: recv_count elements (rank r gets block r of the sum).
  void reduce_scatter(PeerKind k, const void* in, void* out, std::size_t recv_count);
  // in, out: count elements; every rank gets the whole sum.
  void all_reduce(PeerKind k, const void* in, void* out, std::size_t count);

 private:
  struct Impl;
  Impl* impl_ = nullptr;
};

}  // namespace qcoll::cli
