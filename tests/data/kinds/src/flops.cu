// Tiny FLOP-kind probes for the report parser's tests: one kernel per non-tensor FLOP kind.
#include <cuda_fp16.h>
#include <cstdio>
__global__ void hfma2_loop(__half2* out, int iters) {
  __half2 a = __floats2half2_rn(1.0f + threadIdx.x * 1e-3f, 0.5f), b = __floats2half2_rn(0.999f, 0.998f);
  __half2 c0 = a, c1 = b, c2 = a, c3 = b;
  for (int i = 0; i < iters; ++i) { c0 = __hfma2(c0, b, a); c1 = __hfma2(c1, a, b); c2 = __hfma2(c2, b, b); c3 = __hfma2(c3, a, a); }
  out[blockIdx.x * blockDim.x + threadIdx.x] = __hadd2(__hadd2(c0, c1), __hadd2(c2, c3));
}
__global__ void ffma_loop(float* out, int iters) {
  float a = 1.0f + threadIdx.x * 1e-6f, b = 0.9999f, c0 = a, c1 = b, c2 = a, c3 = b;
  for (int i = 0; i < iters; ++i) { c0 = fmaf(c0, b, a); c1 = fmaf(c1, a, b); c2 = fmaf(c2, b, b); c3 = fmaf(c3, a, a); }
  out[blockIdx.x * blockDim.x + threadIdx.x] = c0 + c1 + c2 + c3;
}
__global__ void dfma_loop(double* out, int iters) {
  double a = 1.0 + threadIdx.x * 1e-9, b = 0.9999, c0 = a, c1 = b, c2 = a, c3 = b;
  for (int i = 0; i < iters; ++i) { c0 = fma(c0, b, a); c1 = fma(c1, a, b); c2 = fma(c2, b, b); c3 = fma(c3, a, a); }
  out[blockIdx.x * blockDim.x + threadIdx.x] = c0 + c1 + c2 + c3;
}
int main() {
  const int blocks = 132 * 8, threads = 256, n = blocks * threads;
  void* buf; cudaMalloc(&buf, n * sizeof(double));
  hfma2_loop<<<blocks, threads>>>((__half2*)buf, 4096);
  ffma_loop<<<blocks, threads>>>((float*)buf, 4096);
  dfma_loop<<<blocks, threads>>>((double*)buf, 1024);
  cudaError_t e = cudaDeviceSynchronize();
  printf("flops probes: %s\n", cudaGetErrorString(e));
  return e != cudaSuccess;
}
