// How many shared-memory instructions one warp can issue before its scheduler stalls it
// (Nsight Compute's mio_throttle; the issue model's Machine.mio_queue_depth, an assumption so
// far). One warp (warp 0 of a one-warp block: nothing else on the SM) reads the SM clock,
// issues N independent, conflict-free ldmatrix.x4 back to back, and reads the clock again; the
// second read issues once the N-th ldmatrix has issued (in-order issue, no data dependency).
// Then it consumes all N results (the next burst starts with an empty queue). If the queue
// takes D requests while the data path serves one x4 (4 wavefronts) every 4 cycles, the time
// to issue N grows by about one cycle per ldmatrix up to D and by the service time after: the
// knee of cycles(N) is the depth. kMioRepeats bursts per launch; each record keeps them all.
// Measured (reports/h100/mio/mio.json): no knee, because ptxas gives each LDSM.x4 a stall count
// of 4 -- the data path's own rate -- so one warp never builds a queue (4 N - 1 cycles), and at
// some N it puts the second clock read behind a scoreboard wait. The depth needs several warps
// of one scheduler issuing at once: the next version.
#pragma once

#include "compute.cuh"

namespace ceilings {

constexpr int kMioRepeats = 9;  // the first burst runs cold (instruction cache): skip it

template <int N>
__global__ void __launch_bounds__(32) k_mio_burst(uint32_t* out, int* cycles) {
    __shared__ __align__(128) uint32_t buf[N * 128];  // 512 bytes per ldmatrix.x4
    for (int i = threadIdx.x; i < N * 128; i += 32) buf[i] = uint32_t(i);
    __syncwarp();
    const uint32_t base = uint32_t(__cvta_generic_to_shared(buf)) + 16u * threadIdx.x;
    uint32_t acc = 0;
#pragma unroll 1
    for (int rep = 0; rep < kMioRepeats; ++rep) {
        uint32_t r[N][4];
        uint32_t t0, t1;
        asm volatile("mov.u32 %0, %%clock;" : "=r"(t0));
#pragma unroll
        for (int k = 0; k < N; ++k) ldsm_x4(r[k], base + 512u * k);
        asm volatile("mov.u32 %0, %%clock;" : "=r"(t1));
#pragma unroll
        for (int k = 0; k < N; ++k) acc += r[k][0] ^ r[k][3];
        if (threadIdx.x == 0) cycles[rep] = int(t1 - t0);
        __syncwarp();
    }
    out[threadIdx.x] = acc;
}

template <int N>
Record bench_mio_burst() {
    Record r{"mio_ldsm_n" + std::to_string(N), "mio", "cycles", "cycles", 1};
    r.n = N;
    uint32_t* d_out;
    int* d_cyc;
    CHECK(cudaMalloc(&d_out, sizeof(uint32_t) * 32));
    CHECK(cudaMalloc(&d_cyc, sizeof(int) * kMioRepeats));
    k_mio_burst<N><<<1, 32>>>(d_out, d_cyc);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    const auto c = to_host(d_cyc, size_t(kMioRepeats));
    for (int k = 1; k < kMioRepeats; ++k) r.cycles.push_back(double(c[k]));
    // self-check: every lane's xor of its words came back (the loads ran)
    const auto o = to_host(d_out, size_t(32));
    bool any = false;
    for (uint32_t v : o) any = any || v != 0;
    if (!any) r.check = "no ldmatrix result came back";
    CHECK(cudaFree(d_out));
    CHECK(cudaFree(d_cyc));
    return r;
}

inline std::vector<Record> bench_mio_bursts(const Device&) {
    return {bench_mio_burst<1>(), bench_mio_burst<2>(), bench_mio_burst<3>(), bench_mio_burst<4>(),
            bench_mio_burst<5>(), bench_mio_burst<6>(), bench_mio_burst<7>(), bench_mio_burst<8>(),
            bench_mio_burst<10>(), bench_mio_burst<12>(), bench_mio_burst<14>(), bench_mio_burst<16>(),
            bench_mio_burst<20>(), bench_mio_burst<24>(), bench_mio_burst<32>()};
}

// The next version (``ceilings mio2``): P warps on each of the four schedulers (a block of 128 P
// threads, alone on the SM) start together after a __syncthreads and each issues N independent,
// conflict-free ldmatrix.x4 back to back. Four schedulers at one LDSM.x4 every 4 cycles each ask
// four times what the SM's data path serves (one 128-byte wavefront a clock), so every
// scheduler's queue fills: a warp's span to issue N grows by 4 cycles an ldmatrix (P = 1) until
// the queue holds D, by the data path's share of the scheduler (16 cycles) after. The knee
// gives D; whether it is per scheduler or per SM shows in how it moves with P. Per burst (the
// first, cold, dropped) ``cycles`` keeps the slowest warp's span (clock after its N-th issue
// less clock before its first) and ``cycles_max`` the SM-wide span (last warp's end less first
// warp's start). The clock is read again only after every ldmatrix of the burst has issued:
// the loads are consumed after that read, all four registers of each (so that no register of a
// load in flight is free for the clock value: a write there would wait for the load), through an
// empty volatile asm that ptxas cannot hoist.
template <int N, int P>
__global__ void __launch_bounds__(128 * P) k_mio_many(uint32_t* out, int* spans) {
    __shared__ __align__(128) uint32_t buf[N * 128];
    for (int i = threadIdx.x; i < N * 128; i += blockDim.x) buf[i] = uint32_t(i);
    __syncthreads();
    const uint32_t base = uint32_t(__cvta_generic_to_shared(buf)) + 16u * (threadIdx.x & 31);
    const int warp = threadIdx.x >> 5;
    uint32_t acc = 0;
#pragma unroll 1
    for (int rep = 0; rep < kMioRepeats; ++rep) {
        uint32_t r[N][4];
        uint32_t t0, t1;
        __syncthreads();
        asm volatile("mov.u32 %0, %%clock;" : "=r"(t0)::"memory");
#pragma unroll
        for (int k = 0; k < N; ++k) ldsm_x4(r[k], base + 512u * k);
        asm volatile("mov.u32 %0, %%clock;" : "=r"(t1)::"memory");
#pragma unroll
        for (int k = 0; k < N; ++k) {
            asm volatile("" : "+r"(r[k][0]), "+r"(r[k][1]), "+r"(r[k][2]), "+r"(r[k][3]));
            acc += (r[k][0] ^ r[k][1]) + (r[k][2] ^ r[k][3]);
        }
        if ((threadIdx.x & 31) == 0) {
            spans[(rep * 4 * P + warp) * 2] = int(t0);
            spans[(rep * 4 * P + warp) * 2 + 1] = int(t1);
        }
    }
    out[threadIdx.x] = acc;
}

template <int N, int P>
Record bench_mio_many() {
    Record r{"mio_many_n" + std::to_string(N) + "_p" + std::to_string(P), "mio2", "cycles", "cycles", P};
    r.n = N;
    const int warps = 4 * P;
    uint32_t* d_out;
    int* d_sp;
    CHECK(cudaMalloc(&d_out, sizeof(uint32_t) * 128 * P));
    CHECK(cudaMalloc(&d_sp, sizeof(int) * 2 * warps * kMioRepeats));
    k_mio_many<N, P><<<1, 128 * P>>>(d_out, d_sp);
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    const auto c = to_host(d_sp, size_t(2 * warps * kMioRepeats));
    for (int rep = 1; rep < kMioRepeats; ++rep) {
        int slow = 0;
        uint32_t first = 0, last = 0;
        for (int w = 0; w < warps; ++w) {
            const uint32_t a = uint32_t(c[(rep * warps + w) * 2]), b = uint32_t(c[(rep * warps + w) * 2 + 1]);
            slow = std::max(slow, int(b - a));
            if (w == 0 || int(a - first) < 0) first = a;
            if (w == 0 || int(b - last) > 0) last = b;
        }
        r.cycles.push_back(double(slow));
        r.cycles_max.push_back(double(int(last - first)));
    }
    const auto o = to_host(d_out, size_t(128 * P));
    bool any = false;
    for (uint32_t v : o) any = any || v != 0;
    if (!any) r.check = "no ldmatrix result came back";
    CHECK(cudaFree(d_out));
    CHECK(cudaFree(d_sp));
    return r;
}

template <int P>
void mio_many_sweep(std::vector<Record>& v) {
    v.push_back(bench_mio_many<2, P>());
    v.push_back(bench_mio_many<4, P>());
    v.push_back(bench_mio_many<6, P>());
    v.push_back(bench_mio_many<8, P>());
    v.push_back(bench_mio_many<10, P>());
    v.push_back(bench_mio_many<12, P>());
    v.push_back(bench_mio_many<14, P>());
    v.push_back(bench_mio_many<16, P>());
    v.push_back(bench_mio_many<20, P>());
    v.push_back(bench_mio_many<24, P>());
    v.push_back(bench_mio_many<28, P>());
    v.push_back(bench_mio_many<32, P>());
    v.push_back(bench_mio_many<40, P>());
    v.push_back(bench_mio_many<48, P>());
}

// ``ceilings mio3``: do a shuffle and a shared-memory load wait behind the ldmatrix queue of their
// scheduler? Warps 4-7 (one on each scheduler) each time a chain of kChain dependent instructions
// -- SHFL.BFLY (KIND 0), LDS.32 (1) or FFMA (2, a control: no MIO) -- while warps 0-3 (the same
// schedulers) keep the shared-memory data path saturated with independent ldmatrix.x4 (FLOOD) or
// wait at the final barrier (no flood). Scoreboards are per warp, so a chain waits only for its
// own results: if SHFL takes the MIO queue and the data path as LDS does, its chain slows under the
// flood as LDS's does; if it has a path of its own, it does not. Per launch the median over the
// timed warps of (clock after the chain - clock before) / kChain, for kMioRepeats launches' bursts
// (``cycles``); ``cycles_max``: the flood warps' LDSMs per 100 cycles over the same window.
constexpr int kChain = 64;
constexpr int kFloodIters = 40;  // x 8 ldmatrix.x4 a warp: longer than any chain

template <int KIND, bool FLOOD>
__global__ void __launch_bounds__(256) k_chain_beside(uint32_t* out, int* spans) {
    __shared__ __align__(128) uint32_t buf[8 * 128];
    for (int i = threadIdx.x; i < 8 * 128; i += blockDim.x) buf[i] = uint32_t(i & 31);
    __syncthreads();
    const int warp = threadIdx.x >> 5;
    const uint32_t base = uint32_t(__cvta_generic_to_shared(buf));
    uint32_t acc = 0;
    if (warp < 4) {
        if (FLOOD) {
            const uint32_t a = base + 16u * (threadIdx.x & 31);
            uint32_t t0, t1;
            asm volatile("mov.u32 %0, %%clock;" : "=r"(t0)::"memory");
#pragma unroll 1
            for (int it = 0; it < kFloodIters; ++it) {
                uint32_t r[8][4];
#pragma unroll
                for (int k = 0; k < 8; ++k) ldsm_x4(r[k], a + 512u * k);
#pragma unroll
                for (int k = 0; k < 8; ++k) acc += (r[k][0] ^ r[k][1]) + (r[k][2] ^ r[k][3]);
            }
            asm volatile("mov.u32 %0, %%clock;" : "=r"(t1)::"memory");
            if ((threadIdx.x & 31) == 0) spans[8 + warp] = int(t1 - t0);
        }
    } else {
        uint32_t x = threadIdx.x & 31, t0, t1;
        // let the flood build its queues first
        for (int k = 0; k < 4; ++k) asm volatile("nanosleep.u32 100;");
        asm volatile("mov.u32 %0, %%clock;" : "=r"(t0)::"memory");
#pragma unroll
        for (int k = 0; k < kChain; ++k) {
            if (KIND == 0) {
                asm volatile("shfl.sync.bfly.b32 %0, %0, 1, 0x1f, 0xffffffff;" : "+r"(x));
            } else if (KIND == 1) {
                asm volatile("ld.shared.u32 %0, [%1];" : "=r"(x) : "r"(base + 4u * x));
            } else {
                float f = __uint_as_float(x);
                asm volatile("fma.rn.f32 %0, %0, %0, %0;" : "+f"(f));
                x = __float_as_uint(f);
            }
        }
        asm volatile("mov.u32 %0, %%clock;" : "=r"(t1)::"memory");
        acc = x;
        if ((threadIdx.x & 31) == 0) spans[warp - 4] = int(t1 - t0);
    }
    __syncthreads();
    out[threadIdx.x] = acc;
}

template <int KIND, bool FLOOD>
Record bench_chain_beside() {
    static const char* kinds[] = {"shfl", "lds", "ffma"};
    Record r{std::string("chain_") + kinds[KIND] + (FLOOD ? "_flood" : "_alone"), "mio3", "cycles", "cycles", 1};
    r.n = kChain;
    uint32_t* d_out;
    int* d_sp;
    CHECK(cudaMalloc(&d_out, sizeof(uint32_t) * 256));
    CHECK(cudaMalloc(&d_sp, sizeof(int) * 12));
    for (int rep = 0; rep < kMioRepeats; ++rep) {
        CHECK(cudaMemset(d_sp, 0, sizeof(int) * 12));
        k_chain_beside<KIND, FLOOD><<<1, 256>>>(d_out, d_sp);
        CHECK(cudaGetLastError());
        CHECK(cudaDeviceSynchronize());
        if (rep == 0) continue;  // cold
        auto c = to_host(d_sp, size_t(12));
        std::vector<int> chain(c.begin(), c.begin() + 4);
        std::sort(chain.begin(), chain.end());
        r.cycles.push_back(0.5 * (chain[1] + chain[2]) / kChain);
        const int flood = *std::max_element(c.begin() + 8, c.end());
        r.cycles_max.push_back(flood > 0 ? 100.0 * 8 * kFloodIters / flood : 0.0);
    }
    CHECK(cudaFree(d_out));
    CHECK(cudaFree(d_sp));
    return r;
}

inline std::vector<Record> bench_chain_beside_all(const Device&) {
    return {bench_chain_beside<0, false>(), bench_chain_beside<0, true>(), bench_chain_beside<1, false>(),
            bench_chain_beside<1, true>(), bench_chain_beside<2, false>(), bench_chain_beside<2, true>()};
}

inline std::vector<Record> bench_mio_many_all(const Device&) {
    std::vector<Record> v;
    mio_many_sweep<1>(v);
    mio_many_sweep<2>(v);
    return v;
}

}  // namespace ceilings
