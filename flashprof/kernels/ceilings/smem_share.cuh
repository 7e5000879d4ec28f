// Whether cp.async (SASS LDGSTS) writes take the shared-memory data path that ldmatrix reads
// use. The issue model charges each LDGSTS.128 four 128-byte wavefronts of that path (the
// bytes it writes); Nsight Compute counts far fewer shared wavefronts than that for the H200
// kernels' LDGSTS, and the kernels 3-6 and FA2 loops swing by 10 % between a full charge and
// none (analysis/gap/smem_share.py). One block of 16 warps per SM:
//   readers, warps 0-7 (two per scheduler): ldmatrix.x4 at the data path's full rate, the same
//     loop as k_smem_ld_tput (two copies of a 4 KB region, conflict-free);
//   fillers, warps 8-15: cp.async 16 B per thread from an L2-resident slice of the source into
//     four stages, kShareVec copies per thread per group, wait_group 3 (k_cp_async_tput's loop).
// MODE 1: readers only; 2: fillers only, fill_rounds groups; 3: both, the fillers until every
// reader is done. Each warp's lane 0 writes its first and last clock64 and (fillers) its group
// count; the host turns them into per-SM rates. If the fills share the path, the readers lose
// about as many wavefronts as the fillers write (4 per 512 B group slice); if not, none.
#pragma once

#include "smem.cuh"

