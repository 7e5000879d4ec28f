// Shared-memory throughput, one block per SM: ldmatrix.x4, 128-bit loads and stores
// (conflict-free: a warp touches 512 contiguous bytes), and cp.async global->shared from
// an L2-resident buffer. Self-checks: every thread's sum of what it loaded against the
// CPU's sum of the same words (this also checks the ldmatrix fragment layout), the last
// stored values, the bytes that cp.async delivered.
#pragma once
#include "compute.cuh"

namespace ceilings {

constexpr int kSlots = 8;           // 512 B slots read in turn, 4 KB per warp region
constexpr int kSlotWords = 128;
constexpr int kCpStages = 4;        // cp.async groups in flight per thread
constexpr int kCpVecPerThread = 2;  // 16 B copies per thread per group
constexpr uint32_t kCpSliceVec = 8192;  // 128 KB of source per block (16.5 MB in all)

// ptxas treats a PTX ld.shared / ldmatrix as a plain load whatever the C++ asm says
// (volatile, clobbers): with loop-invariant addresses it unrolled four rounds and loaded
// once (measured 3.6x the 128 B/clk peak). So each round reads one of two copies of the
// 4 KB region at an offset (i * step) & mask with `step` a kernel argument: ptxas cannot
// prove two rounds read the same address and must issue every load.
constexpr uint32_t kRegionBytes = kSlots * 512;
template <bool LDSM>
__global__ void __launch_bounds__(1024) k_smem_ld_tput(const uint32_t* src, uint32_t* out,
                                                       BlockTime* times, int rounds, uint32_t step) {
    extern __shared__ __align__(16) uint32_t smem[];
    for (int i = threadIdx.x; i < 2 * kSlots * kSlotWords; i += blockDim.x) smem[i] = src[i % (kSlots * kSlotWords)];
    const uint32_t base = smem_u32(smem) + (threadIdx.x & 31) * 16;
    uint32_t acc = 0;
    CEIL_TIMER_START();
    for (int i = 0; i < rounds; ++i) {
        const uint32_t copy = base + ((uint32_t(i) * step) & kRegionBytes);
#pragma unroll
        for (int s = 0; s < kSlots; ++s) {
            uint32_t r[4];
            if constexpr (LDSM) {
                ldsm_x4(r, copy + s * 512);
            } else {
                asm volatile("ld.shared.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                             : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                             : "r"(copy + s * 512));
            }
            acc += r[0] + r[1] + r[2] + r[3];
        }
    }
    CEIL_TIMER_STOP(times);
    out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

__global__ void __launch_bounds__(1024) k_smem_st_tput(uint32_t* out, BlockTime* times, int rounds) {
    extern __shared__ __align__(16) uint32_t smem[];
    const uint32_t warp = threadIdx.x / 32, lane = threadIdx.x & 31;
    const uint32_t base = smem_u32(smem) + warp * (kSlots * 512) + lane * 16;
    CEIL_TIMER_START();
    for (int i = 0; i < rounds; ++i) {
#pragma unroll
        for (int s = 0; s < kSlots; ++s)
            asm volatile("st.shared.v4.u32 [%0], {%1, %2, %3, %4};\n" ::"r"(base + s * 512),
                         "r"(i), "r"(s), "r"(lane), "r"(warp)
                         : "memory");
    }
    CEIL_TIMER_STOP(times);
    const int words = blockDim.x / 32 * kSlots * kSlotWords;
    for (int k = threadIdx.x; k < words; k += blockDim.x) out[size_t(blockIdx.x) * words + k] = smem[k];
}

__global__ void __launch_bounds__(512) k_cp_async_tput(const uint4* src, unsigned* errors,
                                                       BlockTime* times, int rounds) {
    extern __shared__ __align__(16) uint4 stage[];
    const uint32_t per_group = blockDim.x * kCpVecPerThread;
    const uint4* mine = src + size_t(blockIdx.x) * kCpSliceVec;
    CEIL_TIMER_START();
    for (int i = 0; i < rounds; ++i) {
        const uint32_t slot = i % kCpStages, off = (uint32_t(i) * per_group) % kCpSliceVec;
#pragma unroll
        for (int k = 0; k < kCpVecPerThread; ++k) {
            const uint32_t e = k * blockDim.x + threadIdx.x;
            cp_async_16(&stage[slot * per_group + e], mine + off + e);
        }
        cp_async_commit();
        cp_async_wait<kCpStages - 1>();
    }
    cp_async_wait<0>();
    CEIL_TIMER_STOP(times);
    // Each thread checks its own copies of the last kCpStages groups.
    unsigned bad = 0;
    for (int i = rounds - kCpStages; i < rounds; ++i) {
        const uint32_t slot = i % kCpStages, off = (uint32_t(i) * per_group) % kCpSliceVec;
        for (int k = 0; k < kCpVecPerThread; ++k) {
            const uint32_t e = k * blockDim.x + threadIdx.x;
            const uint4 got = stage[slot * per_group + e];
            const uint32_t w = uint32_t((size_t(blockIdx.x) * kCpSliceVec + off + e) * 4);
            bad += (got.x != pattern(w)) + (got.y != pattern(w + 1)) + (got.z != pattern(w + 2)) +
                   (got.w != pattern(w + 3));
        }
    }
    if (bad) atomicAdd(errors, bad);
}

__global__ void k_fill(uint32_t* p, size_t n) {
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
        p[i] = pattern(uint32_t(i));
}

// ----------------------------------------------------------------------- host side
inline uint32_t* filled_buffer(size_t words) {
    uint32_t* d;
    CHECK(cudaMalloc(&d, words * sizeof(uint32_t)));
    k_fill<<<1024, 256>>>(d, words);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    return d;
}

// ldmatrix.x4 (ldsm = true) or ld.shared.v4 throughput. Lane t receives, per 512 B slot s,
// ldmatrix: the words s*128 + 32m + t of matrices m = 0..3; ld.shared.v4: s*128 + 4t + k.
inline Record bench_smem_ld(const Device& dev, bool ldsm, int wps, const char* name, const char* kind) {
    Record r{name, kind, "B/clk/SM", "cycles", wps};
    const int threads = threads_for(wps);
    const int rounds = 8192 * kWarpsPerScheduler / wps;  // ~4 M cycles per run at 128 B/clk
    uint32_t* d_src = filled_buffer(kSlots * kSlotWords);
    uint32_t* d_out;
    BlockTime* d_t;
    CHECK(cudaMalloc(&d_out, sizeof(uint32_t) * dev.sm_count * threads));
    CHECK(cudaMalloc(&d_t, sizeof(BlockTime) * dev.sm_count));
    const uint32_t* src = d_src;
    const uint32_t step = kRegionBytes;  // alternate between the two copies
    if (ldsm) run_per_sm(r, dev, d_t, threads, dev.one_block_smem, k_smem_ld_tput<true>, src, d_out, d_t, rounds, step);
    else run_per_sm(r, dev, d_t, threads, dev.one_block_smem, k_smem_ld_tput<false>, src, d_out, d_t, rounds, step);
    r.work = 512.0 * kSlots * (threads / 32) * double(rounds);
    const auto out = to_host(d_out, size_t(dev.sm_count) * threads);
    for (int lane = 0; lane < 32; ++lane) {
        uint32_t per_round = 0;
        for (int s = 0; s < kSlots; ++s)
            for (int k = 0; k < 4; ++k)
                per_round += pattern(s * kSlotWords + (ldsm ? 32 * k + lane : 4 * lane + k));
        const uint32_t want = per_round * uint32_t(rounds);
        for (size_t i = lane; i < out.size() && r.check == "ok"; i += 32)
            if (out[i] != want)
                r.check = std::string(ldsm ? "ldmatrix" : "ld.shared") + " sum of thread " +
                          std::to_string(i) + " differs from the CPU's sum of the same words";
    }
    CHECK(cudaFree(d_src)); CHECK(cudaFree(d_out)); CHECK(cudaFree(d_t));
    return r;
}

inline Record bench_smem_st(const Device& dev) {
    Record r{"smem_st", "throughput", "B/clk/SM", "cycles", kWarpsPerScheduler};
    const int threads = threads_for(kWarpsPerScheduler), warps = threads / 32;
    const int rounds = 8192;
    const size_t words = size_t(warps) * kSlots * kSlotWords;
    uint32_t* d_out;
    BlockTime* d_t;
    CHECK(cudaMalloc(&d_out, sizeof(uint32_t) * dev.sm_count * words));
    CHECK(cudaMalloc(&d_t, sizeof(BlockTime) * dev.sm_count));
    run_per_sm(r, dev, d_t, threads, dev.one_block_smem, k_smem_st_tput, d_out, d_t, rounds);
    r.work = 512.0 * kSlots * warps * double(rounds);
    const auto out = to_host(d_out, dev.sm_count * words);
    for (size_t i = 0; i < out.size() && r.check == "ok"; ++i) {
        const uint32_t k = i % words, warp = k / (kSlots * kSlotWords), s = k / kSlotWords % kSlots;
        const uint32_t lane = k % kSlotWords / 4, field = k % 4;
        const uint32_t want[4] = {uint32_t(rounds - 1), s, lane, warp};
        if (out[i] != want[field])
            r.check = "shared word " + std::to_string(k) + " of block " + std::to_string(i / words) +
                      " does not hold the last value stored there";
    }
    CHECK(cudaFree(d_out)); CHECK(cudaFree(d_t));
    return r;
}

inline Record bench_cp_async(const Device& dev) {
    Record r{"cp_async", "throughput", "B/clk/SM", "cycles", kWarpsPerScheduler};
    const int threads = threads_for(kWarpsPerScheduler), rounds = 8192;
    const int smem = kCpStages * threads * kCpVecPerThread * 16;
    uint32_t* d_src = filled_buffer(size_t(dev.sm_count) * kCpSliceVec * 4);
    unsigned* d_err;
    BlockTime* d_t;
    CHECK(cudaMalloc(&d_err, sizeof(unsigned)));
    CHECK(cudaMemset(d_err, 0, sizeof(unsigned)));
    CHECK(cudaMalloc(&d_t, sizeof(BlockTime) * dev.sm_count));
    run_per_sm(r, dev, d_t, threads, std::max(smem, dev.one_block_smem), k_cp_async_tput,
               (const uint4*)d_src, d_err, d_t, rounds);
    r.work = 16.0 * kCpVecPerThread * threads * double(rounds);
    const unsigned bad = to_host(d_err, 1)[0];
    if (bad) r.check = std::to_string(bad) + " words copied by cp.async differ from the source";
    CHECK(cudaFree(d_src)); CHECK(cudaFree(d_err)); CHECK(cudaFree(d_t));
    return r;
}

}  // namespace ceilings
