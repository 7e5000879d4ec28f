#!/usr/bin/env bash
# The XU probe (flashprof/kernels/ceilings/xu_probe.cu, built here as reports/h200/yield/xu.cubin,
# carried in yieldcubins/): MUFU.EX2 with 1 / 2 / 3 FP32 instructions per exponential, 1 / 2 / 4
# warps a sub-partition, twice, then Nsight Compute's warp states of each launch.
WARPSTATE=1 exec bash devjobs/probe_call.sh xu "xu_soft1 128 orig=yc/xu.cubin" "xu_soft2 128 orig=yc/xu.cubin" \
  "xu_soft3 128 orig=yc/xu.cubin"
