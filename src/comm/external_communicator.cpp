#include "comm/external_communicator.hpp"

#include <cstring>
#include <mutex>

#include "comm/registry.hpp"
#include "qcoll/contract.hpp"

namespace qcoll::comm {

Status ExternalCommunicator::create(const char* name, int nranks, int rank, ExternalCollectives fns,
                                    std::shared_ptr<Communicator>& out) {
  if (Status s = check_group_name(name, "name"); !s.ok()) return s;
  if (Status s = contract::check_comm_size(nranks); !s.ok()) return s;
  if (rank < 0 || rank >= nranks)
    return Status::Error(StatusCode::ParamInvalid, "rank: must be in [0, nranks) = [0, " + std::to_string(nranks) +
                                                       "), got " + std::to_string(rank));
  if (!fns.all_gather) return Status::Error(StatusCode::ParamNullptr, "allGather: must not be null");
  if (!fns.all_to_all) return Status::Error(StatusCode::ParamNullptr, "allToAll: must not be null");
  out.reset(new ExternalCommunicator(name, nranks, rank, std::move(fns)));
  return Status::Ok();
}

ExternalCommunicator::ExternalCommunicator(std::string name, int nranks, int rank, ExternalCollectives fns)
    : name_(std::move(name)), nranks_(nranks), rank_(rank), fns_(std::move(fns)) {
  for (Slot* s : {&slots_[0], &slots_[1], &records_}) {
    s->send = new std::vector<uint8_t>;
    s->recv = new std::vector<uint8_t>;
  }
}

ExternalCommunicator::~ExternalCommunicator() {
  if (broken_) {
    // A timed-out transfer of the caller's library may still read or write these buffers:
    // keep them for the life of the process, reachable so that leak checkers stay quiet.
    static std::mutex kept_mu;
    static auto* kept = new std::vector<std::vector<uint8_t>*>;
    std::lock_guard<std::mutex> lk(kept_mu);
    for (Slot* s : {&slots_[0], &slots_[1], &records_}) {
      kept->push_back(s->send);
      kept->push_back(s->recv);
    }
    return;
  }
  for (Slot* s : {&slots_[0], &slots_[1], &records_}) {
    delete s->send;
    delete s->recv;
  }
}

Status ExternalCommunicator::broken_status() const {
  return Status::Error(StatusCode::RuntimeError, "communicator \"" + name_ + "\" is broken: " + broken_reason_);
}

Status ExternalCommunicator::call(const ExternalCollectives::Fn& fn, Slot& slot, const char* what, const char* why,
                                  std::size_t bytes, Clock::time_point deadline) {
  const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
  Status s;
  if (left.count() <= 0) {
    s = Status::Error(StatusCode::RuntimeError, "QCOLL_TIMEOUT_S passed before the " + std::string(what));
  } else {
    s = fn(slot.send->data(), slot.recv->data(), bytes, left);
  }
  if (s.ok()) return s;
  const std::string msg =
      "external transport of group \"" + name_ + "\", " + why + ": " + what + " failed: " + s.message;
  broken_ = true;
  broken_reason_ = msg;
  return Status::Error(StatusCode::RuntimeError, msg);
}

Status ExternalCommunicator::allgather_records(const void* mine, std::size_t bytes, void* all,
                                               Clock::time_point deadline) {
  if (broken_) return broken_status();
  const std::size_t n = static_cast<std::size_t>(nranks_);
  records_.send->resize(bytes);
  records_.recv->resize(n * bytes);
  std::memcpy(records_.send->data(), mine, bytes);
  if (Status s = call(fns_.all_gather, records_, "all-gather", "agreeing on the call", bytes, deadline); !s.ok())
    return s;
  std::memcpy(all, records_.recv->data(), n * bytes);
  return Status::Ok();
}

Status ExternalCommunicator::begin_step(const StepShape& shape, const char* what, Clock::time_point deadline,
                                        Step* step) {
  (void)deadline;  // nothing to wait for: the step's buffers are this rank's own
  if (broken_) return broken_status();
  const std::size_t n = static_cast<std::size_t>(nranks_);
  const std::size_t parts = shape.kind == StepShape::Kind::Same ? 1 : n;
  Slot& sl = slot(next_step_);
  // Grown, never shrunk: a long run of calls of one size allocates once.
  if (sl.send->size() < parts * shape.part_bytes()) sl.send->resize(parts * shape.part_bytes());
  if (sl.recv->size() < n * shape.part_bytes()) sl.recv->resize(n * shape.part_bytes());
  sl.shape = shape;
  sl.what = what;
  sl.published = false;
  *step = next_step_++;
  return Status::Ok();
}

PartRegion ExternalCommunicator::region(Step s, int dest) {
  Slot& sl = slot(s);
  return sl.shape.part_in<PartRegion>(sl.send->data(), dest);
}

Status ExternalCommunicator::publish(Step s) {
  if (broken_) return broken_status();
  slot(s).published = true;  // the transfer is made in wait_step, which has the deadline
  return Status::Ok();
}

Status ExternalCommunicator::wait_step(Step s, Clock::time_point deadline) {
  if (broken_) return broken_status();
  Slot& sl = slot(s);
  if (!sl.published) return Status::Error(StatusCode::InnerError, "external transport: step waited before publish");
  const bool same = sl.shape.kind == StepShape::Kind::Same;
  return call(same ? fns_.all_gather : fns_.all_to_all, sl, same ? "all-gather" : "all-to-all", sl.what,
              sl.shape.part_bytes(), deadline);
}

PartView ExternalCommunicator::view(Step s, int src) const {
  const Slot& sl = slot(s);
  // Received parts are in source order for both kinds of step.
  const uint8_t* base = sl.recv->data() + static_cast<std::size_t>(src) * sl.shape.part_bytes();
  PartView v;
  v.seg[0] = base;
  v.seg[1] = base + sl.shape.seg_offset(1);
  return v;
}

Status ExternalCommunicator::release(Step s) {
  slot(s).published = false;
  return broken_ ? broken_status() : Status::Ok();
}

}  // namespace qcoll::comm
