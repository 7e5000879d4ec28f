#!/usr/bin/env bash
# The ldmatrix + HMMA probe with a KV pass's cp.async copies and barriers (issue 31;
# flashprof/kernels/ceilings/ldsm_probe.cu, built as reports/h200/yield/ldsmcp.cubin and carried in
# yieldcubins/; flashprof/analysis/gap/yield_probe.py mode "ldsmcp"): ldsm_mma (the same-run baseline,
# ldsm.cubin's kernel), ldsm_cp and ldsm_cp_db at 1 / 2 / 4 warps a sub-partition, twice; then Nsight
# Compute's warp states of every launch and a --set full report of one launch of ldsm_cp and of
# ldsm_mma at 2 warps a sub-partition (the per-PC stall samples).
WARPSTATE=1 FULL="ldsm_cp:ldsmcp ldsm_mma:ldsmcp" exec bash devjobs/probe_call.sh ldsmcp \
  "ldsm_mma 96 orig=yc/ldsmcp.cubin" "ldsm_cp 96 orig=yc/ldsmcp.cubin" "ldsm_cp_db 96 orig=yc/ldsmcp.cubin"
