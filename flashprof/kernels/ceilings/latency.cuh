// Latency of dependent chains, one warp (bar.sync: one block of 128 or 256 threads).
// Each chain runs with n and 2n links; (cycles(2n) - cycles(n)) / n is the latency of one
// link, free of the clock reads' and the loop's fixed cost. Links: HMMA.16816.F32
// (accumulator fed back), LDSM.x4 and LDS.32 (pointer chasing: the loaded word is the next
// address), MUFU.EX2 (x = 2^-x), FFMA (x = a x + b), BAR.SYNC, and a cp.async of 16 B
// from L2 followed by commit and wait_group 0.
#pragma once
#include "memory.cuh"

namespace ceilings {

constexpr int kLinkUnroll = 16;

struct ChainOut {
    long long cycles;
    uint32_t words[32];  // per lane: the chain's final value (bits)
    unsigned arrived;    // bar.sync: threads that left the loop
};

#define CEIL_CHAIN_START() long long t0_ = clock64();
#define CEIL_CHAIN_STOP(o)                                    \
    long long t1_ = clock64();                                \
    if (threadIdx.x == 0) (o)->cycles = t1_ - t0_;

__global__ void k_lat_hmma(const uint32_t* in, ChainOut* o, int n) {
    const uint32_t a[4] = {in[0], in[1], in[2], in[3]}, b[2] = {in[4], in[5]};
    float c[4] = {};
    CEIL_CHAIN_START();
    for (int i = 0; i < n; i += kLinkUnroll) {
#pragma unroll
        for (int u = 0; u < kLinkUnroll; ++u) mma_f16(c, a, b);
    }
    CEIL_CHAIN_STOP(o);
    o->words[threadIdx.x] = __float_as_uint(c[0] + c[1] + c[2] + c[3]);
}

template <bool LDSM>
__global__ void k_lat_smem(ChainOut* o, int n) {
    __shared__ __align__(16) uint32_t smem[128];
    const uint32_t lane = threadIdx.x, base = smem_u32(smem);
    // ldmatrix: lane t's first register is word t of matrix 0, whose row r is at the address
    // lane r gives; so word t := base + 16 t keeps every lane on its own row. LDS: word t
    // holds its own address.
    smem[lane] = LDSM ? base + 16 * lane : base + 4 * lane;
    __syncwarp();
    uint32_t addr = smem[lane];
    CEIL_CHAIN_START();
    for (int i = 0; i < n; i += kLinkUnroll) {
#pragma unroll
        for (int u = 0; u < kLinkUnroll; ++u) {
            if constexpr (LDSM) {
                uint32_t r[4];
                ldsm_x4(r, addr);
                addr = r[0];
            } else {
                asm volatile("ld.shared.u32 %0, [%0];\n" : "+r"(addr));
            }
        }
    }
    CEIL_CHAIN_STOP(o);
    o->words[lane] = addr - base;
}

__global__ void k_lat_fpu(const float* in, ChainOut* o, int n, bool ex) {
    float x = in[0] + 0.125f * threadIdx.x;
    const float a = in[1], b = in[2];
    CEIL_CHAIN_START();
    if (ex) {
        for (int i = 0; i < n; i += kLinkUnroll) {
#pragma unroll
            for (int u = 0; u < kLinkUnroll; ++u) x = ex2(-x);
        }
    } else {
        for (int i = 0; i < n; i += kLinkUnroll) {
#pragma unroll
            for (int u = 0; u < kLinkUnroll; ++u) x = fmaf(x, a, b);
        }
    }
    CEIL_CHAIN_STOP(o);
    o->words[threadIdx.x] = __float_as_uint(x);
}

__global__ void k_lat_bar(ChainOut* o, int n) {
    CEIL_CHAIN_START();
    for (int i = 0; i < n; i += kLinkUnroll) {
#pragma unroll
        for (int u = 0; u < kLinkUnroll; ++u) asm volatile("bar.sync 0;\n" ::: "memory");
    }
    CEIL_CHAIN_STOP(o);
    atomicAdd(&o->arrived, 1u);
}

__global__ void k_lat_cp_async(const uint4* src, ChainOut* o, int n) {
    __shared__ __align__(16) uint4 buf[32];
    const uint32_t lane = threadIdx.x;
    CEIL_CHAIN_START();
    for (int i = 0; i < n; i += kLinkUnroll) {
#pragma unroll
        for (int u = 0; u < kLinkUnroll; ++u) {
            cp_async_16(&buf[lane], src + (u % 8) * 32 + lane);
            cp_async_commit();
            cp_async_wait<0>();
        }
    }
    CEIL_CHAIN_STOP(o);
    o->words[lane] = buf[lane].x;
}

// ----------------------------------------------------------------------- host side
// Times `launch(n)` (which fills *d_out) at n and 2n links, kRepeats times after a warm-up.
// The output of the last 2n run stays in d_out for the caller's check.
template <typename Launch>
void time_chain(Record& r, Launch launch, ChainOut* d_out, int n) {
    r.n = n;
    launch(n);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    for (int rep = 0; rep < kRepeats; ++rep)
        for (int len : {n, 2 * n}) {
            CHECK(cudaMemset(d_out, 0, sizeof(ChainOut)));
            launch(len);
            CHECK(cudaGetLastError());
            const ChainOut h = to_host(d_out, 1)[0];
            (len == n ? r.cycles : r.cycles_2n).push_back(double(h.cycles));
        }
}

inline std::vector<Record> bench_latencies() {
    std::vector<Record> out;
    const int n = 4096;
    ChainOut* d_o;
    CHECK(cudaMalloc(&d_o, sizeof(ChainOut)));
    auto lane_check = [&](Record& r, auto want, const char* what) {
        const ChainOut h = to_host(d_o, 1)[0];
        for (int l = 0; l < 32 && r.check == "ok"; ++l)
            if (!want(l, h.words[l])) r.check = std::string(what) + " of lane " + std::to_string(l) + " is wrong";
    };
    auto rec = [](const char* name) { return Record{name, "latency", "cycles", "cycles", 0}; };

    {  // HMMA: A = B = 1.0, so each link adds 16 to every accumulator element.
        Record r = rec("hmma_16816_f32");
        uint32_t* d_in = to_device(std::vector<uint32_t>(6, 0x3C003C00u));
        time_chain(r, [&](int len) { k_lat_hmma<<<1, 32>>>(d_in, d_o, len); }, d_o, n);
        lane_check(r, [&](int, uint32_t w) { float f; std::memcpy(&f, &w, 4); return f == 64.f * 2 * n; },
                   "accumulator sum");
        out.push_back(r);
        CHECK(cudaFree(d_in));
    }
    for (bool ldsm : {true, false}) {
        Record r = rec(ldsm ? "ldsm_x4" : "lds_32");
        time_chain(r, [&](int len) {
            if (ldsm) k_lat_smem<true><<<1, 32>>>(d_o, len);
            else k_lat_smem<false><<<1, 32>>>(d_o, len);
        }, d_o, n);
        lane_check(r, [&](int l, uint32_t w) { return w == uint32_t((ldsm ? 16 : 4) * l); },
                   "final chased address");
        out.push_back(r);
    }
    for (bool ex : {true, false}) {
        Record r = rec(ex ? "mufu_ex2" : "ffma");
        const std::vector<float> in = {ex ? 3.0f : 1.0f, 0.75f, 0.5f};
        float* d_in = to_device(in);
        time_chain(r, [&](int len) { k_lat_fpu<<<1, 32>>>(d_in, d_o, len, ex); }, d_o, n);
        lane_check(r, [&](int l, uint32_t w) {
            float f;
            std::memcpy(&f, &w, 4);
            if (ex) return std::fabs(f - kEx2FixedPoint) < 1e-4;
            float x = in[0] + 0.125f * l;
            for (int k = 0; k < 2 * n; ++k) x = std::fmaf(x, in[1], in[2]);
            return f == x;
        }, ex ? "EX2 chain result" : "FFMA chain result (vs CPU fmaf)");
        out.push_back(r);
        CHECK(cudaFree(d_in));
    }
    for (int threads : {128, 256}) {
        Record r = rec(threads == 128 ? "bar_sync_128" : "bar_sync_256");
        time_chain(r, [&](int len) { k_lat_bar<<<1, threads>>>(d_o, len); }, d_o, n);
        const unsigned got = to_host(d_o, 1)[0].arrived;
        if (got != unsigned(threads))
            r.check = std::to_string(got) + " of " + std::to_string(threads) + " threads left the barrier loop";
        out.push_back(r);
    }
    {  // cp.async: the last link (u = 15) copied slot 7 of the 4 KB source.
        Record r = rec("cp_async_wait");
        uint32_t* d_src = filled_buffer(8 * 32 * 4);
        time_chain(r, [&](int len) { k_lat_cp_async<<<1, 32>>>((const uint4*)d_src, d_o, len); }, d_o, n);
        lane_check(r, [&](int l, uint32_t w) { return w == pattern(uint32_t((7 * 32 + l) * 4)); },
                   "word delivered by the last cp.async");
        out.push_back(r);
        CHECK(cudaFree(d_src));
    }
    CHECK(cudaFree(d_o));
    return out;
}

}  // namespace ceilings
