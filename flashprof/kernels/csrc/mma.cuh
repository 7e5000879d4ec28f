// Tensor-core side: ldmatrix fragment loads from (swizzled) shared tiles and the
// mma.sync m16n8k16 (fp32 accumulate) warp-level products S = Q K^T and O += P V.
//
// Fragment layouts (PTX ISA, m16n8k16 with 16-bit inputs), g = lane / 4, t = lane % 4:
//   A (16x16, row): a0 (g, 2t..2t+1)  a1 (g+8, 2t..)  a2 (g, 2t+8..)  a3 (g+8, 2t+8..)
//   B (16x8,  col): b0 (k 2t..2t+1, n g)  b1 (k 2t+8.., n g)
//   C (16x8, fp32): c0,c1 (g, 2t..2t+1)   c2,c3 (g+8, 2t..2t+1)
#pragma once
#include <cstdint>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include "copies.cuh"
#include "swizzle.cuh"

namespace flashprof {

__device__ __forceinline__ void ldmatrix_x4(uint32_t& r0, uint32_t& r1, uint32_t& r2, uint32_t& r3,
                                            const void* smem_row) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(smem_u32(smem_row)));
}

__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t& r0, uint32_t& r1, uint32_t& r2,
                                                  uint32_t& r3, const void* smem_row) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3)
                 : "r"(smem_u32(smem_row)));
}

template <typename T>
struct Mma;

