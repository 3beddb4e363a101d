// For the fuzz targets: a communicator whose peers mirror the caller, so that no call can
// block (fuzz_validation.cpp, fuzz_ascend_tensors.cpp).
#pragma once
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "comm/communicator.hpp"

namespace qcoll::fuzz {

using qcoll::Status;
using namespace qcoll::comm;

// A communicator of `n` ranks whose peers are mirrors of the caller (rank 0).
class LoopbackCommunicator final : public Communicator {
 public:
  LoopbackCommunicator(std::string name, int n, std::size_t window, bool staged)
      : name_(std::move(name)), n_(n), window_(window), staged_(staged) {}
  int rank() const override { return 0; }
  int size() const override { return n_; }
  const std::string& name() const override { return name_; }
  const char* transport() const override { return "loopback"; }
  // Every step: what "rank k" sends to rank 0 is what rank 0 sends itself (its part for
  // destination 0, or its one part of an all-gather), so every part is exposed or filled.
  Traits traits() const override {
    return {.window_bytes = window_, .can_expose = true, .own_part_in_place = false, .may_fail_mid_call = staged_};
  }
  std::size_t max_part_bytes(StepShape::Kind) const override {
    return window_ == 0 ? SIZE_MAX : window_ / static_cast<std::size_t>(n_);
  }
  Status allgather_records(const void* mine, std::size_t bytes, void* all, Clock::time_point) override {
    for (int k = 0; k < n_; ++k) std::memcpy(static_cast<uint8_t*>(all) + k * bytes, mine, bytes);
    ++agreements;
    return Status::Ok();
  }
  Status begin_step(const StepShape& shape, const char*, Clock::time_point, Step* step) override {
    Slot& sl = slots_[next_ & 1];
    sl.shape = shape;
    sl.exposed = false;
    sl.part = PartView{};
    sl.buf.resize(static_cast<std::size_t>(n_) * shape.part_bytes());
    *step = next_++;
    return Status::Ok();
  }
  PartRegion region(Step s, int dest) override {
    Slot& sl = slots_[s & 1];
    return sl.shape.part_in<PartRegion>(sl.buf.data(), dest);
  }
  void expose(Step s, int dest, const PartView& part) override {
    Slot& sl = slots_[s & 1];
    if (dest != 0 && sl.shape.kind == StepShape::Kind::PerDestination) return;
    sl.exposed = true;
    sl.part = part;
  }
  Status publish(Step) override { return Status::Ok(); }
  Status wait_step(Step, Clock::time_point) override { return Status::Ok(); }
  PartView view(Step s, int) const override {
    const Slot& sl = slots_[s & 1];
    if (sl.exposed) return sl.part;
    return sl.shape.part_in<PartView>(static_cast<const uint8_t*>(sl.buf.data()), 0);
  }
  Status release(Step) override { return Status::Ok(); }

  int agreements = 0;

 private:
  struct Slot {
    StepShape shape;
    bool exposed = false;
    PartView part;
    std::vector<uint8_t> buf;
  };
  Slot slots_[2];
  Step next_ = 0;
  std::string name_;
  int n_;
  std::size_t window_;
  bool staged_;
};

}  // namespace qcoll::fuzz
