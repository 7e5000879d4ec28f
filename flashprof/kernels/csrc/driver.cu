// Standalone driver (no torch): runs one variant on a small random problem and checks
// it against a float64 CPU reference. Used under compute-sanitizer, where a Python+torch
// process would be slow, and as a minimal reproducer.
//   driver BATCH SEQ HEADS fp16|bf16  -> prints max error, exit 0 if all finite and < 2e-2
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <vector>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include "config.cuh"
#include "flash_fwd.h"

#define CHECK(x)                                                                          \
    do {                                                                                  \
        cudaError_t e_ = (x);                                                             \
        if (e_ != cudaSuccess) {                                                          \
            std::fprintf(stderr, "CUDA error %s at %s:%d\n", cudaGetErrorString(e_), __FILE__, __LINE__); \
            return 1;                                                                     \
        }                                                                                 \
    } while (0)

template <typename T>
static float to_float(T x);
template <>
float to_float<__half>(__half x) { return __half2float(x); }
template <>
float to_float<__nv_bfloat16>(__nv_bfloat16 x) { return __bfloat162float(x); }

template <typename T>
static T from_float(float x);
template <>
__half from_float<__half>(float x) { return __float2half(x); }
template <>
__nv_bfloat16 from_float<__nv_bfloat16>(float x) { return __float2bfloat16(x); }

template <typename T>
static int run(int B, int S, int H, flashprof::DType dt) {
    const int D = flashprof::Config::d_head;
    const size_t n = static_cast<size_t>(B) * S * H * D;
    std::vector<T> hq(n), hk(n), hv(n), ho(n);
    std::mt19937 rng(1234);
    std::normal_distribution<float> nd(0.f, 1.f);
    for (size_t i = 0; i < n; ++i) {
        hq[i] = from_float<T>(nd(rng));
        hk[i] = from_float<T>(nd(rng));
        hv[i] = from_float<T>(nd(rng));
    }
    T *q, *k, *v, *o;
    CHECK(cudaMalloc(&q, n * sizeof(T)));
    CHECK(cudaMalloc(&k, n * sizeof(T)));
    CHECK(cudaMalloc(&v, n * sizeof(T)));
    CHECK(cudaMalloc(&o, n * sizeof(T)));
    CHECK(cudaMemcpy(q, hq.data(), n * sizeof(T), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(k, hk.data(), n * sizeof(T), cudaMemcpyHostToDevice));
    CHECK(cudaMemcpy(v, hv.data(), n * sizeof(T), cudaMemcpyHostToDevice));
    CHECK(cudaMemset(o, 0xff, n * sizeof(T)));  // poison: NaN in both 16-bit formats
    CHECK(flashprof::flash_fwd(q, k, v, o, B, S, H, dt, nullptr));
    CHECK(cudaDeviceSynchronize());
    CHECK(cudaMemcpy(ho.data(), o, n * sizeof(T), cudaMemcpyDeviceToHost));

    double max_err = 0.0;
    const double scale = 1.0 / std::sqrt(static_cast<double>(D));
    std::vector<double> p(S);
    auto at = [&](const std::vector<T>& t, int b, int s, int h, int d) {
        return static_cast<double>(to_float<T>(t[((static_cast<size_t>(b) * S + s) * H + h) * D + d]));
    };
    for (int b = 0; b < B; ++b)
        for (int h = 0; h < H; ++h)
            for (int i = 0; i < S; ++i) {
                double mx = -1e300, sum = 0.0;
                for (int j = 0; j < S; ++j) {
                    double s = 0.0;
                    for (int d = 0; d < D; ++d) s += at(hq, b, i, h, d) * at(hk, b, j, h, d);
                    p[j] = s * scale;
                    mx = std::fmax(mx, p[j]);
                }
                for (int j = 0; j < S; ++j) sum += (p[j] = std::exp(p[j] - mx));
                for (int d = 0; d < D; ++d) {
                    double acc = 0.0;
                    for (int j = 0; j < S; ++j) acc += p[j] * at(hv, b, j, h, d);
                    const double got = at(ho, b, i, h, d);
                    const double err = std::isfinite(got) ? std::fabs(got - acc / sum) : INFINITY;
                    max_err = std::fmax(max_err, err);
                }
            }
    std::printf("max_abs_err %.6g\n", max_err);
    cudaFree(q);
    cudaFree(k);
    cudaFree(v);
    cudaFree(o);
    return (std::isfinite(max_err) && max_err < 2e-2) ? 0 : 3;
}

int main(int argc, char** argv) {
    if (argc != 5) {
        std::fprintf(stderr, "usage: %s BATCH SEQ HEADS fp16|bf16\n", argv[0]);
        return 2;
    }
    const int B = std::atoi(argv[1]), S = std::atoi(argv[2]), H = std::atoi(argv[3]);
    if (std::strcmp(argv[4], "bf16") == 0) return run<__nv_bfloat16>(B, S, H, flashprof::DType::bf16);
    return run<__half>(B, S, H, flashprof::DType::fp16);
}
