// Which warp a sub-partition's scheduler issues when two are ready (the issue model's
// selection rule; issue 32: whether the two consumer warpgroups of kernel 7 lock in phase
// depends on it). Two warps of one block that share a scheduler (warp ids 0 and 4: a warp
// runs on sub-partition id % 4) each run the same stream of independent FFMAs (8 chains,
// so every FFMA may issue the cycle after the previous one) and read the SM clock every
// kSchedChunk FFMAs; the other warps of the block return at once. Cases:
//   together     both start at the same barrier
//   older_first  warp 4 (the younger) first waits for `kSchedDelayLoads` dependent global loads
//   younger_first  warp 0 (the older) waits instead
// Each warp's checkpoints, relative to the barrier, say who issued when. Greedy (keep the
// warp that issued last while it can issue): one warp's checkpoints advance at one FFMA per
// clock while the other's stand still, and a warp that becomes ready mid-stream waits for the
// running one to finish. Round robin: both advance at half rate. Fixed priority (oldest /
// youngest first): the favoured warp runs whenever it is ready, taking over from the other
// when its delay ends. Huerta et al. (arXiv 2503.20481, sec. 5.1.2) found greedy-then-youngest
// on Turing and Ampere; this measures the GPU it runs on.
#pragma once

#include "compute.cuh"

namespace ceilings {

constexpr int kSchedChunk = 128;        // FFMAs between two clock reads
constexpr int kSchedChunks = 16;        // checkpoints per warp
constexpr int kSchedDelayLoads = 2;     // dependent global loads before the delayed warp starts
enum SchedCase { kSchedTogether = 0, kSchedOlderFirst = 1, kSchedYoungerFirst = 2 };

template <int CASE>
__global__ void __launch_bounds__(256) k_sched(const int* chase, long long* out, float* sink) {
    const int warp = threadIdx.x / 32;
    if (warp != 0 && warp != 4) return;
    float a[8];
#pragma unroll
    for (int j = 0; j < 8; ++j) a[j] = 1.0f + 0.125f * j + 0.0009765625f * (threadIdx.x % 32);
    long long stamp[kSchedChunks + 1];
    asm volatile("bar.sync 1, 64;");
    const long long t0 = clock64();
    const bool delayed = (CASE == kSchedOlderFirst && warp == 4) || (CASE == kSchedYoungerFirst && warp == 0);
    int idx = 0;
    if (delayed) {
        for (int k = 0; k < kSchedDelayLoads; ++k) idx = __ldcg(chase + idx);
        a[0] += float(idx);  // the stream below depends on the last load
    }
    stamp[0] = clock64();
#pragma unroll 1
    for (int c = 0; c < kSchedChunks; ++c) {
#pragma unroll
        for (int k = 0; k < kSchedChunk / 8; ++k) {
#pragma unroll
            for (int j = 0; j < 8; ++j)
                asm volatile("fma.rn.f32 %0, %0, %1, %2;" : "+f"(a[j]) : "f"(0.99951171875f), "f"(0.000244140625f));
        }
        stamp[c + 1] = clock64();
    }
    float s = 0.f;
#pragma unroll
    for (int j = 0; j < 8; ++j) s += a[j];
    if (threadIdx.x % 32 == 0) {
        long long* o = out + (warp / 4) * (kSchedChunks + 1);
#pragma unroll
        for (int c = 0; c <= kSchedChunks; ++c) o[c] = stamp[c] - t0;
        sink[warp] = s;
    }
}

inline std::vector<Record> bench_sched(const Device&) {
    std::vector<Record> all;
    const int n = kSchedChunks + 1;
    int* d_chase;
    long long* d_out;
    float* d_sink;
    CHECK(cudaMalloc(&d_chase, sizeof(int) * 1024 * 64));
    CHECK(cudaMemset(d_chase, 0, sizeof(int) * 1024 * 64));
    CHECK(cudaMalloc(&d_out, sizeof(long long) * 2 * n));
    CHECK(cudaMalloc(&d_sink, sizeof(float) * 8));
    const char* names[] = {"together", "older_first", "younger_first"};
    for (int cs = 0; cs < 3; ++cs) {
        Record r{std::string("sched_") + names[cs], "sched", "cycles", "cycles", 2};
        r.n = kSchedChunk;
        for (int rep = 0; rep < 3; ++rep) {  // the last launch is kept: code and data are warm
            CHECK(cudaMemset(d_out, 0, sizeof(long long) * 2 * n));
            if (cs == 0) k_sched<0><<<1, 256>>>(d_chase, d_out, d_sink);
            if (cs == 1) k_sched<1><<<1, 256>>>(d_chase, d_out, d_sink);
            if (cs == 2) k_sched<2><<<1, 256>>>(d_chase, d_out, d_sink);
            CHECK(cudaGetLastError());
            CHECK(cudaDeviceSynchronize());
        }
        const auto h = to_host(d_out, size_t(2) * n);
        for (int c = 0; c < n; ++c) {
            r.cycles.push_back(double(h[c]));         // warp 0 (the older)
            r.cycles_2n.push_back(double(h[n + c]));  // warp 4 (the younger)
        }
        if (r.cycles.back() <= 0 || r.cycles_2n.back() <= 0) r.check = "no timing recorded";
        all.push_back(r);
    }
    CHECK(cudaFree(d_chase));
    CHECK(cudaFree(d_out));
    CHECK(cudaFree(d_sink));
    return all;
}

}  // namespace ceilings
