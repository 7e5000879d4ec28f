// Kernel 7's warp-specialised Hopper form (Cfg::ws, sm_90a only): the FlashAttention-3
// structure (Shah et al. 2024, sections 3.1-3.2) on kernel 7's wgmma products.
//
// A CTA is one producer warpgroup and n_warps/4 consumer warpgroups; consumer warpgroup c
// owns query rows 64c..64c+63 of the B_r-row Q tile, in the layout of flash_fwd_wgmma.cuh.
//   producer  gives its registers back (setmaxnreg), then one thread loads Q once and every
//             K_j, V_j with TMA into a ring of kv_stages buffers, each guarded by a "full"
//             transaction barrier (TMA bytes landed) and an "empty" one (every consumer
//             thread done reading it).
//   consumers take the registers (setmaxnreg) and run the KV loop on what has landed:
//     plain    S_j = Q K_j^T; softmax; O += P_j V_j, each product waited for at once.
//     overlap  in one window, S_j = Q K_j^T and O += P_{j-1} V_{j-1} are issued together;
//              softmax(S_j) runs while the second is still in flight, and only the O
//              rescale and P_j wait for it (FA3's intra-warpgroup pipelining).
//     pingpong the two consumer warpgroups take turns at the window (named barriers 1 and 2),
//              so one's softmax runs under the other's MMAs (FA3's inter-warpgroup schedule).
#pragma once
#include <cstdint>
#include "config.cuh"
#include "epilogue.cuh"
#include "softmax.cuh"
#include "tma.cuh"
#include "wgmma.cuh"

namespace flashprof {

// The ring of K/V buffers: block j sits in stage j mod S; its barriers' phase parity is
// the number of earlier passes over that stage, mod 2. A persistent CTA numbers its blocks
// across its tiles (tile i's block j is i * n_blocks + j), so the ring runs on unbroken.
// Q has q_buffers buffers: a persistent CTA loads tile i + 1's Q into one while tile i runs
// on the other, and a "q_empty" barrier frees a buffer once both consumer warpgroups have
// staged and stored their O rows from it.
template <class Cfg>
struct KvRing {
    static constexpr int stages = Cfg::kv_stages;
    static constexpr int qb = Cfg::q_buffers;
    static constexpr int n_bars = qb + 4 * stages + (Cfg::persistent ? qb : 0);
    // shared address of [q_full[qb], k_full[S], k_empty[S], v_full[S], v_empty[S], q_empty[qb]]
    uint32_t bars;

