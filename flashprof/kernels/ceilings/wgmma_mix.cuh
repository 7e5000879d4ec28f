// Issue interplay around warpgroup MMA (issue 32: the shipped kernel 7's softmax runs beside its
// HGMMAs). Two warpgroups per SM, each a chain of groups of 8 HGMMA.64x128x16.F32 (fp16, SS or
// RS), one group in flight (wait_group 1), as the wgmma throughput benchmark runs them, with
// 8 x K non-tensor instructions between each group's commit and its wait (where kernel 7's
// softmax sits; between the HGMMAs of one group ptxas would serialise them), on registers the
// HGMMA does not touch:
//   ffma   K independent FFMAs (two immediates)      ex2    K MUFU.EX2
//   fmnmx  K FMNMX, x = max(-x, c) (ALU)            ffma3  K FFMAs reading three registers
//   imad   K IMAD (FMA pipe, integer)                fadd   K FADD
//   softmax K of FFMA, FMUL, FADD, FMNMX, MUFU.EX2 in turn (kernel 7's softmax has them ~1:1:1:1:1)
// The tensor pipe needs 64 cycles an HGMMA (4096 FLOP/clk/SM, measured), 1024 a round of both
// warpgroups' groups; a round asks 2 x 8 x K instructions of each scheduler. If issue slots and
// the HGMMA's execution were independent, the rate would hold until those instructions saturate
// their own pipe (FFMA 1 / clk / scheduler: K = 64); what it falls short of that is a cost of
// instructions issued beside running HGMMAs (kernel 7's Nsight Compute report: dispatch_stall
// 0.91 warps per issued instruction, on its FFMA / FMNMX / MUFU / uniform instructions).
// Self-check: the accumulators against their closed form (A = B = 1: +16 per HGMMA).
#pragma once
#include "latency.cuh"  // ChainOut, time_chain (the mbarrier wait latency)
#include "wgmma.cuh"

namespace ceilings {

enum WgmixKind { kWgmixNone = 0, kWgmixFfma = 1, kWgmixImad = 2, kWgmixEx2 = 3, kWgmixFmnmx = 4, kWgmixFfma3 = 6,
                 kWgmixFadd = 7, kWgmixSoftmax = 8,  // 0-6: mix.cuh's numbers
                 // split-role only (`ceilings wgsplit3`): MUFU.EX2 every other instruction with FFMA, FMNMX
                 // or FMUL between, and one in five with FFMA between
                 kWgmixEx2Ffma = 9, kWgmixEx2Fmnmx = 10, kWgmixEx2Fmul = 11, kWgmixEx2Ffma4 = 12,
                 // xu-pair neighbour only (`ceilings wgsplit5`)
                 kWgmixFmul = 13 };
constexpr int kWgmixChains = 8;
constexpr int kWgmixGroups = 1024;  // 8 HGMMA each, alternating over two accumulator sets: exact in fp32

// One group: 8 HGMMA on `acc`, commit, 8 x K instructions of KIND while it runs (kernel 7's
// softmax sits between commit and wait), then wait until at most one group is in flight.
template <int KIND, int K, bool RS>
__device__ __forceinline__ void wgmix_group(float (&acc)[64], const Ones& o, float (&x)[kWgmixChains],
                                            const float (&y)[kWgmixChains], const float (&z)[kWgmixChains],
                                            uint32_t (&u)[kWgmixChains]) {
#pragma unroll
    for (int h = 0; h < kWgmmaPerGroup; ++h) wgmma_one<RS>(acc, o.da, o.db, o.a);
    flashprof::wgmma_commit();
#pragma unroll
    for (int k = 0; k < K * kWgmmaPerGroup; ++k) {
        const int s = k % kWgmixChains;
        if constexpr (KIND == kWgmixFfma)
            asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(x[s]) : "f"(0.99951171875f), "f"(0.000244140625f));
        if constexpr (KIND == kWgmixEx2) asm volatile("ex2.approx.ftz.f32 %0, %0;" : "+f"(x[s]));
        if constexpr (KIND == kWgmixFmnmx)
            asm volatile("max.f32 %0, %1, %2;" : "=f"(x[s]) : "f"(-x[s]), "f"(-0.25f));
        if constexpr (KIND == kWgmixFfma3)
            asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(x[s])
                         : "f"(y[(s + 1) % kWgmixChains]), "f"(z[(s + 2) % kWgmixChains]));
        if constexpr (KIND == kWgmixImad)
            asm volatile("mad.lo.u32 %0, %0, %1, %2;" : "+r"(u[s]) : "r"(1664525u), "r"(1013904223u));
        if constexpr (KIND == kWgmixFadd)
            asm volatile("add.rn.f32 %0, %0, %1;" : "+f"(x[s]) : "f"(y[(s + 1) % kWgmixChains]));
        if constexpr (KIND == kWgmixSoftmax) {  // kernel 7's softmax mix: FFMA, FMUL, FADD, FMNMX, MUFU.EX2 in turn
            const int op = k % 5;
            if (op == 0) asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(x[s]) : "f"(0.99951171875f), "f"(-0.25f));
            if (op == 1) asm volatile("mul.rn.f32 %0, %0, %1;" : "+f"(x[s]) : "f"(y[(s + 1) % kWgmixChains]));
            if (op == 2) asm volatile("add.rn.f32 %0, %0, %1;" : "+f"(x[s]) : "f"(z[(s + 2) % kWgmixChains]));
            if (op == 3) asm volatile("max.f32 %0, %1, %2;" : "=f"(x[s]) : "f"(-x[s]), "f"(-0.25f));
            if (op == 4) asm volatile("ex2.approx.ftz.f32 %0, %0;" : "+f"(x[s]));
        }
    }
    flashprof::wgmma_wait<1>();
}

