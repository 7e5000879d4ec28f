#!/usr/bin/env bash
# One H200 call (issue 31), repo root, carrying .whl (ncu-report, plotly) and .series:
#  1. `ceilings mix`: HMMA with K interleaved FFMA / IMAD / MUFU.EX2 / FMNMX / integer adds per
#     HMMA (the ALU-pipe kinds are new) -> $OUT/mma_mix.raw.jsonl + clocks + log;
#  2. devjobs/series_h200.sh none 1: the series' kernels benchmarked beside FA2 in the same run,
#     then the yield-bit microbenchmark -> $OUT/series_<gpu>_none.tar.xz.
set -uo pipefail
: "${OUT:?}"
T0=$(date +%s)
say() { echo "=== [$(( $(date +%s) - T0 )) s] $*"; }
NCU=0 bash devjobs/mma_mix.sh || exit 1
LIMIT=$(( ${LIMIT:-575} - ($(date +%s) - T0) )) SEQS=${SEQS:-1024,4096} bash devjobs/series_h200.sh none 1
say "done"; ls -la "$OUT"
