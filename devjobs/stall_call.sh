#!/usr/bin/env bash
# The stall-count probe (issue 31; flashprof/analysis/gap/yield_probe.py mode "stall"): yield_ffma
# with every FFMA's stall count set to S (reports/h200/yield/ffma_s<S>y1.cubin, patched from
# orig.cubin by flashprof.kernels.sass.patch), 1 / 2 / 4 warps a sub-partition, twice, then
# Nsight Compute's warp states of every launch. The cubins are carried in yieldcubins/.
set -uo pipefail
V=""
for s in 2 3 4 5 6 8 10; do V+=" s$s=yc/ffma_s${s}y1.cubin"; done
WARPSTATE=1 bash devjobs/probe_call.sh stall "yield_ffma 128 orig=yc/orig.cubin$V"
