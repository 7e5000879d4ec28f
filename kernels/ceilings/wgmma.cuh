// wgmma throughput (sm_90a only): m64n128k16, fp16 inputs from shared memory, fp32
// accumulators, 2 warpgroups per SM, groups of 8 wgmma committed with one group in flight.
// A and B hold 1.0 everywhere, so each wgmma adds exactly 16 to every accumulator and the
// check is a closed form. The operand layout (no swizzle, K-major 8x8 core matrices, 128 B
// apart along K and 256 B apart along M/N) only decides which bytes are read; all of them
// are ones, so a layout mistake cannot hide in the check, but a skipped wgmma can not either.
// Built only where the compiler targets sm_90a; elsewhere the kernel reports "unsupported".
#pragma once
#include "common.cuh"

namespace ceilings {

constexpr int kWgmmaPerGroup = 8;
constexpr int kWgmmaWarpgroups = 2;
constexpr int kWgmmaSmemBytes = 16 * 1024;  // A (2 KB) and B (4 KB) inside a region of ones

// Matrix descriptor (PTX ISA, "Matrix Descriptor Format" of wgmma): start address, leading
// and stride byte offsets, all >> 4, in bits 0-13, 16-29 and 32-45; swizzle 0 (none).
__device__ __forceinline__ uint64_t wgmma_desc(uint32_t smem_addr, uint32_t lbo, uint32_t sbo) {
    return (uint64_t((smem_addr & 0x3FFFF) >> 4)) | (uint64_t(lbo >> 4) << 16) | (uint64_t(sbo >> 4) << 32);
}

__global__ void __launch_bounds__(128 * kWgmmaWarpgroups) k_wgmma_tput(float* out, int* supported,
                                                                       BlockTime* times, int groups) {
#if defined(__CUDA_ARCH__) && defined(__CUDA_ARCH_FEAT_SM90_ALL)
    extern __shared__ __align__(16) uint32_t wg_smem[];
    for (int i = threadIdx.x; i < kWgmmaSmemBytes / 4; i += blockDim.x) wg_smem[i] = 0x3C003C00u;  // 1.0, 1.0
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");  // visible to the tensor cores
    const uint32_t base = smem_u32(wg_smem);
    const uint64_t da = wgmma_desc(base, 128, 256), db = wgmma_desc(base + 4096, 128, 256);
    float d[64];
#pragma unroll
    for (int i = 0; i < 64; ++i) d[i] = 0.f;
    CEIL_TIMER_START();
    asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory");
    for (int g = 0; g < groups; ++g) {
#pragma unroll
        for (int k = 0; k < kWgmmaPerGroup; ++k) {
            asm volatile(
                "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
                "wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16 "
                "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31, %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, %64, %65, p, 1, 1, 0, 0;\n}\n"
                : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
                : "l"(da), "l"(db), "r"(1));
        }
        asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory");
        asm volatile("wgmma.wait_group.sync.aligned 1;\n" ::: "memory");
    }
    asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory");
    CEIL_TIMER_STOP(times);
    float s = 0.f;
#pragma unroll
    for (int i = 0; i < 64; ++i) s += d[i];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
    if (blockIdx.x == 0 && threadIdx.x == 0) *supported = 1;
#else
    if (blockIdx.x == 0 && threadIdx.x == 0) *supported = 0;
#endif
}

// ----------------------------------------------------------------------- host side
// Returns false (nothing to report) when the binary was not built for sm_90a.
inline bool bench_wgmma(const Device& dev, Record& r) {
    r = Record{"wgmma_f16_f32", "throughput", "FLOP/clk/SM", "cycles", kWgmmaWarpgroups};
    const int threads = 128 * kWgmmaWarpgroups, groups = 4096;
    float* d_out;
    int* d_sup;
    BlockTime* d_t;
    CHECK(cudaMalloc(&d_out, sizeof(float) * dev.sm_count * threads));
    CHECK(cudaMalloc(&d_sup, sizeof(int)));
    CHECK(cudaMemset(d_sup, 0xFF, sizeof(int)));
    CHECK(cudaMalloc(&d_t, sizeof(BlockTime) * dev.sm_count));
    CHECK(cudaFuncSetAttribute(k_wgmma_tput, cudaFuncAttributeMaxDynamicSharedMemorySize, dev.one_block_smem));
    k_wgmma_tput<<<1, 128, dev.one_block_smem>>>(d_out, d_sup, d_t, 1);  // probe
    CHECK(cudaGetLastError());
    CHECK(cudaDeviceSynchronize());
    const bool ok = to_host(d_sup, 1)[0] == 1;
    if (ok) {
        time_blocks(r, [&] { k_wgmma_tput<<<dev.sm_count, threads, dev.one_block_smem>>>(d_out, d_sup, d_t, groups); },
                    d_t, dev.sm_count);
        r.work = 2.0 * 64 * 128 * 16 * kWgmmaPerGroup * kWgmmaWarpgroups * double(groups);
        // 64 accumulators per thread, each 16 per wgmma
        const float want = 64.f * 16.f * kWgmmaPerGroup * groups;
        const auto out = to_host(d_out, size_t(dev.sm_count) * threads);
        for (size_t i = 0; i < out.size() && r.check == "ok"; ++i)
            if (out[i] != want)
                r.check = "wgmma accumulators of thread " + std::to_string(i) + " sum to " +
                          std::to_string(out[i]) + ", expected " + std::to_string(want);
    }
    CHECK(cudaFree(d_out)); CHECK(cudaFree(d_sup)); CHECK(cudaFree(d_t));
    return ok;
}

}  // namespace ceilings
