// FlashAttention-2 forward kernel (non-causal, d_head = 128), one template for all seven
// variants of the series; the variant is the Cfg type (see config.cuh).
//
// Grid (seq/B_r, heads, batch); each block owns B_r query rows of one (batch, head) and
// walks all KV blocks of B_c keys. Each warp owns B_r/n_warps query rows.
#pragma once
#include <cstdint>
#include "copies.cuh"
#include "epilogue.cuh"
#include "mma.cuh"
#include "softmax.cuh"

namespace flashprof {

template <class Cfg, typename T>
__global__ void __launch_bounds__(Cfg::threads)
flash_fwd_kernel(const T* __restrict__ Q, const T* __restrict__ K, const T* __restrict__ V,
                 T* __restrict__ O, int seq, int heads, float scale) {
    extern __shared__ __align__(128) unsigned char smem[];
    T* sQ = reinterpret_cast<T*>(smem);
    T* sK = sQ + Cfg::B_r * Cfg::d_head;
    T* sV = sK + Cfg::B_c * Cfg::d_head;

    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int warp_row0 = (tid >> 5) * Cfg::rows_per_warp;

    const int row_stride = heads * Cfg::d_head;  // elements between consecutive seq positions
    const int64_t bh = (static_cast<int64_t>(blockIdx.z) * seq * heads + blockIdx.y) * Cfg::d_head;
    const int64_t q_off = bh + static_cast<int64_t>(blockIdx.x) * Cfg::B_r * row_stride;
    const T* gQ = Q + q_off;
    const T* gK = K + bh;
    const T* gV = V + bh;
    const int64_t kv_step = static_cast<int64_t>(Cfg::B_c) * row_stride;

    int n_blocks = seq / Cfg::B_c;
    if constexpr (Cfg::fault == 2) n_blocks -= 1;  // deliberate bug for gate tests

    float O_acc[Cfg::m_tiles][Cfg::o_ntiles][4];
    float m[Cfg::m_tiles][2];
    float l[Cfg::m_tiles][2];
#pragma unroll
    for (int mt = 0; mt < Cfg::m_tiles; ++mt) {
#pragma unroll
        for (int n = 0; n < Cfg::o_ntiles; ++n)
#pragma unroll
            for (int i = 0; i < 4; ++i) O_acc[mt][n][i] = 0.f;
        m[mt][0] = m[mt][1] = -INFINITY;
        l[mt][0] = l[mt][1] = 0.f;
    }

    // Prologue: Q (and, when eager, K_0 right behind it).
    issue_tile<Cfg, Cfg::B_r>(sQ, gQ, row_stride, tid);
    if constexpr (Cfg::eager) {
        issue_tile<Cfg, Cfg::B_c>(sK, gK, row_stride, tid);
        wait_tiles<Cfg, 1>();
    } else {
        wait_tiles<Cfg, 0>();
    }
    __syncthreads();

    uint32_t q_res[Cfg::m_tiles][Cfg::qk_steps][4];
    if constexpr (Cfg::q_resident) load_q_resident<Cfg>(q_res, sQ, warp_row0, lane);

    for (int j = 0; j < n_blocks; ++j) {
        // K_j: eager variants issued it during the previous block (or the prologue).
        if constexpr (!Cfg::eager) issue_tile<Cfg, Cfg::B_c>(sK, gK + j * kv_step, row_stride, tid);
        wait_tiles<Cfg, 0>();
        __syncthreads();  // K_j visible to all warps; every warp is done with V_{j-1}

        if constexpr (Cfg::eager) issue_tile<Cfg, Cfg::B_c>(sV, gV + j * kv_step, row_stride, tid);

        float S[Cfg::m_tiles][Cfg::s_ntiles][4];
        gemm_qk<Cfg>(S, q_res, sQ, sK, warp_row0, lane);

        if constexpr (!Cfg::eager) issue_tile<Cfg, Cfg::B_c>(sV, gV + j * kv_step, row_stride, tid);
        wait_tiles<Cfg, 0>();
        __syncthreads();  // V_j visible; every warp is done with K_j

        if constexpr (Cfg::eager) {
            if (j + 1 < n_blocks) issue_tile<Cfg, Cfg::B_c>(sK, gK + (j + 1) * kv_step, row_stride, tid);
        }

        online_softmax<Cfg>(S, m, l, O_acc, scale);
        uint32_t P[Cfg::m_tiles][Cfg::pv_steps][4];
        s_to_p<Cfg, T>(S, P);
        gemm_pv<Cfg>(O_acc, P, sV, lane);
    }

    write_output<Cfg>(O_acc, l, sQ, O + q_off, row_stride, warp_row0, lane);
}

}  // namespace flashprof
