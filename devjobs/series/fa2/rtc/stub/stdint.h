// NVRTC build of FA2's forward kernel (devjobs/series/fa2_toolchain.py): NVRTC has no host C library or
// C++ standard library; <stdint.h> stands in for the host one, from libcu++ (cuda::std).
#pragma once
#include <cuda/std/cstdint>
