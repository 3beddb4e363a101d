// The reference collectives ("peers") that `qcoll bench` times beside qcoll's operators, on
// the same ranks (one per process, under mpirun). Each reduces fp32 or bf16 data with a sum:
//   mpi-fp32, mpi-bf16        MPI_Reduce_scatter_block / MPI_Allreduce on MPI_COMM_WORLD:
//                             MPI_FLOAT + MPI_SUM, and bf16 with a user-defined sum (each
//                             pair added in fp32, rounded back to bf16 to nearest even);
//   oneccl-fp32, oneccl-bf16  Intel oneCCL's reduce_scatter / allreduce, loaded at run time
//                             through a plugin (tools/peer_plugin.h) that
//                             bench/install_peers.sh builds; absent: unavailable;
//   gloo-fp32, gloo-bf16      torch's c10d::ProcessGroupGloo, through a plugin that
//                             bench/install_peers.sh builds when torch is importable;
//                             absent: unavailable.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

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

// The peer families `qcoll bench --peers` accepts.
inline constexpr const char* kPeerFamilies[] = {"mpi", "oneccl", "gloo"};
// The inputs each family's peers sum (`qcoll bench --peer-inputs`): one peer per input.
inline constexpr const char* kPeerInputs[] = {"fp32", "bf16"};

struct PeerSet {
  std::vector<std::unique_ptr<Peer>> peers;                               // in the order fp32 before bf16 per family
  nlohmann::ordered_json unavailable = nlohmann::ordered_json::object();  // family -> why
  nlohmann::ordered_json info = nlohmann::ordered_json::object();         // family -> version, settings
};

// Where the plugins are; empty: the default path of the family.
struct PluginPaths {
  std::string oneccl, gloo;
};

// The peers of the families in `families` that can run on these MPI_COMM_WORLD ranks, one
// per input of `inputs` (DType::Float, DType::BFloat16) for each (collective: every process
// calls it; MPI initialised). A family that cannot run is recorded in `unavailable` with the
// reason, the same on every rank. Throws CliError(Argument) in a build without MPI.
PeerSet make_peers(const std::vector<std::string>& families, const std::vector<DType>& inputs,
                   const PluginPaths& paths);

// The default path of a plugin family's shared object: $QCOLL_CCL_PEER / $QCOLL_GLOO_PEER,
// else $QCOLL_PEERS_DIR (default ~/.local/qcoll-peers)/lib/libqcoll_{ccl,gloo}_peer.so.
std::string default_plugin_path(const std::string& family);

}  // namespace qcoll::cli
