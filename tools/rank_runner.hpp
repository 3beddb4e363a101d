// How the qcoll tools run the ranks of a collective: N threads of this process (the default),
// or, later, one rank per process under MPI. Commands are written against RankRunner only:
// they load the inputs of local_ranks(), call run() to execute the operator on each of them,
// agree with all_ok() before writing any output, and write the outputs of local_ranks().
#pragma once
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
  virtual int size() const = 0;                    // ranks in the communicator
  virtual std::vector<int> local_ranks() const = 0;  // the ranks this process runs, ascending
  virtual const char* transport() const = 0;        // "threads" (later "mpi")
  // Runs fn for every local rank concurrently and returns when all have returned.
  // May be called repeatedly. Throws CliError if a rank cannot be set up.
  virtual void run(const RankFn& fn) = 0;
  // Collective over all ranks of all processes: true iff every caller passed true.
  // (In-process there is one caller, so it returns local_ok.)
  virtual bool all_ok(bool local_ok) = 0;
};

// N ranks as N threads of this process, on a qcoll thread group with a unique name.
// Throws CliError carrying the library status if the group cannot be created (e.g. N out of range).
std::unique_ptr<RankRunner> make_thread_runner(int nranks);

}  // namespace qcoll::cli
