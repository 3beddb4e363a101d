// The MPI peers' sums (tools/peer_sums.hpp) on every target this CPU runs: bf16_sum gives the
// library codec's bits for every bf16 code against a spread of others (NaN, Inf, subnormals,
// the largest finite, zeros), fp32_sum the fp32 adds, at lengths that reach the vector tails.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "peer_sums.hpp"
#include "qcoll/formats.hpp"

namespace {

using qcoll::cli::bf16_sum_on;
using qcoll::cli::fp32_sum_on;
using qcoll::cli::peer_sum_targets;
namespace fmt = qcoll::formats;

uint16_t expected_bf16(uint16_t a, uint16_t b) {
  return fmt::encode_bfloat16(fmt::decode_bfloat16(a) + fmt::decode_bfloat16(b));
}

// Equal bits, or both NaN: which operand's NaN a sum of two NaNs returns is the hardware's
// and the compiler's choice (peer_sums.hpp), so only NaN-ness is asserted there.
bool same_bf16(uint16_t got, uint16_t want) {
  const auto is_nan = [](uint16_t v) { return (v & 0x7FFF) > 0x7F80; };
  return got == want || (is_nan(got) && is_nan(want) && (got & 0x0040) != 0);
}
bool same_f32(float got, float want) {
  return std::memcmp(&got, &want, sizeof(float)) == 0 || (std::isnan(got) && std::isnan(want));
}

// The second operands: specials and a random sample of every other code.
std::vector<uint16_t> others() {
  std::vector<uint16_t> v = {0x0000, 0x8000, 0x0001, 0x8001, 0x007F, 0x0080, 0x7F7F, 0xFF7F, 0x7F80,
                             0xFF80, 0x7FC0, 0xFFC1, 0x7F81, 0x3F80, 0xBF80, 0x3F81, 0x4B80, 0x3380};
  std::mt19937 rng(7);
  for (int i = 0; i < 180; ++i) v.push_back(static_cast<uint16_t>(rng()));
  return v;
}

TEST(PeerSums, TargetsListTheBaseline) {
  const auto t = peer_sum_targets();
  ASSERT_FALSE(t.empty());
  EXPECT_EQ(t.back(), "baseline");
  std::vector<uint16_t> x(4), y(4);
  EXPECT_FALSE(bf16_sum_on("NEON9", x.data(), y.data(), x.size()));
  std::printf("peer sum targets on this CPU:");
  for (const auto& name : t) std::printf(" %s", name.c_str());
  std::printf("\n");
}

TEST(PeerSums, Bf16EveryCodeMatchesTheCodec) {
  const auto bs = others();
  std::vector<uint16_t> in(65536), inout(65536), want(65536);
  for (const auto& target : peer_sum_targets()) {
    for (uint16_t b : bs) {
      for (uint32_t a = 0; a < 65536; ++a) {
        in[a] = static_cast<uint16_t>(a);
        inout[a] = b;
        want[a] = expected_bf16(static_cast<uint16_t>(a), b);
      }
      ASSERT_TRUE(bf16_sum_on(target, in.data(), inout.data(), in.size()));
      for (uint32_t a = 0; a < 65536; ++a)
        ASSERT_TRUE(same_bf16(inout[a], want[a]))
            << target << ": 0x" << std::hex << a << " + 0x" << b << " gave 0x" << inout[a] << ", want 0x" << want[a];
    }
  }
}

TEST(PeerSums, TailsAndOffsetsTouchOnlyCount) {
  std::mt19937 rng(11);
  for (const auto& target : peer_sum_targets()) {
    for (std::size_t count = 0; count <= 131; ++count) {
      for (std::size_t offset : {0, 1, 3}) {
        std::vector<uint16_t> in(count + 8), io(count + 8);
        std::vector<float> fin(count + 8), fio(count + 8);
        for (std::size_t i = 0; i < in.size(); ++i) {
          in[i] = static_cast<uint16_t>(rng());
          io[i] = static_cast<uint16_t>(rng());
          fin[i] = std::ldexp(static_cast<float>(rng() % 20001) - 10000.0f, static_cast<int>(rng() % 40) - 150);
          fio[i] = std::ldexp(static_cast<float>(rng() % 20001) - 10000.0f, static_cast<int>(rng() % 40) - 150);
        }
        std::vector<uint16_t> want = io;
        std::vector<float> fwant = fio;
        for (std::size_t i = offset; i < offset + count; ++i) {
          want[i] = expected_bf16(in[i], io[i]);
          fwant[i] = fin[i] + fio[i];
        }
        ASSERT_TRUE(bf16_sum_on(target, in.data() + offset, io.data() + offset, count));
        ASSERT_TRUE(fp32_sum_on(target, fin.data() + offset, fio.data() + offset, count));
        for (std::size_t i = 0; i < io.size(); ++i) {
          ASSERT_TRUE(same_bf16(io[i], want[i])) << target << " count " << count << " offset " << offset << " i " << i;
          ASSERT_TRUE(same_f32(fio[i], fwant[i]))
              << target << " fp32 count " << count << " offset " << offset << " i " << i;
        }
      }
    }
  }
}

}  // namespace
