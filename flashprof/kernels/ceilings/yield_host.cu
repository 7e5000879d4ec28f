// Host side of the yield probe (yield_probe.cu): loads each cubin named on the command line
// with the driver API (the patched ones are not nvcc's to link), runs its kernel on one SM
// with 1, 2 and 4 warps per sub-partition, and prints one JSON line per (cubin, warps):
// the per-warp clock64 spans of kRepeats timed launches (after one warm-up), raw.
//   yield_host <kernel> <instructions per pass> <label>=<cubin> [<label>=<cubin> ...]
// (yield_ffma 128, yield_mix 160, reuse_hmma 32: the instructions each warp's pass times)
// Build: nvcc -O2 -o yield_host yield_host.cu -lcuda
#include <cuda.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#define DRV(x)                                                                          \
    do {                                                                                \
        CUresult r_ = (x);                                                              \
        if (r_ != CUDA_SUCCESS) {                                                       \
            const char* s_ = nullptr;                                                   \
            cuGetErrorString(r_, &s_);                                                  \
            std::fprintf(stderr, "yield_host: %s in %s\n", s_ ? s_ : "?", #x);          \
            std::exit(3);                                                               \
        }                                                                               \
    } while (0)

constexpr int kRepeats = 5;
constexpr int kIters = 2048;  // passes per launch

int main(int argc, char** argv) {
    if (argc < 4) {
        std::fprintf(stderr, "usage: yield_host <kernel> <instructions per pass> <label>=<cubin> ...\n");
        return 2;
    }
    const std::string kernel = argv[1];
    const int per_pass = std::atoi(argv[2]);
    DRV(cuInit(0));
    CUdevice dev;
    DRV(cuDeviceGet(&dev, 0));
    CUcontext ctx;
    DRV(cuDevicePrimaryCtxRetain(&ctx, dev));
    DRV(cuCtxSetCurrent(ctx));
    char name[256] = {0};
    DRV(cuDeviceGetName(name, sizeof(name), dev));
    std::printf("{\"record\": \"device\", \"name\": \"%s\", \"kernel\": \"%s\", \"iters\": %d, \"repeats\": %d}\n",
                name, kernel.c_str(), kIters, kRepeats);
    CUdeviceptr out, cyc;
    DRV(cuMemAlloc(&out, 1024 * sizeof(float)));
    DRV(cuMemAlloc(&cyc, 32 * sizeof(long long)));
    for (int a = 3; a < argc; ++a) {
        std::string arg = argv[a];
        size_t eq = arg.find('=');
        if (eq == std::string::npos) {
            std::fprintf(stderr, "yield_host: '%s' is not <label>=<cubin>\n", arg.c_str());
            return 2;
        }
        std::string label = arg.substr(0, eq), path = arg.substr(eq + 1);
        CUmodule mod;
        DRV(cuModuleLoad(&mod, path.c_str()));
        CUfunction fn;
        DRV(cuModuleGetFunction(&fn, mod, kernel.c_str()));
        for (int per_sp : {1, 2, 4}) {
            int warps = 4 * per_sp, iters = kIters;
            float b = 0.999f, c = 1e-3f;
            void* args[] = {&out, &cyc, &iters, &b, &c};
            std::string spans;
            for (int rep = 0; rep <= kRepeats; ++rep) {
                DRV(cuLaunchKernel(fn, 1, 1, 1, 32 * warps, 1, 1, 0, nullptr, args, nullptr));
                DRV(cuCtxSynchronize());
                if (rep == 0) continue;  // warm-up
                std::vector<long long> h(warps);
                DRV(cuMemcpyDtoH(h.data(), cyc, warps * sizeof(long long)));
                spans += rep > 1 ? ", [" : "[";
                for (int w = 0; w < warps; ++w) spans += (w ? ", " : "") + std::to_string(h[w]);
                spans += "]";
            }
            std::printf("{\"record\": \"measurement\", \"name\": \"yield_%s_%s_w%d\", \"kernel\": \"%s\", "
                        "\"variant\": \"%s\", \"warps_per_scheduler\": %d, \"work\": %d, \"spans\": [%s]}\n",
                        kernel.c_str(), label.c_str(), per_sp, kernel.c_str(), label.c_str(), per_sp,
                        iters * per_pass, spans.c_str());
            std::fflush(stdout);
        }
        DRV(cuModuleUnload(mod));
    }
    DRV(cuMemFree(out));
    DRV(cuMemFree(cyc));
    return 0;
}
