#!/usr/bin/env bash
# H200: compute-sanitizer memcheck/racecheck/synccheck on every persistent warp-specialised
# config the tuner can pick (the shipped kernel 7 among them), after devjobs/pers_check.sh's
# GPU test run (67 passed) reached its time limit before the sanitizer tests.
set -uo pipefail
: "${OUT:?}"
T0=$(date +%s)
say() { echo "=== [$(( $(date +%s) - T0 )) s] $*"; }
make setup GPU=1 WHEELS=.whl > "$OUT/setup.log" 2>&1 || { tail -20 "$OUT/setup.log"; exit 1; }
if [ -z "${FLASHPROF_CUDA_HOME:-}" ] && [ -x /usr/local/cuda/bin/nvcc ]; then export FLASHPROF_CUDA_HOME=/usr/local/cuda; fi
say setup
L=reports/h200/logs/pers_check; mkdir -p $L
timeout 400 .venv/bin/python -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu_kernels.py -rA --durations=12 \
  -k "test_compute_sanitizer_clean_kernel7_dispatch and pers" --junitxml=$L/sanitizers.xml > $L/sanitizers.log 2>&1
say "sanitizer tests exit $?"; grep -E "^(PASSED|FAILED|ERROR)|passed|failed" $L/sanitizers.log | tail -14
tar czf "$OUT/san.tgz" $L/sanitizers.log $L/sanitizers.xml
