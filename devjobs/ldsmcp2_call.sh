#!/usr/bin/env bash
# The ldmatrix + HMMA probe with FA2's coalesced cp.async copies and a KV pass's waits and barriers
# (issue 31; flashprof/kernels/ceilings/ldsm_probe.cu, built as reports/h200/yield/ldsmcp2.cubin and
# carried in yieldcubins/; flashprof/analysis/gap/yield_probe.py mode "ldsmcp2"): ldsm_mma (the same-run
# baseline), ldsm_cpc and ldsm_cpc_db at 1 / 2 / 4 warps a sub-partition, twice; then a --set full report
# of one launch of ldsm_cpc at 2 warps a sub-partition (the per-PC stall samples).
FULL="ldsm_cpc:ldsmcp2" exec bash devjobs/probe_call.sh ldsmcp2 \
  "ldsm_mma 96 orig=yc/ldsmcp2.cubin" "ldsm_cpc 96 orig=yc/ldsmcp2.cubin" "ldsm_cpc_db 96 orig=yc/ldsmcp2.cubin"
