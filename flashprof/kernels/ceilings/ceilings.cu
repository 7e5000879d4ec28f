// Empirical ceilings of the GPU this runs on: one binary, every microbenchmark, < 1 minute.
//   ceilings            -> JSON lines on stdout: one "device" record, then one
//                          "measurement" record per benchmark (raw cycles, ms and work)
//   ceilings wgmma      -> the same for the wgmma benchmarks alone: SS and RS throughput, the
//                          latency of a group of 1 and of 8 (sm_90a builds; a separate
//                          process, so that a fault there cannot cost the other results)
//   ceilings mix        -> HMMA with K interleaved FFMA / IMAD / MUFU.EX2 / FMNMX / IADD3 per HMMA, with and
//                          without operand reuse (mix.cuh; issue 31's candidate costs)
//   ceilings mix1       -> the same mix kernels at one warp per scheduler (K = 0, 1, 2, 4, 8): how long the
//                          warp that issued an HMMA waits before its next instruction (issue 31)
//   ceilings mio        -> one warp issuing N independent ldmatrix.x4 back to back: how many a scheduler
//                          takes before mio_throttle (mio.cuh; the model's mio_queue_depth)
//   ceilings mio2       -> the same with 1 or 2 warps on every scheduler at once: the queue fills (mio.cuh)
//   ceilings mio3       -> a chain of SHFL / LDS / FFMA beside an ldmatrix flood on the same schedulers (mio.cuh)
//   ceilings wgmix      -> HGMMA (two warpgroups, SS and RS) with K interleaved FFMA / MUFU.EX2 /
//                          FMNMX / IMAD / FADD / softmax mix per HGMMA, then the order in which the
//                          tensor pipe takes two warpgroups' groups (wgmma_mix.cuh; sm_90a builds; issue 32)
//   ceilings sched      -> which of two ready warps a scheduler issues: greedy, round robin or
//                          fixed priority (sched.cuh; issue 32)
//   ceilings smemshare  -> ldmatrix.x4 at full rate beside cp.async from L2, each alone and together:
//                          whether LDGSTS writes take the shared-memory data path (smem_share.cuh)
// Exit status: 0 if every self-check passed, 1 if any failed (the records still print),
// 3 on a CUDA error. profiling/ceilings.py builds, runs and interprets this program.
#include <cstring>

#include "latency.cuh"
#include "mio.cuh"
#include "mix.cuh"
#include "sched.cuh"
#include "smem_share.cuh"
#include "wgmma.cuh"
#include "wgmma_mix.cuh"

using namespace ceilings;