namespace ceilings {

constexpr int kShareReaders = 8;
constexpr int kShareWarps = 16;
constexpr int kShareVec = 2;
constexpr int kShareStages = 4;
constexpr int kShareFillThreads = (kShareWarps - kShareReaders) * 32;
constexpr int kShareGroupVec = kShareFillThreads * kShareVec;  // 16 B copies per group per block
constexpr int kShareSmem = 2 * int(kRegionBytes) + kShareStages * kShareGroupVec * 16;

struct WarpSpan {
    long long start, end;
    int groups, bad;
};

template <int MODE>
__global__ void __launch_bounds__(kShareWarps * 32) k_smem_share(const uint32_t* region, const uint4* src,
                                                                 uint32_t* out, WarpSpan* spans, int rounds,
                                                                 int fill_rounds, uint32_t step) {
    extern __shared__ __align__(16) uint32_t smem[];
    __shared__ int readers_done;
    uint4* stage = reinterpret_cast<uint4*>(smem + 2 * kSlots * kSlotWords);
    const int warp = threadIdx.x / 32, lane = threadIdx.x & 31;
    for (int i = threadIdx.x; i < 2 * kSlots * kSlotWords; i += blockDim.x) smem[i] = region[i % (kSlots * kSlotWords)];
    if (threadIdx.x == 0) readers_done = 0;
    __syncthreads();
    WarpSpan s{clock64(), 0, 0, 0};
    if (warp < kShareReaders) {
        uint32_t acc = 0;
        if (MODE != 2) {
            const uint32_t base = smem_u32(smem) + lane * 16;
            for (int i = 0; i < rounds; ++i) {
                const uint32_t copy = base + ((uint32_t(i) * step) & kRegionBytes);
#pragma unroll
                for (int k = 0; k < kSlots; ++k) {
                    uint32_t r[4];
                    ldsm_x4(r, copy + k * 512);
                    acc += r[0] + r[1] + r[2] + r[3];
                }
            }
        }
        s.end = clock64();
        out[blockIdx.x * kShareReaders * 32 + threadIdx.x] = acc;
        __syncwarp();
        if (lane == 0) atomicAdd(&readers_done, 1);
    } else if (MODE != 1) {
        const int ft = threadIdx.x - kShareReaders * 32;
        const uint4* mine = src + size_t(blockIdx.x) * kCpSliceVec;
        volatile int* done = &readers_done;
        int g = 0;
        for (;; ++g) {
            if (MODE == 2 ? g >= fill_rounds : *done == kShareReaders) break;
            const uint32_t slot = g % kShareStages, off = (uint32_t(g) * kShareGroupVec) % kCpSliceVec;
#pragma unroll
            for (int k = 0; k < kShareVec; ++k) {
                const uint32_t e = k * kShareFillThreads + ft;
                cp_async_16(&stage[slot * kShareGroupVec + e], mine + off + e);
            }
            cp_async_commit();
            cp_async_wait<kShareStages - 1>();
        }
        cp_async_wait<0>();
        s.end = clock64();
        s.groups = g;
        // each thread checks its own copies of the last (up to) kShareStages groups
        for (int i = max(0, g - kShareStages); i < g; ++i) {
            const uint32_t slot = i % kShareStages, off = (uint32_t(i) * kShareGroupVec) % kCpSliceVec;
            for (int k = 0; k < kShareVec; ++k) {
                const uint32_t e = k * kShareFillThreads + ft;
                const uint4 got = stage[slot * kShareGroupVec + e];
                const uint32_t w = uint32_t((size_t(blockIdx.x) * kCpSliceVec + off + e) * 4);
                s.bad += (got.x != pattern(w)) + (got.y != pattern(w + 1)) + (got.z != pattern(w + 2)) +
                         (got.w != pattern(w + 3));
            }
        }
        for (int o = 16; o > 0; o >>= 1) s.bad += __shfl_xor_sync(0xffffffffu, s.bad, o);
    }
    if (lane == 0) spans[blockIdx.x * kShareWarps + warp] = s;
}

// One launch per repeat (after a warm-up); per block, the readers' span (first start to last
// end) and the fillers' span and groups. Records, per repeat the median over blocks:
//   smem_share_ldsm_<alone|with_cp>: work = ldmatrix bytes per SM, cycles = the readers' span;
//   smem_share_cp_<alone|with_ldsm>: work = bytes of one group, cycles = the fillers' span per
//     group (so work / cycles is their B/clk/SM over the time they ran).
template <int MODE>
inline std::vector<Record> bench_smem_share_mode(const Device& dev, const uint32_t* region, const uint4* src) {
    const int rounds = 16384, fill_rounds = 16384;
    const uint32_t step = kRegionBytes;
    uint32_t* d_out;
    WarpSpan* d_s;
    CHECK(cudaMalloc(&d_out, sizeof(uint32_t) * dev.sm_count * kShareReaders * 32));
    CHECK(cudaMalloc(&d_s, sizeof(WarpSpan) * dev.sm_count * kShareWarps));
    const int smem = std::max(kShareSmem, dev.one_block_smem);
    CHECK(cudaFuncSetAttribute(k_smem_share<MODE>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    const char* rname = MODE == 1 ? "smem_share_ldsm_alone" : "smem_share_ldsm_with_cp";
    const char* fname = MODE == 2 ? "smem_share_cp_alone" : "smem_share_cp_with_ldsm";
    Record rr{rname, "smem_share", "B/clk/SM", "cycles", 2};
    Record fr{fname, "smem_share", "B/clk/SM", "cycles", 2};
    rr.work = 512.0 * kSlots * kShareReaders * double(rounds);
    fr.work = 16.0 * kShareGroupVec;
    std::vector<WarpSpan> h(size_t(dev.sm_count) * kShareWarps);
    long long bad = 0;
    for (int rep = 0; rep <= kRepeats; ++rep) {
        k_smem_share<MODE><<<dev.sm_count, kShareWarps * 32, smem>>>(region, src, d_out, d_s, rounds, fill_rounds, step);
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        if (rep == 0) continue;  // warm-up
        h = to_host(d_s, h.size());
        std::vector<double> rc, fc;
        for (int b = 0; b < dev.sm_count; ++b) {
            const WarpSpan* w = &h[size_t(b) * kShareWarps];
            long long r0 = w[0].start, r1 = w[0].end, f0 = w[kShareReaders].start, f1 = w[kShareReaders].end;
            long long groups = 0;
            for (int k = 0; k < kShareWarps; ++k) {
                if (k < kShareReaders) { r0 = std::min(r0, w[k].start); r1 = std::max(r1, w[k].end); }
                else { f0 = std::min(f0, w[k].start); f1 = std::max(f1, w[k].end); groups += w[k].groups; bad += w[k].bad; }
            }
            rc.push_back(double(r1 - r0));
            const double per_warp_groups = double(groups) / (kShareWarps - kShareReaders);
            if (per_warp_groups > 0) fc.push_back(double(f1 - f0) / per_warp_groups);
        }
        if (MODE != 2) rr.cycles.push_back(median(rc));
        if (MODE != 1 && !fc.empty()) fr.cycles.push_back(median(fc));
    }
    if (MODE != 2) {
        const auto out = to_host(d_out, size_t(dev.sm_count) * kShareReaders * 32);
        for (int lane = 0; lane < 32 && rr.check == "ok"; ++lane) {
            uint32_t per_round = 0;
            for (int k = 0; k < kSlots; ++k)
                for (int q = 0; q < 4; ++q) per_round += pattern(k * kSlotWords + 32 * q + lane);
            const uint32_t want = per_round * uint32_t(rounds);
            for (size_t i = lane; i < out.size(); i += 32)
                if (out[i] != want) {
                    rr.check = "ldmatrix sum of reader thread " + std::to_string(i) + " differs from the CPU's";
                    break;
                }
        }
    }
    if (bad) fr.check = std::to_string(bad) + " words copied by cp.async differ from the source";
    if (MODE != 1 && fr.cycles.empty() && fr.check == "ok") fr.check = "no filler completed a group";
    CHECK(cudaFree(d_out));
    CHECK(cudaFree(d_s));
    std::vector<Record> v;
    if (MODE != 2) v.push_back(rr);
    if (MODE != 1) v.push_back(fr);
    return v;
}

inline std::vector<Record> bench_smem_share(const Device& dev) {
    uint32_t* d_region = filled_buffer(kSlots * kSlotWords);
    uint32_t* d_src = filled_buffer(size_t(dev.sm_count) * kCpSliceVec * 4);
    std::vector<Record> all;
    for (const auto& v : {bench_smem_share_mode<1>(dev, d_region, (const uint4*)d_src),
                          bench_smem_share_mode<2>(dev, d_region, (const uint4*)d_src),
                          bench_smem_share_mode<3>(dev, d_region, (const uint4*)d_src)})
        all.insert(all.end(), v.begin(), v.end());
    CHECK(cudaFree(d_region));
    CHECK(cudaFree(d_src));
    return all;
}

}  // namespace ceilings
