// Math-pipe throughput, one block per SM: mma.sync m16n8k16 (fp16/bf16 -> fp32), FFMA,
// HFMA2 and MUFU.EX2. Each thread keeps 8 independent chains, so that a scheduler always
// has an instruction ready; the unrolled body keeps loop overhead near 1 % of issue slots.
// Self-checks: the MMA sums against their closed form, FFMA/HFMA2 chains against a CPU
// emulation (fused multiply-add, one rounding), EX2 chains against the fixed point of 2^-x.
#pragma once
#include <cmath>

#include "common.cuh"

namespace ceilings {

constexpr int kChains = 8;
constexpr int kUnroll = 32;  // FFMA/HFMA2/EX2 rounds per loop iteration (overhead ~1 %)

template <bool BF16>
__global__ void __launch_bounds__(1024) k_mma_tput(const uint32_t* in, float* out,
                                                   BlockTime* times, int iters) {
    const uint32_t a[4] = {in[0], in[1], in[2], in[3]};
    const uint32_t b[2] = {in[4], in[5]};
    float c[kChains][4] = {};
    CEIL_TIMER_START();
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int j = 0; j < kChains; ++j) {
            if constexpr (BF16) mma_bf16(c[j], a, b);
            else mma_f16(c[j], a, b);
        }
    }
    CEIL_TIMER_STOP(times);
    float s = 0.f;
#pragma unroll
    for (int j = 0; j < kChains; ++j) s += c[j][0] + c[j][1] + c[j][2] + c[j][3];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}

__global__ void __launch_bounds__(1024) k_ffma_tput(const float* in, float* out,
                                                    BlockTime* times, int rounds) {
    const float a = in[0], b = in[1];
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    float x[kChains];
#pragma unroll
    for (int j = 0; j < kChains; ++j)  // exact sums: no rounding for host and GPU to disagree on
        x[j] = in[2] + 0.125f * j + 0.0078125f * (tid % 64);
    CEIL_TIMER_START();
    for (int i = 0; i < rounds; ++i) {
#pragma unroll
        for (int u = 0; u < kUnroll; ++u)
#pragma unroll
            for (int j = 0; j < kChains; ++j) x[j] = fmaf(x[j], a, b);
    }
    CEIL_TIMER_STOP(times);
#pragma unroll
    for (int j = 0; j < kChains; ++j) out[tid * kChains + j] = x[j];
}

__global__ void __launch_bounds__(1024) k_hfma2_tput(const __half2* in, __half2* out,
                                                     BlockTime* times, int rounds) {
    const __half2 a = in[0], b = in[1];
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    __half2 x[kChains];
#pragma unroll
    for (int j = 0; j < kChains; ++j)
        x[j] = __floats2half2_rn(0.125f * j, 0.0625f * j + 0.0009765625f * (tid % 64));
    CEIL_TIMER_START();
    for (int i = 0; i < rounds; ++i) {
#pragma unroll
        for (int u = 0; u < kUnroll; ++u)
#pragma unroll
            for (int j = 0; j < kChains; ++j) x[j] = __hfma2(x[j], a, b);
    }
    CEIL_TIMER_STOP(times);
#pragma unroll
    for (int j = 0; j < kChains; ++j) out[tid * kChains + j] = x[j];
}

__global__ void __launch_bounds__(1024) k_ex2_tput(const float* in, float* out,
                                                   BlockTime* times, int rounds) {
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    float x[kChains];
#pragma unroll
    for (int j = 0; j < kChains; ++j) x[j] = in[0] + j;
    CEIL_TIMER_START();
    for (int i = 0; i < rounds; ++i) {
#pragma unroll
        for (int u = 0; u < kUnroll; ++u)
#pragma unroll
            for (int j = 0; j < kChains; ++j) x[j] = ex2(-x[j]);
    }
    CEIL_TIMER_STOP(times);
#pragma unroll
    for (int j = 0; j < kChains; ++j) out[tid * kChains + j] = x[j];
}

