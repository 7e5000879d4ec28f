#!/usr/bin/env bash
# One probe call on the device (repo root; the cubins carried in yieldcubins/): builds
# yield_host, runs each yield_host call given (twice, into $OUT/<mode>.run{1,2}.raw.jsonl), then,
# where ncu exists, the warp states of every launch (WARPSTATE=1, <mode>_ncu.csv) and a full
# report of single launches (FULL="kernel:cubin ..." with SKIP, the launches skipped first).
#   bash devjobs/probe_call.sh MODE "KERNEL PER_PASS LABEL=CUBIN ..." ["..."]
set -uo pipefail
: "${OUT:?}"
MODE=$1; shift
C=yieldcubins
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader > "$OUT/${MODE}_clocks.txt"
nvcc --version | tail -1 > "$OUT/${MODE}_nvcc.log"
nvcc -O2 -o /tmp/yield_host flashprof/kernels/ceilings/yield_host.cu -lcuda 2>> "$OUT/${MODE}_nvcc.log" \
  || { tail "$OUT/${MODE}_nvcc.log"; exit 1; }
probe() { local call; for call in "$@"; do /tmp/yield_host ${call//=yc\//=$C/}; done; }
for run in 1 2; do
  probe "$@" > "$OUT/$MODE.run$run.raw.jsonl" 2>> "$OUT/$MODE.log"
  echo "$MODE run $run exit $?: $(grep -c measurement "$OUT/$MODE.run$run.raw.jsonl") records"
done
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader >> "$OUT/${MODE}_clocks.txt"
command -v ncu > /dev/null || exit 0
if [[ "${WARPSTATE:-0}" == 1 ]]; then
  timeout 200 ncu --clock-control none --section WarpStateStats --section SchedulerStats --csv \
    bash -c "$(declare -f probe); C=$C; probe $(printf '%q ' "$@")" > "$OUT/${MODE}_ncu.csv" 2> "$OUT/${MODE}_ncu.log"
  echo "ncu exit $?: $(wc -l < "$OUT/${MODE}_ncu.csv") lines"
fi
for kc in ${FULL:-}; do
  k=${kc%%:*}; cub=${kc##*:}
  timeout 150 ncu --clock-control none --set full --import-source no -f --launch-skip "${SKIP:-7}" --launch-count 1 \
    -o "$OUT/${k}_w2" /tmp/yield_host "$k" 96 orig=$C/$cub.cubin > "$OUT/${k}_w2_ncu.log" 2>&1
  echo "ncu $k exit $?: $(ls -la "$OUT/${k}_w2.ncu-rep" 2>/dev/null)"
done
