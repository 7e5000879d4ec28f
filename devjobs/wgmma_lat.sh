#!/usr/bin/env bash
# One H200 call (repo root; .whl/ carries ncu-report + plotly), issue 32: `make ceilings` with the
# wgmma latency probes (ceilings wgmma: SS and RS throughput, groups of 1 and 8 wgmma from fence to
# wait), written to $OUT/ceil (not over reports/h200), then the ceilings GPU tests.
set -uo pipefail
: "${OUT:?}"
T0=$(date +%s)
say() { echo "=== [$(( $(date +%s) - T0 )) s] $*"; }
make setup GPU=1 WHEELS=.whl > "$OUT/setup.log" 2>&1 || { tail -20 "$OUT/setup.log"; exit 1; }
say "setup done"
if [ -z "${FLASHPROF_CUDA_HOME:-}" ] && [ -x /usr/local/cuda/bin/nvcc ]; then export FLASHPROF_CUDA_HOME=/usr/local/cuda; fi
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader > "$OUT/clocks.txt"
timeout 280 .venv/bin/python -m flashprof ceilings --out "$OUT/ceil" > "$OUT/ceilings.log" 2>&1
say "ceilings exit $?"; tail -n 40 "$OUT/ceilings.log"
grep wgmma "$OUT/ceil/ceilings.raw.jsonl" | cut -c1-400
timeout 200 .venv/bin/python -m pytest -q -p no:cacheprovider -m gpu tests/test_ceilings.py > "$OUT/gpu_ceilings_tests.log" 2>&1
say "GPU ceilings tests exit $?: $(tail -n 1 "$OUT/gpu_ceilings_tests.log")"
