// Compile-time configuration of one kernel variant.
//
// The values come from kernels/config.py (KernelConfig.defines()) as -D macros, so the
// Python dataclass stays the single source of truth. This header is plain C++ (no CUDA
// types) so the host-side binding can include it too.
#pragma once

#if !defined(FP_D_HEAD) || !defined(FP_B_R) || !defined(FP_B_C) || !defined(FP_N_WARPS)
#error "compile with the -D macros from kernels/config.py: KernelConfig.nvcc_flags()"
#endif
// Kernel-7-only options (kernels 1-6 leave them at 0): a persistent grid, and a minimum
// number of resident CTAs per SM handed to __launch_bounds__ (0: none asked for).
#ifndef FP_PERSISTENT
#define FP_PERSISTENT 0
#endif
#ifndef FP_MIN_BLOCKS
#define FP_MIN_BLOCKS 0
#endif
// Kernel 7's Hopper form: warpgroup MMAs (sm_90a), flash_fwd_wgmma.cuh.
#ifndef FP_WGMMA
#define FP_WGMMA 0
#endif
// Kernel 7's warp-specialised Hopper form (flash_fwd_ws.cuh): a producer warpgroup loads
// K/V with TMA into FP_KV_STAGES buffers; FP_OVERLAP overlaps softmax with the next
// block's MMAs inside a consumer warpgroup, FP_PINGPONG alternates two consumer
// warpgroups' MMAs through named barriers.
#ifndef FP_WS
#define FP_WS 0
#endif
#ifndef FP_KV_STAGES
#define FP_KV_STAGES 2
#endif
#ifndef FP_OVERLAP
#define FP_OVERLAP 0
#endif
#ifndef FP_PINGPONG
#define FP_PINGPONG 0
#endif
#if FP_MIN_BLOCKS > 0
#define FP_LAUNCH_BOUNDS(threads) __launch_bounds__(threads, FP_MIN_BLOCKS)
#else
#define FP_LAUNCH_BOUNDS(threads) __launch_bounds__(threads)
#endif

namespace flashprof {

struct Config {
    static constexpr int d_head = FP_D_HEAD;
    static constexpr int B_r = FP_B_R;
    static constexpr int B_c = FP_B_C;
    static constexpr int n_warps = FP_N_WARPS;
    static constexpr bool async_copy = FP_ASYNC_COPY != 0;
    static constexpr bool eager = FP_EAGER != 0;
    static constexpr bool swizzled = FP_SWIZZLED != 0;
    static constexpr int Q_frags = FP_Q_FRAGS;
    static constexpr int K_frags = FP_K_FRAGS;
    static constexpr int V_frags = FP_V_FRAGS;
    static constexpr bool dbuf = FP_DBUF != 0;
    static constexpr bool opt_softmax = FP_OPT_SOFTMAX != 0;
    static constexpr int fault = FP_FAULT;  // 0 none, 1 skip_rescale, 2 drop_last_block
    static constexpr bool persistent = FP_PERSISTENT != 0;  // one CTA loops over many Q tiles
    static constexpr int min_blocks = FP_MIN_BLOCKS;
    static constexpr bool wgmma = FP_WGMMA != 0;  // warpgroup MMAs, 64 query rows per warpgroup
    static constexpr bool ws = FP_WS != 0;        // + a TMA producer warpgroup (n_warps: the consumers)
    static constexpr int kv_stages = FP_KV_STAGES;
    static constexpr bool overlap = FP_OVERLAP != 0;
    static constexpr bool pingpong = FP_PINGPONG != 0;

    static constexpr int consumer_wgs = n_warps / 4;
    static constexpr int threads = 32 * n_warps + (ws ? 128 : 0);
    static constexpr int rows_per_warp = B_r / n_warps;
    static constexpr int m_tiles = rows_per_warp / 16;      // 16-row MMA tiles per warp
    static constexpr bool q_resident = Q_frags == 0;
    static constexpr int qk_steps = d_head / 16;             // k-steps of S = Q K^T
    static constexpr int pv_steps = B_c / 16;                // k-steps of O += P V
    static constexpr int s_ntiles = B_c / 8;                 // n8 tiles of S
    static constexpr int o_ntiles = d_head / 8;              // n8 tiles of O
    // A persistent CTA keeps two Q tiles: the next tile's Q is loaded while this one computes
    // (the warp-specialised one: while this one computes and stores its O).
    static constexpr int q_buffers = persistent ? 2 : 1;
    // wgmma's swizzled tiles start on 1024-byte boundaries: room to align the base.
    static constexpr int kv_buffers = ws ? kv_stages : 1;  // K (and V) tiles in shared memory
    static constexpr int smem_bytes = (q_buffers * B_r + 2 * kv_buffers * B_c) * d_head * 2 + (wgmma ? 1024 : 0);
    // setmaxnreg budgets of the warp-specialised kernel: the producer keeps the minimum,
    // the consumers share the rest of the SM's 64 K registers (per resident CTA).
    static constexpr int producer_regs = 24;
    static constexpr int ctas_per_sm = min_blocks > 0 ? min_blocks : 1;
    static constexpr int consumer_regs_raw = ((65536 / ctas_per_sm / 128 - producer_regs) / (consumer_wgs > 0 ? consumer_wgs : 1)) / 8 * 8;
    static constexpr int consumer_regs = consumer_regs_raw > 240 ? 240 : consumer_regs_raw;

    static_assert(d_head == 128, "only d_head = 128 is implemented");
    static_assert(B_r % (16 * n_warps) == 0, "each warp owns whole 16-row tiles");
    static_assert(B_c % 16 == 0, "B_c must be a multiple of 16");
    static_assert(Q_frags == 0 || Q_frags == K_frags, "Q frags must be 0 or equal K frags");
    static_assert(K_frags == 0 || qk_steps % K_frags == 0, "K frags must divide d_head/16");
    static_assert(V_frags == 0 || pv_steps % V_frags == 0, "V frags must divide B_c/16");
    static_assert(!eager || async_copy, "eager loads need cp.async");
    static_assert(!persistent || eager, "the persistent kernel prefetches through the eager K/V path");
    static_assert(!wgmma || (B_r == 16 * n_warps && (B_c == 64 || B_c == 128) && eager && (ws || !persistent)),
                  "wgmma: one m64 tile per warpgroup, B_c 64 or 128, eager; persistent only warp-specialised");
    static_assert(min_blocks >= 0 && min_blocks <= 4, "min blocks per SM: 0 (unset) to 4");
    static_assert(!ws || (wgmma && kv_stages >= 2 && kv_stages <= 4), "ws: a wgmma kernel with 2-4 K/V stages");
    static_assert(ws || (kv_stages == 2 && !overlap && !pingpong), "stages, overlap, pingpong: ws options");
    static_assert(!pingpong || (overlap && consumer_wgs == 2), "pingpong: two consumer warpgroups, overlap on");
};

}  // namespace flashprof
