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

}  // namespace ceilings
