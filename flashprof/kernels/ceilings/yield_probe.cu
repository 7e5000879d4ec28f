// The cost of the yield bit of a SASS control code (issue 31), measured on a cubin whose
// bits are flipped after compilation (flashprof/kernels/sass/patch.py) and timed beside the
// compiler's own (yield_host.cu loads each cubin with the driver API).
//
// yield_ffma: each warp runs `iters` passes of 128 FFMAs over 8 independent accumulators
// (each FFMA needs the one 8 before it: its 4-cycle latency never stalls a warp that issues
// one a cycle), between two clock64 reads; lane 0 stores the warp's span. One CTA of
// 32 x warps threads on one SM: warps / 4 warps per sub-partition. With the yield bit the
// compiler sets (1 on every FFMA here) a lone warp issues back to back; a cleared bit on
// every FFMA shows what a yield costs a lone warp, and what it costs when another warp of
// the sub-partition is ready to take the slot.
//
// yield_mix: the same with one FMUL of a second register set after every 4 FFMAs, the
// series' kernels' pattern (their cleared bits sit on FMUL / FMNMX / FADD among the FFMAs),
// so that a patch of the FMULs alone clears one bit in five.
#include <cstdint>

extern "C" __global__ void __launch_bounds__(1024)
yield_ffma(float* out, long long* cycles, int iters, float b, float c) {
    float a0 = threadIdx.x * 1e-3f, a1 = a0 + 1, a2 = a0 + 2, a3 = a0 + 3;
    float a4 = a0 + 4, a5 = a0 + 5, a6 = a0 + 6, a7 = a0 + 7;
    long long t0 = clock64();
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int k = 0; k < 16; ++k) {
            a0 = fmaf(a0, b, c); a1 = fmaf(a1, b, c); a2 = fmaf(a2, b, c); a3 = fmaf(a3, b, c);
            a4 = fmaf(a4, b, c); a5 = fmaf(a5, b, c); a6 = fmaf(a6, b, c); a7 = fmaf(a7, b, c);
        }
    }
    long long t1 = clock64();
    if ((threadIdx.x & 31) == 0) cycles[threadIdx.x >> 5] = t1 - t0;
    out[threadIdx.x] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}

extern "C" __global__ void __launch_bounds__(1024)
yield_mix(float* out, long long* cycles, int iters, float b, float c) {
    float a0 = threadIdx.x * 1e-3f, a1 = a0 + 1, a2 = a0 + 2, a3 = a0 + 3;
    float a4 = a0 + 4, a5 = a0 + 5, a6 = a0 + 6, a7 = a0 + 7;
    float m0 = a0 + 8, m1 = a0 + 9;
    long long t0 = clock64();
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int k = 0; k < 16; ++k) {
            a0 = fmaf(a0, b, c); a1 = fmaf(a1, b, c); a2 = fmaf(a2, b, c); a3 = fmaf(a3, b, c);
            m0 = m0 * b;
            a4 = fmaf(a4, b, c); a5 = fmaf(a5, b, c); a6 = fmaf(a6, b, c); a7 = fmaf(a7, b, c);
            m1 = m1 * b;
        }
    }
    long long t1 = clock64();
    if ((threadIdx.x & 31) == 0) cycles[threadIdx.x >> 5] = t1 - t0;
    out[threadIdx.x] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7 + m0 + m1;
}

// reuse_hmma: passes of 32 HMMA.16816.F32 (mma.sync m16n8k16, fp16 in, fp32 accumulate) into
// 8 independent accumulators, all with one A fragment (ptxas marks A for the operand reuse
// cache on the back-to-back HMMAs) and 8 B fragments. Patched with the reuse flags cleared,
// every HMMA reads its A from the register file: the operand-bandwidth candidate of issue 31.
extern "C" __global__ void __launch_bounds__(1024)
reuse_hmma(float* out, long long* cycles, int iters, float b, float c) {
    uint32_t a[4], bf[8][2];
    for (int r = 0; r < 4; ++r) a[r] = __float_as_uint(b) ^ (threadIdx.x + r);
    for (int k = 0; k < 8; ++k) bf[k][0] = a[k & 3] + k, bf[k][1] = a[(k + 1) & 3] - k;
    float d[8][4] = {};
    long long t0 = clock64();
    for (int i = 0; i < iters; ++i) {
#pragma unroll
        for (int u = 0; u < 4; ++u) {
#pragma unroll
            for (int k = 0; k < 8; ++k) {
                asm volatile(
                    "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 "
                    "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                    : "+f"(d[k][0]), "+f"(d[k][1]), "+f"(d[k][2]), "+f"(d[k][3])
                    : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(bf[k][0]), "r"(bf[k][1]));
            }
        }
    }
    long long t1 = clock64();
    if ((threadIdx.x & 31) == 0) cycles[threadIdx.x >> 5] = t1 - t0;
    float s = c;
    for (int k = 0; k < 8; ++k) s += d[k][0] + d[k][1] + d[k][2] + d[k][3];
    out[threadIdx.x] = s;
}
