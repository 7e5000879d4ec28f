// Instantiates the kernel for this variant (the -D macros) in fp16 and bf16 and provides
// the launcher. Compiled both into the torch extension and, alone, into a cubin by the
// static build (kernels/sass.py).
#include <cmath>
#include <type_traits>
#include "config.cuh"
#include "flash_fwd.cuh"
#include "flash_fwd.h"
#if FP_WGMMA
#include "flash_fwd_wgmma.cuh"
#endif
#if FP_WS
#include <cudaTypedefs.h>  // PFN_cuTensorMapEncodeTiled
#include "flash_fwd_ws.cuh"
#endif

namespace flashprof {

#if FP_WS
// The TMA descriptor of a (batch, seq, heads, d_head) tensor seen as 3-d (d_head, heads,
// batch*seq) (seq and batch merge: a batch is seq rows further), read in boxes of 64
// columns (one 128-byte panel row) x 1 head x `box_rows` rows, stored with the 128-byte
// swizzle of the wgmma panels. The encoder is the driver's, found through the runtime
// (no libcuda link; CUDA driver API, "Tensor Map Object Management").
template <typename T>
static cudaError_t encode_map(CUtensorMap* map, const void* base, int batch, int seq, int heads, int box_rows) {
    static PFN_cuTensorMapEncodeTiled_v12000 encode = nullptr;
    if (encode == nullptr) {
        void* fn = nullptr;
        cudaDriverEntryPointQueryResult found;
        const cudaError_t e = cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &fn, 12000,
                                                               cudaEnableDefault, &found);
        if (e != cudaSuccess) return e;
        if (found != cudaDriverEntryPointSuccess || fn == nullptr) return cudaErrorNotSupported;
        encode = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(fn);
    }
    constexpr int d = Config::d_head;
    const cuuint64_t dims[3] = {static_cast<cuuint64_t>(d), static_cast<cuuint64_t>(heads),
                                static_cast<cuuint64_t>(batch) * static_cast<cuuint64_t>(seq)};
    const cuuint64_t strides[2] = {static_cast<cuuint64_t>(d) * sizeof(T),
                                   static_cast<cuuint64_t>(heads) * d * sizeof(T)};
    const cuuint32_t box[3] = {64, 1, static_cast<cuuint32_t>(box_rows)};
    const cuuint32_t elem_strides[3] = {1, 1, 1};
    const CUtensorMapDataType type =
        sizeof(T) == 2 && std::is_same<T, __half>::value ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    const CUresult r = encode(map, type, 3, const_cast<void*>(base), dims, strides, box, elem_strides,
                              CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                              CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    return r == CUDA_SUCCESS ? cudaSuccess : cudaErrorInvalidValue;
}
#endif

// The persistent grids' size: one wave, as many CTAs as fit on the GPU at once (asked
// once per device and kernel), never more than there are tiles.
template <class Kernel>
static cudaError_t persistent_grid(Kernel kernel, int smem, long long tiles, int* grid) {
    static int wave[64] = {};
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e != cudaSuccess) return e;
    if (dev < 0 || dev >= 64) return cudaErrorInvalidDevice;
    if (wave[dev] == 0) {
        if (smem > 48 * 1024) {
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
    if (tiles > 2147483647LL) return cudaErrorInvalidValue;
    *grid = tiles < wave[dev] ? static_cast<int>(tiles) : wave[dev];
    return cudaSuccess;
}

template <typename T>
static cudaError_t launch(const void* q, const void* k, const void* v, void* o, int batch, int seq,
                          int heads, cudaStream_t stream) {
    constexpr int smem = Config::smem_bytes;
    const float scale = 1.0f / std::sqrt(static_cast<float>(Config::d_head));
    const long long tiles = static_cast<long long>(seq / Config::B_r) * heads * batch;
    if constexpr (Config::ws) {
#if FP_WS
        CUtensorMap maps[3];
        const void* bases[3] = {q, k, v};
        for (int i = 0; i < 3; ++i) {
            const cudaError_t e = encode_map<T>(&maps[i], bases[i], batch, seq, heads, i == 0 ? Config::B_r : Config::B_c);
            if (e != cudaSuccess) return e;
        }
        if constexpr (Config::persistent) {
            auto kernel = flash_fwd_wgmma_ws_persistent_kernel<Config, T>;
            int n = 0;
            const cudaError_t e = persistent_grid(kernel, smem, tiles, &n);  // sets the smem attribute
            if (e != cudaSuccess) return e;
            kernel<<<dim3(n), Config::threads, smem, stream>>>(maps[0], maps[1], maps[2], static_cast<T*>(o), seq,
                                                               heads, scale, static_cast<int>(tiles));
        } else {
            auto kernel = flash_fwd_wgmma_ws_kernel<Config, T>;
            const cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
            if (e != cudaSuccess) return e;
            const dim3 grid(seq / Config::B_r, heads, batch);
            kernel<<<grid, Config::threads, smem, stream>>>(maps[0], maps[1], maps[2], static_cast<T*>(o), seq, heads,
                                                           scale);
        }
        return cudaGetLastError();
#endif
    } else if constexpr (Config::persistent) {
        auto kernel = flash_fwd_persistent_kernel<Config, T>;
        int n = 0;
        const cudaError_t e = persistent_grid(kernel, smem, tiles, &n);
        if (e != cudaSuccess) return e;
        kernel<<<dim3(n), Config::threads, smem, stream>>>(static_cast<const T*>(q), static_cast<const T*>(k),
                                                           static_cast<const T*>(v), static_cast<T*>(o), seq,
                                                           heads, static_cast<int>(tiles), scale);
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
