// FlashAttention-2's forward kernel (fp16, d 128, non-causal, the series' reference: see
// ../instantiate_fa2.cu) for NVRTC, which compiles device code only: the kernel wrapper of
// flash_fwd_launch_template.h written out here (that header's host launch code cannot go through
// NVRTC), then the same instantiation. Used by devjobs/series/fa2_toolchain.py to build the
// kernel with a given CUDA version's C++ front end; rtc_prelude.h first (std:: = libcu++), the
// PyTorch stand-ins from ../torch_stub.
#include "rtc_prelude.h"
#include "namespace_config.h"
#include "flash.h"
#include "flash_fwd_kernel.h"

namespace FLASH_NAMESPACE {
template <typename Kernel_traits, bool Is_dropout, bool Is_causal, bool Is_local, bool Has_alibi,
          bool Is_even_MN, bool Is_even_K, bool Is_softcap, bool Return_softmax>
__global__ void flash_fwd_kernel(__grid_constant__ const Flash_fwd_params params) {
  static_assert(!(Is_causal && Is_local));
  FLASH_NAMESPACE::compute_attn<Kernel_traits, Is_dropout, Is_causal, Is_local, Has_alibi, Is_even_MN,
                                Is_even_K, Is_softcap, Return_softmax>(params);
}
}  // namespace FLASH_NAMESPACE

template __global__ void FLASH_NAMESPACE::flash_fwd_kernel<
    Flash_fwd_kernel_traits<128, 128, FA2_BLOCK_N, 4, false, false, cutlass::half_t>,
    false, false, false, false, true, true, false, false>(__grid_constant__ const Flash_fwd_params);
