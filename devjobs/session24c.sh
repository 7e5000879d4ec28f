#!/usr/bin/env bash
# The mix probe (flashprof/kernels/ceilings/mix_probe.cu, built here as reports/h200/yield/mix.cubin,
# carried in yieldcubins/): FA2's compute skeleton (96 HMMA, 32 EX2 a pass), 1 / 2 / 4
# warps a sub-partition, twice, then Nsight Compute's warp states of each launch and one full report (per-PC
# stall samples: mix.ncu-rep).
set -uo pipefail
: "${OUT:?}"
C=yieldcubins
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader > "$OUT/mix_clocks.txt"
nvcc --version | tail -1 > "$OUT/mix_nvcc.log"
nvcc -O2 -o /tmp/yield_host flashprof/kernels/ceilings/yield_host.cu -lcuda 2>> "$OUT/mix_nvcc.log" || { tail "$OUT/mix_nvcc.log"; exit 1; }
probe() { /tmp/yield_host fa2_skel 96 orig=$C/mix.cubin; }
for run in 1 2; do
  probe > "$OUT/mix.run$run.raw.jsonl" 2>> "$OUT/mix.log"
  echo "mix run $run exit $?: $(grep -c measurement "$OUT/mix.run$run.raw.jsonl") records"
done
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader >> "$OUT/mix_clocks.txt"
if command -v ncu > /dev/null; then
  timeout 200 ncu --clock-control none --section WarpStateStats --section SchedulerStats --csv \
    bash -c "$(declare -f probe); C=$C; probe" > "$OUT/mix_ncu.csv" 2> "$OUT/mix_ncu.log"
  echo "ncu exit $?: $(wc -l < "$OUT/mix_ncu.csv") lines"
  timeout 200 ncu --clock-control none --set full --import-source no -f -o "$OUT/mix" \
    /tmp/yield_host fa2_skel 96 orig=$C/mix.cubin > "$OUT/mix_ncu_full.log" 2>&1
  echo "ncu full exit $?: $(ls -la "$OUT"/mix.ncu-rep 2>/dev/null)"
fi
