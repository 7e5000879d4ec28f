// Kernel 7's Hopper form (Cfg::wgmma, sm_90a only): the same FlashAttention-2 forward pass
// and the same eager K/V pipeline as flash_fwd.cuh, with the two products of each KV block
// issued as warpgroup MMAs (wgmma) instead of per-warp mma.sync + ldmatrix.
//
// A CTA of n_warps/4 warpgroups owns B_r = 64 x warpgroups query rows; warpgroup w owns
// rows 64w..64w+63, and warp i of it the 16 rows 16i.. of those, in the accumulator layout
// of mma.sync (which is what wgmma's m64nN fragments are, per warp), so the online softmax,
// P = round(S) and the epilogue are the mma.sync kernel's own code. Q, K and V live in the
// 128-byte-swizzled panel layout of wgmma.cuh; S = Q K^T reads both operands from shared
// memory, O += P V takes P from registers and V from shared memory.
#pragma once
#include <cstdint>
#include "config.cuh"
#include "copies.cuh"
#include "epilogue.cuh"
#include "softmax.cuh"
#include "wgmma.cuh"

namespace flashprof {

__device__ __forceinline__ void wait_for_operands() {
    cp_async_wait<0>();
    fence_proxy_async();  // this thread's cp.async writes, visible to wgmma
    __syncthreads();      // ... and everyone's
}

template <class Cfg, typename T>
__global__ void FP_LAUNCH_BOUNDS(Cfg::threads)
flash_fwd_wgmma_kernel(const T* __restrict__ Q, const T* __restrict__ K, const T* __restrict__ V,
                       T* __restrict__ O, int seq, int heads, float scale) {
    static_assert(Cfg::wgmma && Cfg::eager && Cfg::async_copy, "the wgmma kernel is eager, with cp.async");
    static_assert(Cfg::B_r == 16 * Cfg::n_warps && Cfg::m_tiles == 1, "one m64 tile per warpgroup");
    extern __shared__ __align__(128) unsigned char smem_raw[];
    // Panels must start on 1024-byte boundaries (smem_bytes holds the slack for this).
    unsigned char* smem = smem_raw + ((kAtomBytes - (smem_u32(smem_raw) & (kAtomBytes - 1))) & (kAtomBytes - 1));
    T* sQ = reinterpret_cast<T*>(smem);
    T* sK = sQ + Cfg::B_r * Cfg::d_head;
    T* sV = sK + Cfg::B_c * Cfg::d_head;

    const int tid = threadIdx.x;
    const int lane = tid & 31;
    const int warp_row0 = (tid >> 5) * Cfg::rows_per_warp;  // = 64 x warpgroup + 16 x warp in it
    const int wg_row0 = (tid >> 7) * 64;

    const int row_stride = heads * Cfg::d_head;
    const int64_t bh = (static_cast<int64_t>(blockIdx.z) * seq * heads + blockIdx.y) * Cfg::d_head;
    const int64_t q_off = bh + static_cast<int64_t>(blockIdx.x) * Cfg::B_r * row_stride;
    const T* gK = K + bh;
    const T* gV = V + bh;
    const int64_t kv_step = static_cast<int64_t>(Cfg::B_c) * row_stride;

    int n_blocks = seq / Cfg::B_c;
    if constexpr (Cfg::fault == 2) n_blocks -= 1;  // deliberate bug for gate tests

    float O_acc[1][Cfg::o_ntiles][4];
    float m[1][2];
    float l[1][2];
#pragma unroll
    for (int n = 0; n < Cfg::o_ntiles; ++n)
#pragma unroll
        for (int i = 0; i < 4; ++i) O_acc[0][n][i] = 0.f;
    m[0][0] = m[0][1] = -INFINITY;
    l[0][0] = l[0][1] = 0.f;

    issue_panel_tile<Cfg, Cfg::B_r>(sQ, Q + q_off, row_stride, tid);
    issue_panel_tile<Cfg, Cfg::B_c>(sK, gK, row_stride, tid);

    for (int j = 0; j < n_blocks; ++j) {
        wait_for_operands();  // K_j (and Q) arrived; every warp is done with V_{j-1}
        issue_panel_tile<Cfg, Cfg::B_c>(sV, gV + j * kv_step, row_stride, tid);

        float S[1][Cfg::s_ntiles][4];
        wg_gemm_qk<Cfg, T>(reinterpret_cast<float(&)[Cfg::B_c / 2]>(S), sQ, sK, wg_row0);

        wait_for_operands();  // V_j arrived; every warp is done with K_j
        if (j + 1 < n_blocks) issue_panel_tile<Cfg, Cfg::B_c>(sK, gK + (j + 1) * kv_step, row_stride, tid);

        online_softmax<Cfg>(S, m, l, O_acc, scale);
        uint32_t P[1][Cfg::pv_steps][4];
        s_to_p<Cfg, T>(S, P);
        wg_gemm_pv<Cfg, T>(reinterpret_cast<float(&)[Cfg::d_head / 2]>(O_acc), P[0], sV);
    }

    // Every warp's products have finished reading Q (its last S is two barriers back),
    // so the epilogue may stage O over the Q tile, each warp in its own rows' bytes.
    write_output<Cfg>(O_acc, l, sQ, O + q_off, row_stride, warp_row0, lane);
}

}  // namespace flashprof
