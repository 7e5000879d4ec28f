#!/usr/bin/env bash
# Second H200 run of the warp-specialised kernel 7 (about 9 minutes): the hopper-space sweep
# (fp16 saves kernels/tuned.json's default with its runner-up; bf16 --no-save, for the
# record), make bench in both dtypes with that table, the profile of the dispatched
# kernel 7 and of each step (examples/hopper_steps.py), then the GPU tests of the new
# configs. Everything changed comes back as one tarball: $OUT/ws_ship.tar.gz.
set -uo pipefail
: "${OUT:?}"
T0=$(date +%s)
say() { echo "=== [$(( $(date +%s) - T0 )) s] $*"; }
make setup GPU=1 WHEELS=.whl > "$OUT/setup.log" 2>&1 || { tail -20 "$OUT/setup.log"; exit 1; }
if [ -z "${FLASHPROF_CUDA_HOME:-}" ] && [ -x /usr/local/cuda/bin/nvcc ]; then export FLASHPROF_CUDA_HOME=/usr/local/cuda; fi
touch /tmp/stamp; sleep 1
L=reports/h200/logs/ws; mkdir -p $L
ONLY='br128_bc128_w8.*wgmma|br64_bc128_w4_async_eager_swz_f000_optsm_wgmma$|br128_bc64_w8.*ws[34]_ovl_pp'
SEQS=512,1024,2048,4096,8192,16384
timeout 200 .venv/bin/python -m flashprof tune --space hopper --only "$ONLY" --seqs $SEQS --reps 10 \
  --csv reports/h200/autotune_hopper.csv > $L/tune_fp16.log 2>&1; say "tune fp16 exit $?"; tail -14 $L/tune_fp16.log
timeout 120 .venv/bin/python -m flashprof tune --space hopper --only "$ONLY" --seqs $SEQS --reps 10 --dtype bf16 \
  --no-save --csv reports/h200/autotune_hopper.csv > $L/tune_bf16.log 2>&1; say "tune bf16 exit $?"; tail -12 $L/tune_bf16.log
timeout 200 make bench > $L/bench.log 2>&1; say "bench fp16 exit $?"; grep -E "kernel 7|cudnn|ref" $L/bench.log | head -20
timeout 60 .venv/bin/python -m flashprof bench --dtype bf16 --out reports/h200/bench_bf16.csv > $L/bench_bf16.log 2>&1; say "bench bf16 exit $?"
grep -E "kernel 7|cudnn" $L/bench_bf16.log | head -14
timeout 120 make profile KERNEL=7 > $L/profile7.log 2>&1; say "profile 7 exit $?"; tail -3 $L/profile7.log
for s in ws2 ws2_ovl; do
  timeout 60 make profile TARGET=examples/hopper_steps.py:$s > $L/profile_$s.log 2>&1; say "profile $s exit $?"; tail -2 $L/profile_$s.log
done
REM=$(( 540 - ($(date +%s) - T0) - 25 ))
if [ $REM -gt 30 ]; then
  timeout $REM .venv/bin/python -m pytest -q -p no:cacheprovider -m gpu tests/test_gpu_kernels.py -k "hopper or dispatch or tuned" > $L/gpu_tests.log 2>&1
  say "gpu tests exit $?: $(tail -n 1 $L/gpu_tests.log)"
fi
find reports flashprof/kernels/tuned.json -newer /tmp/stamp -type f > "$OUT/changed.txt"
tar czf "$OUT/ws_ship.tar.gz" -T "$OUT/changed.txt"; say "tar $(wc -l < "$OUT/changed.txt") files, $(du -h "$OUT/ws_ship.tar.gz" | cut -f1)"
