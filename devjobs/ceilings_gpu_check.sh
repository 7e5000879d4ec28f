#!/usr/bin/env bash
# One device call after a ceilings-only change (repo root, .whl/ carried): the full `make ceilings`
# (the binary's default mode, untouched by the new split modes) and the GPU tests, logs under $OUT.
set -uo pipefail
: "${OUT:?}"
T0=$(date +%s)
say() { echo "=== [$(( $(date +%s) - T0 )) s] $*"; }
make setup GPU=1 WHEELS=.whl > "$OUT/setup.log" 2>&1 || { tail -20 "$OUT/setup.log"; exit 1; }
say "setup done"
timeout 200 make ceilings > "$OUT/ceilings.log" 2>&1; say "make ceilings exit $?"; tail -15 "$OUT/ceilings.log"
cp reports/*/ceilings.json "$OUT/" 2>/dev/null
timeout 280 .venv/bin/python -m pytest -q -m gpu tests/test_gpu_kernels.py tests/test_byo_gpu.py > "$OUT/gpu_tests.log" 2>&1
say "gpu tests exit $?"; tail -5 "$OUT/gpu_tests.log"
