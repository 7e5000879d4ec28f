// FlashAttention-2 forward kernel (non-causal, d_head = 128), one template for all seven
// variants of the series; the variant is the Cfg type (see config.cuh).
//
// Grid (seq/B_r, heads, batch); each block owns B_r query rows of one (batch, head) and
// walks all KV blocks of B_c keys. Each warp owns B_r/n_warps query rows. Kernel 7 may
// instead be the persistent kernel (one wave of CTAs looping over the same Q tiles).
#pragma once
#include <cstdint>
#include "config.cuh"
#include "copies.cuh"
#include "epilogue.cuh"
#include "mma.cuh"
#include "softmax.cuh"

namespace flashprof {

// The KV loop over one Q tile: O_acc, m, l accumulate softmax(Q K^T) V for this warp's
// rows. On entry K_0 has been issued (eager variants) and Q is in sQ (and q_res). In the
// last block, where an eager variant would issue K_{j+1}, it calls last_block_issue()
// instead: the persistent kernel issues the next tile's Q and K_0 there; the grid kernel
// passes a lambda that does nothing.
template <class Cfg, typename T, class LastBlockIssue>
__device__ __forceinline__ void attend_tile(float (&O_acc)[Cfg::m_tiles][Cfg::o_ntiles][4],
                                            float (&m)[Cfg::m_tiles][2], float (&l)[Cfg::m_tiles][2],
                                            const uint32_t (&q_res)[Cfg::m_tiles][Cfg::qk_steps][4],
                                            const T* sQ, T* sK, T* sV, const T* gK, const T* gV,
                                            int64_t kv_step, int row_stride, int n_blocks, int tid,
                                            int lane, int warp_row0, float scale,
                                            LastBlockIssue&& last_block_issue) {
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
            if (j + 1 < n_blocks) {
                issue_tile<Cfg, Cfg::B_c>(sK, gK + (j + 1) * kv_step, row_stride, tid);
            } else {
                last_block_issue();
            }
        }

        online_softmax<Cfg>(S, m, l, O_acc, scale);
        uint32_t P[Cfg::m_tiles][Cfg::pv_steps][4];
        s_to_p<Cfg, T>(S, P);
        gemm_pv<Cfg>(O_acc, P, sV, lane);
    }
}

template <class Cfg>
__device__ __forceinline__ void init_accumulators(float (&O_acc)[Cfg::m_tiles][Cfg::o_ntiles][4],
                                                  float (&m)[Cfg::m_tiles][2], float (&l)[Cfg::m_tiles][2]) {
#pragma unroll
    for (int mt = 0; mt < Cfg::m_tiles; ++mt) {
#pragma unroll
        for (int n = 0; n < Cfg::o_ntiles; ++n)
#pragma unroll
            for (int i = 0; i < 4; ++i) O_acc[mt][n][i] = 0.f;
        m[mt][0] = m[mt][1] = -INFINITY;
        l[mt][0] = l[mt][1] = 0.f;
    }
}

template <class Cfg, typename T>
__global__ void FP_LAUNCH_BOUNDS(Cfg::threads)
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

// Persistent variant (kernel 7 only, Cfg::persistent): a grid of about one wave of CTAs,
// each walking Q tiles tile = blockIdx.x, blockIdx.x + gridDim.x, ... in the grid kernel's
// order (Q tile fastest, then head, then batch: neighbouring CTAs share K/V in L2). Q has
// two shared buffers: in the last KV block of a tile the CTA issues the next tile's Q (into
// the other buffer) and K_0 (into the K buffer, free by then), so the next tile's prologue
// loads fly while this tile finishes its last P V and writes O, instead of a fresh CTA
// waiting for them on an SM with nothing else to run.
template <class Cfg, typename T>
__global__ void FP_LAUNCH_BOUNDS(Cfg::threads)
flash_fwd_persistent_kernel(const T* __restrict__ Q, const T* __restrict__ K, const T* __restrict__ V,
                            T* __restrict__ O, int seq, int heads, int n_tiles, float scale) {
    static_assert(Cfg::persistent && Cfg::eager, "persistent kernel needs the persistent, eager config");
    extern __shared__ __align__(128) unsigned char smem[];
    T* sQ_bufs = reinterpret_cast<T*>(smem);
    T* sK = sQ_bufs + 2 * Cfg::B_r * Cfg::d_head;
    T* sV = sK + Cfg::B_c * Cfg::d_head;

    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int warp_row0 = (tid >> 5) * Cfg::rows_per_warp;
    const int row_stride = heads * Cfg::d_head;
    const int64_t kv_step = static_cast<int64_t>(Cfg::B_c) * row_stride;
    const int m_blocks = seq / Cfg::B_r;

    int n_blocks = seq / Cfg::B_c;
    if constexpr (Cfg::fault == 2) n_blocks -= 1;  // deliberate bug for gate tests

    // Element offset of (batch, head) and of the tile's first Q row.
    auto bh_of = [&](int tile) -> int64_t {
        const int rest = tile / m_blocks;
        return (static_cast<int64_t>(rest / heads) * seq * heads + rest % heads) * Cfg::d_head;
    };
    auto q_off_of = [&](int tile) -> int64_t {
        return bh_of(tile) + static_cast<int64_t>(tile % m_blocks) * Cfg::B_r * row_stride;
    };

    int tile = blockIdx.x;
    if (tile >= n_tiles) return;
    issue_tile<Cfg, Cfg::B_r>(sQ_bufs, Q + q_off_of(tile), row_stride, tid);
    issue_tile<Cfg, Cfg::B_c>(sK, K + bh_of(tile), row_stride, tid);

    for (int buf = 0; tile < n_tiles; tile += gridDim.x, buf ^= 1) {
        T* sQ = sQ_bufs + buf * Cfg::B_r * Cfg::d_head;
        const int next = tile + gridDim.x;
        const int64_t bh = bh_of(tile);

        float O_acc[Cfg::m_tiles][Cfg::o_ntiles][4];
        float m[Cfg::m_tiles][2];
        float l[Cfg::m_tiles][2];
        init_accumulators<Cfg>(O_acc, m, l);

        wait_tiles<Cfg, 1>();  // this tile's Q (its K_0, issued after it, may still fly)
        __syncthreads();

        uint32_t q_res[Cfg::m_tiles][Cfg::qk_steps][4];
        if constexpr (Cfg::q_resident) load_q_resident<Cfg>(q_res, sQ, warp_row0, lane);

        // Called after the last block's second barrier: every warp is done with K and with
        // the other Q buffer (the previous tile's Q and O staging, two tiles of barriers ago).
        auto prefetch_next = [&] {
            if (next < n_tiles) {
                issue_tile<Cfg, Cfg::B_r>(sQ_bufs + (buf ^ 1) * Cfg::B_r * Cfg::d_head, Q + q_off_of(next),
                                          row_stride, tid);
                issue_tile<Cfg, Cfg::B_c>(sK, K + bh_of(next), row_stride, tid);
            }
        };
        attend_tile<Cfg, T>(O_acc, m, l, q_res, sQ, sK, sV, K + bh, V + bh, kv_step, row_stride, n_blocks,
                            tid, lane, warp_row0, scale, prefetch_next);

        write_output<Cfg>(O_acc, l, sQ, O + q_off_of(tile), row_stride, warp_row0, lane);
    }
}

}  // namespace flashprof