// ----------------------------------------------------------------------- host side
// The fixed point of x = 2^-x (x = W(ln 2) / ln 2), where every EX2 chain ends up.
constexpr double kEx2FixedPoint = 0.641185744504986;

template <typename T>
T* to_device(const std::vector<T>& h) {
    T* d = nullptr;
    CHECK(cudaMalloc(&d, h.size() * sizeof(T)));
    CHECK(cudaMemcpy(d, h.data(), h.size() * sizeof(T), cudaMemcpyHostToDevice));
    return d;
}

template <typename T>
std::vector<T> to_host(const T* d, size_t n) {
    std::vector<T> h(n);
    CHECK(cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost));
    return h;
}

// Launches `kernel` with one block of `threads` on every SM (the dynamic shared memory
// request keeps a second block off each SM) and times it; `args` include the BlockTime*.
template <typename Kernel, typename... Args>
void run_per_sm(Record& r, const Device& dev, BlockTime* times, int threads, int smem,
                Kernel kernel, Args... args) {
    CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    time_blocks(r, [&] { kernel<<<dev.sm_count, threads, smem>>>(args...); }, times, dev.sm_count);
}

inline int threads_for(int warps_per_scheduler) { return 32 * kSchedulers * warps_per_scheduler; }

// mma.sync throughput. A and B hold 1.0 everywhere, so every accumulator element gains
// exactly 16 per mma (k = 16) and each thread's 8 x 4 accumulators sum to 512 * iters.
inline Record bench_mma(const Device& dev, bool bf16, int wps, const char* name, const char* kind) {
    Record r{name, kind, "FLOP/clk/SM", "cycles", wps};
    const int threads = threads_for(wps);
    const int iters = 32768 * kWarpsPerScheduler / wps;  // ~6.3 M cycles per run at peak
    const uint32_t one = bf16 ? 0x3F803F80u : 0x3C003C00u;  // two 1.0 values, packed
    uint32_t* d_in = to_device(std::vector<uint32_t>(6, one));
    float* d_out;
    BlockTime* d_t;
    CHECK(cudaMalloc(&d_out, sizeof(float) * dev.sm_count * threads));
    CHECK(cudaMalloc(&d_t, sizeof(BlockTime) * dev.sm_count));
    const uint32_t* in = d_in;
    if (bf16) run_per_sm(r, dev, d_t, threads, dev.one_block_smem, k_mma_tput<true>, in, d_out, d_t, iters);
    else run_per_sm(r, dev, d_t, threads, dev.one_block_smem, k_mma_tput<false>, in, d_out, d_t, iters);
    r.work = 2.0 * 16 * 8 * 16 * kChains * (threads / 32) * double(iters);
    const auto out = to_host(d_out, size_t(dev.sm_count) * threads);
    const float want = 512.f * iters;
    for (size_t i = 0; i < out.size(); ++i)
        if (out[i] != want) {
            r.check = "thread " + std::to_string(i) + " accumulated " + std::to_string(out[i]) +
                      ", expected " + std::to_string(want);
            break;
        }
    CHECK(cudaFree(d_in)); CHECK(cudaFree(d_out)); CHECK(cudaFree(d_t));
    return r;
}

