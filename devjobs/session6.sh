#!/usr/bin/env bash
# One H200 call (repo root; .whl/ carries ncu-report + plotly):
#   1. make setup GPU=1 WHEELS=.whl
#   2. an int8 torch._int_mm GEMM under ncu --set full (integer tensor-pipe test data)
#   3. make profile KERNEL=7mma (the new target: kernel 7's mma.sync form) end to end
#   4. the GPU tests on this tree
set -uo pipefail
: "${OUT:?}"
T0=$(date +%s)
say() { echo "=== [$(( $(date +%s) - T0 )) s] $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
make setup GPU=1 WHEELS=.whl > "$OUT/setup.log" 2>&1 || { tail -20 "$OUT/setup.log"; exit 1; }
say "setup done"
IMMA_ONLY=1 bash devjobs/gpu_tests_imma.sh
ls -la "$OUT"
say "make profile KERNEL=7mma"
PYTHONUNBUFFERED=1 timeout 240 make --no-print-directory profile KERNEL=7mma > "$OUT/profile_7mma.log" 2>&1
say "make profile KERNEL=7mma exit $?"; tail -n 12 "$OUT/profile_7mma.log"
.venv/bin/flashprof summary reports/h200/kernel7mma.ncu-rep --format json > "$OUT/kernel7mma_fresh_summary.json" 2>&1
cp reports/h200/kernel7mma.json "$OUT/kernel7mma_fresh.json" 2>/dev/null
say "GPU tests"
timeout $(( ${BUDGET_S:-560} - ($(date +%s) - T0) )) .venv/bin/python -m pytest -q -p no:cacheprovider -m gpu tests/ \
    > "$OUT/gpu_tests.log" 2>&1
say "GPU tests exit $?: $(tail -n 1 "$OUT/gpu_tests.log")"
