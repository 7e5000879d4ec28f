// Online softmax on the S accumulators, in fp32. Each thread holds two rows (g and g+8)
// of every 16-row tile; a row's values are spread over the 4 lanes of a quad, so row
// maxima are reduced with shfl_xor 2 and 1. Row sums stay per-thread partial sums until
// the epilogue (rescaling is linear, so the partial sums can be rescaled independently).
#pragma once
#include <cstdint>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace flashprof {

constexpr float kLog2e = 1.4426950408889634f;

__device__ __forceinline__ float fast_exp2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

__device__ __forceinline__ float quad_max(float x) {
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
    return x;
}

__device__ __forceinline__ float quad_sum(float x) {
    x += __shfl_xor_sync(0xffffffffu, x, 2);
    x += __shfl_xor_sync(0xffffffffu, x, 1);
    return x;
}

// One row r (0: g, 1: g+8) of 16-row tile mt for one KV block: update its maximum m and
// sum l, overwrite its S values with P = exp(scale*(S - m)); returns the factor
// exp(scale*(m_old - m_new)) by which the row's O accumulators must be rescaled.
//
// Baseline (kernels 1-5): S *= scale in its own pass (FMUL), then exp(S - m) through
// __expf, which is itself an FMUL by log2(e) plus MUFU.EX2.
// Optimized (kernel 6+): m is kept unscaled and the scale is folded into one FFMA:
// P = exp2(S*c - m*c) with c = log2(e)/sqrt(d); rescale = exp2((m_old - m_new)*c).
template <class Cfg>
__device__ __forceinline__ float softmax_row(float (&S)[Cfg::m_tiles][Cfg::s_ntiles][4],
                                             float (&m)[Cfg::m_tiles][2], float (&l)[Cfg::m_tiles][2],
                                             int mt, int r, float scale) {
    const float c = scale * kLog2e;
    if constexpr (!Cfg::opt_softmax) {
#pragma unroll
        for (int n = 0; n < Cfg::s_ntiles; ++n) {
            S[mt][n][2 * r] *= scale;
            S[mt][n][2 * r + 1] *= scale;
        }
    }
    float mx = -INFINITY;
#pragma unroll
    for (int n = 0; n < Cfg::s_ntiles; ++n)
        mx = fmaxf(mx, fmaxf(S[mt][n][2 * r], S[mt][n][2 * r + 1]));
    mx = quad_max(mx);
    const float m_new = fmaxf(m[mt][r], mx);

    float rescale;
    if constexpr (Cfg::opt_softmax) {
        rescale = fast_exp2((m[mt][r] - m_new) * c);
        const float mc = m_new * c;
#pragma unroll
        for (int n = 0; n < Cfg::s_ntiles; ++n) {
            S[mt][n][2 * r] = fast_exp2(fmaf(S[mt][n][2 * r], c, -mc));
            S[mt][n][2 * r + 1] = fast_exp2(fmaf(S[mt][n][2 * r + 1], c, -mc));
        }
    } else {
        rescale = __expf(m[mt][r] - m_new);
#pragma unroll
        for (int n = 0; n < Cfg::s_ntiles; ++n) {
            S[mt][n][2 * r] = __expf(S[mt][n][2 * r] - m_new);
            S[mt][n][2 * r + 1] = __expf(S[mt][n][2 * r + 1] - m_new);
        }
    }
    if constexpr (Cfg::fault == 1) rescale = 1.f;  // deliberate bug for gate tests
    m[mt][r] = m_new;

    float rowsum = 0.f;
#pragma unroll
    for (int n = 0; n < Cfg::s_ntiles; ++n) rowsum += S[mt][n][2 * r] + S[mt][n][2 * r + 1];
    l[mt][r] = l[mt][r] * rescale + rowsum;
    return rescale;
}

