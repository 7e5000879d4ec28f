#!/usr/bin/env bash
# The mix probe (flashprof/kernels/ceilings/mix_probe.cu, built here as reports/h200/yield/mix.cubin,
# carried in yieldcubins/): FA2's compute skeleton (96 HMMA, 32 EX2 a pass), 1 / 2 / 4 warps a
# sub-partition, twice, then Nsight Compute's warp states of each launch. (The call that ran also
# wrote a --set full report of all 18 launches, 34 MB, too large to come back: session24d.sh
# profiles single launches instead.)
WARPSTATE=1 exec bash devjobs/probe_call.sh mix "fa2_skel 96 orig=yc/mix.cubin"
