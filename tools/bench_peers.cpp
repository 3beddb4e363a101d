// MPI peers of `qcoll bench`; see bench_peers.hpp.
#include "bench_peers.hpp"

#include <climits>
#include <string>

#include "cli_error.hpp"
#include "qcoll/formats.hpp"

#ifdef QCOLL_HAVE_MPI
#include <mpi.h>
#endif

namespace qcoll::cli {

void bf16_sum(const uint16_t* in, uint16_t* inout, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i)
    inout[i] = formats::encode_bfloat16(formats::decode_bfloat16(in[i]) + formats::decode_bfloat16(inout[i]));
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

class MpiPeer final : public Peer {
 public:
  explicit MpiPeer(DType input) : input_(input), name_(input == DType::Float ? "mpi-fp32" : "mpi-bf16") {
    if (input == DType::Float) {
      type_ = MPI_FLOAT;
      op_ = MPI_SUM;
    } else {
      MPI_Type_contiguous(1, MPI_UINT16_T, &type_);
      MPI_Type_commit(&type_);
      MPI_Op_create(&bf16_sum_op, /*commute=*/1, &op_);
      owned_ = true;
    }
  }
  ~MpiPeer() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (owned_ && !finalized) {
      MPI_Op_free(&op_);
      MPI_Type_free(&type_);
    }
  }
  const std::string& name() const override { return name_; }
  DType input() const override { return input_; }
  void reduce_scatter(const void* in, void* out, std::size_t recv_count) override {
    check(MPI_Reduce_scatter_block(in, out, checked_count(recv_count), type_, op_, MPI_COMM_WORLD),
          "MPI_Reduce_scatter_block");
  }
  void all_reduce(const void* in, void* out, std::size_t count) override {
    check(MPI_Allreduce(in, out, checked_count(count), type_, op_, MPI_COMM_WORLD), "MPI_Allreduce");
  }

 private:
  DType input_;
  std::string name_;
  MPI_Datatype type_ = MPI_DATATYPE_NULL;
  MPI_Op op_ = MPI_OP_NULL;
  bool owned_ = false;
};

}  // namespace

std::vector<std::unique_ptr<Peer>> make_mpi_peers() {
  std::vector<std::unique_ptr<Peer>> peers;
  peers.push_back(std::make_unique<MpiPeer>(DType::Float));
  peers.push_back(std::make_unique<MpiPeer>(DType::BFloat16));
  return peers;
}

#else  // no MPI in this build: the peers cannot be made

std::vector<std::unique_ptr<Peer>> make_mpi_peers() {
  throw CliError(ErrorKind::Argument, "the MPI peers need an MPI build of qcoll");
}

#endif

}  // namespace qcoll::cli
