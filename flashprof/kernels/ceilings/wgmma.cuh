// wgmma throughput (sm_90a only): m64n128k16, fp16 inputs from shared memory (SS) or A from
// registers (RS), fp32 accumulators, 2 warpgroups per SM, groups of 8 wgmma committed with
// one group in flight. And its latency: one warpgroup alone, groups of G = 1 or 8 dependent
// wgmma (fence, G x wgmma, commit, wait_group 0), timed at n and 2n groups like the other
// latency chains: (cycles(2n) - cycles(n)) / n is one group from its fence to the end of its
// wait, the cost kernel 7 pays per GEMM phase; (G=8 - G=1) / 7 is one wgmma's share in a
// chain of a lone warpgroup.
// A and B hold 1.0 everywhere, so each wgmma adds exactly 16 to every accumulator and the
// check is a closed form. The operand layout (no swizzle, K-major 8x8 core matrices, 128 B
// apart along K and 256 B apart along M/N) only decides which bytes are read; all of them
// are ones, so a layout mistake cannot hide in the check, but a skipped wgmma can not either.
// Built only where the compiler targets sm_90a; elsewhere the kernel reports "unsupported".
#pragma once
#include "common.cuh"
#include "../csrc/wgmma_ops.cuh"  // the instruction and its descriptor, shared with kernel 7

namespace ceilings {

constexpr int kWgmmaPerGroup = 8;
constexpr int kWgmmaWarpgroups = 2;
constexpr int kWgmmaSmemBytes = 16 * 1024;  // A (2 KB) and B (4 KB) inside a region of ones

// One wgmma m64n128k16 fp16 -> fp32: SS (A and B from shared memory) or RS (A from registers).
template <bool RS>
__device__ __forceinline__ void wgmma_one(float (&d)[64], uint64_t da, uint64_t db, const uint32_t (&a)[4]) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
    if constexpr (RS) flashprof::Wgmma<__half, 128>::rs_bt(d, a, db, 1);
    else flashprof::Wgmma<__half, 128>::ss(d, da, db, 1);
#endif
}

// Both benchmarks' operands: 16 KB of ones in shared memory (A 2 KB, B 4 KB inside it), made
// visible to the tensor cores; their descriptors; the accumulators zeroed.
struct Ones {
    uint64_t da, db;  // descriptors of A and B in shared memory (SS)
    uint32_t a[4];    // A = 1.0 in registers (RS)
};

__device__ __forceinline__ Ones ones_operands(uint32_t* smem, float (&d)[64]) {
    for (int i = threadIdx.x; i < kWgmmaSmemBytes / 4; i += blockDim.x) smem[i] = 0x3C003C00u;  // 1.0, 1.0
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
    const uint32_t base = smem_u32(smem);
#pragma unroll
    for (int i = 0; i < 64; ++i) d[i] = 0.f;
    return Ones{flashprof::wgmma_desc(base, 128, 256, flashprof::kWgmmaSwizzleNone),
                flashprof::wgmma_desc(base + 4096, 128, 256, flashprof::kWgmmaSwizzleNone),
                {0x3C003C00u, 0x3C003C00u, 0x3C003C00u, 0x3C003C00u}};
}

template <bool RS>
__global__ void __launch_bounds__(128 * kWgmmaWarpgroups) k_wgmma_tput(float* out, int* supported,
                                                                       BlockTime* times, int groups) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
    extern __shared__ __align__(16) uint32_t wg_smem[];
    float d[64];
    const Ones o = ones_operands(wg_smem, d);
    CEIL_TIMER_START();
    flashprof::wgmma_fence();
    for (int g = 0; g < groups; ++g) {
#pragma unroll
        for (int k = 0; k < kWgmmaPerGroup; ++k) wgmma_one<RS>(d, o.da, o.db, o.a);
        flashprof::wgmma_commit();
        flashprof::wgmma_wait<1>();
    }
    flashprof::wgmma_wait<0>();
    CEIL_TIMER_STOP(times);
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < 64; ++i) s += d[i];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
    if (blockIdx.x == 0 && threadIdx.x == 0) *supported = 1;
#else
    if (blockIdx.x == 0 && threadIdx.x == 0) *supported = 0;
#endif
}

// One warpgroup's latency chain (its 128 threads): `groups` times fence, G dependent wgmma,
// commit, wait_group 0; the cycles to *cycles (thread 0), the accumulators' sums to out.
template <bool RS, int G>
__device__ __forceinline__ void wgmma_latency_groups(float (&d)[64], const Ones& o, float* out, long long* cycles,
                                                     int groups) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
    const long long t0 = clock64();
    for (int g = 0; g < groups; ++g) {
        flashprof::wgmma_fence();
#pragma unroll
        for (int k = 0; k < G; ++k) wgmma_one<RS>(d, o.da, o.db, o.a);
        flashprof::wgmma_commit();
        flashprof::wgmma_wait<0>();
    }
    const long long t1 = clock64();
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < 64; ++i) s += d[i];
    out[threadIdx.x] = s;
    if (threadIdx.x == 0) *cycles = t1 - t0;
