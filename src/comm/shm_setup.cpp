#include "comm/shm_setup.hpp"

#include <utility>

#include "comm/shm_communicator.hpp"

namespace qcoll::comm {

Status create_segment(int nranks, std::size_t window_bytes, ShmSegment& out, bool* no_space) {
  if (no_space) *no_space = false;
  Status s = random_shm_name(out.name);
  if (!s.ok()) return s;
  // Sparse: only the control blocks are reserved now, the windows as the calls need them.
  s = create_shm(out.name, ShmCommunicator::segment_bytes(nranks, window_bytes), out.mapping, no_space,
                 ShmCommunicator::control_bytes(nranks));
  if (!s.ok()) return s;
  ShmCommunicator::init_segment(out.mapping.data(), nranks, window_bytes);
  return Status::Ok();
}

Status attach_segment(const std::string& comm_name, int rank, int nranks, std::size_t window_bytes,
                      const std::string& shm_name, ShmMapping mapping, std::shared_ptr<Communicator>& out) {
  if (!mapping) {
    Status s = open_shm(shm_name, ShmCommunicator::segment_bytes(nranks, window_bytes), mapping);
    if (!s.ok()) return s;
  }
  auto c = std::make_shared<ShmCommunicator>(comm_name, rank, nranks, window_bytes, std::move(mapping));
  if (!c->valid()) return Status::Error(StatusCode::InnerError, "shared memory segment " + shm_name + " is not valid");
  out = std::move(c);
  return Status::Ok();
}

}  // namespace qcoll::comm
