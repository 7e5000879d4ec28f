// Shared pieces of the ceilings microbenchmarks: error checks, the instruction wrappers
// whose SASS the static test pins down, the timing harness and the JSON-lines output.
//
// Every benchmark prints one JSON object per line on stdout; profiling/ceilings.py turns
// them into rates. Raw numbers only (cycles, milliseconds, work): no rate is computed here.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "../csrc/mma.cuh"

#define CHECK(x)                                                                        \
    do {                                                                                \
        cudaError_t e_ = (x);                                                           \
        if (e_ != cudaSuccess) {                                                        \
            std::fprintf(stderr, "ceilings: CUDA error '%s' in %s at %s:%d\n",          \
                         cudaGetErrorString(e_), #x, __FILE__, __LINE__);               \
            std::exit(3);                                                               \
        }                                                                               \
    } while (0)

namespace ceilings {

constexpr int kRepeats = 5;           // timed launches per benchmark (after one warm-up)
constexpr int kWarpsPerScheduler = 4; // the default occupancy of a throughput run
constexpr int kSchedulers = 4;        // SM sub-partitions (sm_80 .. sm_90)

struct Device {
    int sm_count = 0;
    int smem_per_sm = 0;
    int l2_bytes = 0;
    // Dynamic shared memory of the per-SM throughput kernels: more than half of the SM's,
    // so that no two blocks share an SM (each block also holds 1 KB reserved by the system).
    int one_block_smem = 0;
};

// ------------------------------------------------------------------ instructions
// The project's own wrappers (kernels/csrc) for what the FA2 kernels issue: mma.sync
// m16n8k16 (Mma<T>::run), cp.async 16 B (.cg, commit, wait_group), shared addresses.
using flashprof::cp_async_16;
using flashprof::cp_async_commit;
using flashprof::cp_async_wait;
using flashprof::smem_u32;

__device__ __forceinline__ void mma_f16(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    flashprof::Mma<__half>::run(c, a, b);
}
__device__ __forceinline__ void mma_bf16(float (&c)[4], const uint32_t (&a)[4], const uint32_t (&b)[2]) {
    flashprof::Mma<__nv_bfloat16>::run(c, a, b);
}

// ldmatrix.x4 from a 32-bit shared address (kernels/csrc's takes a pointer): a
// pointer-chasing chain feeds the loaded word straight back as the next address.
__device__ __forceinline__ void ldsm_x4(uint32_t* r, uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

__device__ __forceinline__ float ex2(float x) {
    float y;
    asm volatile("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

__device__ __forceinline__ uint32_t sm_id() {
    uint32_t id;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
    return id;
}

// Per-block timing record of a throughput kernel: cycles between two barriers, the SM.
struct BlockTime {
    long long cycles;
    uint32_t sm;
    uint32_t pad;
};

// The fill pattern of every source buffer; host and device agree on it.
__host__ __device__ __forceinline__ uint32_t pattern(uint32_t i) { return i * 2654435761u + 12345u; }

// ------------------------------------------------------------------------ output
inline double median(std::vector<double> v) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    size_t n = v.size();
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

inline std::string json_list(const std::vector<double>& v) {
    std::string s = "[";
    char buf[64];
    for (size_t i = 0; i < v.size(); ++i) {
        std::snprintf(buf, sizeof buf, "%s%.10g", i ? ", " : "", v[i]);
        s += buf;
    }
    return s + "]";
}

// One measurement record. Throughput: rate = work / cycles (per SM) or work / ms (GPU).
// Latency: (cycles_2n - cycles) / n.
struct Record {
    std::string name, kind, unit, basis;  // basis: "cycles" (per SM) or "events" (whole GPU)
    int warps_per_scheduler = 0;          // 0: not applicable
    double work = 0;                      // per SM (basis cycles) or in total (events)
    long long n = 0;                      // latency: chain length of the short run
    std::vector<double> cycles, cycles_max, cycles_2n, ms;
    std::string check = "ok";
};

inline void emit(const Record& r) {
    std::printf("{\"record\": \"measurement\", \"name\": \"%s\", \"kind\": \"%s\", \"unit\": \"%s\", "
                "\"basis\": \"%s\", \"warps_per_scheduler\": %d, \"work\": %.17g, \"n\": %lld, "
                "\"cycles\": %s, \"cycles_max\": %s, \"cycles_2n\": %s, \"ms\": %s, "
                "\"check\": \"%s\"}\n",
                r.name.c_str(), r.kind.c_str(), r.unit.c_str(), r.basis.c_str(),
                r.warps_per_scheduler, r.work, r.n, json_list(r.cycles).c_str(),
                json_list(r.cycles_max).c_str(), json_list(r.cycles_2n).c_str(),
                json_list(r.ms).c_str(), r.check.c_str());
    std::fflush(stdout);
    if (r.check != "ok")
        std::fprintf(stderr, "ceilings: %s (%s) FAILED its self-check: %s\n", r.name.c_str(),
                     r.kind.c_str(), r.check.c_str());
}

// Prints every record; whether all passed their self-checks.
inline bool emit_all(const std::vector<Record>& records) {
    bool ok = true;
    for (const Record& r : records) {
        emit(r);
        ok = ok && r.check == "ok";
    }
    return ok;
}

// ------------------------------------------------------------------------ timing
// One warm-up launch, then kRepeats launches between CUDA events; `after(ms)` per repeat.
template <typename Launch, typename After>
void repeat_timed(Launch launch, After after) {
    cudaEvent_t e0, e1;
    CHECK(cudaEventCreate(&e0));
    CHECK(cudaEventCreate(&e1));
    launch();
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    for (int rep = 0; rep < kRepeats; ++rep) {
        CHECK(cudaEventRecord(e0));
        launch();
        CHECK(cudaEventRecord(e1));
        CHECK(cudaGetLastError());
        CHECK(cudaEventSynchronize(e1));
        float ms = 0;
        CHECK(cudaEventElapsedTime(&ms, e0, e1));
        after(ms);
    }
    CHECK(cudaEventDestroy(e0));
    CHECK(cudaEventDestroy(e1));
}

// Times `launch` (one kernel launch writing one BlockTime per block). Per repeat: median
// and max block cycles, ms. Flags in `check` a run where two blocks shared an SM (the
// per-SM rate would be wrong).
template <typename Launch>
void time_blocks(Record& r, Launch launch, BlockTime* d_times, int blocks) {
    std::vector<BlockTime> h(blocks);
    repeat_timed(launch, [&](float ms) {
        CHECK(cudaMemcpy(h.data(), d_times, blocks * sizeof(BlockTime), cudaMemcpyDeviceToHost));
        std::vector<double> c(blocks);
        std::vector<uint32_t> sms(blocks);
        for (int b = 0; b < blocks; ++b) {
            c[b] = static_cast<double>(h[b].cycles);
            sms[b] = h[b].sm;
        }
        std::sort(sms.begin(), sms.end());
        if (std::adjacent_find(sms.begin(), sms.end()) != sms.end() && r.check == "ok")
            r.check = "two blocks ran on one SM: per-SM rate invalid";
        r.cycles.push_back(median(c));
        r.cycles_max.push_back(*std::max_element(c.begin(), c.end()));
        r.ms.push_back(ms);
    });
}

// Times a whole-GPU kernel with CUDA events only (memory bandwidth).
template <typename Launch>
void time_events(Record& r, Launch launch) {
    repeat_timed(launch, [&](float ms) { r.ms.push_back(ms); });
}

// Block-level timing inside a throughput kernel: all threads start together.
#define CEIL_TIMER_START()        \
    __syncthreads();              \
    long long t0_ = clock64();
#define CEIL_TIMER_STOP(times)                                    \
    __syncthreads();                                              \
    if (threadIdx.x == 0) {                                       \
        (times)[blockIdx.x].cycles = clock64() - t0_;             \
        (times)[blockIdx.x].sm = sm_id();                         \
    }

}  // namespace ceilings
