// The XU pipe (MUFU) beside FP32 work in the softmax's own mix (issue 31/32): how long a
// MUFU.EX2 holds the pipe when the warp's FP32 instructions around it are the 1 to 3 a
// FlashAttention softmax issues per exponential, measured with the yield probe's host
// (yield_host.cu: one CTA on one SM, 1 / 2 / 4 warps a sub-partition, clock64 spans).
//
// Each pass runs 16 steps over 8 independent rows; per row and step:
//   xu_soft1: x = c - s*b (FFMA); s = ex2(x) (MUFU.EX2)                     1 FP32 per EX2
//   xu_soft2: the same, then l += s (FADD)                                   2 FP32 per EX2
//   xu_soft3: the same, then o = o*s (FMUL)                                  3 FP32 per EX2
// Each row's chain is FFMA -> EX2 -> FFMA ... (about 21 cycles a link), so 8 rows ask for an
// EX2 every ~3 cycles: the XU pipe (8 cycles an EX2 alone, ceilings mufu_ex2) is the limit and
// cycles per EX2 per sub-partition measure how long each one holds it in this mix. ex2 is the
// PTX ex2.approx.ftz.f32 (one MUFU.EX2, no range reduction); with the host's b = 0.999,
// c = 1e-3, s = 2^(c - b s) settles near 0.64, so nothing overflows.
#include <cstdint>

__device__ __forceinline__ float ex2(float x) {
    float y;
    asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(y) : "f"(x));
    return y;
}

#define XU_ROWS(STEP)                                                                           \
    float s[8], l[8], o[8];                                                                     \
    for (int j = 0; j < 8; ++j) s[j] = 0.5f + (threadIdx.x + j) * 1e-4f, l[j] = 0.f, o[j] = 1.f; \
    long long t0 = clock64();                                                                   \
    for (int i = 0; i < iters; ++i) {                                                           \
        _Pragma("unroll") for (int k = 0; k < 16; ++k) {                                        \
            _Pragma("unroll") for (int j = 0; j < 8; ++j) { STEP }                              \
        }                                                                                       \
    }                                                                                           \
    long long t1 = clock64();                                                                   \
    if ((threadIdx.x & 31) == 0) cycles[threadIdx.x >> 5] = t1 - t0;                            \
    float acc = 0.f;                                                                            \
    for (int j = 0; j < 8; ++j) acc += s[j] + l[j] + o[j];                                      \
    out[threadIdx.x] = acc;

extern "C" __global__ void __launch_bounds__(1024)
xu_soft1(float* out, long long* cycles, int iters, float b, float c) {
    XU_ROWS(s[j] = ex2(fmaf(s[j], -b, c));)
}

extern "C" __global__ void __launch_bounds__(1024)
xu_soft2(float* out, long long* cycles, int iters, float b, float c) {
    XU_ROWS(s[j] = ex2(fmaf(s[j], -b, c)); l[j] += s[j];)
}

extern "C" __global__ void __launch_bounds__(1024)
xu_soft3(float* out, long long* cycles, int iters, float b, float c) {
    XU_ROWS(s[j] = ex2(fmaf(s[j], -b, c)); l[j] += s[j]; o[j] *= s[j];)
}
