// The per-process rank runner over qcoll's MPI/shared-memory communicator; see rank_runner_mpi.hpp.
#include "rank_runner_mpi.hpp"

#include <cstdlib>

#include "cli_error.hpp"
#include "qcoll/qcoll.h"
#include "qcoll/status.hpp"

#ifdef QCOLL_HAVE_MPI
#include <mpi.h>

#include <chrono>
#include <thread>

#include "qcoll/mpi.hpp"
#include "qcoll/settings.hpp"
#endif

namespace qcoll::cli {

bool launched_by_mpi() {
#ifdef QCOLL_SMPI
  return true;  // the SMPI build runs under smpirun only, which sets none of the variables below
#endif
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK"}) {
    const char* s = std::getenv(v);
    if (s != nullptr && *s != '\0') return true;
  }
  return false;
}

#ifdef QCOLL_HAVE_MPI

bool mpi_available() { return true; }

MpiSession::MpiSession() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    if (MPI_Init(nullptr, nullptr) != MPI_SUCCESS) throw CliError(ErrorKind::Argument, "MPI_Init failed");
    owner_ = true;
  }
}

MpiSession::~MpiSession() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (owner_ && !finalized) MPI_Finalize();
}

namespace {

class MpiRunner final : public RankRunner {
 public:
  explicit MpiRunner(const std::string& name) {
    Status st = MpiGroup::create(name, MPI_COMM_WORLD, group_);
    if (!st.ok())
      throw CliError(ErrorKind::Status, "creating the MPI communicator '" + name + "': " + st.message,
                     static_cast<int32_t>(st.code));
    transport_ = group_.transport();
  }
  int size() const override { return group_.size(); }
  std::vector<int> local_ranks() const override { return {group_.rank()}; }
  const char* transport() const override { return transport_.c_str(); }
  void run(const RankFn& fn) override { fn(group_.rank(), group_.size(), group_.name()); }
  void process_barrier() override {
    MPI_Request req = MPI_REQUEST_NULL;
    if (MPI_Ibarrier(MPI_COMM_WORLD, &req) != MPI_SUCCESS || !wait_polled(req))
      throw CliError(ErrorKind::Status, "the other processes did not arrive within QCOLL_TIMEOUT_S",
                     static_cast<int32_t>(StatusCode::RuntimeError));
  }
  void share(std::vector<std::vector<uint8_t>>& per_rank) override {
    const int me = group_.rank();
    const std::size_t bytes = per_rank[static_cast<std::size_t>(me)].size();
    std::vector<uint8_t> all(bytes * per_rank.size());
    MPI_Allgather(per_rank[static_cast<std::size_t>(me)].data(), static_cast<int>(bytes), MPI_BYTE, all.data(),
                  static_cast<int>(bytes), MPI_BYTE, MPI_COMM_WORLD);
    for (std::size_t k = 0; k < per_rank.size(); ++k)
      per_rank[k].assign(all.begin() + static_cast<std::ptrdiff_t>(k * bytes),
                         all.begin() + static_cast<std::ptrdiff_t>((k + 1) * bytes));
  }
  // Polled against QCOLL_TIMEOUT_S (default 60 s): a process that died gives false, not a hang.
  bool all_ok(bool local_ok) override {
    mine_ = local_ok ? 1 : 0;
    MPI_Request req = MPI_REQUEST_NULL;
    if (MPI_Iallreduce(&mine_, &all_, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD, &req) != MPI_SUCCESS) return false;
    return wait_polled(req) && all_ != 0;
  }

 private:
  // Waits for req until QCOLL_TIMEOUT_S (default 60 s) has passed; false on timeout or error.
  static bool wait_polled(MPI_Request& req) {
    const auto deadline = std::chrono::steady_clock::now() + settings::call_timeout();
    for (;;) {
      int done = 0;
      if (MPI_Test(&req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) return false;
      if (done) return true;
      if (std::chrono::steady_clock::now() >= deadline) return false;
      std::this_thread::sleep_for(std::chrono::microseconds(100));
    }
  }

 private:
  MpiGroup group_;
  std::string transport_;
  int mine_ = 0, all_ = 0;  // members: a timed-out reduction may still write them
};

}  // namespace

std::unique_ptr<RankRunner> make_mpi_runner(const std::string& group_name) {
  return std::make_unique<MpiRunner>(group_name);
}

#else  // no MPI in this build

bool mpi_available() { return false; }
MpiSession::MpiSession() { throw CliError(ErrorKind::Argument, kNoMpi); }
MpiSession::~MpiSession() = default;
std::unique_ptr<RankRunner> make_mpi_runner(const std::string&) { throw CliError(ErrorKind::Argument, kNoMpi); }

#endif

}  // namespace qcoll::cli
