// The per-process rank runner over qcoll's MPI/shared-memory communicator; see rank_runner_mpi.hpp.
#include "rank_runner_mpi.hpp"

#include <cstdlib>

#include "cli_error.hpp"
#include "qcoll/qcoll.h"

#ifdef QCOLL_HAVE_MPI
#include <mpi.h>

#include "qcoll/mpi.hpp"
#endif

namespace qcoll::cli {

bool launched_by_mpi() {
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
  bool all_ok(bool local_ok) override {
    int mine = local_ok ? 1 : 0, all = 0;
    MPI_Allreduce(&mine, &all, 1, MPI_INT, MPI_LAND, MPI_COMM_WORLD);
    return all != 0;
  }

 private:
  MpiGroup group_;
  std::string transport_;
};

}  // namespace

std::unique_ptr<RankRunner> make_mpi_runner(const std::string& group_name) {
  return std::make_unique<MpiRunner>(group_name);
}

#else  // no MPI in this build

bool mpi_available() { return false; }
MpiSession::MpiSession() {
  throw CliError(ErrorKind::Argument, "this qcoll was built without MPI (QCOLL_WITH_MPI=OFF or MPI not found)");
}
MpiSession::~MpiSession() = default;
std::unique_ptr<RankRunner> make_mpi_runner(const std::string&) {
  throw CliError(ErrorKind::Argument, "this qcoll was built without MPI (QCOLL_WITH_MPI=OFF or MPI not found)");
}

#endif

}  // namespace qcoll::cli
