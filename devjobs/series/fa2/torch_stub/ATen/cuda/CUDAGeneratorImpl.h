// Stand-in for PyTorch's ATen/cuda/CUDAGeneratorImpl.h, for a device-code-only build of
// FlashAttention-2's forward kernel. flash.h needs one type from it, at::PhiloxCudaState,
// as a member of Flash_fwd_params, the kernel's only parameter. The kernel reads its
// parameters from constant memory at fixed offsets, so this type has PyTorch's layout
// (two 8-byte unions, a uint32_t, a bool: 24 bytes, 8-aligned) for the offsets of the
// members behind it to be what the measured binary used. Only the members the kernel
// headers touch are declared.
#pragma once
#include <cstdint>

namespace at {
struct PhiloxCudaState {
  union Payload {
    uint64_t val;
    int64_t* ptr;
  };
  Payload seed_{};
  Payload offset_{};
  uint32_t offset_intragraph_ = 0;
  bool captured_ = false;
};
}  // namespace at
