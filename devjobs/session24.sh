#!/usr/bin/env bash
# One device call (repo root; .whl/ and yieldcubins/ carried): the yield probe's second call
# (devjobs/session23b.sh: FFMA at stall count 2 with the yield bit set and cleared), then setup
# and the GPU tests with pytest's own summary and a JUnit file. Packed after each step into
# $OUT/session24.tgz so a call stopped at its limit still returns what ran.
set -uo pipefail
: "${OUT:?}"
FINAL=$OUT; WORK=$(mktemp -d); T0=$(date +%s); BUDGET=${BUDGET_S:-560}
left() { echo $(( BUDGET - ($(date +%s) - T0) )); }
pack() { tar czf "$FINAL/session24.tgz" -C "$WORK" . ; }
mkdir -p "$WORK/yield2"
OUT=$WORK/yield2 bash devjobs/session23b.sh; pack
echo "=== [$(( $(date +%s) - T0 )) s] yield2 done"
OUT=$WORK . devjobs/setup.sh
echo "=== [$(( $(date +%s) - T0 )) s] setup done"
T=$(( $(left) - 20 ))
timeout $T .venv/bin/python -m pytest -m gpu -rA -p no:cacheprovider --junitxml="$WORK/gpu_tests.xml" \
    tests/test_gpu_kernels.py tests/test_byo_gpu.py > "$WORK/gpu_tests.log" 2>&1
echo "=== [$(( $(date +%s) - T0 )) s] gpu tests exit $? (limit $T s)"; tail -5 "$WORK/gpu_tests.log"
pack
