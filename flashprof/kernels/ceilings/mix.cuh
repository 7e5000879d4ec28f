// Issue interplay around HMMA (issue 31's candidate mechanisms): mma.sync m16n8k16 fp16 -> fp32
// at its full-rate occupancy (4 warps per scheduler, 8 independent accumulator chains per
// thread), with K non-tensor instructions interleaved after every HMMA:
//   ffma   K independent FFMAs (FMA pipe)            imad   K independent IMADs (FMA/ALU pipe)
//   ex2    K MUFU.EX2 (XU pipe)
//   fmnmx  K FMNMX with a negated operand (ALU pipe; two source registers, not three)
//   iadd   K chained integer adds (ptxas splits them between IADD3 and IMAD.IADD; two registers read)
//   ffma3  K FFMA reading three registers each (no immediate, no reused operand): the
//          register-file read bandwidth against the per-instruction cost
// and each of them with the HMMA operands alternating between two register sets ("noreuse":
// consecutive HMMAs then never name the same A/B registers, so the operand-reuse cache
// cannot serve them). If issue slots, the tensor pipe and the other pipe were independent
// resources, one HMMA every `hmma_interval` cycles per scheduler would continue until the
// K instructions per HMMA need more issue slots than that (K + 1 > interval) or their own
// pipe saturates; what the rate falls short of that is a cost a pipe/issue model lacks.
// Self-check: the accumulators against their closed form (A = B = 1: +16 per mma).
#pragma once

#include "compute.cuh"

namespace ceilings {

enum MixKind { kMixNone = 0, kMixFfma = 1, kMixImad = 2, kMixEx2 = 3, kMixFmnmx = 4, kMixIadd = 5, kMixFfma3 = 6 };

template <int KIND, int K, bool REUSE>
__global__ void __launch_bounds__(1024) k_mma_mix(const uint32_t* in, float* out, BlockTime* times, int iters) {
    const uint32_t a0[4] = {in[0], in[1], in[2], in[3]};
    const uint32_t b0[2] = {in[4], in[5]};
    // a second operand set with the same values (1.0), loaded from other words of memory so
    // that no compiler stage can prove the two sets equal and merge them
    const uint32_t a1[4] = {in[6], in[7], in[8], in[9]};
    const uint32_t b1[2] = {in[10], in[11]};
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    float c[kChains][4] = {};
    float x[kChains];
    uint32_t u[kChains];
    float y[kChains], z[kChains];
#pragma unroll
    for (int j = 0; j < kChains; ++j) {
        x[j] = 0.5f + 0.0625f * j + 0.0009765625f * (tid % 64);
        u[j] = uint32_t(tid) * 2654435761u + uint32_t(j);
        y[j] = 0.99951171875f - 0.0000152587890625f * float((tid + 2 * j) % 5);
        z[j] = 0.000244140625f * float(1 + (tid + j) % 3);
    }
    CEIL_TIMER_START();
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int j = 0; j < kChains; ++j) {
            if (REUSE || (j & 1) == 0) mma_f16(c[j], a0, b0);
            else mma_f16(c[j], a1, b1);
#pragma unroll
            for (int k = 0; k < K; ++k) {
                const int s = (j * K + k) % kChains;
                // inline PTX: the front end must not fold a chain's steps into one instruction
                if constexpr (KIND == kMixFfma)
                    asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(x[s]) : "f"(0.99951171875f), "f"(0.000244140625f));
                if constexpr (KIND == kMixImad)
                    asm volatile("mad.lo.u32 %0, %0, %1, %2;" : "+r"(u[s]) : "r"(1664525u), "r"(1013904223u));
                if constexpr (KIND == kMixEx2) asm volatile("ex2.approx.ftz.f32 %0, %0;" : "+f"(x[s]));
                // x = max(-x, c): not idempotent, so ptxas cannot drop a repeated step
                if constexpr (KIND == kMixFmnmx)
                    asm volatile("{ .reg .f32 t; neg.f32 t, %0; max.f32 %0, t, %1; }" : "+f"(x[s]) : "f"(-0.25f));
                if constexpr (KIND == kMixFfma3)
                    asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(x[s]) : "f"(y[(s + 1) % kChains]), "f"(z[(s + 2) % kChains]));
                if constexpr (KIND == kMixIadd)
                    asm volatile("add.u32 %0, %0, %1;" : "+r"(u[s]) : "r"(u[(s + 3) % kChains]));
            }
        }
    }
    CEIL_TIMER_STOP(times);
    float s = 0.f, extra = 0.f;
#pragma unroll
    for (int j = 0; j < kChains; ++j) {
        s += c[j][0] + c[j][1] + c[j][2] + c[j][3];
        extra += x[j] + float(u[j] & 1u);
    }
    out[2 * tid] = s;
    out[2 * tid + 1] = extra;  // keeps the interleaved work live
}

inline const char* mix_name(int kind) {
    return kind == kMixFfma ? "ffma" : kind == kMixImad ? "imad" : kind == kMixEx2 ? "ex2" : kind == kMixFmnmx ? "fmnmx"
         : kind == kMixIadd ? "iadd" : kind == kMixFfma3 ? "ffma3" : "none";
}

