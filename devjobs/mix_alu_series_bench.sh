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
make setup GPU=1 WHEELS=.whl > "$OUT/setup.log" 2>&1 || { tail -20 "$OUT/setup.log"; exit 1; }
EXE=$(.venv/bin/python -c "from flashprof.kernels import ceilings as b; print(b.build('sm_90a'))") || exit 1
say "built $EXE"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader > "$OUT/mma_mix_clocks.txt"
( while sleep 0.5; do nvidia-smi --query-gpu=clocks.sm --format=csv,noheader,nounits; done ) >> "$OUT/mma_mix_clocks.txt" &
SMI=$!
timeout 150 "$EXE" mix > "$OUT/mma_mix.raw.jsonl" 2> "$OUT/mma_mix.log"
say "mix exit $?: $(grep -c measurement "$OUT/mma_mix.raw.jsonl") records"
kill $SMI 2>/dev/null
LIMIT=$(( ${LIMIT:-575} - ($(date +%s) - T0) )) SEQS=${SEQS:-1024,4096} bash devjobs/series_h200.sh none 1
say "done"; ls -la "$OUT"