#endif
}

// Latency: one warpgroup; `groups` times: fence, G dependent wgmma, commit, wait_group 0.
template <bool RS, int G>
__global__ void __launch_bounds__(128) k_wgmma_lat(float* out, long long* cycles, int groups) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
    extern __shared__ __align__(16) uint32_t wg_smem[];
    float d[64];
    const Ones o = ones_operands(wg_smem, d);
    __syncthreads();
    wgmma_latency_groups<RS, G>(d, o, out, cycles, groups);
#endif
}

// ----------------------------------------------------------------------- host side
// Returns false (nothing to report) when the binary was not built for sm_90a.
template <bool RS = false>
inline bool bench_wgmma(const Device& dev, Record& r) {
    r = Record{RS ? "wgmma_rs_f16_f32" : "wgmma_f16_f32", "throughput", "FLOP/clk/SM", "cycles", kWgmmaWarpgroups};
    const int threads = 128 * kWgmmaWarpgroups, groups = 4096;
    float* d_out;
    int* d_sup;
    BlockTime* d_t;
    CHECK(cudaMalloc(&d_out, sizeof(float) * dev.sm_count * threads));
    CHECK(cudaMalloc(&d_sup, sizeof(int)));
    CHECK(cudaMemset(d_sup, 0xFF, sizeof(int)));
    CHECK(cudaMalloc(&d_t, sizeof(BlockTime) * dev.sm_count));
    CHECK(cudaFuncSetAttribute(k_wgmma_tput<RS>, cudaFuncAttributeMaxDynamicSharedMemorySize, dev.one_block_smem));
    k_wgmma_tput<RS><<<1, 128, dev.one_block_smem>>>(d_out, d_sup, d_t, 1);  // probe
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    const bool ok = to_host(d_sup, 1)[0] == 1;
    if (ok) {
        time_blocks(r, [&] { k_wgmma_tput<RS><<<dev.sm_count, threads, dev.one_block_smem>>>(d_out, d_sup, d_t, groups); },
                    d_t, dev.sm_count);
        r.work = 2.0 * 64 * 128 * 16 * kWgmmaPerGroup * kWgmmaWarpgroups * double(groups);
        // 64 accumulators per thread, each 16 per wgmma
        const float want = 64.f * 16.f * kWgmmaPerGroup * groups;
        const auto out = to_host(d_out, size_t(dev.sm_count) * threads);
        for (size_t i = 0; i < out.size() && r.check == "ok"; ++i)
            if (out[i] != want)
                r.check = "wgmma accumulators of thread " + std::to_string(i) + " sum to " +
                          std::to_string(out[i]) + ", expected " + std::to_string(want);
    }
    CHECK(cudaFree(d_out)); CHECK(cudaFree(d_sup)); CHECK(cudaFree(d_t));
    return ok;
}

// The latency records (call after bench_wgmma said the build has wgmma): SS and RS, G = 1 and 8.
template <bool RS, int G>
inline Record bench_wgmma_latency_one(const Device& dev) {
    Record r{std::string(RS ? "wgmma_rs_g" : "wgmma_ss_g") + std::to_string(G), "latency", "cycles", "cycles", 0};
    const int n = 256;
    float* d_out;
    long long* d_c;
    CHECK(cudaMalloc(&d_out, sizeof(float) * 128));
    CHECK(cudaMalloc(&d_c, sizeof(long long)));
    CHECK(cudaFuncSetAttribute(k_wgmma_lat<RS, G>, cudaFuncAttributeMaxDynamicSharedMemorySize, dev.one_block_smem));
    r.n = n;
    k_wgmma_lat<RS, G><<<1, 128, dev.one_block_smem>>>(d_out, d_c, n);  // warm-up
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    for (int rep = 0; rep < kRepeats; ++rep)
        for (int len : {n, 2 * n}) {
            k_wgmma_lat<RS, G><<<1, 128, dev.one_block_smem>>>(d_out, d_c, len);
            CHECK(cudaGetLastError());
            (len == n ? r.cycles : r.cycles_2n).push_back(double(to_host(d_c, 1)[0]));
        }
    // the last run had 2n groups of G wgmma, each adding 16 to each of 64 accumulators
    const float want = 64.f * 16.f * G * 2 * n;
    const auto out = to_host(d_out, 128);
    for (int i = 0; i < 128 && r.check == "ok"; ++i)
        if (out[i] != want)
            r.check = "accumulators of thread " + std::to_string(i) + " sum to " + std::to_string(out[i]) +
                      ", expected " + std::to_string(want);
    CHECK(cudaFree(d_out)); CHECK(cudaFree(d_c));
    return r;
}

inline std::vector<Record> bench_wgmma_latencies(const Device& dev) {
    return {bench_wgmma_latency_one<false, 1>(dev), bench_wgmma_latency_one<false, 8>(dev),
            bench_wgmma_latency_one<true, 1>(dev), bench_wgmma_latency_one<true, 8>(dev)};
}

}  // namespace ceilings