template <class Cfg>
__device__ __forceinline__ void rescale_row(float (&O)[Cfg::m_tiles][Cfg::o_ntiles][4], int mt, int r,
                                            float rescale) {
#pragma unroll
    for (int n = 0; n < Cfg::o_ntiles; ++n) {
        O[mt][n][2 * r] *= rescale;
        O[mt][n][2 * r + 1] *= rescale;
    }
}

// One KV block: every row's softmax_row, each followed by its O rescale.
template <class Cfg>
__device__ __forceinline__ void online_softmax(float (&S)[Cfg::m_tiles][Cfg::s_ntiles][4],
                                               float (&m)[Cfg::m_tiles][2], float (&l)[Cfg::m_tiles][2],
                                               float (&O)[Cfg::m_tiles][Cfg::o_ntiles][4], float scale) {
#pragma unroll
    for (int mt = 0; mt < Cfg::m_tiles; ++mt)
#pragma unroll
        for (int r = 0; r < 2; ++r) rescale_row<Cfg>(O, mt, r, softmax_row<Cfg>(S, m, l, mt, r, scale));
}

// The same block in two halves, for a kernel whose O accumulators are still being written
// by an asynchronous MMA while P is computed: first every row's P, m and l (the factors
// into `rescale`), then, once that MMA is done, the O rescale.
template <class Cfg>
__device__ __forceinline__ void online_softmax_p(float (&S)[Cfg::m_tiles][Cfg::s_ntiles][4],
                                                 float (&m)[Cfg::m_tiles][2], float (&l)[Cfg::m_tiles][2],
                                                 float (&rescale)[Cfg::m_tiles][2], float scale) {
#pragma unroll
    for (int mt = 0; mt < Cfg::m_tiles; ++mt)
#pragma unroll
        for (int r = 0; r < 2; ++r) rescale[mt][r] = softmax_row<Cfg>(S, m, l, mt, r, scale);
}

template <class Cfg>
__device__ __forceinline__ void online_softmax_o(float (&O)[Cfg::m_tiles][Cfg::o_ntiles][4],
                                                 const float (&rescale)[Cfg::m_tiles][2]) {
#pragma unroll
    for (int mt = 0; mt < Cfg::m_tiles; ++mt)
#pragma unroll
        for (int r = 0; r < 2; ++r) rescale_row<Cfg>(O, mt, r, rescale[mt][r]);
}

template <typename T>
__device__ __forceinline__ uint32_t pack2(float a, float b);

template <>
__device__ __forceinline__ uint32_t pack2<__half>(float a, float b) {
    __half2 h = __floats2half2_rn(a, b);
    return *reinterpret_cast<uint32_t*>(&h);
}

template <>
__device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float a, float b) {
    __nv_bfloat162 h = __floats2bfloat162_rn(a, b);
    return *reinterpret_cast<uint32_t*>(&h);
}

// P as the A operand of P V: the C layout of two adjacent n8 tiles of S is exactly the
// A layout of one k16 step, so P never goes through shared memory.
template <class Cfg, typename T>
__device__ __forceinline__ void s_to_p(const float (&S)[Cfg::m_tiles][Cfg::s_ntiles][4],
                                       uint32_t (&P)[Cfg::m_tiles][Cfg::pv_steps][4]) {
#pragma unroll
    for (int mt = 0; mt < Cfg::m_tiles; ++mt)
#pragma unroll
        for (int k = 0; k < Cfg::pv_steps; ++k) {
            P[mt][k][0] = pack2<T>(S[mt][2 * k][0], S[mt][2 * k][1]);
            P[mt][k][1] = pack2<T>(S[mt][2 * k][2], S[mt][2 * k][3]);
            P[mt][k][2] = pack2<T>(S[mt][2 * k + 1][0], S[mt][2 * k + 1][1]);
            P[mt][k][3] = pack2<T>(S[mt][2 * k + 1][2], S[mt][2 * k + 1][3]);
        }
}

}  // namespace flashprof
