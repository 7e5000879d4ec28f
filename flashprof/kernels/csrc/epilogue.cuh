// Epilogue: O /= l, round to 16 bits, stage the warp's rows in its own part of the Q
// tile (same swizzle as every other shared access), then 16-byte coalesced global stores.
// Only warp-level sync is needed: each warp reads and writes only its own Q/O rows.
// offset(row, chunk) places 16-byte chunk `chunk` of a row in the staging tile: the
// kernels' tile layout by default, the wgmma panels for the warp-specialised kernel (whose
// other warpgroup may still be reading its own Q rows).
#pragma once
#include <cstdint>
#include "softmax.cuh"
#include "swizzle.cuh"

namespace flashprof {

template <class Cfg, typename T, class Offset>
__device__ __forceinline__ void write_output(float (&O)[Cfg::m_tiles][Cfg::o_ntiles][4],
                                             float (&l)[Cfg::m_tiles][2], T* sQ, T* gO, int row_stride,
                                             int warp_row0, int lane, Offset&& offset) {
    const int g = lane >> 2;
    const int t = lane & 3;
#pragma unroll
    for (int mt = 0; mt < Cfg::m_tiles; ++mt) {
        const float inv0 = 1.f / quad_sum(l[mt][0]);
        const float inv1 = 1.f / quad_sum(l[mt][1]);
#pragma unroll
        for (int n = 0; n < Cfg::o_ntiles; ++n) {
            O[mt][n][0] *= inv0;
            O[mt][n][1] *= inv0;
            O[mt][n][2] *= inv1;
            O[mt][n][3] *= inv1;
        }
    }

    __syncwarp();  // this warp's last ldmatrix reads of its Q rows are done
#pragma unroll
    for (int mt = 0; mt < Cfg::m_tiles; ++mt) {
        const int row = warp_row0 + 16 * mt + g;
#pragma unroll
        for (int n = 0; n < Cfg::o_ntiles; ++n) {
            T* lo = sQ + offset(row, n) + 2 * t;
            T* hi = sQ + offset(row + 8, n) + 2 * t;
            *reinterpret_cast<uint32_t*>(lo) = pack2<T>(O[mt][n][0], O[mt][n][1]);
            *reinterpret_cast<uint32_t*>(hi) = pack2<T>(O[mt][n][2], O[mt][n][3]);
        }
    }
    __syncwarp();

    constexpr int chunks_per_row = Cfg::d_head / 8;
    constexpr int chunks = Cfg::rows_per_warp * chunks_per_row;
#pragma unroll
    for (int i = 0; i < chunks / 32; ++i) {
        const int id = lane + 32 * i;
        const int row = warp_row0 + id / chunks_per_row;
        const int chunk = id % chunks_per_row;
        const uint4 v = *reinterpret_cast<const uint4*>(sQ + offset(row, chunk));
        *reinterpret_cast<uint4*>(gO + static_cast<int64_t>(row) * row_stride + chunk * 8) = v;
    }
}

template <class Cfg, typename T>
__device__ __forceinline__ void write_output(float (&O)[Cfg::m_tiles][Cfg::o_ntiles][4],
                                             float (&l)[Cfg::m_tiles][2], T* sQ, T* gO, int row_stride,
                                             int warp_row0, int lane) {
    write_output<Cfg>(O, l, sQ, gO, row_stride, warp_row0, lane,
                      [](int row, int chunk) { return tile_offset<Cfg::swizzled, Cfg::d_head>(row, chunk); });
}

}  // namespace flashprof
