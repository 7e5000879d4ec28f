#!/usr/bin/env bash
# The XU probe (flashprof/kernels/ceilings/xu_probe.cu, built here as reports/h200/yield/xu.cubin,
# carried in yieldcubins/): MUFU.EX2 with 1 / 2 / 3 FP32 instructions per exponential, 1 / 2 / 4
# warps a sub-partition, twice, then Nsight Compute's warp states of each launch.
set -uo pipefail
: "${OUT:?}"
C=yieldcubins
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader > "$OUT/xu_clocks.txt"
nvcc --version | tail -1 > "$OUT/xu_nvcc.log"
nvcc -O2 -o /tmp/yield_host flashprof/kernels/ceilings/yield_host.cu -lcuda 2>> "$OUT/xu_nvcc.log" || { tail "$OUT/xu_nvcc.log"; exit 1; }
probe() { for k in xu_soft1 xu_soft2 xu_soft3; do /tmp/yield_host $k 128 orig=$C/xu.cubin; done; }
for run in 1 2; do
  probe > "$OUT/xu.run$run.raw.jsonl" 2>> "$OUT/xu.log"
  echo "xu run $run exit $?: $(grep -c measurement "$OUT/xu.run$run.raw.jsonl") records"
done
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader >> "$OUT/xu_clocks.txt"
if command -v ncu > /dev/null; then
  timeout 200 ncu --clock-control none --section WarpStateStats --section SchedulerStats --csv \
    bash -c "$(declare -f probe); C=$C; probe" > "$OUT/xu_ncu.csv" 2> "$OUT/xu_ncu.log"
  echo "ncu exit $?: $(wc -l < "$OUT/xu_ncu.csv") lines"
fi
