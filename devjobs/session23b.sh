#!/usr/bin/env bash
# The yield probe's second call (repo root, the cubins in yieldcubins/ carried): FFMA with stall
# count 2, yield bit set and cleared, beside the compiled cubin and the cleared one, twice.
set -uo pipefail
: "${OUT:?}"
C=yieldcubins
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader > "$OUT/yield2_clocks.txt"
nvcc --version | tail -1 > "$OUT/yield2_nvcc.log"
nvcc -O2 -o /tmp/yield_host flashprof/kernels/ceilings/yield_host.cu -lcuda 2>> "$OUT/yield2_nvcc.log" || { tail "$OUT/yield2_nvcc.log"; exit 1; }
for run in 1 2; do
  /tmp/yield_host yield_ffma 128 orig=$C/orig.cubin y0=$C/ffma_y0.cubin s2y1=$C/ffma_s2y1.cubin s2y0=$C/ffma_s2y0.cubin \
    > "$OUT/yield2.run$run.raw.jsonl" 2>> "$OUT/yield2.log"
  echo "yield2 run $run exit $?: $(grep -c measurement "$OUT/yield2.run$run.raw.jsonl") records"
done
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader >> "$OUT/yield2_clocks.txt"
