#!/usr/bin/env bash
# One device call (repo root, .whl/ carried): ceilings wgsplit5 (the XU steal by the neighbour's
# pipe, the mbarrier chain with its count fixed), then the full `make ceilings` and the GPU tests
# in what is left of a 250 s budget. Everything lands in $OUT/session22.tgz (packed after each
# step, so a call stopped at its limit still returns what ran).
set -uo pipefail
: "${OUT:?}"
FINAL=$OUT; WORK=$(mktemp -d); T0=$(date +%s); BUDGET=250
left() { echo $(( BUDGET - ($(date +%s) - T0) )); }
pack() { tar czf "$FINAL/session22.tgz" -C "$WORK" . ; }
mkdir -p "$WORK/w5"
OUT=$WORK/w5 bash devjobs/ceil_modes.sh wgsplit5; pack
echo "=== [$(( $(date +%s) - T0 )) s] wgsplit5 done"
OUT=$WORK . devjobs/setup.sh
echo "=== [$(( $(date +%s) - T0 )) s] setup done"
timeout $(( $(left) < 200 ? $(left) - 60 : 200 )) make ceilings > "$WORK/ceilings.log" 2>&1
echo "=== [$(( $(date +%s) - T0 )) s] make ceilings exit $?"; tail -8 "$WORK/ceilings.log"
cp reports/*/ceilings.json reports/*/ceilings.raw.jsonl "$WORK/" 2>/dev/null; pack
T=$(( $(left) - 15 ))
if (( T > 30 )); then
  timeout $T .venv/bin/python -m pytest -q -m gpu tests/test_gpu_kernels.py tests/test_byo_gpu.py > "$WORK/gpu_tests.log" 2>&1
  echo "=== [$(( $(date +%s) - T0 )) s] gpu tests exit $? (limit $T s)"; tail -4 "$WORK/gpu_tests.log"
fi
pack
