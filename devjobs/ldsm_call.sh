#!/usr/bin/env bash
# The ldmatrix + HMMA probe (issue 31; flashprof/kernels/ceilings/ldsm_probe.cu, built here as
# reports/h200/yield/ldsm.cubin and carried in yieldcubins/; flashprof/analysis/gap/yield_probe.py mode
# "ldsm"): FA2's shared-memory side without the softmax, 1 / 2 / 4 warps a sub-partition, twice; then
# Nsight Compute's warp states of every launch and a --set full report of one launch of each kernel
# at 2 warps a sub-partition (the per-PC stall samples).
WARPSTATE=1 FULL="ldsm_mma:ldsm ldsm_mma_db:ldsm" exec bash devjobs/probe_call.sh ldsm \
  "ldsm_mma 96 orig=yc/ldsm.cubin" "ldsm_mma_db 96 orig=yc/ldsm.cubin"
