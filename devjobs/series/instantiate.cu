// One kernel of the series (sonnyli/flash_attention_from_scratch), instantiated at one
// configuration, for a SASS build. Written for flashprof; it includes the series' own
// headers from a checkout given on the command line (-I <checkout>/<src dir>/include), so no
// source of theirs lives in this repository.
//
// SERIES_CFG is the brace-initialiser list of FlashForwardKernelConfig, in the order the
// series' mangled kernel names print it:
//   dtype, d_head, B_r, B_c, n_warps, async_copy, eager_load_blocks, swizzled,
//   Q_mma_load_K_fragments, K_mma_load_K_fragments, V_mma_load_K_fragments,
//   mma_double_buffer_loads, optimized_softmax
// e.g. #define SERIES_CFG torch::kFloat16, 128, 64, 64, 4, true, true, true, 0, 2, 2, false, true
// nvcc splits -D values at commas, so devjobs/series_sass.sh writes that one line into a
// header and passes it with -include (devjobs/series/configs.tsv lists the configurations).
// utils.h calls std::__bit_width (libstdc++'s helper behind std::bit_width) without including
// <bit>; in the series' build <torch/torch.h> brought it in. Our torch stand-in does not, so
// it is included here.
#include <bit>

#include "forward_kernel.cuh"

#ifndef SERIES_CFG
#error "define SERIES_CFG (see devjobs/series/configs.tsv)"
#endif

// Explicit instantiation: the only kernel in the resulting cubin.
template __global__ void
flash::flash_forward_kernel<flash::StaticForwardKernelConfig<FlashForwardKernelConfig{SERIES_CFG}>>(
    __grid_constant__ const flash::ForwardKernelArgs);
