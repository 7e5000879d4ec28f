#!/usr/bin/env bash
# Third H200 run of the warp-specialised kernel 7 (tuned.json's new default): make bench in
# fp16 (the second run's timed out at 200 s) and the profile of the dispatched kernel 7 (the
# second run's kernel-name regex did not know the new kernel function). Each result is copied
# to $OUT as soon as it exists.
set -uo pipefail
: "${OUT:?}"
T0=$(date +%s)
say() { echo "=== [$(( $(date +%s) - T0 )) s] $*"; }
make setup GPU=1 WHEELS=.whl > "$OUT/setup.log" 2>&1 || { tail -20 "$OUT/setup.log"; exit 1; }
if [ -z "${FLASHPROF_CUDA_HOME:-}" ] && [ -x /usr/local/cuda/bin/nvcc ]; then export FLASHPROF_CUDA_HOME=/usr/local/cuda; fi
timeout 300 make bench > "$OUT/bench.log" 2>&1; say "bench fp16 exit $?"; tail -12 "$OUT/bench.log"
cp reports/h200/bench.csv reports/h200/bench.json "$OUT/" 2>/dev/null
timeout 120 make profile KERNEL=7 > "$OUT/profile7.log" 2>&1; say "profile 7 exit $?"; tail -4 "$OUT/profile7.log"
cp reports/h200/kernel7.ncu-rep reports/h200/kernel7.json "$OUT/" 2>/dev/null
say done
