// `ceilings smemshare` alone, in a translation unit small enough to build in seconds on a
// short device call (devjobs/ceil_modes.sh builds the whole ceilings program instead).
#include <algorithm>
#include "../flashprof/kernels/ceilings/smem_share.cuh"

int main() {
    cudaDeviceProp p{};
    CHECK(cudaGetDeviceProperties(&p, 0));
    ceilings::Device dev{p.multiProcessorCount, int(p.sharedMemPerMultiprocessor), p.l2CacheSize,
                         std::max(int(p.sharedMemPerMultiprocessor) / 2 + 1024, 64 * 1024)};
    std::printf("{\"record\": \"device\", \"name\": \"%s\", \"arch\": \"sm_%d%d\", \"sm_count\": %d, "
                "\"l2_bytes\": %d, \"smem_per_sm\": %d, \"repeats\": %d}\n",
                p.name, p.major, p.minor, dev.sm_count, dev.l2_bytes, dev.smem_per_sm, ceilings::kRepeats);
    return ceilings::emit_all(ceilings::bench_smem_share(dev)) ? 0 : 1;
}
