// The shared-memory side of FlashAttention-2's KV pass without the softmax (issue 31): the
// issue model is 3-6 % slow on the series' 64 x 64 kernels 3-6 on the H200 (its MIO throttle at
// LDSM 2.5 times the reports'), where every warp reads all of K and V through ldmatrix and the
// shared-memory data path is 70-78 % busy. Here each warp, per pass, reads its K fragments
// (32 ldmatrix.x4, conflict-free: 512 contiguous bytes each) into S = Q K^T (64 HMMA.16816.F32,
// Q from registers), packs S to halves (F2FP) and reads V fragments (16 ldmatrix.x4.trans) into
// O += P V (32 HMMA): 48 LDSM.x4 (192 wavefronts) and 96 HMMA a warp and pass, so the data path
// (one wavefront a clock an SM) needs 4/3 of the tensor pipe's time at any warp count: what
// bounds a pass is how well the two overlap. Two orders, each instruction pinned by asm volatile:
//   ldsm_mma     -- each ldmatrix right before the two HMMAs that use it (kernel 3's order);
//   ldsm_mma_db  -- the next ldmatrix issued before the current HMMAs (a register double buffer,
//                   kernel 5's).
// With the global-to-shared copies and the barriers of a KV pass (ldsm_cp, ldsm_cp_db: the orders
// above): each thread issues 3 cp.async.cg of 16 bytes before QK^T and 3 before PV, each group
// waited for (cp.async.wait_group 0) and followed by __syncthreads() at the end of its GEMM, as
// the series' kernels and FA2 wait for K and V -- 6 LDGSTS.128 a thread per 96 HMMA, FA2's ratio
// (16 a thread per 256 HMMA on its 128 x 64 tile). The copies land in a 16 KB region nothing
// reads (the ldmatrix keep reading the resident K and V) from the first 4 KB of the output buffer
// (L2 hits after the first pass): what they cost is their issue, their shared-memory writes and
// the waits, not a data dependence.
// Timed with the yield probe's host (yield_host.cu: one CTA on one SM, 1 / 2 / 4 warps a
// sub-partition, clock64 spans; work = 96 HMMAs a pass).
// Build: nvcc -cubin -arch=sm_90 -O3 -o ldsm.cubin ldsm_probe.cu (ldsmcp.cubin / ldsmcp2.cubin: the
// same source with the cp.async kernels, the earlier kernels' SASS unchanged)
#include <cstdint>

#include "probe_mma.cuh"

namespace {

constexpr int kK = 32 * 512;  // bytes of K fragments a pass reads (32 x4 loads of 512 B)
constexpr int kV = 16 * 512;  // bytes of V fragments

__device__ __forceinline__ void ldsm4(uint32_t (&r)[4], uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}

__device__ __forceinline__ void ldsm4t(uint32_t (&r)[4], uint32_t addr) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3]) : "r"(addr));
}

constexpr int kDst = 16384;   // bytes of the region the copies write
constexpr int kSrc = 4096;    // bytes of the output buffer they read (yield_host allocates 1024 floats)
constexpr int kCopies = 3;    // 16-byte cp.async a thread before each GEMM

// kCopies 16-byte copies a thread into the region (wrapping), one commit group. kCoalesced: copy c
// of thread t at byte (c x threads + t) x 16 -- a warp's 32 copies are 512 contiguous bytes, 16
// sectors read and 4 conflict-free wavefronts written, the series' and FA2's pattern (their H200
// reports: 16 sectors and 4 wavefronts an LDGSTS); otherwise (ldsm_cp, ldsm_cp_db, the first run)
// at ((2 t + step) x kCopies + c) x 16, threads 96 bytes apart: 32 sectors and 24 wavefronts an
// LDGSTS in their report -- not FA2's pattern.
template <bool kCoalesced>
__device__ __forceinline__ void copy_group(uint32_t dbase, const char* src, int step) {
#pragma unroll
    for (int c = 0; c < kCopies; ++c) {
        const uint32_t k = kCoalesced ? uint32_t((step * kCopies + c) * blockDim.x + threadIdx.x) * 16u
                                      : uint32_t((threadIdx.x * 2 + step) * kCopies + c) * 16u;
        asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n"
                     :: "r"(dbase + k % kDst), "l"(src + k % kSrc) : "memory");
    }
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}

__device__ __forceinline__ void wait_and_sync() {
    asm volatile("cp.async.wait_group 0;\n" ::: "memory");
    __syncthreads();
}