template <int KIND, int K, bool RS>
__global__ void __launch_bounds__(128 * kWgmmaWarpgroups) k_wgmma_mix(float* out, int* supported,
                                                                      BlockTime* times, int groups) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
    extern __shared__ __align__(16) uint32_t wg_smem[];
    // two accumulator sets, alternate groups (kernel 7's S and O): with one set, ptxas
    // serialises the HGMMAs of a group once many instructions sit between commit and wait
    float d[2][64];
    const Ones o = ones_operands(wg_smem, d[0]);
#pragma unroll
    for (int i = 0; i < 64; ++i) d[1][i] = 0.f;
    const int tid = blockIdx.x * blockDim.x + threadIdx.x;
    float x[kWgmixChains], y[kWgmixChains], z[kWgmixChains];
    uint32_t u[kWgmixChains];
#pragma unroll
    for (int j = 0; j < kWgmixChains; ++j) {
        u[j] = uint32_t(tid) * 2654435761u + uint32_t(j);
        x[j] = 0.5f + 0.0625f * j + 0.0009765625f * (tid % 64);
        y[j] = 0.99951171875f - 0.0000152587890625f * float((tid + 2 * j) % 5);
        z[j] = 0.000244140625f * float(1 + (tid + j) % 3);
    }
    CEIL_TIMER_START();
    flashprof::wgmma_fence();
    for (int g = 0; g + 1 < groups; g += 2) {  // groups is even
        wgmix_group<KIND, K, RS>(d[0], o, x, y, z, u);
        wgmix_group<KIND, K, RS>(d[1], o, x, y, z, u);
    }
    flashprof::wgmma_wait<0>();
    CEIL_TIMER_STOP(times);
    float s = 0.f, extra = 0.f;
#pragma unroll
    for (int i = 0; i < 64; ++i) s += d[0][i] + d[1][i];
#pragma unroll
    for (int j = 0; j < kWgmixChains; ++j) extra += x[j] + float(u[j] & 1u);
    out[2 * tid] = s;
    out[2 * tid + 1] = extra;  // keeps the interleaved work live
    if (blockIdx.x == 0 && threadIdx.x == 0) *supported = 1;
#else
    if (blockIdx.x == 0 && threadIdx.x == 0) *supported = 0;
#endif
}

inline const char* wgmix_name(int kind) {
    return kind == kWgmixFfma ? "ffma" : kind == kWgmixEx2 ? "ex2" : kind == kWgmixFmnmx ? "fmnmx"
         : kind == kWgmixFfma3 ? "ffma3" : kind == kWgmixImad ? "imad" : kind == kWgmixFadd ? "fadd"
         : kind == kWgmixSoftmax ? "softmax" : kind == kWgmixFmul ? "fmul" : "none";
}

// One point; false (no record) when the build has no wgmma.
template <int KIND, int K, bool RS>
inline bool bench_wgmma_mix(const Device& dev, Record& r) {
    r = Record{std::string("wgmma_mix_") + wgmix_name(KIND) + "_k" + std::to_string(K) + (RS ? "_rs" : ""), "mix",
               "FLOP/clk/SM", "cycles", kWgmmaWarpgroups};
    const int threads = 128 * kWgmmaWarpgroups;
    float* d_out;
    int* d_sup;
    BlockTime* d_t;
    CHECK(cudaMalloc(&d_out, sizeof(float) * 2 * dev.sm_count * threads));
    CHECK(cudaMalloc(&d_sup, sizeof(int)));
    CHECK(cudaMemset(d_sup, 0xFF, sizeof(int)));
    CHECK(cudaMalloc(&d_t, sizeof(BlockTime) * dev.sm_count));
    CHECK(cudaFuncSetAttribute(k_wgmma_mix<KIND, K, RS>, cudaFuncAttributeMaxDynamicSharedMemorySize, dev.one_block_smem));
    k_wgmma_mix<KIND, K, RS><<<1, threads, dev.one_block_smem>>>(d_out, d_sup, d_t, 1);  // probe
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    const bool ok = to_host(d_sup, 1)[0] == 1;
    if (ok) {
        time_blocks(r, [&] { k_wgmma_mix<KIND, K, RS><<<dev.sm_count, threads, dev.one_block_smem>>>(d_out, d_sup, d_t, kWgmixGroups); },
                    d_t, dev.sm_count);
        r.work = 2.0 * 64 * 128 * 16 * kWgmmaPerGroup * kWgmmaWarpgroups * double(kWgmixGroups);
        const float want = 64.f * 16.f * kWgmmaPerGroup * kWgmixGroups;
        const auto out = to_host(d_out, size_t(2) * dev.sm_count * threads);
        for (size_t i = 0; i < out.size() && r.check == "ok"; i += 2)
            if (out[i] != want)
                r.check = "wgmma accumulators of thread " + std::to_string(i / 2) + " sum to " +
                          std::to_string(out[i]) + ", expected " + std::to_string(want);
    }
    CHECK(cudaFree(d_out)); CHECK(cudaFree(d_sup)); CHECK(cudaFree(d_t));
    return ok;
}

