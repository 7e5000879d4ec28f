#!/usr/bin/env bash
# One device call after a ceilings-only change (repo root, .whl/ carried): the full `make ceilings`
# (the binary's default mode, untouched by the new split modes) and the GPU tests, logs under $OUT.
set -uo pipefail
: "${OUT:?}"
. devjobs/setup.sh  # say, the venv
say "setup done"
timeout 200 make ceilings > "$OUT/ceilings.log" 2>&1; say "make ceilings exit $?"; tail -15 "$OUT/ceilings.log"
cp reports/*/ceilings.json "$OUT/" 2>/dev/null
timeout 280 .venv/bin/python -m pytest -q -m gpu tests/test_gpu_kernels.py tests/test_byo_gpu.py > "$OUT/gpu_tests.log" 2>&1
say "gpu tests exit $?"; tail -5 "$OUT/gpu_tests.log"
