#!/usr/bin/env bash
# H200: compute-sanitizer memcheck/racecheck/synccheck on the non-persistent warp-specialised
# configs the tuner can pick (tests/test_gpu_kernels.py's SANITIZED steps), built from the
# current template: the drivers of 2026-12-03 (reports/h200/logs/ws/) ran an earlier, uncommitted
# form of flash_fwd_ws.cuh. Most useful first (the ping-pong kernel leads the rounds sweep at
# S >= 4096), the log streamed to $OUT so a run cut at the session's device time still reports.
set -uo pipefail
: "${OUT:?}"
make setup GPU=1 WHEELS=.whl > "$OUT/setup.log" 2>&1 || { tail -20 "$OUT/setup.log"; exit 1; }
if [ -z "${FLASHPROF_CUDA_HOME:-}" ] && [ -x /usr/local/cuda/bin/nvcc ]; then export FLASHPROF_CUDA_HOME=/usr/local/cuda; fi
T=tests/test_gpu_kernels.py::test_compute_sanitizer_clean_kernel7_dispatch
P=d128_br128_bc128_w8_async_eager_swz_f000_optsm_wgmma; Q=d128_br64_bc64_w4_async_eager_swz_f000_optsm_mb2_wgmma
ids=()
for c in ${P}_ws2_ovl_pp ${P}_ws2 ${P}_ws2_ovl ${Q}_ws2_ovl ${Q}_ws2; do
  for t in memcheck racecheck synccheck; do ids+=("$T[$c-$t]"); done
done
timeout 290 .venv/bin/python -m pytest -p no:cacheprovider -m gpu -rA -v "${ids[@]}" 2>&1 | tee "$OUT/ws_sanitizers.log" \
  | grep -E "PASSED|FAILED|ERROR|passed|failed" | tail -20