// Every point (FFMA first: a run cut short keeps the ones kernel 7's softmax resembles most).
inline std::vector<Record> bench_wgmma_mixes(const Device& dev) {
    std::vector<Record> all;
    Record r;
#define CEIL_WGMIX(KIND, K, RS) if (bench_wgmma_mix<KIND, K, RS>(dev, r)) all.push_back(r);
    CEIL_WGMIX(kWgmixNone, 0, false)
    CEIL_WGMIX(kWgmixFfma, 8, false)
    CEIL_WGMIX(kWgmixFfma, 16, false)
    CEIL_WGMIX(kWgmixFfma, 32, false)
    CEIL_WGMIX(kWgmixFfma, 48, false)
    CEIL_WGMIX(kWgmixFfma, 64, false)
    CEIL_WGMIX(kWgmixNone, 0, true)
    CEIL_WGMIX(kWgmixFfma, 16, true)
    CEIL_WGMIX(kWgmixFfma, 32, true)
    CEIL_WGMIX(kWgmixFfma3, 16, false)
    CEIL_WGMIX(kWgmixFfma3, 32, false)
    CEIL_WGMIX(kWgmixFmnmx, 16, false)
    CEIL_WGMIX(kWgmixFmnmx, 32, false)
    CEIL_WGMIX(kWgmixEx2, 2, false)
    CEIL_WGMIX(kWgmixEx2, 4, false)
    CEIL_WGMIX(kWgmixEx2, 8, false)
    // second run (issue 32): kinds the derived FP32 share was not chosen on, predicted first
    CEIL_WGMIX(kWgmixImad, 16, false)
    CEIL_WGMIX(kWgmixImad, 32, false)
    CEIL_WGMIX(kWgmixFadd, 16, false)
    CEIL_WGMIX(kWgmixFadd, 32, false)
    CEIL_WGMIX(kWgmixSoftmax, 10, false)
    CEIL_WGMIX(kWgmixSoftmax, 20, false)
    CEIL_WGMIX(kWgmixSoftmax, 30, false)
    CEIL_WGMIX(kWgmixSoftmax, 40, false)
#undef CEIL_WGMIX
    return all;
}

}  // namespace ceilings

namespace ceilings {

// How the tensor pipe takes two warpgroups' groups issued together (the issue model must pick
// one): each warpgroup, after a barrier and `delay` ns of sleep (warpgroup 1 only), issues a group
// of 8 dependent HGMMA.64x128x16 and waits for it; per warpgroup, the cycles from the barrier
// to the end of its wait. Interleaved one HGMMA at a time, both groups end near 16 x 64
// cycles; a group at a time, one ends near 8 x 64 and the other near 16 x 64.
__global__ void __launch_bounds__(128 * kWgmmaWarpgroups) k_wgmma_order(long long* out, int reps, unsigned delay) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
    extern __shared__ __align__(16) uint32_t wg_smem[];
    float d[64];
    const Ones o = ones_operands(wg_smem, d);
    const int wg = threadIdx.x / 128;
    float keep = 0.f;
    for (int r = 0; r < reps; ++r) {
        __syncthreads();
        const long long t0 = clock64();
        if (wg == 1 && delay > 0) __nanosleep(delay);  // a sleeping warp issues nothing (a spin would)
        const long long ts = clock64();
        flashprof::wgmma_fence();
#pragma unroll
        for (int h = 0; h < kWgmmaPerGroup; ++h) wgmma_one<false>(d, o.da, o.db, o.a);
        flashprof::wgmma_commit();
        flashprof::wgmma_wait<0>();
        const long long t1 = clock64();
        keep += d[0];
        if (threadIdx.x % 128 == 0) {
            out[(r * kWgmmaWarpgroups + wg) * 3 + 0] = ts - t0;
            out[(r * kWgmmaWarpgroups + wg) * 3 + 1] = t1 - t0;
        }
    }
    if (threadIdx.x == 0) out[2] = static_cast<long long>(keep);  // an unused slot: keeps d live
#endif
}

// Records: wgmma_order_d<D>_wg<W>: per rep, the cycles from the barrier to the end of warpgroup
// W's wait (cycles) and to its start (cycles_2n: warpgroup 1 sleeps D ns first).
inline std::vector<Record> bench_wgmma_order(const Device& dev) {
    std::vector<Record> all;
    const int reps = 64;
    long long* d_out;
    CHECK(cudaMalloc(&d_out, sizeof(long long) * reps * kWgmmaWarpgroups * 3));
    CHECK(cudaFuncSetAttribute(k_wgmma_order, cudaFuncAttributeMaxDynamicSharedMemorySize, dev.one_block_smem));
    for (int delay : {0, 100, 200, 300, 600}) {
        CHECK(cudaMemset(d_out, 0, sizeof(long long) * reps * kWgmmaWarpgroups * 3));
        k_wgmma_order<<<1, 128 * kWgmmaWarpgroups, dev.one_block_smem>>>(d_out, reps, delay);
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        const auto h = to_host(d_out, size_t(reps) * kWgmmaWarpgroups * 3);
        for (int wg = 0; wg < kWgmmaWarpgroups; ++wg) {
            Record r{"wgmma_order_d" + std::to_string(delay) + "_wg" + std::to_string(wg), "order", "cycles", "cycles", 0};
            for (int rep = 4; rep < reps; ++rep) {
                r.cycles.push_back(double(h[(rep * kWgmmaWarpgroups + wg) * 3 + 1]));
                r.cycles_2n.push_back(double(h[(rep * kWgmmaWarpgroups + wg) * 3 + 0]));
            }
            if (r.cycles.empty() || r.cycles[0] <= 0) r.check = "no timing recorded";
            all.push_back(r);
        }
    }
    CHECK(cudaFree(d_out));
    return all;
}

}  // namespace ceilings

namespace ceilings {

// A lone warpgroup's group of 8 dependent HGMMA (fence to the end of wait_group 0, per group:
// (cycles(2n) - cycles(n)) / n) with a second warpgroup resident in the same block that issues
// no HGMMA: it returns at once (IDLE 0) or sleeps until the first one is done (IDLE 1). Against
// wgmma_ss_g8 (one warpgroup in the block): whether a warpgroup's HGMMAs get the whole tensor
// pipe or a share fixed by the warpgroups resident.
template <int IDLE>
__global__ void __launch_bounds__(256) k_wgmma_lat_pair(float* out, long long* cycles, int groups) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
    extern __shared__ __align__(16) uint32_t wg_smem[];
    __shared__ volatile int done;
    if (threadIdx.x == 0) done = 0;
    float d[64];
    const Ones o = ones_operands(wg_smem, d);
    __syncthreads();
    if (threadIdx.x >= 128) {
        if (IDLE == 1)
            while (!done) __nanosleep(1000);
        return;
    }
    wgmma_latency_groups<false, kWgmmaPerGroup>(d, o, out, cycles, groups);
    if (threadIdx.x == 0) done = 1;
#endif
}

