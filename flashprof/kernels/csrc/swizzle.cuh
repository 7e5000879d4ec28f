// Shared-memory tile addressing. A tile holds rows of d_head 16-bit elements (256 B),
// split into 16-byte chunks. With swizzling on, chunk c of row r lives at chunk
// c XOR (r mod 8): the 8 rows an ldmatrix phase touches then hit 8 different bank
// groups instead of one (rows are 256 B apart, i.e. the same banks).
#pragma once

namespace flashprof {

template <bool Swizzled>
__device__ __forceinline__ int swizzle_chunk(int row, int chunk) {
    if constexpr (Swizzled) {
        return chunk ^ (row & 7);
    } else {
        return chunk;
    }
}

// Element offset of the first element of 16-byte chunk `chunk` in row `row`.
template <bool Swizzled, int RowElems>
__device__ __forceinline__ int tile_offset(int row, int chunk) {
    return row * RowElems + swizzle_chunk<Swizzled>(row, chunk) * 8;
}

}  // namespace flashprof
