// Host-side entry point of one compiled variant. Plain C++/CUDA runtime types only:
// the torch binding (torch_binding.cpp) and any standalone driver call this.
#pragma once
#include <cuda_runtime.h>

namespace flashprof {

enum class DType : int { fp16 = 0, bf16 = 1 };

// q, k, v, o: device pointers to contiguous (batch, seq, heads, d_head) tensors.
// Returns cudaErrorInvalidValue for shapes the variant cannot run (seq not a multiple of
// the tiles, non-positive sizes); otherwise the launch's error status.
cudaError_t flash_fwd(const void* q, const void* k, const void* v, void* o, int batch, int seq,
                      int heads, DType dtype, cudaStream_t stream);

}  // namespace flashprof
