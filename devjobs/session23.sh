#!/usr/bin/env bash
# One device call (repo root; .whl/ and the probe cubins in yieldcubins/ carried): the yield /
# operand-reuse probe (flashprof/kernels/ceilings/yield_probe.cu, built and patched here by
# flashprof.kernels.sass.patch; yield_host.cu loads the cubins), twice, with Nsight Compute's
# warp-state counters of each launch; with RUN_TESTS=1 then setup and the GPU tests.
# Everything lands in $OUT/session23.tgz (packed after each step).
set -uo pipefail
: "${OUT:?}"
FINAL=$OUT; WORK=$(mktemp -d); T0=$(date +%s)
pack() { tar czf "$FINAL/session23.tgz" -C "$WORK" . ; }
C=yieldcubins
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader > "$WORK/yield_clocks.txt"
nvcc --version | tail -1 > "$WORK/yield_nvcc.log"
nvcc -O2 -o /tmp/yield_host flashprof/kernels/ceilings/yield_host.cu -lcuda 2>> "$WORK/yield_nvcc.log" || { tail "$WORK/yield_nvcc.log"; exit 1; }
probe() {
  /tmp/yield_host yield_ffma 128 orig=$C/orig.cubin y0=$C/ffma_y0.cubin
  /tmp/yield_host yield_mix 160 orig=$C/orig.cubin y0fmul=$C/mix_y0fmul.cubin y0all=$C/mix_y0all.cubin
  /tmp/yield_host reuse_hmma 32 orig=$C/orig.cubin noreuse=$C/hmma_noreuse.cubin y0=$C/hmma_y0.cubin
}
for run in 1 2; do
  probe > "$WORK/yield.run$run.raw.jsonl" 2>> "$WORK/yield.log"
  echo "yield run $run exit $?: $(grep -c measurement "$WORK/yield.run$run.raw.jsonl") records"
done
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader >> "$WORK/yield_clocks.txt"
if command -v ncu > /dev/null; then
  timeout 150 ncu --clock-control none --section WarpStateStats --section SchedulerStats --csv \
    bash -c "$(declare -f probe); C=$C; probe" > "$WORK/yield_ncu.csv" 2> "$WORK/yield_ncu.log"
  echo "ncu exit $?: $(wc -l < "$WORK/yield_ncu.csv") lines"
fi
pack
echo "=== [$(( $(date +%s) - T0 )) s] probe done"
if [[ "${RUN_TESTS:-0}" == 1 ]]; then  # the GPU tests, when the call has the time
  OUT=$WORK . devjobs/setup.sh
  echo "=== [$(( $(date +%s) - T0 )) s] setup done"
  timeout 240 .venv/bin/python -m pytest -q -m gpu tests/test_gpu_kernels.py tests/test_byo_gpu.py > "$WORK/gpu_tests.log" 2>&1
  echo "=== [$(( $(date +%s) - T0 )) s] gpu tests exit $?"; tail -4 "$WORK/gpu_tests.log"
  pack
fi