    __device__ __forceinline__ uint32_t q_full(int b) const { return bars + 8 * b; }
    __device__ __forceinline__ uint32_t k_full(int j) const { return bars + 8 * (qb + j % stages); }
    __device__ __forceinline__ uint32_t k_empty(int j) const { return bars + 8 * (qb + stages + j % stages); }
    __device__ __forceinline__ uint32_t v_full(int j) const { return bars + 8 * (qb + 2 * stages + j % stages); }
    __device__ __forceinline__ uint32_t v_empty(int j) const { return bars + 8 * (qb + 3 * stages + j % stages); }
    __device__ __forceinline__ uint32_t q_empty(int b) const { return bars + 8 * (qb + 4 * stages + b); }
    __device__ __forceinline__ static uint32_t parity(int j) { return (j / stages) & 1; }
    __device__ __forceinline__ static int stage(int j) { return j % stages; }
    // Tile i (of this CTA) uses Q buffer i mod qb, in that buffer's (i / qb)-th phase.
    __device__ __forceinline__ static int q_buffer(int i) { return i % qb; }
    __device__ __forceinline__ static uint32_t q_parity(int i) { return (i / qb) & 1; }
};

// Where a tile lies: Q rows [q_row, q_row + B_r) of the (batch * seq)-row tensors, its
// batch's first K/V row, its head, and its O block. The grid kernel's tile is its CTA's
// (blockIdx = query block, head, batch); a persistent CTA's tiles are t = blockIdx.x +
// i * gridDim.x in the same order (query block fastest), so the CTAs at work at one time
// share heads and their K/V in L2.
struct Tile {
    int q_block, head, batch;
    __device__ __forceinline__ static Tile of_grid() {
        return {static_cast<int>(blockIdx.x), static_cast<int>(blockIdx.y), static_cast<int>(blockIdx.z)};
    }
    template <class Cfg>
    __device__ __forceinline__ static Tile of_index(int t, int seq, int heads) {
        const int n_q = seq / Cfg::B_r;
        const int bh = t / n_q;
        return {t - bh * n_q, bh % heads, bh / heads};
    }
};

// Ping-pong turns between the two consumer warpgroups (no-ops without pingpong). Warpgroup
// c waits on barrier 1 + c for its turn at the MMA window and, leaving it, hands the turn
// to the other one. The other warpgroup opens the first turn of warpgroup 0 and leaves
// out its own last hand-over, so every barrier phase gets exactly 256 threads.
template <class Cfg>
struct Turns {
    int cwg;
    __device__ __forceinline__ void start() const {
        if constexpr (Cfg::pingpong) {
            if (cwg == 1) named_bar_arrive(1, 256);
        }
    }
    __device__ __forceinline__ void take() const {
        if constexpr (Cfg::pingpong) named_bar_sync(1 + cwg, 256);
    }
    __device__ __forceinline__ void hand_over(bool last) const {
        if constexpr (Cfg::pingpong) {
            if (!(last && cwg == 1)) named_bar_arrive(2 - cwg, 256);
        }
    }
};

// One tile's loads: Q into buffer `qb` (once its last tile has left it), then K_j, V_j of
// this tile's blocks, numbered from `base` in the ring.
template <class Cfg, typename T>
__device__ __forceinline__ void ws_produce_tile(const CUtensorMap* tmQ, const CUtensorMap* tmK,
                                                const CUtensorMap* tmV, const KvRing<Cfg>& ring, int i, T* sQ,
                                                T* sK, T* sV, int q_row, int kv_row0, int head, int n_blocks,
                                                int base) {
    constexpr uint32_t q_panel = Cfg::B_r * kPanelCols * 2;
    constexpr uint32_t kv_panel = Cfg::B_c * kPanelCols * 2;
    constexpr int panels = Cfg::d_head / kPanelCols;
    const int qb = ring.q_buffer(i);
    if constexpr (Cfg::persistent) mbar_wait(ring.q_empty(qb), ring.q_parity(i) ^ 1);
    mbar_arrive_expect_tx(ring.q_full(qb), panels * q_panel);
#pragma unroll
    for (int p = 0; p < panels; ++p)
        tma_load_3d(smem_u32(sQ + qb * Cfg::B_r * Cfg::d_head) + p * q_panel, tmQ, p * kPanelCols, head, q_row,
                    ring.q_full(qb));
    for (int jt = 0; jt < n_blocks; ++jt) {
        const int j = base + jt;
        const int s = ring.stage(j);
        const uint32_t free_parity = ring.parity(j) ^ 1;  // a fresh barrier's "previous" phase is done
        const int row = kv_row0 + jt * Cfg::B_c;
        mbar_wait(ring.k_empty(j), free_parity);
        mbar_arrive_expect_tx(ring.k_full(j), panels * kv_panel);
#pragma unroll
        for (int p = 0; p < panels; ++p)
            tma_load_3d(smem_u32(sK) + (s * panels + p) * kv_panel, tmK, p * kPanelCols, head, row, ring.k_full(j));
        mbar_wait(ring.v_empty(j), free_parity);
        mbar_arrive_expect_tx(ring.v_full(j), panels * kv_panel);
#pragma unroll
        for (int p = 0; p < panels; ++p)
            tma_load_3d(smem_u32(sV) + (s * panels + p) * kv_panel, tmV, p * kPanelCols, head, row, ring.v_full(j));
    }
}

// One tile in a consumer warpgroup: the KV loop over blocks base .. base + n_blocks - 1 of
// the ring on the Q tile `sQ` (landed on q_full in phase `q_parity`), then O through its
// own rows of that tile to global memory.
template <class Cfg, typename T>
__device__ __forceinline__ void ws_consume_tile(const KvRing<Cfg>& ring, const Turns<Cfg>& turns, T* sQ, T* sK,
                                                T* sV, uint32_t q_full, uint32_t q_parity, int n_blocks, int base,
                                                T* gO, int row_stride, int wg_row0, int warp_row0, int lane,
                                                float scale) {
    constexpr int kv_elems = Cfg::B_c * Cfg::d_head;
    float O_acc[1][Cfg::o_ntiles][4];
    float m[1][2];
    float l[1][2];
#pragma unroll
    for (int n = 0; n < Cfg::o_ntiles; ++n)
#pragma unroll
        for (int i = 0; i < 4; ++i) O_acc[0][n][i] = 0.f;
    m[0][0] = m[0][1] = -INFINITY;
    l[0][0] = l[0][1] = 0.f;
    float S[1][Cfg::s_ntiles][4];
    uint32_t P[1][Cfg::pv_steps][4];
    auto& S_flat = reinterpret_cast<float(&)[Cfg::B_c / 2]>(S);
    auto& O_flat = reinterpret_cast<float(&)[Cfg::d_head / 2]>(O_acc);
    auto sK_of = [&](int j) { return sK + ring.stage(j) * kv_elems; };
    auto sV_of = [&](int j) { return sV + ring.stage(j) * kv_elems; };

    mbar_wait(q_full, q_parity);
    if constexpr (!Cfg::overlap) {
        for (int jt = 0; jt < n_blocks; ++jt) {
            const int j = base + jt;
            mbar_wait(ring.k_full(j), ring.parity(j));
            wg_gemm_qk<Cfg, T>(S_flat, sQ, sK_of(j), wg_row0);
            mbar_arrive(ring.k_empty(j));
            online_softmax<Cfg>(S, m, l, O_acc, scale);
            s_to_p<Cfg, T>(S, P);
            mbar_wait(ring.v_full(j), ring.parity(j));
            wg_gemm_pv<Cfg, T>(O_flat, P[0], sV_of(j));
            mbar_arrive(ring.v_empty(j));
        }
    } else {
        float rescale[1][2];
        turns.start();
        // Window 0: S_0 alone.
        turns.take();
        mbar_wait(ring.k_full(base), ring.parity(base));
        wg_issue_qk<Cfg, T>(S_flat, sQ, sK_of(base), wg_row0);
        turns.hand_over(false);
        wgmma_wait<0>();
        fence_registers(S_flat);
        mbar_arrive(ring.k_empty(base));
        online_softmax_p<Cfg>(S, m, l, rescale, scale);  // O is still 0: no rescale
        s_to_p<Cfg, T>(S, P);
        // Window j: S_j and O += P_{j-1} V_{j-1}; softmax(S_j) under the second product.
        for (int jt = 1; jt < n_blocks; ++jt) {
            const int j = base + jt;
            turns.take();
            mbar_wait(ring.k_full(j), ring.parity(j));
            wg_issue_qk<Cfg, T>(S_flat, sQ, sK_of(j), wg_row0);
            mbar_wait(ring.v_full(j - 1), ring.parity(j - 1));
            wg_issue_pv<Cfg, T>(O_flat, P[0], sV_of(j - 1));
            turns.hand_over(false);
            wgmma_wait<1>();  // S_j is done; P_{j-1} V_{j-1} may still run
            fence_registers(S_flat);
            mbar_arrive(ring.k_empty(j));
            online_softmax_p<Cfg>(S, m, l, rescale, scale);
            wgmma_wait<0>();
            fence_registers(O_flat);
            fence_registers(P[0]);  // P_{j-1} was read by that product until now
            mbar_arrive(ring.v_empty(j - 1));
            online_softmax_o<Cfg>(O_acc, rescale);
            s_to_p<Cfg, T>(S, P);
        }
        // Last window: O += P_{n-1} V_{n-1}.
        const int last = base + n_blocks - 1;
        turns.take();
        mbar_wait(ring.v_full(last), ring.parity(last));
        wg_issue_pv<Cfg, T>(O_flat, P[0], sV_of(last));
        turns.hand_over(true);
        wgmma_wait<0>();
        fence_registers(O_flat);
        fence_registers(P[0]);
        mbar_arrive(ring.v_empty(last));
    }

    // Stage O over this warp's own Q rows (panel layout): the other consumer warpgroup
    // may still be reading its rows of Q, never these.
    write_output<Cfg>(O_acc, l, sQ, gO, row_stride, warp_row0, lane,
                      [](int row, int chunk) { return panel_offset<Cfg::B_r>(row, chunk); });
}

// The CTA: barriers, the warpgroups' parting, then one tile (the grid kernel) or this CTA's
// tiles of n_tiles (the persistent one).
template <class Cfg, typename T>
__device__ __forceinline__ void ws_cta(const CUtensorMap& tmQ, const CUtensorMap& tmK, const CUtensorMap& tmV,
                                       T* __restrict__ O, int seq, int heads, float scale, int n_tiles) {
    static_assert(Cfg::ws && Cfg::wgmma && Cfg::m_tiles == 1, "the warp-specialised wgmma kernel");
    constexpr int stages = Cfg::kv_stages;
    constexpr int kv_elems = Cfg::B_c * Cfg::d_head;
    extern __shared__ __align__(128) unsigned char smem_raw[];
    __shared__ __align__(8) uint64_t bars[KvRing<Cfg>::n_bars];
    unsigned char* smem = smem_raw + ((kAtomBytes - (smem_u32(smem_raw) & (kAtomBytes - 1))) & (kAtomBytes - 1));
    T* sQ = reinterpret_cast<T*>(smem);
    T* sK = sQ + Cfg::q_buffers * Cfg::B_r * Cfg::d_head;
    T* sV = sK + stages * kv_elems;
    const KvRing<Cfg> ring{smem_u32(bars)};

    const int tid = threadIdx.x;
    int n_blocks = seq / Cfg::B_c;
    if constexpr (Cfg::fault == 2) n_blocks -= 1;  // deliberate bug for gate tests

    if (tid == 0) {
        tma_prefetch_map(&tmQ);
        tma_prefetch_map(&tmK);
        tma_prefetch_map(&tmV);
        for (int b = 0; b < Cfg::q_buffers; ++b) {
            mbar_init(ring.q_full(b), 1);
            if constexpr (Cfg::persistent) mbar_init(ring.q_empty(b), 32 * Cfg::n_warps);  // every consumer thread
        }
        for (int s = 0; s < stages; ++s) {
            mbar_init(ring.k_full(s), 1);
            mbar_init(ring.v_full(s), 1);
            mbar_init(ring.k_empty(s), 32 * Cfg::n_warps);  // every consumer thread
            mbar_init(ring.v_empty(s), 32 * Cfg::n_warps);
        }
        mbar_fence_init();
    }
    __syncthreads();  // the last CTA-wide barrier: the warpgroups part here

    if (tid < 128) {  // producer warpgroup
        setmaxnreg_dec<Cfg::producer_regs>();
        if (tid == 0) {
            if constexpr (Cfg::persistent) {
                int i = 0;
                for (int t = blockIdx.x; t < n_tiles; t += gridDim.x, ++i) {
                    const Tile tile = Tile::of_index<Cfg>(t, seq, heads);
                    ws_produce_tile<Cfg, T>(&tmQ, &tmK, &tmV, ring, i, sQ, sK, sV,
                                            tile.batch * seq + tile.q_block * Cfg::B_r, tile.batch * seq, tile.head,
                                            n_blocks, i * n_blocks);
                }
            } else {
                ws_produce_tile<Cfg, T>(&tmQ, &tmK, &tmV, ring, 0, sQ, sK, sV, blockIdx.z * seq + blockIdx.x * Cfg::B_r,
                                        blockIdx.z * seq, blockIdx.y, n_blocks, 0);
            }
        }
        return;
    }
    setmaxnreg_inc<Cfg::consumer_regs>();

    const int ctid = tid - 128;
    const int lane = ctid & 31;
    const int warp_row0 = (ctid >> 5) * Cfg::rows_per_warp;  // = 64 x warpgroup + 16 x warp in it
    const int wg_row0 = (ctid >> 7) * 64;
    const Turns<Cfg> turns{ctid >> 7};
    const int row_stride = heads * Cfg::d_head;
    auto o_block = [&](const Tile& tile) {
        const int64_t bh = (static_cast<int64_t>(tile.batch) * seq * heads + tile.head) * Cfg::d_head;
        return O + bh + static_cast<int64_t>(tile.q_block) * Cfg::B_r * row_stride;
    };

    if constexpr (Cfg::persistent) {
        int i = 0;
        for (int t = blockIdx.x; t < n_tiles; t += gridDim.x, ++i) {
            const Tile tile = Tile::of_index<Cfg>(t, seq, heads);
            const int qb = ring.q_buffer(i);
            ws_consume_tile<Cfg, T>(ring, turns, sQ + qb * Cfg::B_r * Cfg::d_head, sK, sV, ring.q_full(qb),
                                    ring.q_parity(i), n_blocks, i * n_blocks, o_block(tile), row_stride, wg_row0,
                                    warp_row0, lane, scale);
            // The O staging wrote this Q buffer through the generic proxy; the next TMA load
            // into it is the async proxy's: order the two, then free the buffer.
            fence_proxy_async();
            mbar_arrive(ring.q_empty(qb));
        }
    } else {
        ws_consume_tile<Cfg, T>(ring, turns, sQ, sK, sV, ring.q_full(0), 0, n_blocks, 0, o_block(Tile::of_grid()),
                                row_stride, wg_row0, warp_row0, lane, scale);
    }
}

template <class Cfg, typename T>
__global__ void FP_LAUNCH_BOUNDS(Cfg::threads)
flash_fwd_wgmma_ws_kernel(const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
                          const __grid_constant__ CUtensorMap tmV, T* __restrict__ O, int seq, int heads,
                          float scale) {
    static_assert(!Cfg::persistent, "the grid kernel: one tile per CTA");
    ws_cta<Cfg, T>(tmQ, tmK, tmV, O, seq, heads, scale, 0);
}

template <class Cfg, typename T>
__global__ void FP_LAUNCH_BOUNDS(Cfg::threads)
flash_fwd_wgmma_ws_persistent_kernel(const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
                                     const __grid_constant__ CUtensorMap tmV, T* __restrict__ O, int seq, int heads,
                                     float scale, int n_tiles) {
    static_assert(Cfg::persistent, "the persistent kernel: one wave of CTAs over n_tiles tiles");
    ws_cta<Cfg, T>(tmQ, tmK, tmV, O, seq, heads, scale, n_tiles);
}

}  // namespace flashprof
