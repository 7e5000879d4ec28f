#!/usr/bin/env bash
# Issue 19 on the H200 (run from the repo root; about 3-4 minutes): bring-your-own-kernel end to end.
#   1. tests/test_byo_gpu.py: both examples pass the gate (fp16, bf16); wrong shape/dtype, a raising
#      call, wrong values, launching nothing and launching > MAX_LAUNCHES are refused before ncu.
#   2. make profile TARGET=examples/triton_attention.py:attention         (S=4096, B=16, H=16, fp16, full set)
#   3. make bench   TARGET=examples/triton_attention.py:attention         (the seed's S, beside FA2, same run)
#   4. make profile TARGET=examples/torch_attention.py:attention SEQ=1024 MAX_LAUNCHES=16   (bhsd, several kernels)
# Results in $OUT (flat, 7 files): the two reports + sidecars, bench_<name>.csv + .json, byo.log.
# The lead commits them into reports/h200/ and regenerates the figures locally (make figures).
set -uo pipefail
: "${OUT:?OUT must name the results folder}"
LOG="$OUT/byo.log"
export PYTHONPATH="/tmp/site${PYTHONPATH:+:$PYTHONPATH}"
if ! python3 -c "import ncu_report" 2>/dev/null; then
    whl=$(ls .whl/ncu_report-*.whl 2>/dev/null | head -n 1)
    if [ -n "$whl" ]; then python3 -m pip install -q --no-deps --target /tmp/site "$whl" >>"$LOG" 2>&1; fi
fi
TRITON=examples/triton_attention.py:attention
TORCH=examples/torch_attention.py:attention
R=reports/h200
status=0

step() {  # step NAME CMD...: run, log with wall time, remember a failure, keep going
    local name=$1; shift
    local t0; t0=$(date +%s)
    echo "===== $name: $*" >>"$LOG"
    "$@" >>"$LOG" 2>&1
    local rc=$?
    echo "===== $name: exit $rc, wall $(( $(date +%s) - t0 )) s" | tee -a "$LOG"
    [ "$rc" -eq 0 ] || status=1
}
keep() { for f in "$@"; do [ -f "$f" ] && cp "$f" "$OUT/"; done; }

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv >>"$LOG" 2>&1
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)" >>"$LOG" 2>&1

step gpu_tests python3 -m pytest -q -p no:cacheprovider tests/test_byo_gpu.py
step profile_triton make --no-print-directory profile TARGET="$TRITON"
keep "$R/triton_attention-attention.ncu-rep" "$R/triton_attention-attention.json"
step bench_triton make --no-print-directory bench TARGET="$TRITON"
keep "$R/bench_triton_attention-attention.csv" "$R/bench_triton_attention-attention.json"
step profile_torch make --no-print-directory profile TARGET="$TORCH" SEQ=1024 MAX_LAUNCHES=16
keep "$R/torch_attention-attention_s1024_b16_h16_fp16_full.ncu-rep" "$R/torch_attention-attention_s1024_b16_h16_fp16_full.json"
ls -la "$OUT" >>"$LOG"
exit $status
