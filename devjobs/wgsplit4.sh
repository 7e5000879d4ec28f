#!/usr/bin/env bash
# One lean GPU call (repo root, nothing carried): `ceilings wgsplit4` built with the machine's own
# nvcc straight from the source (no `make setup`: it takes about a minute of device time and this
# run needs no Python there), run twice. Outputs under $OUT: wgsplit4.raw.jsonl (run 1),
# wgsplit4.run<k>.raw.jsonl, wgsplit4_clocks.txt, wgsplit4.log, nvcc.log; if run 1 records
# nothing, compute-sanitizer's first errors (sanitizer.txt). Afterwards, here:
#   python -m flashprof.analysis.gap.xu_pair --sidecar reports/<gpu>/wgmma_mix  (after copying the files there)
#   python -m flashprof.analysis.gap.xu_pair --judge --backlog
# (the predictions in reports/h200/wgmma_mix/xu_pair_predictions.json were written before it).
set -uo pipefail
: "${OUT:?}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader > "$OUT/wgsplit4_clocks.txt"
nvcc --version | tail -1 > "$OUT/nvcc.log"
EXE=$(mktemp -d)/ceilings
nvcc -O3 -std=c++17 -lineinfo -arch=sm_90a -o "$EXE" flashprof/kernels/ceilings/ceilings.cu 2>> "$OUT/nvcc.log" \
  || { tail -20 "$OUT/nvcc.log"; exit 1; }
for run in 1 2; do
  timeout 120 "$EXE" wgsplit4 > "$OUT/wgsplit4.run$run.raw.jsonl" 2>> "$OUT/wgsplit4.log"
  echo "wgsplit4 run $run exit $?: $(grep -c measurement "$OUT/wgsplit4.run$run.raw.jsonl") records"
done
cp "$OUT/wgsplit4.run1.raw.jsonl" "$OUT/wgsplit4.raw.jsonl"
if ! grep -q measurement "$OUT/wgsplit4.raw.jsonl"; then
  timeout 120 compute-sanitizer --print-limit 3 "$EXE" wgsplit4 2>&1 | grep -v '^{' | head -40 > "$OUT/sanitizer.txt"
  cat "$OUT/sanitizer.txt"
fi