template <int IDLE>
inline Record bench_wgmma_lat_pair(const Device& dev) {
    Record r{std::string("wgmma_ss_g8_pair_") + (IDLE ? "sleeping" : "exited"), "latency", "cycles", "cycles", 0};
    const int n = 256;
    float* d_out;
    long long* d_c;
    CHECK(cudaMalloc(&d_out, sizeof(float) * 128));
    CHECK(cudaMalloc(&d_c, sizeof(long long)));
    CHECK(cudaFuncSetAttribute(k_wgmma_lat_pair<IDLE>, cudaFuncAttributeMaxDynamicSharedMemorySize, dev.one_block_smem));
    r.n = n;
    k_wgmma_lat_pair<IDLE><<<1, 256, dev.one_block_smem>>>(d_out, d_c, n);  // warm-up
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    for (int rep = 0; rep < kRepeats; ++rep)
        for (int len : {n, 2 * n}) {
            k_wgmma_lat_pair<IDLE><<<1, 256, dev.one_block_smem>>>(d_out, d_c, len);
            CHECK(cudaGetLastError());
            (len == n ? r.cycles : r.cycles_2n).push_back(double(to_host(d_c, 1)[0]));
        }
    const float want = 64.f * 16.f * kWgmmaPerGroup * 2 * n;
    const auto out = to_host(d_out, 128);
    for (int i = 0; i < 128 && r.check == "ok"; ++i)
        if (out[i] != want) r.check = "accumulators of thread " + std::to_string(i) + " sum to " + std::to_string(out[i]);
    CHECK(cudaFree(d_out)); CHECK(cudaFree(d_c));
    return r;
}

}  // namespace ceilings

namespace ceilings {

// Who pays when FP32 work runs beside HGMMAs: the same two warpgroups with split roles.
// Warpgroup 0 keeps groups of 8 HGMMA.64x128x16 on the pipe (one in flight; HG = 0: none);
// warpgroup 1 issues 8 x K FFMAs per group period in 8 chains, no HGMMA. Each times itself
// (cycles_2n: warpgroup 0's cycles, cycles: warpgroup 1's). If the FFMAs wait (a share of
// the FP32 datapaths taken by the running HGMMA), warpgroup 1 slows and the HGMMA rate
// holds; if the HGMMAs wait, the other way round.
// RS: the HGMMAs take A from registers (kernel 7's P x V); KIND: warpgroup 1's instruction
// (kWgmixFfma, kWgmixFmnmx on the ALU pipe, or kWgmixSoftmax, kernel 7's softmax mix in turn).
// The 8 independent chains a split-role warpgroup works on: distinct per lane, in [0.5, 1).
__device__ __forceinline__ void chains_start(float (&x)[kWgmixChains]) {
#pragma unroll
    for (int j = 0; j < kWgmixChains; ++j) x[j] = 0.5f + 0.0625f * j + 0.0009765625f * (threadIdx.x % 64);
}

// Each thread's accumulators and chains, summed into out[thread]: keeps both kinds of work live.
__device__ __forceinline__ void keep_live(float* out, const float (&d)[64], const float (&x)[kWgmixChains]) {
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < 64; ++i) s += d[i];
#pragma unroll
    for (int j = 0; j < kWgmixChains; ++j) s += x[j];
    out[threadIdx.x] = s;
}

template <int K, bool HG, bool RS = false, int KIND = kWgmixFfma>
__global__ void __launch_bounds__(128 * kWgmmaWarpgroups) k_wgmma_split(float* out, long long* cycles, int groups) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
    extern __shared__ __align__(16) uint32_t wg_smem[];
    float d[64];
    const Ones o = ones_operands(wg_smem, d);
    float x[kWgmixChains];
    chains_start(x);
    __syncthreads();
    const long long t0 = clock64();
    if (threadIdx.x < 128) {
        if (HG) {
            flashprof::wgmma_fence();
            for (int g = 0; g < groups; ++g) {
#pragma unroll
                for (int h = 0; h < kWgmmaPerGroup; ++h) wgmma_one<RS>(d, o.da, o.db, o.a);
                flashprof::wgmma_commit();
                flashprof::wgmma_wait<1>();
            }
            flashprof::wgmma_wait<0>();
        }
    } else {
        for (int g = 0; g < groups; ++g) {
#pragma unroll
            for (int k = 0; k < K * kWgmmaPerGroup; ++k) {
                const int c = k % kWgmixChains;
                if constexpr (KIND == kWgmixFfma)
                    asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(x[c]) : "f"(0.99951171875f), "f"(0.000244140625f));
                if constexpr (KIND == kWgmixFmnmx)
                    asm volatile("max.f32 %0, %1, %2;" : "=f"(x[c]) : "f"(-x[c]), "f"(-0.25f));
                if constexpr (KIND == kWgmixSoftmax) {
                    const int op = k % 5;
                    if (op == 0) asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(x[c]) : "f"(0.99951171875f), "f"(-0.25f));
                    if (op == 1) asm volatile("mul.rn.f32 %0, %0, %1;" : "+f"(x[c]) : "f"(0.99951171875f));
                    if (op == 2) asm volatile("add.rn.f32 %0, %0, %1;" : "+f"(x[c]) : "f"(0.000244140625f));
                    if (op == 3) asm volatile("max.f32 %0, %1, %2;" : "=f"(x[c]) : "f"(-x[c]), "f"(-0.25f));
                    if (op == 4) asm volatile("ex2.approx.ftz.f32 %0, %0;" : "+f"(x[c]));
                }
                if constexpr (KIND == kWgmixEx2) asm volatile("ex2.approx.ftz.f32 %0, %0;" : "+f"(x[c]));
                if constexpr (KIND >= kWgmixEx2Ffma && KIND <= kWgmixEx2Ffma4) {
                    const bool ex2 = KIND == kWgmixEx2Ffma4 ? k % 5 == 4 : k % 2 == 1;
                    if (ex2) asm volatile("ex2.approx.ftz.f32 %0, %0;" : "+f"(x[c]));
                    else if (KIND == kWgmixEx2Fmnmx) asm volatile("max.f32 %0, %1, %2;" : "=f"(x[c]) : "f"(-x[c]), "f"(-0.25f));
                    else if (KIND == kWgmixEx2Fmul) asm volatile("mul.rn.f32 %0, %0, %1;" : "+f"(x[c]) : "f"(-0.99951171875f));
                    else asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(x[c]) : "f"(-0.99951171875f), "f"(-0.25f));
                }
            }
        }
    }
    const long long t1 = clock64();
    keep_live(out, d, x);
    if (threadIdx.x % 128 == 0) cycles[threadIdx.x / 128] = t1 - t0;
