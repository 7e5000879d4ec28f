// NVRTC build stand-in: flash.h includes <cuda.h>; the kernel needs nothing from it.
#pragma once