// FFMA (kind "ffma"), HFMA2 ("hfma2") or MUFU.EX2 ("ex2") throughput at 4 warps/scheduler.
inline Record bench_fpu(const Device& dev, const std::string& op) {
    const int threads = threads_for(kWarpsPerScheduler);
    const size_t n = size_t(dev.sm_count) * threads * kChains;
    const int rounds = op == "ex2" ? 512 : 4096;  // ~4 M cycles per run at peak
    const double per_round = double(kUnroll) * kChains * threads;
    BlockTime* d_t;
    CHECK(cudaMalloc(&d_t, sizeof(BlockTime) * dev.sm_count));
    Record r;
    if (op == "hfma2") {
        r = Record{"hfma2", "throughput", "FLOP/clk/SM", "cycles", kWarpsPerScheduler};
        const __half2 a = __floats2half2_rn(0.875f, 0.875f), b = __floats2half2_rn(0.25f, 0.25f);
        __half2* d_in = to_device(std::vector<__half2>{a, b});
        __half2* d_out;
        CHECK(cudaMalloc(&d_out, n * sizeof(__half2)));
        run_per_sm(r, dev, d_t, threads, dev.one_block_smem, k_hfma2_tput, (const __half2*)d_in, d_out, d_t, rounds);
        r.work = 4.0 * per_round * rounds;  // 2 lanes x (mul + add)
        const auto out = to_host(d_out, n);
        const double fa = __half2float(__low2half(a)), fb = __half2float(__low2half(b));
        for (int tid : {0, threads * dev.sm_count - 1})
            for (int j = 0; j < kChains && r.check == "ok"; ++j) {
                // fp16 products of fp16 values are exact in double, so one rounding to
                // half emulates the fused multiply-add.
                __half lo = __float2half(0.125f * j), hi = __float2half(0.0625f * j + 0.0009765625f * (tid % 64));
                for (long k = 0; k < long(rounds) * kUnroll; ++k) {
                    lo = __double2half(double(__half2float(lo)) * fa + fb);
                    hi = __double2half(double(__half2float(hi)) * fa + fb);
                }
                // Within 2 ulps at 2.0, the chains' limit: a removed chain would end where it
                // began (<= 0.9), and a host rounding corner must not discard a measurement.
                const __half2 got = out[size_t(tid) * kChains + j];
                if (std::fabs(__half2float(__low2half(got)) - __half2float(lo)) > 4e-3f ||
                    std::fabs(__half2float(__high2half(got)) - __half2float(hi)) > 4e-3f)
                    r.check = "HFMA2 chain " + std::to_string(j) + " of thread " + std::to_string(tid) +
                              " differs from the CPU emulation";
            }
        CHECK(cudaFree(d_in)); CHECK(cudaFree(d_out));
    } else {
        const bool ex = op == "ex2";
        r = ex ? Record{"mufu_ex2", "throughput", "op/clk/SM", "cycles", kWarpsPerScheduler}
               : Record{"ffma", "throughput", "FLOP/clk/SM", "cycles", kWarpsPerScheduler};
        const std::vector<float> in = ex ? std::vector<float>{3.0f} : std::vector<float>{0.75f, 0.5f, 1.0f};
        float* d_in = to_device(in);
        float* d_out;
        CHECK(cudaMalloc(&d_out, n * sizeof(float)));
        const float* fin = d_in;
        if (ex) run_per_sm(r, dev, d_t, threads, dev.one_block_smem, k_ex2_tput, fin, d_out, d_t, rounds);
        else run_per_sm(r, dev, d_t, threads, dev.one_block_smem, k_ffma_tput, fin, d_out, d_t, rounds);
        r.work = (ex ? 1.0 : 2.0) * per_round * rounds;
        const auto out = to_host(d_out, n);
        if (ex) {
            for (size_t i = 0; i < n && r.check == "ok"; ++i)
                if (!(std::fabs(out[i] - kEx2FixedPoint) < 1e-4))
                    r.check = "EX2 chain " + std::to_string(i) + " ended at " + std::to_string(out[i]) +
                              ", not at the fixed point 0.64119 of x = 2^-x";
        } else {
            for (int tid : {0, threads * dev.sm_count - 1})
                for (int j = 0; j < kChains && r.check == "ok"; ++j) {
                    float x = in[2] + 0.125f * j + 0.0078125f * (tid % 64);
                    for (long k = 0; k < long(rounds) * kUnroll; ++k) x = std::fmaf(x, in[0], in[1]);
                    if (out[size_t(tid) * kChains + j] != x)
                        r.check = "FFMA chain " + std::to_string(j) + " of thread " + std::to_string(tid) +
                                  " differs from the CPU emulation";
                }
        }
        CHECK(cudaFree(d_in)); CHECK(cudaFree(d_out));
    }
    CHECK(cudaFree(d_t));
    return r;
}

}  // namespace ceilings
