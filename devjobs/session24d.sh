#!/usr/bin/env bash
# The mix probe's second call (mix_probe.cu as reports/h200/yield/mix2.cubin, carried in
# yieldcubins/ with mix.cubin): FA2's compute skeleton without the exponential, 1 / 2 / 4 warps a
# sub-partition, twice; then one Nsight Compute report (--set full, per-PC stall samples) of one
# launch with 2 warps a sub-partition of each kernel (launch 7: yield_host's first timed launch
# at 2 warps a sub-partition, after one warm-up).
FULL="fa2_skel:mix fa2_skel_noexp:mix2" SKIP=7 exec bash devjobs/probe_call.sh mix2 "fa2_skel_noexp 96 orig=yc/mix2.cubin"