#endif
}

template <int K, bool HG, bool RS = false, int KIND = kWgmixFfma>
inline Record bench_wgmma_split(const Device& dev) {
    const char* kind = KIND == kWgmixFmnmx ? "fmnmx" : KIND == kWgmixSoftmax ? "softmax" : KIND == kWgmixEx2 ? "ex2"
                       : KIND == kWgmixEx2Ffma ? "ex2ffma" : KIND == kWgmixEx2Fmnmx ? "ex2fmnmx"
                       : KIND == kWgmixEx2Fmul ? "ex2fmul" : KIND == kWgmixEx2Ffma4 ? "ex2ffma4" : "ffma";
    Record r{std::string("wgmma_split_") + kind + "_k" + std::to_string(K) + (RS ? "_rs" : "") + (HG ? "" : "_alone"),
             "split", "cycles", "cycles", 0};
    const int groups = 512;
    float* d_out;
    long long* d_c;
    CHECK(cudaMalloc(&d_out, sizeof(float) * 256));
    CHECK(cudaMalloc(&d_c, sizeof(long long) * 2));
    CHECK(cudaFuncSetAttribute(k_wgmma_split<K, HG, RS, KIND>, cudaFuncAttributeMaxDynamicSharedMemorySize, dev.one_block_smem));
    r.n = groups;
    for (int rep = 0; rep <= kRepeats; ++rep) {  // rep 0: warm-up
        k_wgmma_split<K, HG, RS, KIND><<<1, 256, dev.one_block_smem>>>(d_out, d_c, groups);
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        const auto c = to_host(d_c, 2);
        if (rep) {
            r.cycles_2n.push_back(double(c[0]));  // warpgroup 0: the HGMMAs
            r.cycles.push_back(double(c[1]));     // warpgroup 1: the FFMAs
        }
    }
    CHECK(cudaFree(d_out)); CHECK(cudaFree(d_c));
    return r;
}

// `ceilings wgsplit2`: the split with A from registers (as kernel 7's P x V) and with FMNMX and
// kernel 7's softmax mix in the second warpgroup (K = 16, 64; the _alone runs time warpgroup 1
// with warpgroup 0 idle, whatever RS says).
inline std::vector<Record> bench_wgmma_splits_kinds(const Device& dev) {
    return {bench_wgmma_split<0, true>(dev),        bench_wgmma_split<16, true>(dev),
            bench_wgmma_split<16, false>(dev),       bench_wgmma_split<64, false>(dev),
            bench_wgmma_split<0, true, true>(dev),
            bench_wgmma_split<16, true, true>(dev),  bench_wgmma_split<64, true, true>(dev),
            bench_wgmma_split<16, true, false, kWgmixFmnmx>(dev), bench_wgmma_split<16, false, false, kWgmixFmnmx>(dev),
            bench_wgmma_split<64, true, false, kWgmixFmnmx>(dev), bench_wgmma_split<64, false, false, kWgmixFmnmx>(dev),
            bench_wgmma_split<16, true, false, kWgmixSoftmax>(dev), bench_wgmma_split<16, false, false, kWgmixSoftmax>(dev),
            bench_wgmma_split<64, true, false, kWgmixSoftmax>(dev), bench_wgmma_split<64, false, false, kWgmixSoftmax>(dev),
            bench_wgmma_split<16, true, true, kWgmixSoftmax>(dev), bench_wgmma_split<64, true, true, kWgmixSoftmax>(dev)};
}

// `ceilings wgsplit3`: MUFU.EX2 in a mixed stream (kernel 7's softmax mix runs slower alone than its
// instructions' own rates give): warpgroup 1 alone with EX2 only, EX2 every other instruction with
// FFMA, FMNMX or FMUL between, EX2 one in five with FFMAs, and kernel 7's softmax mix again (K = 16,
// 64); EX2, EX2 + FFMA and EX2 + FMNMX beside SS HGMMAs (K = 16).
inline std::vector<Record> bench_wgmma_splits_mufu(const Device& dev) {
    return {bench_wgmma_split<0, true>(dev),
            bench_wgmma_split<16, false, false, kWgmixEx2>(dev),      bench_wgmma_split<64, false, false, kWgmixEx2>(dev),
            bench_wgmma_split<16, false, false, kWgmixEx2Ffma>(dev),  bench_wgmma_split<64, false, false, kWgmixEx2Ffma>(dev),
            bench_wgmma_split<16, false, false, kWgmixEx2Fmnmx>(dev), bench_wgmma_split<64, false, false, kWgmixEx2Fmnmx>(dev),
            bench_wgmma_split<16, false, false, kWgmixEx2Fmul>(dev),  bench_wgmma_split<64, false, false, kWgmixEx2Fmul>(dev),
            bench_wgmma_split<16, false, false, kWgmixEx2Ffma4>(dev), bench_wgmma_split<64, false, false, kWgmixEx2Ffma4>(dev),
            bench_wgmma_split<16, false, false, kWgmixSoftmax>(dev),
            bench_wgmma_split<16, true, false, kWgmixEx2>(dev),       bench_wgmma_split<16, true, false, kWgmixEx2Ffma>(dev),
            bench_wgmma_split<16, true, false, kWgmixEx2Fmnmx>(dev)};
}

