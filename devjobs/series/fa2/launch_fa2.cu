// FlashAttention-2's forward kernel as the series measured it (the author's fork of
// Dao-AILab/flash-attention; see instantiate_fa2.cu for the instantiation and the flags), as a
// plain shared library that runs it, so that it can be gated, benchmarked and profiled as a
// flashprof user target on a GPU the series did not use (issue 31: the official kernel built
// for sm_90 from the same source, mma.sync path). Built against a checkout of the fork and of
// CUTLASS (devjobs/series/series_targets.py, FA2_SRC); no source of theirs lives here.
//
// FA2_BLOCK_N picks the tile run_mha_fwd_hdim128 launches: 64 on sm_80 (A100), 32 on the
// other sm_8x devices (RTX 3090). The launch is run_flash_fwd's for S % 128 == 0, d = 128,
// non-causal, no dropout, no returned softmax: grid (S / 128, B, H), 128 threads,
// Kernel_traits::kSmemSize bytes of dynamic shared memory. Parameters as the fork's
// set_params_fprop fills them for one contiguous (B, S, H, d) fp16 tensor per operand.
#include <cmath>
#include <cstdio>   // the torch stand-in macros (torch_stub/c10) print with fprintf
#include <cstdlib>
#include <cstdint>

#include <cuda_runtime.h>

#include "namespace_config.h"
#include "flash_fwd_launch_template.h"

#ifndef FA2_BLOCK_N
#error "define FA2_BLOCK_N (64: the sm_80 tile, 32: the sm_86/sm_89 tile)"
#endif

// A named namespace: nvcc's host stub cannot refer to a kernel instantiated from an anonymous one.
namespace fa2_launch {
using Traits = Flash_fwd_kernel_traits<128, 128, FA2_BLOCK_N, 4, false, false, cutlass::half_t>;
}  // namespace fa2_launch
using fa2_launch::Traits;

// Is_dropout, Is_causal, Is_local, Has_alibi = false; Is_even_MN, Is_even_K = true;
// Is_softcap, Return_softmax = false (run_flash_fwd's choice for this shape)
template __global__ void FLASH_NAMESPACE::flash_fwd_kernel<Traits, false, false, false, false, true, true, false, false>(
    KERNEL_PARAM_MODIFIER const FLASH_NAMESPACE::Flash_fwd_params);
static constexpr auto kKernel = &FLASH_NAMESPACE::flash_fwd_kernel<Traits, false, false, false, false, true, true, false, false>;

extern "C" {

// B_r, B_c, n_warps, d_head: for the Python side's shape checks.
int fa2_config(int *out4) {
    out4[0] = Traits::kBlockM;
    out4[1] = Traits::kBlockN;
    out4[2] = Traits::kNWarps;
    out4[3] = Traits::kHeadDim;
    return 0;
}

// q, k, v, o: device fp16 (B, S, H, 128) contiguous; lse: device fp32, B * H * S (the fork no
// longer writes it; given so that no path can write through a null pointer). Returns a cudaError_t.
int fa2_fwd(void *q, void *k, void *v, void *o, void *lse, int batch, int seq, int heads, void *stream) {
    if (seq % Traits::kBlockM != 0 || seq % Traits::kBlockN != 0) return static_cast<int>(cudaErrorInvalidValue);
    constexpr int smem = Traits::kSmemSize;
    static bool raised = false;
    if (!raised) {
        if (smem >= 48 * 1024) {
            cudaError_t e = cudaFuncSetAttribute(kKernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
            if (e != cudaSuccess) return static_cast<int>(e);
        }
        raised = true;
    }
    FLASH_NAMESPACE::Flash_fwd_params p = {};
    const int64_t d = Traits::kHeadDim;
    p.q_ptr = q;
    p.k_ptr = k;
    p.v_ptr = v;
    p.o_ptr = o;
    p.softmax_lse_ptr = lse;
    p.q_batch_stride = p.k_batch_stride = p.v_batch_stride = p.o_batch_stride = int64_t(seq) * heads * d;
    p.q_row_stride = p.k_row_stride = p.v_row_stride = p.o_row_stride = int64_t(heads) * d;
    p.q_head_stride = p.k_head_stride = p.v_head_stride = p.o_head_stride = d;
    p.b = batch;
    p.h = p.h_k = heads;
    p.h_h_k_ratio = 1;
    p.seqlen_q = p.seqlen_k = seq;
    p.seqlen_q_rounded = p.seqlen_k_rounded = (seq + 127) / 128 * 128;
    p.d = p.d_rounded = static_cast<int>(d);
    p.scale_softmax = 1.0f / std::sqrt(static_cast<float>(d));
    p.scale_softmax_log2 = p.scale_softmax * static_cast<float>(M_LOG2E);
    p.softcap = 0.0f;
    p.p_dropout = 1.0f;
    p.p_dropout_in_uint8_t = 255;
    p.rp_dropout = 1.0f;
    p.scale_softmax_rp_dropout = p.scale_softmax;
    p.window_size_left = p.window_size_right = -1;
    p.is_seqlens_k_cumulative = true;
    p.num_splits = 1;
    dim3 grid(static_cast<unsigned>(seq / Traits::kBlockM), static_cast<unsigned>(batch), static_cast<unsigned>(heads));
    kKernel<<<grid, Traits::kNThreads, smem, static_cast<cudaStream_t>(stream)>>>(p);
    return static_cast<int>(cudaGetLastError());
}

}  // extern "C"
