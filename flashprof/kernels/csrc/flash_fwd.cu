// Instantiates the kernel for this variant (the -D macros) in fp16 and bf16 and provides
// the launcher. Compiled both into the torch extension and, alone, into a cubin by the
// static build (kernels/sass.py).
#include <cmath>
#include "config.cuh"
#include "flash_fwd.cuh"
#include "flash_fwd.h"
#if FP_WGMMA
#include "flash_fwd_wgmma.cuh"
#endif

namespace flashprof {

template <typename T>
static cudaError_t launch(const void* q, const void* k, const void* v, void* o, int batch, int seq,
                          int heads, cudaStream_t stream) {
    constexpr int smem = Config::smem_bytes;
    const float scale = 1.0f / std::sqrt(static_cast<float>(Config::d_head));
    if constexpr (Config::persistent) {
        auto kernel = flash_fwd_persistent_kernel<Config, T>;
        // One wave: as many CTAs as fit on the GPU at once (asked once per device).
        static int wave[64] = {};
        int dev = 0;
        cudaError_t e = cudaGetDevice(&dev);
        if (e != cudaSuccess) return e;
        if (dev < 0 || dev >= 64) return cudaErrorInvalidDevice;
        if (wave[dev] == 0) {
            if constexpr (smem > 48 * 1024) {
                e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
                if (e != cudaSuccess) return e;
            }
            int sms = 0, per_sm = 0;
            e = cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev);
            if (e != cudaSuccess) return e;
            e = cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, kernel, Config::threads, smem);
            if (e != cudaSuccess) return e;
            if (per_sm < 1) return cudaErrorInvalidConfiguration;
            wave[dev] = sms * per_sm;
        }
        const long long tiles = static_cast<long long>(seq / Config::B_r) * heads * batch;
        if (tiles > 2147483647LL) return cudaErrorInvalidValue;
        const int n_tiles = static_cast<int>(tiles);
        const dim3 grid(n_tiles < wave[dev] ? n_tiles : wave[dev]);
        kernel<<<grid, Config::threads, smem, stream>>>(static_cast<const T*>(q), static_cast<const T*>(k),
                                                       static_cast<const T*>(v), static_cast<T*>(o), seq,
                                                       heads, n_tiles, scale);
        return cudaGetLastError();
    } else {
#if FP_WGMMA
        auto kernel = flash_fwd_wgmma_kernel<Config, T>;
#else
        auto kernel = flash_fwd_kernel<Config, T>;
#endif
        if constexpr (smem > 48 * 1024) {
            // Above 48 KiB a kernel must opt in to its dynamic shared memory.
            const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
            if (e != cudaSuccess) return e;
        }
        const dim3 grid(seq / Config::B_r, heads, batch);
        kernel<<<grid, Config::threads, smem, stream>>>(static_cast<const T*>(q), static_cast<const T*>(k),
                                                       static_cast<const T*>(v), static_cast<T*>(o), seq,
                                                       heads, scale);
        return cudaGetLastError();
    }
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
