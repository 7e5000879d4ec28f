#!/usr/bin/env bash
# The session's last H200 call (repo root; .whl/ carries ncu-report and plotly): about 8 minutes.
#   1. make setup GPU=1 WHEELS=.whl, then the GPU tests (every kernel, every config kernel 7 can
#      dispatch to, the gate, sanitizers, user targets) -> gpu_tests.log
#   2. devjobs/profile_timing.sh (make profile KERNEL=6 against the bare ncu it wraps, REPS=2)
#      -> profile_timing.json + profile_logs.tar.gz
#   3. make profile TARGET=examples/flex_attention.py:attention: a multi-launch user target, its
#      per-line chart for the launch that carries the time -> flex.tar.gz (report, sidecar, PNGs)
set -uo pipefail
: "${OUT:?}"
T0=$(date +%s)
say() { echo "=== [$(( $(date +%s) - T0 )) s] $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
make setup GPU=1 WHEELS=.whl > /tmp/setup.log 2>&1 || { tail -20 /tmp/setup.log; exit 1; }
say "GPU tests"
timeout 200 .venv/bin/python -m pytest -q -p no:cacheprovider -m gpu tests/ > "$OUT/gpu_tests.log" 2>&1
say "GPU tests exit $?: $(tail -n 1 "$OUT/gpu_tests.log")"
say "profile timing"
mkdir -p /tmp/pt
OUT=/tmp/pt REPS=${REPS:-2} timeout 260 bash devjobs/profile_timing.sh > /tmp/pt.log 2>&1
say "profile timing exit $?"; tail -n 8 /tmp/pt.log
cp /tmp/pt/profile_timing.json "$OUT/" 2>/dev/null
tar -C /tmp/pt -czf "$OUT/profile_logs.tar.gz" logs 2>/dev/null
say "FlexAttention target"
timeout 100 make --no-print-directory profile TARGET=examples/flex_attention.py:attention MAX_LAUNCHES=16 > /tmp/flex.log 2>&1
say "flex exit $?"; grep -i "stall_lines\|wrote\|error" /tmp/flex.log | tail -n 6
cp /tmp/flex.log reports/h200/flex_profile.log
tar -czf "$OUT/flex.tar.gz" reports/h200/flex_attention-attention.ncu-rep reports/h200/flex_attention-attention.json \
    reports/h200/flex_profile.log figures/stall_lines_flex_attention-attention.png figures/roofline_flex_attention-attention.png 2>/dev/null
say "done"
