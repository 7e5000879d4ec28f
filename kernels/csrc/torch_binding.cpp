// The only file that sees torch: argument checks, stream, and the Python module.
// Kernel code (the .cuh headers and flash_fwd.cu) stays torch-free.
#include <torch/extension.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "config.cuh"
#include "flash_fwd.h"

using flashprof::Config;

static void check_operand(const torch::Tensor& t, const char* name, const torch::Tensor& q) {
    TORCH_CHECK(t.is_cuda(), name, " must be a CUDA tensor");
    TORCH_CHECK(t.dim() == 4, name, " must be (batch, seq, heads, d_head), got ", t.dim(), " dims");
    TORCH_CHECK(t.scalar_type() == at::kHalf || t.scalar_type() == at::kBFloat16, name,
                " must be float16 or bfloat16, got ", t.scalar_type());
    TORCH_CHECK(t.scalar_type() == q.scalar_type(), name, " dtype differs from q");
    TORCH_CHECK(t.sizes() == q.sizes(), name, " shape ", t.sizes(), " differs from q ", q.sizes());
    TORCH_CHECK(t.is_contiguous(), name, " must be contiguous");
    TORCH_CHECK(t.device() == q.device(), name, " is on another device than q");
    TORCH_CHECK(t.size(3) == Config::d_head, name, " head dim must be ", Config::d_head);
}

torch::Tensor fwd(torch::Tensor q, torch::Tensor k, torch::Tensor v, c10::optional<torch::Tensor> out) {
    check_operand(q, "q", q);
    check_operand(k, "k", q);
    check_operand(v, "v", q);
    const int64_t seq = q.size(1);
    TORCH_CHECK(seq % Config::B_r == 0 && seq % Config::B_c == 0, "seq=", seq,
                " must be a multiple of B_r=", Config::B_r, " and B_c=", Config::B_c);
    torch::Tensor o = out.has_value() ? out.value() : torch::empty_like(q);
    check_operand(o, "out", q);

    const c10::cuda::CUDAGuard guard(q.device());
    const auto dtype = q.scalar_type() == at::kHalf ? flashprof::DType::fp16 : flashprof::DType::bf16;
    const cudaError_t err = flashprof::flash_fwd(q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(),
                                                 static_cast<int>(q.size(0)), static_cast<int>(seq),
                                                 static_cast<int>(q.size(2)), dtype,
                                                 c10::cuda::getCurrentCUDAStream().stream());
    TORCH_CHECK(err == cudaSuccess, "flashprof kernel launch failed: ", cudaGetErrorString(err));
    return o;
}

// The compile-time constants this module was built with, so Python can check that a
// loaded module matches the KernelConfig it was asked for.
pybind11::dict config() {
    pybind11::dict d;
    d["d_head"] = Config::d_head;
    d["B_r"] = Config::B_r;
    d["B_c"] = Config::B_c;
    d["n_warps"] = Config::n_warps;
    d["async_copy"] = Config::async_copy;
    d["eager_load_blocks"] = Config::eager;
    d["swizzled"] = Config::swizzled;
    d["Q_mma_load_K_fragments"] = Config::Q_frags;
    d["K_mma_load_K_fragments"] = Config::K_frags;
    d["V_mma_load_K_fragments"] = Config::V_frags;
    d["mma_double_buffer_loads"] = Config::dbuf;
    d["optimized_softmax"] = Config::opt_softmax;
    d["fault"] = Config::fault;
    return d;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("fwd", &fwd, "FlashAttention-2 forward: o = softmax(q k^T / sqrt(d)) v",
          pybind11::arg("q"), pybind11::arg("k"), pybind11::arg("v"), pybind11::arg("out") = pybind11::none());
    m.def("config", &config, "compile-time configuration of this variant");
}
