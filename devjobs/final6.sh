#!/usr/bin/env bash
# One H200 call at the end of session 6 (repo root; .whl/ carries ncu-report + plotly), on the
# merged tree: the HMMA-mix microbenchmark (devjobs/mma_mix.sh), then make profile KERNEL=7 and
# KERNEL=6 in a row (issue 33's hang case, on the refactored profile_all), then the GPU tests.
set -uo pipefail
: "${OUT:?}"
T0=$(date +%s)
say() { echo "=== [$(( $(date +%s) - T0 )) s] $*"; }
MIX_ONLY=0 bash devjobs/mma_mix.sh
for k in 7 6; do
    say "make profile KERNEL=$k"
    PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1 timeout 150 make --no-print-directory profile KERNEL=$k > "$OUT/profile_$k.log" 2>&1
    say "make profile KERNEL=$k exit $?: $(tail -n 1 "$OUT/profile_$k.log")"
done
left=$(( ${BUDGET_S:-575} - ($(date +%s) - T0) ))
say "GPU tests (${left} s left)"
[ $left -gt 60 ] && timeout $left .venv/bin/python -m pytest -q -p no:cacheprovider -m gpu tests/ > "$OUT/gpu_tests.log" 2>&1
say "GPU tests exit $?: $(tail -n 1 "$OUT/gpu_tests.log" 2>/dev/null)"
