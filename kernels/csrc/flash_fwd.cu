// Instantiates the kernel for this variant (the -D macros) in fp16 and bf16 and provides
// the launcher. Compiled both into the torch extension and, alone, into a cubin by the
// static build (kernels/sass.py).
#include <cmath>
#include "config.cuh"
#include "flash_fwd.cuh"
#include "flash_fwd.h"

namespace flashprof {

template <typename T>
static cudaError_t launch(const void* q, const void* k, const void* v, void* o, int batch, int seq,
                          int heads, cudaStream_t stream) {
    auto kernel = flash_fwd_kernel<Config, T>;
    constexpr int smem = Config::smem_bytes;
    if constexpr (smem > 48 * 1024) {
        // Above 48 KiB a kernel must opt in to its dynamic shared memory.
        const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
        if (e != cudaSuccess) return e;
    }
    const dim3 grid(seq / Config::B_r, heads, batch);
    const float scale = 1.0f / std::sqrt(static_cast<float>(Config::d_head));
    kernel<<<grid, Config::threads, smem, stream>>>(static_cast<const T*>(q), static_cast<const T*>(k),
                                                   static_cast<const T*>(v), static_cast<T*>(o), seq,
                                                   heads, scale);
    return cudaGetLastError();
}

cudaError_t flash_fwd(const void* q, const void* k, const void* v, void* o, int batch, int seq,
                      int heads, DType dtype, cudaStream_t stream) {
    if (batch <= 0 || heads <= 0 || seq <= 0 || seq % Config::B_r != 0 || seq % Config::B_c != 0)
        return cudaErrorInvalidValue;
    if (seq / Config::B_r > 2147483647 || heads > 65535 || batch > 65535) return cudaErrorInvalidValue;
    switch (dtype) {
        case DType::fp16:
            return launch<__half>(q, k, v, o, batch, seq, heads, stream);
        case DType::bf16:
            return launch<__nv_bfloat16>(q, k, v, o, batch, seq, heads, stream);
    }
    return cudaErrorInvalidValue;
}

}  // namespace flashprof

// C entry point for loading a variant as a plain shared library (ctypes), which the
// auto-tuner uses to sweep hundreds of configurations without building a torch
// extension for each. Returns a cudaError_t value.
extern "C" int flashprof_fwd_c(const void* q, const void* k, const void* v, void* o, int batch, int seq,
                               int heads, int dtype, void* stream) {
    return static_cast<int>(flashprof::flash_fwd(q, k, v, o, batch, seq, heads,
                                                 static_cast<flashprof::DType>(dtype),
                                                 static_cast<cudaStream_t>(stream)));
}
