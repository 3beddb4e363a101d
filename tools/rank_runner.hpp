// How the qcoll tools run the ranks of a collective: N threads of this process (the default),
// or one rank per process under mpirun (make_rank_runner). Commands are written against RankRunner only:
// they load the inputs of local_ranks(), call run() to execute the operator on each of them,
// agree with all_ok() before writing any output, and write the outputs of local_ranks().
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace qcoll::cli {

// Called on a thread that is registered as rank `rank` of the communicator named `group`
// (size `size`), so `group` can be passed straight to the operators.
using RankFn = std::function<void(int rank, int size, const std::string& group)>;

class RankRunner {
 public:
  virtual ~RankRunner() = default;
  virtual int size() const = 0;                      // ranks in the communicator
  virtual std::vector<int> local_ranks() const = 0;  // the ranks this process runs, ascending
  virtual const char* transport() const = 0;         // "threads", or under mpirun "shm" / "mpi"
  // Runs fn for every local rank concurrently and returns when all have returned.
  // May be called repeatedly. Throws CliError if a rank cannot be set up.
  virtual void run(const RankFn& fn) = 0;
  // Collective over all ranks of all processes: true iff every caller passed true.
  // (In-process there is one caller, so it returns local_ok.)
  virtual bool all_ok(bool local_ok) = 0;

  // For commands that look at every rank's result (demo). Defaults fit a runner whose ranks
  // are all in this process.
  // Collective over all processes: returns once every process has arrived.
  virtual void process_barrier() {}
  // Collective over all processes: per_rank has size() entries of equal size; each process
  // fills those of its local ranks; on return every entry is filled everywhere.
  virtual void share(std::vector<std::vector<uint8_t>>& per_rank) { (void)per_rank; }
  // True in the one process that prints a command's summary (the one running rank 0).
  bool prints_summary() const {
    const std::vector<int> l = local_ranks();
    return !l.empty() && l.front() == 0;
  }
};

// N ranks as N threads of this process, on a qcoll thread group with a unique name.
// Throws CliError carrying the library status if the group cannot be created (e.g. N out of range).
std::unique_ptr<RankRunner> make_thread_runner(int nranks);

// The runner for a command (tools/rank_runner_choice.cpp): when mpirun started several
// processes, one rank per process on a qcoll MPI communicator over MPI_COMM_WORLD (the
// runner owns the MPI session) — requested_ranks must then be the number of processes or 0
// (omitted); otherwise requested_ranks threads (omitted: default_ranks; neither: argument
// error). Throws CliError on a mismatch, without MPI in this build, or when the communicator
// cannot be made.
std::unique_ptr<RankRunner> make_rank_runner(int requested_ranks, const std::string& group_name, int default_ranks = 0);

}  // namespace qcoll::cli
