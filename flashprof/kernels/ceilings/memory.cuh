// Whole-GPU memory bandwidth, timed with CUDA events: L2 reads (a buffer of ~half the L2 read
// and again with ld.global.cg, which skips L1) and a DRAM copy (1 GiB -> 1 GiB, bytes
// read + written). Self-checks: the sum of everything read against the CPU's sum, and
// the copy compared word by word on the GPU.
#pragma once
#include "smem.cuh"

namespace ceilings {

constexpr int kMemBlocksPerSm = 4, kMemThreads = 512;

__device__ __forceinline__ uint4 ld_cg(const uint4* p) {
    uint4 v;
    asm volatile("ld.global.cg.v4.u32 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
    return v;
}

// Each thread reads `k` (a multiple of 4) elements per pass, 4 loads in flight at a time.
__global__ void __launch_bounds__(kMemThreads) k_l2_read(const uint4* src, int k, int passes,
                                                         unsigned* sum) {
    const size_t stride = size_t(gridDim.x) * blockDim.x;
    const uint4* mine = src + blockIdx.x * size_t(blockDim.x) + threadIdx.x;
    uint32_t acc = 0;
    for (int p = 0; p < passes; ++p)
        for (int i = 0; i < k; i += 4) {
            uint4 v[4];
#pragma unroll
            for (int j = 0; j < 4; ++j) v[j] = ld_cg(mine + (i + j) * stride);
#pragma unroll
            for (int j = 0; j < 4; ++j) acc += v[j].x ^ v[j].y ^ v[j].z ^ v[j].w;
        }
    atomicAdd(sum, acc);
}

// Four independent 16 B loads in flight per thread before their stores.
__global__ void __launch_bounds__(kMemThreads) k_copy(const uint4* __restrict__ src,
                                                      uint4* __restrict__ dst, size_t n) {
    const size_t stride = size_t(gridDim.x) * blockDim.x;
    size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x;
    for (; i + 3 * stride < n; i += 4 * stride) {
        const uint4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
        dst[i] = a;
        dst[i + stride] = b;
        dst[i + 2 * stride] = c;
        dst[i + 3 * stride] = d;
    }
    for (; i < n; i += stride) dst[i] = src[i];
}

__global__ void k_count_diff(const uint32_t* a, const uint32_t* b, size_t n, unsigned long long* bad) {
    unsigned long long mine = 0;
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
        mine += a[i] != b[i];
    if (mine) atomicAdd(bad, mine);
}

// ----------------------------------------------------------------------- host side
inline Record bench_l2_read(const Device& dev) {
    Record r{"l2_read", "throughput", "GB/s", "events", 0};
    // Footprint: a multiple of 4 elements per thread, about half the L2 (at least 4).
    const size_t threads = size_t(dev.sm_count) * kMemBlocksPerSm * kMemThreads;
    const int k = 4 * std::max<int>(1, int(dev.l2_bytes / 2 / (threads * 16 * 4)));
    const size_t n = threads * k, bytes = n * 16;
    const int passes = 1000;
    uint32_t* d_src = filled_buffer(n * 4);
    unsigned* d_sum;
    CHECK(cudaMalloc(&d_sum, sizeof(unsigned)));
    CHECK(cudaMemset(d_sum, 0, sizeof(unsigned)));
    time_events(r, [&] {
        k_l2_read<<<dev.sm_count * kMemBlocksPerSm, kMemThreads>>>((const uint4*)d_src, k, passes, d_sum);
    });
    r.work = double(bytes) * passes;
    uint32_t per_pass = 0;
    for (size_t i = 0; i < n; ++i)
        per_pass += pattern(4 * i) ^ pattern(4 * i + 1) ^ pattern(4 * i + 2) ^ pattern(4 * i + 3);
    const uint32_t want = per_pass * uint32_t(passes) * uint32_t(1 + kRepeats);  // every launch adds
    if (to_host(d_sum, 1)[0] != want) r.check = "sum of the words read differs from the CPU's sum";
    CHECK(cudaFree(d_src)); CHECK(cudaFree(d_sum));
    return r;
}

inline Record bench_dram_copy(const Device& dev) {
    Record r{"dram_copy", "throughput", "GB/s", "events", 0};
    const size_t bytes = size_t(1) << 30, n = bytes / 16;
    uint32_t* d_src = filled_buffer(bytes / 4);
    uint32_t* d_dst;
    unsigned long long* d_bad;
    CHECK(cudaMalloc(&d_dst, bytes));
    CHECK(cudaMemset(d_dst, 0, bytes));
    CHECK(cudaMalloc(&d_bad, sizeof(unsigned long long)));
    CHECK(cudaMemset(d_bad, 0, sizeof(unsigned long long)));
    time_events(r, [&] {
        k_copy<<<dev.sm_count * kMemBlocksPerSm, kMemThreads>>>((const uint4*)d_src, (uint4*)d_dst, n);
    });
    r.work = 2.0 * double(bytes);
    k_count_diff<<<dev.sm_count * 4, 256>>>(d_src, d_dst, bytes / 4, d_bad);
    CHECK(cudaGetLastError());
    const unsigned long long bad = to_host(d_bad, 1)[0];
    if (bad) r.check = std::to_string(bad) + " words of the copy differ from the source";
    CHECK(cudaFree(d_src)); CHECK(cudaFree(d_dst)); CHECK(cudaFree(d_bad));
    return r;
}

}  // namespace ceilings
