// NVRTC build of FA2's forward kernel (devjobs/series/fa2_toolchain.py): the same stand-in as
// ../../../torch_stub/ATen/cuda/CUDAGeneratorImpl.h (PyTorch's layout of at::PhiloxCudaState, the
// one type flash.h needs), with libcu++'s fixed-width integers instead of the host <cstdint>.
#pragma once
#include <cuda/std/cstdint>

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
