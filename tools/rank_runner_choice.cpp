// make_rank_runner: ranks as threads, or one rank per process when started by mpirun.
#include <cstdlib>
#include <string>

#include "cli_error.hpp"
#include "rank_runner.hpp"
#include "rank_runner_mpi.hpp"

namespace qcoll::cli {
namespace {

// The number of processes the launcher started, or -1 when it does not say.
int launcher_world_size() {
  for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE"}) {
    if (const char* s = std::getenv(v); s != nullptr && *s != '\0') return std::atoi(s);
  }
  return -1;
}

// An MPI runner together with the MPI session it needs; the runner goes first.
class SessionRunner final : public RankRunner {
 public:
  SessionRunner(std::unique_ptr<MpiSession> session, std::unique_ptr<RankRunner> inner)
      : session_(std::move(session)), inner_(std::move(inner)) {}
  int size() const override { return inner_->size(); }
  std::vector<int> local_ranks() const override { return inner_->local_ranks(); }
  const char* transport() const override { return inner_->transport(); }
  void run(const RankFn& fn) override { inner_->run(fn); }
  bool all_ok(bool local_ok) override { return inner_->all_ok(local_ok); }
  void process_barrier() override { inner_->process_barrier(); }
  void share(std::vector<std::vector<uint8_t>>& per_rank) override { inner_->share(per_rank); }

 private:
  std::unique_ptr<MpiSession> session_;  // declared first: destroyed last
  std::unique_ptr<RankRunner> inner_;
};

}  // namespace

std::unique_ptr<RankRunner> make_rank_runner(int requested_ranks, const std::string& group_name, int default_ranks) {
  // One process alone (mpirun -np 1) runs its ranks as threads, as without mpirun.
  if (launched_by_mpi() && launcher_world_size() != 1) {
    if (!mpi_available()) throw CliError(ErrorKind::Argument, std::string("started by mpirun, but ") + kNoMpi);
    auto session = std::make_unique<MpiSession>();
    auto runner = make_mpi_runner(group_name);
    if (requested_ranks > 0 && requested_ranks != runner->size()) {
      const std::string n = std::to_string(runner->size());
      throw CliError(ErrorKind::Argument, "--ranks " + std::to_string(requested_ranks) + " does not match the " + n +
                                              " processes started by mpirun (one rank per process); omit --ranks or "
                                              "pass --ranks " +
                                              n);
    }
    return std::make_unique<SessionRunner>(std::move(session), std::move(runner));
  }
  if (requested_ranks <= 0) requested_ranks = default_ranks;
  if (requested_ranks <= 0)
    throw CliError(ErrorKind::Argument,
                   "--ranks is required (the number of ranks, run as threads), unless qcoll is started by mpirun");
  return make_thread_runner(requested_ranks);
}

}  // namespace qcoll::cli
