// One kernel of the series (sonnyli/flash_attention_from_scratch) at one configuration, as a
// plain shared library that runs it: flashprof's launcher around the series' own headers
// (-I <checkout>/<src dir>/include, the torch stand-in in torch_stub/), so that the kernels
// the series measured on the A100 and the RTX 3090 can be gated, benchmarked and profiled on
// another GPU as flashprof user targets (devjobs/series/targets.py). No source of theirs
// lives in this repository.
//
// SERIES_CFG: the FlashForwardKernelConfig brace list (devjobs/series/configs.tsv), passed in
// a header with -include as in instantiate.cu. The launch is the one the series' host code
// makes (flash_attention.cu at 58b7e33, identical in every src dir): one CTA of n_warps
// warps per (Q block, head, batch), dynamic shared memory cfg.smem_bytes(), raised above
// 48 KiB with cudaFuncAttributeMaxDynamicSharedMemorySize; Q, K, V, O share one (B, S, H, d)
// row-major layout.
#include <bit>
#include <cstdint>

#include <cuda_runtime.h>

#include "forward_kernel.cuh"

#ifndef SERIES_CFG
#error "define SERIES_CFG (see devjobs/series/configs.tsv)"
#endif

namespace {
constexpr FlashForwardKernelConfig kCfg{SERIES_CFG};
using Static = flash::StaticForwardKernelConfig<kCfg>;
}  // namespace

template __global__ void flash::flash_forward_kernel<Static>(__grid_constant__ const flash::ForwardKernelArgs);

extern "C" {

// The tile and warp count, for the Python side's shape checks: B_r, B_c, n_warps, d_head.
int series_config(int *out4) {
    out4[0] = kCfg.B_r;
    out4[1] = kCfg.B_c;
    out4[2] = kCfg.n_warps;
    out4[3] = kCfg.d_head;
    return 0;
}

// Q, K, V, O: device pointers to fp16 (B, S, H, d) contiguous tensors. Returns a cudaError_t.
int series_fwd(void *q, void *k, void *v, void *o, int batch, int seq, int heads, void *stream) {
    if (seq % kCfg.B_r != 0 || seq % kCfg.B_c != 0) return static_cast<int>(cudaErrorInvalidValue);
    const int smem = kCfg.smem_bytes();
    auto kernel = &flash::flash_forward_kernel<Static>;
    static bool raised = false;
    if (!raised) {
        if (smem > 48 * 1024) {
            cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
            if (e != cudaSuccess) return static_cast<int>(e);
        }
        raised = true;
    }
    using index_t = flash::ForwardKernelArgs::index_t;
    const index_t d = kCfg.d_head;
    const int n_q = (seq + kCfg.B_r - 1) / kCfg.B_r;
    const int n_kv = (seq + kCfg.B_c - 1) / kCfg.B_c;
    flash::ForwardKernelArgs args{q, k, v, o,
                                  static_cast<index_t>(seq) * heads * d,  // batch stride
                                  static_cast<index_t>(heads) * d,        // seq stride
                                  d,                                      // head stride
                                  seq, heads, n_q, n_kv};
    dim3 grid(static_cast<unsigned>(n_q), static_cast<unsigned>(heads), static_cast<unsigned>(batch));
    dim3 block(static_cast<unsigned>(kCfg.n_warps * 32));
    kernel<<<grid, block, smem, static_cast<cudaStream_t>(stream)>>>(args);
    return static_cast<int>(cudaGetLastError());
}

}  // extern "C"
