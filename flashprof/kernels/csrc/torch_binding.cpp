// The only file that sees torch: argument checks, stream, and the Python module.
// Kernel code (the .cuh headers and flash_fwd.cu) stays torch-free.
#include <string>

#include <torch/extension.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include "config.cuh"
#include "flash_fwd.h"

using flashprof::Config;

// Errors are returned as a message rather than thrown, and built without iostreams:
// on the GPU machine's torch build (2.11+cu130, seen 2026-11-29) both a TORCH_CHECK
// failure and an std::ostringstream in this module crashed the process, so messages
// are plain std::string concatenation and the Python wrapper (kernels/api.py) raises.
static std::string check_operand(const torch::Tensor& t, const std::string& name, const torch::Tensor& q) {
    if (!t.is_cuda()) return name + " must be a CUDA tensor";
    if (t.dim() != 4) return name + " must be (batch, seq, heads, d_head), got " + std::to_string(t.dim()) + " dims";
    if (t.scalar_type() != at::kHalf && t.scalar_type() != at::kBFloat16)
        return name + " must be float16 or bfloat16";
    if (t.scalar_type() != q.scalar_type()) return name + " dtype differs from q";
    if (t.sizes() != q.sizes()) return name + " shape differs from q";
    if (!t.is_contiguous()) return name + " must be contiguous";
    if (t.device() != q.device()) return name + " is on another device than q";
    if (t.size(3) != Config::d_head) return name + " head dim must be " + std::to_string(Config::d_head);
    return std::string();
}

// o = softmax(q k^T / sqrt(d)) v written into `out`. Returns "" on success, else the reason.
std::string fwd(torch::Tensor q, torch::Tensor k, torch::Tensor v, torch::Tensor out) {
    std::string e = check_operand(q, "q", q);
    if (e.empty()) e = check_operand(k, "k", q);
    if (e.empty()) e = check_operand(v, "v", q);
    if (e.empty()) e = check_operand(out, "out", q);
    if (!e.empty()) return e;
    const int64_t seq = q.size(1);
    if (seq % Config::B_r != 0 || seq % Config::B_c != 0)
        return "seq=" + std::to_string(seq) + " must be a multiple of B_r=" + std::to_string(Config::B_r) +
               " and B_c=" + std::to_string(Config::B_c);
    const c10::cuda::CUDAGuard guard(q.device());
    const auto dtype = q.scalar_type() == at::kHalf ? flashprof::DType::fp16 : flashprof::DType::bf16;
    const cudaError_t err = flashprof::flash_fwd(q.data_ptr(), k.data_ptr(), v.data_ptr(), out.data_ptr(),
                                                 static_cast<int>(q.size(0)), static_cast<int>(seq),
                                                 static_cast<int>(q.size(2)), dtype,
                                                 c10::cuda::getCurrentCUDAStream().stream());
    if (err != cudaSuccess) return std::string("flashprof kernel launch failed: ") + cudaGetErrorString(err);
    return std::string();
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
    d["persistent"] = Config::persistent;
    d["min_blocks_per_sm"] = Config::min_blocks;
    d["wgmma"] = Config::wgmma;
    d["warp_specialized"] = Config::ws;
    d["kv_stages"] = Config::kv_stages;
    d["intra_wg_overlap"] = Config::overlap;
    d["pingpong"] = Config::pingpong;
    return d;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) {
    m.def("fwd", &fwd, "FlashAttention-2 forward into out; returns '' or the reason it refused",
          pybind11::arg("q"), pybind11::arg("k"), pybind11::arg("v"), pybind11::arg("out"));
    m.def("config", &config, "compile-time configuration of this variant");
}