// warps: warps per scheduler; the throughput points run kWarpsPerScheduler, the latency points
// ("_w1") one warp per scheduler, so that nothing hides how long the warp that issued an HMMA
// waits before it issues its next instruction
template <int KIND, int K, bool REUSE>
Record bench_mma_mix(const Device& dev, int warps = kWarpsPerScheduler) {
    std::string name = std::string("mma_mix_") + mix_name(KIND) + "_k" + std::to_string(K) + (REUSE ? "" : "_noreuse") +
                       (warps == kWarpsPerScheduler ? "" : "_w" + std::to_string(warps));
    Record r{name, "mix", "FLOP/clk/SM", "cycles", warps};
    const int threads = threads_for(warps);
    const int iters = KIND == kMixEx2 ? 4096 : 16384;  // EX2 at 16 op/clk/SM: ~1-4 M cycles a run
    uint32_t* d_in = to_device(std::vector<uint32_t>(12, 0x3C003C00u));  // both sets A = B = 1.0 (fp16 pairs)
    float* d_out;
    BlockTime* d_t;
    CHECK(cudaMalloc(&d_out, sizeof(float) * 2 * dev.sm_count * threads));
    CHECK(cudaMalloc(&d_t, sizeof(BlockTime) * dev.sm_count));
    const uint32_t* in = d_in;
    run_per_sm(r, dev, d_t, threads, dev.one_block_smem, k_mma_mix<KIND, K, REUSE>, in, d_out, d_t, iters);
    r.work = 2.0 * 16 * 8 * 16 * kChains * (threads / 32) * double(iters);  // tensor FLOPs per SM
    const auto out = to_host(d_out, size_t(2) * dev.sm_count * threads);
    const float want = 512.f * iters;
    for (size_t i = 0; i < out.size(); i += 2)
        if (out[i] != want) {
            r.check = "thread " + std::to_string(i / 2) + " accumulated " + std::to_string(out[i]) +
                      ", expected " + std::to_string(want);
            break;
        }
    CHECK(cudaFree(d_in)); CHECK(cudaFree(d_out)); CHECK(cudaFree(d_t));
    return r;
}

// Every mix point: K = 0..8 per kind (ALU kinds last: a run cut short keeps the earlier ones), with and without operand reuse (K = 0: HMMA alone).
inline std::vector<Record> bench_mma_mixes(const Device& dev) {
    std::vector<Record> all;
    all.push_back(bench_mma_mix<kMixNone, 0, true>(dev));
    all.push_back(bench_mma_mix<kMixNone, 0, false>(dev));
#define CEIL_MIX(KIND)                                                                               \
    all.push_back(bench_mma_mix<KIND, 1, true>(dev)); all.push_back(bench_mma_mix<KIND, 1, false>(dev)); \
    all.push_back(bench_mma_mix<KIND, 2, true>(dev)); all.push_back(bench_mma_mix<KIND, 2, false>(dev)); \
    all.push_back(bench_mma_mix<KIND, 3, true>(dev)); all.push_back(bench_mma_mix<KIND, 3, false>(dev)); \
    all.push_back(bench_mma_mix<KIND, 4, true>(dev)); all.push_back(bench_mma_mix<KIND, 4, false>(dev)); \
    all.push_back(bench_mma_mix<KIND, 6, true>(dev)); all.push_back(bench_mma_mix<KIND, 6, false>(dev)); \
    all.push_back(bench_mma_mix<KIND, 8, true>(dev)); all.push_back(bench_mma_mix<KIND, 8, false>(dev));
    CEIL_MIX(kMixFfma)
    CEIL_MIX(kMixImad)
    CEIL_MIX(kMixEx2)
    CEIL_MIX(kMixFmnmx)
    CEIL_MIX(kMixIadd)
    CEIL_MIX(kMixFfma3)
#undef CEIL_MIX
    return all;
}

// The latency points (`ceilings mix1`): one warp per scheduler, K = 0, 1, 2, 4, 8 of each kind
// after every HMMA (operand reuse on; FFMA also without). The same kernels as the throughput
// points, so the same SASS (reports/sass/ceilings/mma_mix_sm_90a.sass).
inline std::vector<Record> bench_mma_mixes_w1(const Device& dev) {
    std::vector<Record> all;
    all.push_back(bench_mma_mix<kMixNone, 0, true>(dev, 1));
#define CEIL_MIX1(KIND)                                                                               \
    all.push_back(bench_mma_mix<KIND, 1, true>(dev, 1)); all.push_back(bench_mma_mix<KIND, 2, true>(dev, 1)); \
    all.push_back(bench_mma_mix<KIND, 4, true>(dev, 1)); all.push_back(bench_mma_mix<KIND, 8, true>(dev, 1));
    CEIL_MIX1(kMixFfma)
    CEIL_MIX1(kMixFmnmx)
    CEIL_MIX1(kMixImad)
    CEIL_MIX1(kMixEx2)
    CEIL_MIX1(kMixFfma3)
    CEIL_MIX1(kMixIadd)
#undef CEIL_MIX1
    all.push_back(bench_mma_mix<kMixFfma, 1, false>(dev, 1));
    all.push_back(bench_mma_mix<kMixFfma, 4, false>(dev, 1));
    return all;
}

}  // namespace ceilings
