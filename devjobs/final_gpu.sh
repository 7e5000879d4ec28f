#!/usr/bin/env bash
# One H200 call for kernel 7's new dispatch and the one-process `make profile` (repo root;
# .whl/ carries ncu-report and plotly): under 10 minutes, each step cut to what is left.
#   1. make setup GPU=1 WHEELS=.whl; load(7) (builds the dispatched extension, prints its table)
#   2. make bench (fp16) and flashprof bench --dtype bf16, same machine -> bench.tar.gz
#      (reports/h200/bench*.csv/json and the pair make bench moved to reports/h200/history/)
#   3. devjobs/profile_timing.sh, REPS=2 (make profile KERNEL=6 against the bare ncu it
#      wraps) -> profile_timing.json + profile_logs.tar.gz
#   4. the GPU tests (every kernel, every config kernel 7 can dispatch to, the gate,
#      sanitizers, user targets) -> gpu_tests.log
#   5. make profile TARGET=examples/flex_attention.py:attention, if time is left -> flex.tar.gz
set -uo pipefail
: "${OUT:?}"
T0=$(date +%s)
END=$(( T0 + ${BUDGET_S:-585} ))
say() { echo "=== [$(( $(date +%s) - T0 )) s] $*"; }
left() { echo $(( END - $(date +%s) )); }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
make setup GPU=1 WHEELS=.whl > /tmp/setup.log 2>&1 || { tail -20 /tmp/setup.log; exit 1; }
say "load(7)"
timeout 120 .venv/bin/python -c 'from flashprof.kernels.api import load; print(load(7))' > "$OUT/load7.log" 2>&1
say "load(7) exit $?: $(tail -n 3 "$OUT/load7.log")"

say "make bench (fp16)"
timeout $(( $(left) - 300 )) make --no-print-directory bench > "$OUT/bench_fp16.log" 2>&1
say "exit $?"; tail -n 12 "$OUT/bench_fp16.log"
say "flashprof bench --dtype bf16"
timeout $(( $(left) - 260 )) .venv/bin/python -m flashprof bench --dtype bf16 --out reports/h200/bench_bf16.csv \
    > "$OUT/bench_bf16.log" 2>&1
say "exit $?"; tail -n 12 "$OUT/bench_bf16.log"
tar -czf "$OUT/bench.tar.gz" $(ls reports/h200/bench*.csv reports/h200/bench*.json 2>/dev/null) \
    $(git ls-files --others --exclude-standard reports/h200/history 2>/dev/null)

say "profile timing"
mkdir -p /tmp/pt
OUT=/tmp/pt REPS=${REPS:-2} timeout $(( $(left) - 130 )) bash devjobs/profile_timing.sh > /tmp/pt.log 2>&1
say "profile timing exit $?"; tail -n 8 /tmp/pt.log
cp /tmp/pt/profile_timing.json "$OUT/" 2>/dev/null
tar -C /tmp/pt -czf "$OUT/profile_logs.tar.gz" logs 2>/dev/null

say "GPU tests"
timeout $(( $(left) - 45 )) .venv/bin/python -m pytest -q -p no:cacheprovider -m gpu tests/ > "$OUT/gpu_tests.log" 2>&1
say "GPU tests exit $?: $(tail -n 1 "$OUT/gpu_tests.log")"

if [ "$(left)" -gt 40 ]; then
    say "FlexAttention target"
    timeout $(( $(left) - 5 )) make --no-print-directory profile TARGET=examples/flex_attention.py:attention \
        MAX_LAUNCHES=16 > /tmp/flex.log 2>&1
    say "flex exit $?"; grep -i "stall_lines\|wrote\|error" /tmp/flex.log | tail -n 6
    cp /tmp/flex.log "$OUT/flex_profile.log"
    tar -czf "$OUT/flex.tar.gz" reports/h200/flex_attention-attention.ncu-rep reports/h200/flex_attention-attention.json \
        figures/stall_lines_flex_attention-attention.png figures/roofline_flex_attention-attention.png \
        $(git ls-files --others --exclude-standard reports/h200/history 2>/dev/null) 2>/dev/null
fi
say "done"
