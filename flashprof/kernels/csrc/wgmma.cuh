// Hopper warpgroup MMA (wgmma, sm_90a) for kernel 7's wgmma configurations: the shared
// memory layout wgmma reads, its matrix descriptors, and the two products of one KV block.
//
// Layout ("panels"): a tile of Rows x d_head 16-bit elements is stored as d_head/64
// panels of Rows x 64 elements (128-byte rows), panel p holding columns 64p..64p+63. In a
// panel, 16-byte chunk c of row r sits at chunk c XOR (r mod 8): the hardware's 128-byte
// swizzle (address bits 4-6 XOR bits 7-9) when the panel starts on a 1024-byte boundary.
// Every 8 rows form one 1024-byte swizzle atom (PTX ISA, "Shared Memory Matrix Layout",
// 128B swizzling; CUTLASS cute/atom/mma_traits_sm90_gmma.hpp, make_gmma_desc).
//
// Descriptors (PTX ISA, "Matrix Descriptor Format"): bits 0-13 start address >> 4,
// 16-29 leading byte offset >> 4, 32-45 stride byte offset >> 4, 62-63 swizzle (1 = 128B).
//   K-major (Q and K in S = Q K^T): 8-row groups 1024 B apart (stride offset); the leading
//     offset is unused; k-step ks of 16 columns starts 32 B further into its panel.
//   N-major (V in O += P V, transposed by the instruction): k-step kk of 16 keys starts
//     at key row 16 kk; key rows 8..15 of it are the next atom (stride offset 1024 B); the
//     second 64 columns of d are the next panel (leading offset = panel size).
#pragma once
#include <cstdint>
#include "copies.cuh"
#include "wgmma_ops.cuh"

namespace flashprof {

constexpr int kPanelCols = 64;    // 16-bit elements per 128-byte panel row
constexpr int kAtomBytes = 1024;  // 8 rows x 128 B

// Element offset of 16-byte chunk `chunk` (0 .. d_head/8 - 1) of row `row` in a panel tile.
template <int Rows>
__device__ __forceinline__ int panel_offset(int row, int chunk) {
    return (chunk >> 3) * Rows * kPanelCols + row * kPanelCols + (((chunk & 7) ^ (row & 7)) << 3);
}

// Copy a [Rows x d_head] tile into the panel layout (cp.async, one group).
template <class Cfg, int Rows, typename T>
__device__ __forceinline__ void issue_panel_tile(T* smem, const T* gmem, int row_stride, int tid) {
    static_assert(Cfg::async_copy, "the wgmma pipeline loads with cp.async");
    load_tile<Cfg, Rows>(smem, gmem, row_stride, tid, [](int row, int chunk) { return panel_offset<Rows>(row, chunk); });
    cp_async_commit();
}

__device__ __forceinline__ uint64_t smem_desc(uint32_t addr, uint32_t leading_bytes, uint32_t stride_bytes) {
    return wgmma_desc(addr, leading_bytes, stride_bytes, kWgmmaSwizzle128B);  // the panels' swizzle
}

// Shared-memory writes made by ordinary (generic-proxy) stores and cp.async become visible
// to wgmma's operand reads (async proxy) only after this fence (then a barrier for others').
__device__ __forceinline__ void fence_proxy_async() {
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}

// The compiler must not move reads or writes of accumulator registers across the
// asynchronous MMAs that own them: an empty asm that "uses and redefines" each register.
template <int N>
__device__ __forceinline__ void fence_registers(float (&r)[N]) {
#pragma unroll
    for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}

// The same for an A operand in registers: wgmma reads them until its group is waited for.
template <int K>
__device__ __forceinline__ void fence_registers(uint32_t (&r)[K][4]) {
#pragma unroll
    for (int k = 0; k < K; ++k)
#pragma unroll
        for (int i = 0; i < 4; ++i) asm volatile("" : "+r"(r[k][i])::"memory");
}

// Issue S = Q K^T for this warpgroup's 64 query rows (q_row0 = its first row in the Q
// tile) as one committed group; S belongs to the MMA until a wgmma_wait covers the group.
template <class Cfg, typename T>
__device__ __forceinline__ void wg_issue_qk(float (&S)[Cfg::B_c / 2], const T* sQ, const T* sK, int q_row0) {
    const uint32_t q = smem_u32(sQ) + q_row0 * kPanelCols * 2;
    const uint32_t k = smem_u32(sK);
    constexpr uint32_t q_panel = Cfg::B_r * kPanelCols * 2;
    constexpr uint32_t k_panel = Cfg::B_c * kPanelCols * 2;
    fence_registers(S);
    wgmma_fence();
#pragma unroll
    for (int ks = 0; ks < Cfg::d_head / 16; ++ks) {
        const uint32_t off = (ks % 4) * 32u;  // 16 columns = 32 B into the panel
        const uint64_t da = smem_desc(q + (ks / 4) * q_panel + off, 16, kAtomBytes);
        const uint64_t db = smem_desc(k + (ks / 4) * k_panel + off, 16, kAtomBytes);
        Wgmma<T, Cfg::B_c>::ss(S, da, db, ks > 0);
    }
    wgmma_commit();
}

// Issue O += P V for this warpgroup as one committed group; P (the rounded S) in
// registers, V N-major in its panels. O and P belong to the MMA until a wait covers it.
template <class Cfg, typename T>
__device__ __forceinline__ void wg_issue_pv(float (&O)[Cfg::d_head / 2], const uint32_t (&P)[Cfg::B_c / 16][4],
                                            const T* sV) {
    static_assert(Cfg::d_head == 128, "O += P V is one m64n128 product per k-step");
    const uint32_t v = smem_u32(sV);
    constexpr uint32_t v_panel = Cfg::B_c * kPanelCols * 2;
    fence_registers(O);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < Cfg::B_c / 16; ++kk) {
        const uint64_t db = smem_desc(v + kk * 16 * kPanelCols * 2, v_panel, kAtomBytes);
        Wgmma<T, Cfg::d_head>::rs_bt(O, P[kk], db, 1);
    }
    wgmma_commit();
}

// The two products, each waited for at once (the single-warpgroup-pipeline kernel).
template <class Cfg, typename T>
__device__ __forceinline__ void wg_gemm_qk(float (&S)[Cfg::B_c / 2], const T* sQ, const T* sK, int q_row0) {
    wg_issue_qk<Cfg, T>(S, sQ, sK, q_row0);
    wgmma_wait<0>();
    fence_registers(S);
}

template <class Cfg, typename T>
__device__ __forceinline__ void wg_gemm_pv(float (&O)[Cfg::d_head / 2], const uint32_t (&P)[Cfg::B_c / 16][4],
                                           const T* sV) {
    wg_issue_pv<Cfg, T>(O, P, sV);
    wgmma_wait<0>();
    fence_registers(O);
}

}  // namespace flashprof
