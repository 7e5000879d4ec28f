// Global <-> shared copies: cp.async 16-byte pieces (or plain 16-byte loads/stores when
// async copy is off), and the block-cooperative tile loader.
#pragma once
#include <cstdint>
#include "swizzle.cuh"

namespace flashprof {

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void cp_async_16(void* smem_dst, const void* gmem_src) {
    // .cg: cache at L2 only (the tile is reused from shared memory, not L1).
    asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16;\n" ::"r"(smem_u32(smem_dst)),
                 "l"(gmem_src)
                 : "memory");
}

__device__ __forceinline__ void cp_async_commit() {
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}

template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N) : "memory");
}

// Copy a [Rows x d_head] tile of a (batch, seq, heads, d_head) tensor into shared memory,
// 16-byte chunk (row, chunk) to element offset offset(row, chunk) (default: the tile
// layout of swizzle.cuh). Consecutive threads take consecutive 16-byte chunks of a row:
// coalesced 256-byte rows.
template <class Cfg, int Rows, typename T, class Offset>
__device__ __forceinline__ void load_tile(T* smem, const T* gmem, int row_stride, int tid, Offset&& offset) {
    constexpr int chunks_per_row = Cfg::d_head / 8;
    constexpr int total = Rows * chunks_per_row;
    static_assert(total % Cfg::threads == 0, "tile chunks must split evenly over the block");
#pragma unroll
    for (int i = 0; i < total / Cfg::threads; ++i) {
        const int id = tid + i * Cfg::threads;
        const int row = id / chunks_per_row;
        const int chunk = id % chunks_per_row;
        T* dst = smem + offset(row, chunk);
        const T* src = gmem + static_cast<int64_t>(row) * row_stride + chunk * 8;
        if constexpr (Cfg::async_copy) {
            cp_async_16(dst, src);
        } else {
            *reinterpret_cast<uint4*>(dst) = *reinterpret_cast<const uint4*>(src);
        }
    }
}

template <class Cfg, int Rows, typename T>
__device__ __forceinline__ void load_tile(T* smem, const T* gmem, int row_stride, int tid) {
    load_tile<Cfg, Rows>(smem, gmem, row_stride, tid,
                         [](int row, int chunk) { return tile_offset<Cfg::swizzled, Cfg::d_head>(row, chunk); });
}

// Issue a tile load as its own cp.async group (a no-op group marker when copies are sync).
template <class Cfg, int Rows, typename T>
__device__ __forceinline__ void issue_tile(T* smem, const T* gmem, int row_stride, int tid) {
    load_tile<Cfg, Rows>(smem, gmem, row_stride, tid);
    if constexpr (Cfg::async_copy) cp_async_commit();
}

template <class Cfg, int Pending>
__device__ __forceinline__ void wait_tiles() {
    if constexpr (Cfg::async_copy) cp_async_wait<Pending>();
}

}  // namespace flashprof
