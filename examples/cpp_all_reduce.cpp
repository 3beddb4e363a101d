// QuantAllReduce with the C++ API: 4 thread ranks each quantize their fp32 tensor (KG, INT8),
// all-reduce it, and check the result against the sum of the dequantized inputs.
#include <cmath>
#include <cstdio>
#include <thread>
#include <vector>

#include "qcoll/qcoll.hpp"
#include "qcoll/quant.hpp"

int main() {
  constexpr int kRanks = 4;
  constexpr std::size_t BS = 8, H = 1024;
  qcoll::ThreadGroup group("example-all-reduce", kRanks);

  std::vector<std::vector<float>> inputs(kRanks), outputs(kRanks, std::vector<float>(BS * H));
  std::vector<std::vector<uint8_t>> q(kRanks, std::vector<uint8_t>(BS * H));
  std::vector<std::vector<float>> scales(kRanks, std::vector<float>(BS * H / 128));
  for (int r = 0; r < kRanks; ++r)
    for (std::size_t i = 0; i < BS * H; ++i) inputs[r].push_back(std::sin(0.01f * float(i) + float(r)));

  std::vector<std::thread> threads;
  for (int r = 0; r < kRanks; ++r)
    threads.emplace_back([&, r] {
      auto member = group.join(r);  // this thread is rank r until member goes away
      qcoll::quant::quantize_kg(inputs[r].data(), BS, H, qcoll::DType::Int8, q[r].data(), scales[r].data());
      qcoll::quant_all_reduce(qcoll::view(q[r], qcoll::DType::Int8, {BS, H}),
                              qcoll::view(scales[r], qcoll::DType::Float, {BS, H / 128}), group,
                              qcoll::view(outputs[r], qcoll::DType::Float, {BS, H}));
    });
  for (auto& t : threads) t.join();

  // Expected: fp32 sum, in rank order, of each rank's dequantized input.
  std::vector<float> expected(BS * H, 0.0f), deq(BS * H);
  double max_err = 0;
  for (int r = 0; r < kRanks; ++r) {
    qcoll::quant::dequantize(q[r].data(), scales[r].data(), BS, H, qcoll::DType::Int8, qcoll::DType::Float, deq.data());
    for (std::size_t i = 0; i < BS * H; ++i) expected[i] += deq[i];
  }
  for (int r = 0; r < kRanks; ++r)
    for (std::size_t i = 0; i < BS * H; ++i) {
      if (outputs[r][i] != expected[i]) {
        std::printf("rank %d element %zu: %g, expected %g\n", r, i, outputs[r][i], expected[i]);
        return 1;
      }
      double exact = 0;
      for (int k = 0; k < kRanks; ++k) exact += inputs[k][i];
      max_err = std::fmax(max_err, std::fabs(outputs[r][i] - exact));
    }
  std::printf(
      "all-reduce of %d ranks: every rank bit-identical to the reference; out[0] = %g; "
      "max |error| vs fp32 inputs = %.4g\n",
      kRanks, outputs[0][0], max_err);
  return 0;
}