template <bool kDoubleBuffer, bool kAsync = false, bool kCoalesced = false>
__device__ __forceinline__ void pass_loop(float* out, long long* cycles, int iters, float b) {
    __shared__ __align__(128) uint32_t buf[(kK + kV) / 4];
    uint32_t dbase = 0;
    if constexpr (kAsync) {
        __shared__ __align__(128) uint32_t dst[kDst / 4];
        dbase = uint32_t(__cvta_generic_to_shared(dst));
    }
    const char* src = reinterpret_cast<const char*>(out);
    for (int i = threadIdx.x; i < (kK + kV) / 4; i += blockDim.x) buf[i] = 0x3c003c00u ^ uint32_t(i & 7);
    __syncthreads();
    const uint32_t lane16 = 16u * (threadIdx.x & 31);
    const uint32_t kbase = uint32_t(__cvta_generic_to_shared(buf)) + lane16, vbase = kbase + kK;
    uint32_t q[2][4];
    for (int r = 0; r < 4; ++r) q[0][r] = __float_as_uint(b) ^ (threadIdx.x + r), q[1][r] = q[0][r] + 0x10001u;
    float o[8][4] = {};
    long long t0 = clock64();
    for (int i = 0; i < iters; ++i) {
        float s[8][4] = {};
        uint32_t f[2][4];
        if constexpr (kAsync) copy_group<kCoalesced>(dbase, src, 0);
        if (kDoubleBuffer) ldsm4(f[0], kbase);
#pragma unroll
        for (int j = 0; j < 32; ++j) {  // S = Q K^T: k-step j / 4, n-tiles 2 (j % 4), 2 (j % 4) + 1
            uint32_t(&cur)[4] = f[kDoubleBuffer ? (j & 1) : 0];
            if (kDoubleBuffer) {
                if (j + 1 < 32) ldsm4(f[(j + 1) & 1], kbase + 512u * (j + 1));
                else ldsm4t(f[(j + 1) & 1], vbase);
            } else {
                ldsm4(cur, kbase + 512u * j);
            }
            mma(s[2 * (j & 3)], q[(j >> 2) & 1], cur[0], cur[1]);
            mma(s[2 * (j & 3) + 1], q[(j >> 2) & 1], cur[2], cur[3]);
        }
        if constexpr (kAsync) {
            wait_and_sync();
            copy_group<kCoalesced>(dbase, src, 1);
        }
        uint32_t p[4][4];
#pragma unroll
        for (int n = 0; n < 8; ++n) {
            p[n >> 1][(n & 1) * 2] = pack(s[n][0], s[n][1]);
            p[n >> 1][(n & 1) * 2 + 1] = pack(s[n][2], s[n][3]);
        }
#pragma unroll
        for (int j = 0; j < 16; ++j) {  // O += P V: k-step j / 4, n-tiles 2 (j % 4), 2 (j % 4) + 1
            uint32_t(&cur)[4] = f[kDoubleBuffer ? ((j + 32) & 1) : 0];
            if (kDoubleBuffer) {
                if (j + 1 < 16) ldsm4t(f[(j + 33) & 1], vbase + 512u * (j + 1));
            } else {
                ldsm4t(cur, vbase + 512u * j);
            }
            mma(o[2 * (j & 3)], p[j >> 2], cur[0], cur[1]);
            mma(o[2 * (j & 3) + 1], p[j >> 2], cur[2], cur[3]);
        }
        if constexpr (kAsync) wait_and_sync();
    }
    long long t1 = clock64();
    if ((threadIdx.x & 31) == 0) cycles[threadIdx.x >> 5] = t1 - t0;
    float acc = 0.f;
    for (int n = 0; n < 8; ++n) acc += o[n][0] + o[n][1] + o[n][2] + o[n][3];
    out[threadIdx.x] = acc;
}

}  // namespace

extern "C" __global__ void __launch_bounds__(512)
ldsm_mma(float* out, long long* cycles, int iters, float b, float) { pass_loop<false>(out, cycles, iters, b); }

extern "C" __global__ void __launch_bounds__(512)
ldsm_mma_db(float* out, long long* cycles, int iters, float b, float) { pass_loop<true>(out, cycles, iters, b); }

extern "C" __global__ void __launch_bounds__(512)
ldsm_cp(float* out, long long* cycles, int iters, float b, float) { pass_loop<false, true>(out, cycles, iters, b); }

extern "C" __global__ void __launch_bounds__(512)
ldsm_cp_db(float* out, long long* cycles, int iters, float b, float) { pass_loop<true, true>(out, cycles, iters, b); }

extern "C" __global__ void __launch_bounds__(512)
ldsm_cpc(float* out, long long* cycles, int iters, float b, float) { pass_loop<false, true, true>(out, cycles, iters, b); }

extern "C" __global__ void __launch_bounds__(512)
ldsm_cpc_db(float* out, long long* cycles, int iters, float b, float) { pass_loop<true, true, true>(out, cycles, iters, b); }
