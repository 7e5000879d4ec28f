#!/usr/bin/env bash
# The mix probe's second call (mix_probe.cu as reports/h200/yield/mix2.cubin, carried in
# yieldcubins/ with mix.cubin): FA2's compute skeleton without the exponential, 1 / 2 / 4 warps a
# sub-partition, twice; then one Nsight Compute report (--set full, per-PC stall samples) of one
# launch with 2 warps a sub-partition of each kernel (launch 7: yield_host's second warm-up-less
# launch at 2 warps a sub-partition).
set -uo pipefail
: "${OUT:?}"
C=yieldcubins
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader > "$OUT/mix2_clocks.txt"
nvcc --version | tail -1 > "$OUT/mix2_nvcc.log"
nvcc -O2 -o /tmp/yield_host flashprof/kernels/ceilings/yield_host.cu -lcuda 2>> "$OUT/mix2_nvcc.log" || { tail "$OUT/mix2_nvcc.log"; exit 1; }
for run in 1 2; do
  /tmp/yield_host fa2_skel_noexp 96 orig=$C/mix2.cubin > "$OUT/mix2.run$run.raw.jsonl" 2>> "$OUT/mix2.log"
  echo "mix2 run $run exit $?: $(grep -c measurement "$OUT/mix2.run$run.raw.jsonl") records"
done
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader >> "$OUT/mix2_clocks.txt"
if command -v ncu > /dev/null; then
  for k in fa2_skel:mix fa2_skel_noexp:mix2; do
    timeout 150 ncu --clock-control none --set full --import-source no -f --launch-skip 7 --launch-count 1 \
      -o "$OUT/${k%%:*}_w2" /tmp/yield_host ${k%%:*} 96 orig=$C/${k##*:}.cubin > "$OUT/${k%%:*}_w2_ncu.log" 2>&1
    echo "ncu ${k%%:*} exit $?: $(ls -la "$OUT/${k%%:*}_w2.ncu-rep" 2>/dev/null)"
  done
fi