template <>
struct Mma<__half> {
    __device__ __forceinline__ static void run(float (&d)[4], const uint32_t (&a)[4],
                                               const uint32_t (&b)[2]) {
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
            "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
};

template <>
struct Mma<__nv_bfloat16> {
    __device__ __forceinline__ static void run(float (&d)[4], const uint32_t (&a)[4],
                                               const uint32_t (&b)[2]) {
        asm volatile(
            "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
            "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
            : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
            : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
    }
};

// A fragment (16 rows x 16 cols) of the Q tile at rows row0.., k-step ks (cols 16 ks..).
// ldmatrix lanes 8i..8i+7 address the rows of matrix i: matrices = (rows lo/hi) x (cols lo/hi).
template <class Cfg, typename T>
__device__ __forceinline__ void load_a_frag(uint32_t (&a)[4], const T* tile, int row0, int ks,
                                            int lane) {
    const int mat = lane >> 3;
    const int row = row0 + (lane & 7) + (mat & 1) * 8;
    const int chunk = 2 * ks + (mat >> 1);
    ldmatrix_x4(a[0], a[1], a[2], a[3], tile + tile_offset<Cfg::swizzled, Cfg::d_head>(row, chunk));
}

// B fragments of K^T for two n8 tiles (keys 8 np .. 8 np + 15), k-step ks (d cols 16 ks..).
// K is stored [key][d] = B in "col" layout, so no transpose is needed.
template <class Cfg, typename T>
__device__ __forceinline__ void load_k_frags(uint32_t (&b_lo)[2], uint32_t (&b_hi)[2], const T* tile,
                                             int np, int ks, int lane) {
    const int mat = lane >> 3;
    const int row = 8 * np + (lane & 7) + (mat >> 1) * 8;
    const int chunk = 2 * ks + (mat & 1);
    ldmatrix_x4(b_lo[0], b_lo[1], b_hi[0], b_hi[1],
                tile + tile_offset<Cfg::swizzled, Cfg::d_head>(row, chunk));
}

// B fragments of V for two n8 tiles (d cols 8 np .. 8 np + 15), k-step ks (keys 16 ks..).
// V is stored [key][d] = B row-major, so ldmatrix transposes it into the col layout.
template <class Cfg, typename T>
__device__ __forceinline__ void load_v_frags(uint32_t (&b_lo)[2], uint32_t (&b_hi)[2], const T* tile,
                                             int np, int ks, int lane) {
    const int mat = lane >> 3;
    const int row = 16 * ks + (lane & 7) + (mat & 1) * 8;
    const int chunk = np + (mat >> 1);
    ldmatrix_x4_trans(b_lo[0], b_lo[1], b_hi[0], b_hi[1],
                      tile + tile_offset<Cfg::swizzled, Cfg::d_head>(row, chunk));
}

// Fragments are fetched in stages of F k-steps (F = the config's "load K fragments";
// 0 means the whole reduction extent in one stage).
template <int Frags, int Steps>
struct Staging {
    static constexpr int F = Frags == 0 ? Steps : Frags;
    static constexpr int stages = Steps / F;
};

// The fragment pipeline shared by both products: load(buf, stage) fetches a stage's
// fragments into register buffer buf, compute(buf, stage) issues its MMAs. Without double
// buffering each stage is load-then-compute; with it, stage s+1 is requested before the
// MMAs of stage s (ptxas may schedule both forms alike: see README, kernels 4 and 5).
template <int Stages, int Buffers, class Load, class Compute>
__device__ __forceinline__ void staged_pipeline(Load&& load, Compute&& compute) {
    if constexpr (Buffers == 2) load(0, 0);
#pragma unroll
    for (int s = 0; s < Stages; ++s) {
        if constexpr (Buffers == 2) {
            if (s + 1 < Stages) load((s + 1) & 1, s + 1);
            compute(s & 1, s);
        } else {
            load(0, s);
            compute(0, s);
        }
    }
}

// S = Q K^T for this warp's rows. q_res holds Q's fragments when Q is register-resident.
template <class Cfg, typename T>
__device__ __forceinline__ void gemm_qk(float (&S)[Cfg::m_tiles][Cfg::s_ntiles][4],
                                        const uint32_t (&q_res)[Cfg::m_tiles][Cfg::qk_steps][4],
                                        const T* sQ, const T* sK, int warp_row0, int lane) {
    using St = Staging<Cfg::K_frags, Cfg::qk_steps>;
    constexpr int F = St::F;
    constexpr int nbuf = (Cfg::dbuf && St::stages > 1) ? 2 : 1;
    uint32_t kf[nbuf][Cfg::s_ntiles][F][2];
    uint32_t qf[nbuf][Cfg::m_tiles][F][4];

#pragma unroll
    for (int m = 0; m < Cfg::m_tiles; ++m)
#pragma unroll
        for (int n = 0; n < Cfg::s_ntiles; ++n)
#pragma unroll
            for (int i = 0; i < 4; ++i) S[m][n][i] = 0.f;

    auto load = [&](int buf, int stage) {
#pragma unroll
        for (int f = 0; f < F; ++f) {
            const int ks = stage * F + f;
            if constexpr (!Cfg::q_resident) {
#pragma unroll
                for (int m = 0; m < Cfg::m_tiles; ++m)
                    load_a_frag<Cfg>(qf[buf][m][f], sQ, warp_row0 + 16 * m, ks, lane);
            }
#pragma unroll
            for (int np = 0; np < Cfg::s_ntiles; np += 2)
                load_k_frags<Cfg>(kf[buf][np][f], kf[buf][np + 1][f], sK, np, ks, lane);
        }
    };
    auto compute = [&](int buf, int stage) {
#pragma unroll
        for (int f = 0; f < F; ++f) {
            const int ks = stage * F + f;
#pragma unroll
            for (int m = 0; m < Cfg::m_tiles; ++m) {
#pragma unroll
                for (int n = 0; n < Cfg::s_ntiles; ++n) {
                    if constexpr (Cfg::q_resident) {
                        Mma<T>::run(S[m][n], q_res[m][ks], kf[buf][n][f]);
                    } else {
                        Mma<T>::run(S[m][n], qf[buf][m][f], kf[buf][n][f]);
                    }
                }
            }
        }
    };
    staged_pipeline<St::stages, nbuf>(load, compute);
}

// O += P V for this warp's rows; P comes straight from registers (the rounded S).
template <class Cfg, typename T>
__device__ __forceinline__ void gemm_pv(float (&O)[Cfg::m_tiles][Cfg::o_ntiles][4],
                                        const uint32_t (&P)[Cfg::m_tiles][Cfg::pv_steps][4],
                                        const T* sV, int lane) {
    using St = Staging<Cfg::V_frags, Cfg::pv_steps>;
    constexpr int F = St::F;
    constexpr int nbuf = (Cfg::dbuf && St::stages > 1) ? 2 : 1;
    uint32_t vf[nbuf][Cfg::o_ntiles][F][2];

    auto load = [&](int buf, int stage) {
#pragma unroll
        for (int f = 0; f < F; ++f) {
            const int ks = stage * F + f;
#pragma unroll
            for (int np = 0; np < Cfg::o_ntiles; np += 2)
                load_v_frags<Cfg>(vf[buf][np][f], vf[buf][np + 1][f], sV, np, ks, lane);
        }
    };
    auto compute = [&](int buf, int stage) {
#pragma unroll
        for (int f = 0; f < F; ++f) {
            const int ks = stage * F + f;
#pragma unroll
            for (int m = 0; m < Cfg::m_tiles; ++m)
#pragma unroll
                for (int n = 0; n < Cfg::o_ntiles; ++n) Mma<T>::run(O[m][n], P[m][ks], vf[buf][n][f]);
        }
    };
    staged_pipeline<St::stages, nbuf>(load, compute);
}

// Q fragments for the whole d_head, kept in registers for the main loop (Q_frags == 0).
template <class Cfg, typename T>
__device__ __forceinline__ void load_q_resident(uint32_t (&q_res)[Cfg::m_tiles][Cfg::qk_steps][4],
                                                const T* sQ, int warp_row0, int lane) {
#pragma unroll
    for (int m = 0; m < Cfg::m_tiles; ++m)
#pragma unroll
        for (int ks = 0; ks < Cfg::qk_steps; ++ks)
            load_a_frag<Cfg>(q_res[m][ks], sQ, warp_row0 + 16 * m, ks, lane);
}

}  // namespace flashprof
