// The reference collectives ("peers") that `qcoll bench` times beside qcoll's operators, on
// the same ranks. A peer reduces 16- or 32-bit float data with a plain sum:
//   mpi-fp32, mpi-bf16  MPI_Reduce_scatter_block / MPI_Allreduce on MPI_COMM_WORLD, fp32
//                       (MPI_FLOAT, MPI_SUM) and bf16 (a user-defined sum: each pair added
//                       in fp32 and rounded back to bf16, to nearest even). MPI builds only.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "qcoll/dtype.hpp"

namespace qcoll::cli {

class Peer {
 public:
  virtual ~Peer() = default;
  virtual const std::string& name() const = 0;  // "mpi-fp32", ...
  virtual DType input() const = 0;              // Float or BFloat16: the data it reduces
  // Collective over the peer's ranks; throw CliError on failure.
  // in: size*recv_count elements; out: recv_count elements (rank r gets block r of the sum).
  virtual void reduce_scatter(const void* in, void* out, std::size_t recv_count) = 0;
  // in, out: count elements; every rank gets the whole sum.
  virtual void all_reduce(const void* in, void* out, std::size_t count) = 0;
};

// inout[i] = bf16(float(in[i]) + float(inout[i])) for i < count: the 16-bit MPI peer's sum.
void bf16_sum(const uint16_t* in, uint16_t* inout, std::size_t count);

// The two MPI peers (fp32, bf16). Create after MPI_Init, destroy before MPI_Finalize.
// Throws CliError(Argument) in a build without MPI.
std::vector<std::unique_ptr<Peer>> make_mpi_peers();

}  // namespace qcoll::cli