// `ceilings wgsplit`: the split at densities the exchange was not derived from (K = 8, 32, 256),
// with K = 16 again to tie the run to the first (analysis/gap/wgmma_interplay.py, issue 32).
inline std::vector<Record> bench_wgmma_splits_more(const Device& dev) {
    return {bench_wgmma_split<0, true>(dev),    bench_wgmma_split<8, true>(dev),   bench_wgmma_split<8, false>(dev),
            bench_wgmma_split<16, true>(dev),   bench_wgmma_split<16, false>(dev), bench_wgmma_split<32, true>(dev),
            bench_wgmma_split<32, false>(dev),  bench_wgmma_split<256, true>(dev), bench_wgmma_split<256, false>(dev)};
}

inline std::vector<Record> bench_wgmma_splits(const Device& dev) {
    return {bench_wgmma_split<0, true>(dev), bench_wgmma_split<16, true>(dev), bench_wgmma_split<16, false>(dev),
            bench_wgmma_split<64, true>(dev), bench_wgmma_split<64, false>(dev), bench_wgmma_split<128, true>(dev),
            bench_wgmma_split<128, false>(dev)};
}

}  // namespace ceilings

namespace ceilings {

// `ceilings wgsplit4` (issue 32): whose is the XU pipe's extra time beside other instructions?
// wgsplit3 found an EX2 one in five among FFMAs of the same warp takes 10.75 cycles, not 8: each
// other instruction issued while the XU works holds it about 0.65 cycles longer. Kernels with
// two or more warps a sub-partition (FA2, kernels 1-6, kernel 7's two consumers) need to know
// whether a neighbour warp's instructions cost the same. Three warpgroups, one warp of each per
// sub-partition: warpgroup 1 issues 512 rounds of 8 x 16 instructions of KIND A and times them
// (cycles); warpgroup 2 issues KIND B in rounds of 64 until every warp of warpgroup 1 is done
// (KIND B = kWgmixNone: it exits at once) and reports its own cycles (cycles_max) and the
// instructions it issued (cycles_2n, one warp); warpgroup 0 keeps groups of 8 SS HGMMA.64x128x16
// on the tensor pipe, one in flight, for longer than that (HG) or exits.
template <int KIND>
__device__ __forceinline__ void xu_pair_op(float (&x)[kWgmixChains], int k) {
    const int c = k % kWgmixChains;
    const bool ex2 = KIND == kWgmixEx2 || (KIND == kWgmixEx2Ffma4 && k % 5 == 4) || (KIND == kWgmixSoftmax && k % 5 == 4);
    if (ex2) {
        asm volatile("ex2.approx.ftz.f32 %0, %0;" : "+f"(x[c]));
    } else if (KIND == kWgmixFmnmx || (KIND == kWgmixSoftmax && k % 5 == 3)) {
        asm volatile("max.f32 %0, %1, %2;" : "=f"(x[c]) : "f"(-x[c]), "f"(-0.25f));
    } else if (KIND == kWgmixFmul || (KIND == kWgmixSoftmax && k % 5 == 1)) {
        asm volatile("mul.rn.f32 %0, %0, %1;" : "+f"(x[c]) : "f"(-0.99951171875f));
    } else if (KIND == kWgmixFadd || (KIND == kWgmixSoftmax && k % 5 == 2)) {
        asm volatile("add.rn.f32 %0, %0, %1;" : "+f"(x[c]) : "f"(0.000244140625f));
    } else if (KIND == kWgmixImad) {  // an integer chain in the float's bits (IMAD, the FMA pipe's heavy half)
        uint32_t u = __float_as_uint(x[c]);
        asm volatile("mad.lo.u32 %0, %0, %1, %2;" : "+r"(u) : "r"(1664525u), "r"(1013904223u));
        x[c] = __uint_as_float(u);
    } else {
        asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(x[c]) : "f"(-0.99951171875f), "f"(-0.25f));
    }
}

// HGMMA groups of warpgroup 0 (512 cycles each) per round of warpgroup 1 (128 instructions):
// outlast it at up to 32 cycles an instruction
constexpr int kXuPairHgmmaGroupsPerRound = 8;

