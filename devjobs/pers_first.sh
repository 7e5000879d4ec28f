#!/usr/bin/env bash
# H200 run of the persistent warp-specialised kernel 7 (about 9 minutes): the gate and a
# quick timing of two persistent configs, compute-sanitizer (memcheck, racecheck, synccheck)
# on the standalone driver of the 128 x 128 one at 1 x 384 x 120 (360 tiles of 3 KV blocks: 2-3 per CTA, the ring's stages shifting from tile to tile), then the
# hopper-space sweep of every persistent candidate beside the shipped kernel 7 and its
# runner-up in one run (its own CSV; fp16 saves the winner, bf16 --no-save), then make bench
# if time is left. Everything changed comes back as $OUT/pers_first.tar.gz.
set -uo pipefail
: "${OUT:?}"
T0=$(date +%s)
say() { echo "=== [$(( $(date +%s) - T0 )) s] $*"; }
left() { echo $(( 560 - ($(date +%s) - T0) )); }
make setup GPU=1 WHEELS=.whl > "$OUT/setup.log" 2>&1 || { tail -20 "$OUT/setup.log"; exit 1; }
if [ -z "${FLASHPROF_CUDA_HOME:-}" ] && [ -x /usr/local/cuda/bin/nvcc ]; then export FLASHPROF_CUDA_HOME=/usr/local/cuda; fi
touch /tmp/stamp; sleep 1
say setup
L=reports/h200/logs/pers; mkdir -p $L
PY=.venv/bin/python
cfg() { $PY -c "import json,sys; from flashprof.kernels.config import KernelConfig as K; d=json.load(open('flashprof/kernels/tuned.json'))['h200']['config']; print(json.dumps(K.from_dict({**d, **json.loads(sys.argv[1])}).to_dict(), separators=(',', ':')))" "$1"; }
C1=$(cfg '{"persistent": true}')
C2=$(cfg '{"persistent": true, "B_c": 64, "kv_stages": 3}')
# the standalone driver of C1 for the sanitizers, built while the tuner's libraries build
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
FLAGS=$($PY -c "import json,sys; from flashprof.kernels.config import KernelConfig; print(' '.join(KernelConfig.from_dict(json.loads(sys.argv[1])).nvcc_flags()))" "$C1")
( $NVCC -O3 -std=c++17 -lineinfo -gencode=arch=compute_90a,code=sm_90a $FLAGS flashprof/kernels/csrc/driver.cu \
    flashprof/kernels/csrc/flash_fwd.cu -o build/drv_pers > $L/drv.build.log 2>&1 ) &
DRV=$!
ONLY='_pers_|wgmma_ws2_ovl_pp$|wgmma_ws3_ovl_pp$'
$PY - "$ONLY" > $L/build_libs.log 2>&1 <<'PY'
import re, sys
from concurrent.futures import ThreadPoolExecutor
from flashprof.paths import ROOT
from flashprof.profiling.shared_lib import build_shared_lib
from flashprof.profiling.tune import hopper_space
cfgs = [c for c in hopper_space()[0] if re.search(sys.argv[1], c.slug)]
with ThreadPoolExecutor(16) as pool:
    for p in pool.map(lambda c: build_shared_lib(c, "sm_90", ROOT / "build" / "tune"), cfgs):
        print(p)
PY
say "libs: $(grep -c '\.so' $L/build_libs.log)"
wait $DRV; say "driver build exit $?"
for C in "$C1" "$C2"; do
  timeout 120 $PY devjobs/ws_check.py "$C" build/tune >> $L/check.log 2>&1; say "check exit $?"
done
grep -E "False|Error|error" $L/check.log | head -5
grep RECORD $L/check.log | sed 's/^RECORD //' > $L/check.jsonl
if grep -q '"gate".*false' $L/check.jsonl || [ "$(wc -l < $L/check.jsonl)" -lt 2 ]; then say "GATE FAILED: stop"; fi
timeout 30 build/drv_pers 1 384 120 fp16 > $L/drv.plain.log 2>&1; say "drv plain exit $?: $(tail -1 $L/drv.plain.log)"
for tool in memcheck racecheck synccheck; do
  timeout 100 "$SAN" --tool $tool --error-exitcode 9 build/drv_pers 1 384 120 fp16 > $L/drv.$tool.log 2>&1
  say "drv $tool exit $?: $(grep -E 'SUMMARY' $L/drv.$tool.log | tail -1)"
done
SEQS=512,1024,2048,4096,8192,16384
CSV=reports/h200/autotune_hopper_pers.csv
if ! grep -q '"gate".*false' $L/check.jsonl; then
  timeout 150 $PY -m flashprof tune --space hopper --only "$ONLY" --seqs $SEQS --reps 10 --csv $CSV > $L/tune_fp16.log 2>&1
  say "tune fp16 exit $?"; tail -14 $L/tune_fp16.log
  timeout 100 $PY -m flashprof tune --space hopper --only "$ONLY" --seqs $SEQS --reps 10 --dtype bf16 --no-save \
    --csv $CSV > $L/tune_bf16.log 2>&1; say "tune bf16 exit $?"; tail -12 $L/tune_bf16.log
  if [ "$(left)" -gt 150 ]; then
    timeout $(( $(left) - 20 )) make bench > $L/bench.log 2>&1; say "bench fp16 exit $?"; grep -E "^ +(7|7mma|ref|cudnn) " $L/bench.log | head
  fi
fi
find reports flashprof/kernels/tuned.json -newer /tmp/stamp -type f > "$OUT/changed.txt"
tar czf "$OUT/pers_first.tar.gz" -T "$OUT/changed.txt"; say "tar $(wc -l < "$OUT/changed.txt") files"
