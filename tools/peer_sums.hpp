// The sums of `qcoll bench`'s MPI peers (tools/bench_peers.cpp): the element-wise sum a
// user-defined MPI_Op applies, vectorized for the CPU it runs on, so that a peer's
// reduction costs what a user's well-written operator would (docs/bench.md, mpi-bf16).
//
//   bf16_sum: inout[i] = bf16(float(in[i]) + float(inout[i])), rounded to nearest even,
//             the same bits as formats::encode_bfloat16(decode_bfloat16(a) + decode_bfloat16(b))
//             (overflow: Inf; a NaN sum: a quiet NaN, but of two NaN operands which one's sign
//             and payload it keeps is the hardware's and the compiler's choice, as for MPI_SUM).
//   fp32_sum: inout[i] = in[i] + inout[i] (what MPI_SUM does on MPI_FLOAT).
//
// Each is compiled for several x86 targets (AVX-512BW, AVX2, the build's baseline); the
// plain entry points run the best one this CPU has. peer_sum_targets() lists the ones this
// CPU runs (best first) and the *_on functions run one by name, for the tests.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace qcoll::cli {

void bf16_sum(const uint16_t* in, uint16_t* inout, std::size_t count);
void fp32_sum(const float* in, float* inout, std::size_t count);

std::vector<std::string> peer_sum_targets();
// False (and nothing done) for a target not in peer_sum_targets().
bool bf16_sum_on(std::string_view target, const uint16_t* in, uint16_t* inout, std::size_t count);
bool fp32_sum_on(std::string_view target, const float* in, float* inout, std::size_t count);

}  // namespace qcoll::cli