template <int KA, int KB, bool HG>
__global__ void __launch_bounds__(384) k_xu_pair(float* out, long long* cycles, int rounds) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
    extern __shared__ __align__(16) uint32_t wg_smem[];
    __shared__ int finished;  // warps of warpgroup 1 done
    if (threadIdx.x == 0) finished = 0;
    float d[64];
    const Ones o = ones_operands(wg_smem, d);
    float x[kWgmixChains];
    chains_start(x);
    __syncthreads();
    const int wg = threadIdx.x / 128;
    const volatile int* done = &finished;
    long long issued = 0;
    const long long t0 = clock64();
    if (wg == 0) {
        if (HG) {  // a fixed count: a warpgroup's four warps must issue every HGMMA together (a
                   // stop flag read by each warp could split them: an illegal instruction)
            flashprof::wgmma_fence();
            // a count known only at run time: with a constant one ptxas serialises the HGMMAs
            for (int g = 0; g < rounds * kXuPairHgmmaGroupsPerRound; ++g) {
#pragma unroll
                for (int h = 0; h < kWgmmaPerGroup; ++h) wgmma_one<false>(d, o.da, o.db, o.a);
                flashprof::wgmma_commit();
                flashprof::wgmma_wait<1>();
            }
            flashprof::wgmma_wait<0>();
        }
    } else if (wg == 1) {
        for (int r = 0; r < rounds; ++r) {
#pragma unroll
            for (int k = 0; k < 16 * kWgmmaPerGroup; ++k) xu_pair_op<KA>(x, k);
        }
    } else if (KB != kWgmixNone) {
        for (int stop = 0; !stop; issued += 64) {
            stop = *done >= 4;  // read a round early: the load's latency hides behind the round
#pragma unroll
            for (int k = 0; k < 64; ++k) xu_pair_op<KB>(x, k);
        }
    }
    const long long t1 = clock64();
    if (wg == 1) {
        __syncwarp();
        if (threadIdx.x % 32 == 0) atomicAdd(&finished, 1);
    }
    keep_live(out, d, x);
    if (threadIdx.x % 128 == 0) cycles[wg] = t1 - t0;
    if (threadIdx.x == 256) cycles[3] = issued;
#endif
}

inline const char* xu_pair_kind(int kind) {
    return kind == kWgmixEx2Ffma4 ? "ex2ffma4" : kind == kWgmixNone ? "none" : wgmix_name(kind);
}

template <int KA, int KB, bool HG>
inline Record bench_xu_pair(const Device& dev) {
    Record r{std::string("xu_pair_") + xu_pair_kind(KA) + "_" + xu_pair_kind(KB) + (HG ? "_hg" : ""), "split",
             "cycles", "cycles", 0};
    const int rounds = 512;
    float* d_out;
    long long* d_c;
    CHECK(cudaMalloc(&d_out, sizeof(float) * 384));
    CHECK(cudaMalloc(&d_c, sizeof(long long) * 4));
    CHECK(cudaFuncSetAttribute(k_xu_pair<KA, KB, HG>, cudaFuncAttributeMaxDynamicSharedMemorySize, dev.one_block_smem));
    r.n = rounds;
    r.work = 16.0 * kWgmmaPerGroup * rounds;  // instructions per warp of warpgroup 1
    for (int rep = 0; rep <= kRepeats; ++rep) {  // rep 0: warm-up
        CHECK(cudaMemset(d_c, 0, sizeof(long long) * 4));
        k_xu_pair<KA, KB, HG><<<1, 384, dev.one_block_smem>>>(d_out, d_c, rounds);
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        const auto c = to_host(d_c, 4);
        if (rep) {
            r.cycles.push_back(double(c[1]));      // warpgroup 1: KIND A
            r.cycles_max.push_back(double(c[2]));  // warpgroup 2: KIND B, until warpgroup 1 is done
            r.cycles_2n.push_back(double(c[3]));   // warpgroup 2: instructions one warp issued
        }
    }
    if (r.cycles.empty() || r.cycles[0] <= 0) r.check = "no timing recorded";
    CHECK(cudaFree(d_out)); CHECK(cudaFree(d_c));
    return r;
}

// The latency of a transaction-barrier wait whose phase has already completed (kernel 7's
// consumers wait so on every K and V tile: SYNCS.PHASECHK.TRANS64.TRYWAIT, then a branch on its
// predicate): a chain of n waits by one warp, each wait's branch on the previous one's result.
__global__ void k_lat_mbar(ChainOut* o, int n) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    __shared__ __align__(8) unsigned long long bar;
    const uint32_t b = smem_u32(&bar);
    if (threadIdx.x == 0) {
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(b) : "memory");
        asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(b) : "memory");  // phase 0 done
    }
    __syncthreads();
    unsigned waits = 0;
    CEIL_CHAIN_START();
    for (int i = 0; i < n; i += kLinkUnroll) {
#pragma unroll
        for (int u = 0; u < kLinkUnroll; ++u) {
            uint32_t done = 0;
            do {
                asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], 0;\n"
                             "selp.u32 %0, 1, 0, p;\n}\n" : "=r"(done) : "r"(b) : "memory");
            } while (!done);
            // Counted once per completed wait, not as += done: nvcc 13.0 merged done's value
            // from the retry path into the sum and counted 7168 of 8192 (wgsplit4, 2026-12-07).
            ++waits;
        }
    }
    CEIL_CHAIN_STOP(o);
    o->words[threadIdx.x] = waits;
#endif
}

inline Record bench_lat_mbar() {
    Record r{"mbar_try_wait_done", "latency", "cycles", "cycles", 0};
    ChainOut* d_o;
    CHECK(cudaMalloc(&d_o, sizeof(ChainOut)));
    const int n = 4096;
    time_chain(r, [&](int len) { k_lat_mbar<<<1, 32>>>(d_o, len); }, d_o, n);
    const ChainOut h = to_host(d_o, 1)[0];
    for (int l = 0; l < 32 && r.check == "ok"; ++l)
        if (h.words[l] != unsigned(2 * n)) r.check = "lane " + std::to_string(l) + " counted " + std::to_string(h.words[l]) + " waits";
    CHECK(cudaFree(d_o));
    return r;
}

