// NVRTC build: FlashAttention-2's headers name std:: facilities; NVRTC has no host C++
// library, so std:: here is libcu++ (cuda::std), which CUTLASS itself uses under NVRTC.
#pragma once
#include <cuda/std/cstdint>
#include <cuda/std/type_traits>
#include <cuda/std/utility>
#include <cuda/std/tuple>
#include <cuda/std/limits>
#include <cuda/std/cmath>
// CUTLASS declares these as enumerators under NVRTC (floating_point_nvrtc.h); newer libcu++ defines them as macros
#undef FP_NAN
#undef FP_INFINITE
#undef FP_ZERO
#undef FP_SUBNORMAL
#undef FP_NORMAL
#include <cuda/std/__algorithm/max.h>
#include <cuda/std/__algorithm/min.h>
namespace std { using namespace cuda::std; }
// glibc's <math.h> value (the host build takes it from there)
#ifndef M_LOG2E
#define M_LOG2E 1.4426950408889634074
#endif