int main(int argc, char** argv) {
    const bool wgmma_only = argc > 1 && std::strcmp(argv[1], "wgmma") == 0;
    const bool mix_only = argc > 1 && std::strcmp(argv[1], "mix") == 0;
    const bool mix1_only = argc > 1 && std::strcmp(argv[1], "mix1") == 0;
    const bool mio_only = argc > 1 && std::strcmp(argv[1], "mio") == 0;
    const bool mio2_only = argc > 1 && std::strcmp(argv[1], "mio2") == 0;
    const bool mio3_only = argc > 1 && std::strcmp(argv[1], "mio3") == 0;
    const bool wgmix_only = argc > 1 && std::strcmp(argv[1], "wgmix") == 0;
    const bool sched_only = argc > 1 && std::strcmp(argv[1], "sched") == 0;
    const bool wgsplit_only = argc > 1 && std::strcmp(argv[1], "wgsplit") == 0;
    const bool wgsplit2_only = argc > 1 && std::strcmp(argv[1], "wgsplit2") == 0;
    const bool wgsplit3_only = argc > 1 && std::strcmp(argv[1], "wgsplit3") == 0;
    const bool wgsplit4_only = argc > 1 && std::strcmp(argv[1], "wgsplit4") == 0;
    const bool wgsplit5_only = argc > 1 && std::strcmp(argv[1], "wgsplit5") == 0;
    const bool smemshare_only = argc > 1 && std::strcmp(argv[1], "smemshare") == 0;
    int dev_id = 0, count = 0;
    CHECK(cudaGetDeviceCount(&count));
    if (count == 0) {
        std::fprintf(stderr, "ceilings: no CUDA device visible\n");
        return 3;
    }
    CHECK(cudaSetDevice(dev_id));
    cudaDeviceProp p{};
    CHECK(cudaGetDeviceProperties(&p, dev_id));
    if (p.major < 8) {
        std::fprintf(stderr, "ceilings: %s is sm_%d%d; these benchmarks need sm_80 or newer\n",
                     p.name, p.major, p.minor);
        return 3;
    }
    Device dev{p.multiProcessorCount, int(p.sharedMemPerMultiprocessor), p.l2CacheSize,
               std::max(int(p.sharedMemPerMultiprocessor) / 2 + 1024, 64 * 1024)};
    if (p.sharedMemPerBlockOptin < size_t(dev.one_block_smem)) {
        std::fprintf(stderr, "ceilings: %s allows %zu B of shared memory per block, need %d\n",
                     p.name, p.sharedMemPerBlockOptin, dev.one_block_smem);
        return 3;
    }
    std::printf("{\"record\": \"device\", \"name\": \"%s\", \"arch\": \"sm_%d%d\", \"sm_count\": %d, "
                "\"l2_bytes\": %d, \"smem_per_sm\": %d, \"repeats\": %d}\n",
                p.name, p.major, p.minor, dev.sm_count, dev.l2_bytes, dev.smem_per_sm, kRepeats);
    std::fflush(stdout);

    std::vector<Record> all;
    if (wgmma_only) {
        Record r;
        if (bench_wgmma(dev, r)) {
            emit(r);
            bool ok = r.check == "ok";
            Record rs;
            bench_wgmma<true>(dev, rs);
            emit(rs);
            ok = ok && rs.check == "ok";
            for (const Record& l : bench_wgmma_latencies(dev)) {
                emit(l);
                ok = ok && l.check == "ok";
            }
            return ok ? 0 : 1;
        }
        std::fprintf(stderr, "ceilings: this build has no wgmma (not compiled for sm_90a)\n");
        return 0;
    }
    if (sched_only) return emit_all(bench_sched(dev)) ? 0 : 1;
    if (mix_only) return emit_all(bench_mma_mixes(dev)) ? 0 : 1;
    if (mix1_only) return emit_all(bench_mma_mixes_w1(dev)) ? 0 : 1;
    if (mio_only) return emit_all(bench_mio_bursts(dev)) ? 0 : 1;
    if (mio2_only) return emit_all(bench_mio_many_all(dev)) ? 0 : 1;
    if (mio3_only) return emit_all(bench_chain_beside_all(dev)) ? 0 : 1;
    if (wgsplit_only) return emit_all(bench_wgmma_splits_more(dev)) ? 0 : 1;
    if (wgsplit2_only) return emit_all(bench_wgmma_splits_kinds(dev)) ? 0 : 1;
    if (wgsplit3_only) return emit_all(bench_wgmma_splits_mufu(dev)) ? 0 : 1;
    if (wgsplit4_only) return emit_all(bench_xu_pairs(dev)) ? 0 : 1;
    if (wgsplit5_only) return emit_all(bench_xu_pairs5(dev)) ? 0 : 1;
    if (smemshare_only) return emit_all(bench_smem_share(dev)) ? 0 : 1;
    if (wgmix_only) {
        const std::vector<Record> pts = bench_wgmma_mixes(dev);
        if (pts.empty()) {
            std::fprintf(stderr, "ceilings: this build has no wgmma (not compiled for sm_90a)\n");
            return 0;
        }
        bool ok = true;
        for (const Record& r : pts) {
            emit(r);
            ok = ok && r.check == "ok";
        }
        for (const Record& r : bench_wgmma_order(dev)) {  // how the pipe takes two warpgroups' groups
            emit(r);
            ok = ok && r.check == "ok";
        }
        for (const Record& r : {bench_wgmma_latency_one<false, 8>(dev), bench_wgmma_lat_pair<0>(dev),
                                bench_wgmma_lat_pair<1>(dev)}) {  // a lone warpgroup, alone or beside an idle one
            emit(r);
            ok = ok && r.check == "ok";
        }
        for (const Record& r : bench_wgmma_splits(dev)) {  // who pays: HGMMAs and FFMAs in different warpgroups
            emit(r);
            ok = ok && r.check == "ok";
        }
        return ok ? 0 : 1;
    }
    all.push_back(bench_mma(dev, false, kWarpsPerScheduler, "mma_f16_f32", "throughput"));
    all.push_back(bench_mma(dev, true, kWarpsPerScheduler, "mma_bf16_f32", "throughput"));
    all.push_back(bench_fpu(dev, "ffma"));
    all.push_back(bench_fpu(dev, "hfma2"));
    all.push_back(bench_fpu(dev, "ex2"));
    Record ldsm = bench_smem_ld(dev, true, kWarpsPerScheduler, "ldsm_x4_bytes", "throughput");
    Record ldsm_inst = ldsm;  // the same run counted in warp instructions (512 B each)
    ldsm_inst.name = "ldsm_x4";
    ldsm_inst.unit = "warp-inst/clk/SM";
    ldsm_inst.work = ldsm.work / 512.0;
    all.push_back(ldsm_inst);
    all.push_back(ldsm);
    all.push_back(bench_smem_ld(dev, false, kWarpsPerScheduler, "smem_ld", "throughput"));
    all.push_back(bench_smem_st(dev));
    all.push_back(bench_cp_async(dev));
    all.push_back(bench_l2_read(dev));
    all.push_back(bench_dram_copy(dev));
    for (Record& r : bench_latencies()) all.push_back(r);
    for (int wps : {1, 2, 4, 8}) {
        all.push_back(bench_mma(dev, false, wps, "hmma_16816_f32", "scaling"));
        Record s = bench_smem_ld(dev, true, wps, "ldsm_x4", "scaling");
        s.unit = "warp-inst/clk/SM";
        s.work /= 512.0;
        all.push_back(s);
    }
    bool ok = true;
    for (const Record& r : all) {
        emit(r);
        ok = ok && r.check == "ok";
    }
    return ok ? 0 : 1;
}