// How long issuing a group of 8 SS HGMMA.64x128x16 takes (kernel 7's consumers stall on dispatch
// around their HGMMAs, where the issue model has them issue freely): per rep, after a barrier,
// warpgroup 0 (and, WGS = 2, warpgroup 1 at the same time) issues the group and commits it
// (cycles: the issue span of warpgroup 0's warp 0), then waits for it (cycles_2n: to the end of
// the wait). ADV: each HGMMA's descriptors computed at run time from a per-thread value (kernel
// 7 moves them into uniform registers with R2UR before each HGMMA), else constant.
template <bool ADV, int WGS>
__global__ void __launch_bounds__(256) k_wgmma_issue(float* out, long long* cycles, int reps) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
    extern __shared__ __align__(16) uint32_t wg_smem[];
    float d[64];
    const Ones o = ones_operands(wg_smem, d);
    const uint64_t zero = ADV ? uint64_t(threadIdx.x >> 10) : 0;  // 0, unknown to the compiler
    const int wg = threadIdx.x / 128;
    for (int r = 0; r < reps; ++r) {
        __syncthreads();
        if (wg < WGS) {
            flashprof::wgmma_fence();
            const long long t0 = clock64();
#pragma unroll
            for (int h = 0; h < kWgmmaPerGroup; ++h) wgmma_one<false>(d, o.da + zero * h, o.db + zero * (h + 1), o.a);
            flashprof::wgmma_commit();
            const long long t1 = clock64();
            flashprof::wgmma_wait<0>();
            const long long t2 = clock64();
            if (threadIdx.x == 0) {
                cycles[2 * r] = t1 - t0;
                cycles[2 * r + 1] = t2 - t0;
            }
        }
    }
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < 64; ++i) s += d[i];
    out[threadIdx.x] = s;
#endif
}

template <bool ADV, int WGS>
inline Record bench_wgmma_issue(const Device& dev) {
    Record r{std::string("wgmma_issue_") + (ADV ? "adv" : "fixed") + "_wg" + std::to_string(WGS), "latency", "cycles",
             "cycles", 0};
    const int reps = 64;
    float* d_out;
    long long* d_c;
    CHECK(cudaMalloc(&d_out, sizeof(float) * 256));
    CHECK(cudaMalloc(&d_c, sizeof(long long) * 2 * reps));
    CHECK(cudaFuncSetAttribute(k_wgmma_issue<ADV, WGS>, cudaFuncAttributeMaxDynamicSharedMemorySize, dev.one_block_smem));
    k_wgmma_issue<ADV, WGS><<<1, 256, dev.one_block_smem>>>(d_out, d_c, reps);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    const auto c = to_host(d_c, size_t(2) * reps);
    for (int rep = 4; rep < reps; ++rep) {  // the first reps warm the instruction cache
        r.cycles.push_back(double(c[2 * rep]));
        r.cycles_2n.push_back(double(c[2 * rep + 1]));
    }
    r.n = reps;
    const float want = 64.f * 16.f * kWgmmaPerGroup * reps;
    const auto out = to_host(d_out, 128);
    for (int i = 0; i < 128 && r.check == "ok"; ++i)
        if (out[i] != want) r.check = "accumulators of thread " + std::to_string(i) + " sum to " + std::to_string(out[i]);
    CHECK(cudaFree(d_out)); CHECK(cudaFree(d_c));
    return r;
}

// `ceilings wgsplit4`: EX2 alone and beside a neighbour warp's FFMA, FMNMX or EX2; EX2 one in five
// among FFMAs alone and beside a neighbour's FFMAs; FFMA beside FFMA; kernel 7's softmax mix
// beside another; three of them beside running HGMMAs; the latency of a completed-phase mbarrier
// wait; the issue span of a group of 8 HGMMAs (one or two warpgroups, constant or computed
// descriptors).
inline std::vector<Record> bench_xu_pairs(const Device& dev) {
    return {bench_xu_pair<kWgmixEx2, kWgmixNone, false>(dev),      bench_xu_pair<kWgmixEx2, kWgmixFfma, false>(dev),
            bench_xu_pair<kWgmixEx2, kWgmixFmnmx, false>(dev),     bench_xu_pair<kWgmixEx2, kWgmixEx2, false>(dev),
            bench_xu_pair<kWgmixEx2Ffma4, kWgmixNone, false>(dev), bench_xu_pair<kWgmixEx2Ffma4, kWgmixFfma, false>(dev),
            bench_xu_pair<kWgmixFfma, kWgmixFfma, false>(dev),     bench_xu_pair<kWgmixSoftmax, kWgmixNone, false>(dev),
            bench_xu_pair<kWgmixSoftmax, kWgmixSoftmax, false>(dev), bench_xu_pair<kWgmixEx2, kWgmixNone, true>(dev),
            bench_xu_pair<kWgmixEx2, kWgmixFfma, true>(dev),       bench_xu_pair<kWgmixSoftmax, kWgmixSoftmax, true>(dev),
            bench_lat_mbar(),
            bench_wgmma_issue<false, 1>(dev), bench_wgmma_issue<true, 1>(dev),
            bench_wgmma_issue<false, 2>(dev), bench_wgmma_issue<true, 2>(dev)};
}

// `ceilings wgsplit5` (issue 32): which neighbour instructions hold the XU pipe? wgsplit4 found an
// FFMA neighbour slows the EX2 warp about 2x and an FMNMX neighbour not at all, so the steal follows
// the neighbour's pipe: FADD and FMUL (the FP32 pipe, as FFMA) and IMAD (the FMA pipe's heavy half)
// tell which; EX2 beside FFMA and beside FMNMX again tie this run to wgsplit4; the completed-phase
// mbarrier chain again, its count now right.
inline std::vector<Record> bench_xu_pairs5(const Device& dev) {
    return {bench_xu_pair<kWgmixEx2, kWgmixNone, false>(dev), bench_xu_pair<kWgmixEx2, kWgmixFadd, false>(dev),
            bench_xu_pair<kWgmixEx2, kWgmixFmul, false>(dev), bench_xu_pair<kWgmixEx2, kWgmixImad, false>(dev),
            bench_xu_pair<kWgmixEx2, kWgmixFfma, false>(dev), bench_xu_pair<kWgmixEx2, kWgmixFmnmx, false>(dev),
            bench_lat_mbar()};
}

}  // namespace ceilings
