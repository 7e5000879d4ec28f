// Stand-in for <torch/torch.h> when building the series' kernel headers without PyTorch.
//
// The companion repository's flash_attention.cuh includes <torch/torch.h> only to name the
// element type of a kernel configuration (torch::ScalarType, torch::kFloat16,
// torch::kBFloat16); the device code never touches a tensor. This header declares exactly
// those names, with c10's numbering (Half = 5, BFloat16 = 15) and c10's underlying type
// (int8_t), so the kernel's mangled name matches the one in the series' listings
// ("(c10::ScalarType)5"). Nothing else from PyTorch is provided: a header that needs more
// fails to compile here rather than silently building something different.
#pragma once

#include <cstdint>

namespace c10 {
enum class ScalarType : int8_t { Half = 5, BFloat16 = 15 };
}  // namespace c10

namespace torch {
using c10::ScalarType;
constexpr ScalarType kFloat16 = c10::ScalarType::Half;
constexpr ScalarType kHalf = c10::ScalarType::Half;
constexpr ScalarType kBFloat16 = c10::ScalarType::BFloat16;
}  // namespace torch
