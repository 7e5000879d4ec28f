#!/bin/bash
# Issue 12 on the H200 machine: `make profile KERNEL=6` WITHOUT the PyPI ncu-report wheel.
# Expected: the profile step writes reports/h200/kernel6.ncu-rep; the summary step's worker
# either reads it (bundled copy works) or dies, and then the user sees ONE line
#   analysis: error: <report>: ncu_report crashed while reading it (signal 11, SIGSEGV); the report is kept; fix: ...
# and make stops with a non-zero status, never "Segmentation fault" / "Error 139".
# Output: $OUT/profile_no_wheel.log (everything below) and $OUT/summary_stderr.txt.
set -u
exec > >(tee -a "$OUT/profile_no_wheel.log") 2>&1
date; nvidia-smi --query-gpu=name,clocks.sm --format=csv
python3 -c "import ncu_report; print('PyPI ncu_report present:', ncu_report.__file__)" 2>/dev/null \
  || echo "no PyPI ncu_report in $(python3 -c 'import sys; print(sys.executable)') (the case under test)"
export XDG_CACHE_HOME=$(mktemp -d)   # cold cache: the summary really reads the report
start=$(date +%s)
# no GPU venv here on purpose: the system python3, which lacks the PyPI wheel
make profile KERNEL=6 PY=python3 2> "$OUT/summary_stderr.txt"; rc=$?
echo "make rc=$rc after $(( $(date +%s) - start )) s"
echo "--- stderr of make (must be short, no Traceback, no 'Segmentation fault'):"; cat "$OUT/summary_stderr.txt"
grep -c Traceback "$OUT/summary_stderr.txt"; grep -c "Segmentation fault" "$OUT/summary_stderr.txt"
ls -la reports/h200/kernel6.ncu-rep reports/h200/kernel6.json && sha1sum reports/h200/kernel6.ncu-rep
echo "--- the summary step alone:"
python3 -m flashprof summary reports/h200/kernel6.ncu-rep --no-cache > /dev/null; echo "summary rc=$?"
# The fix the message names, where the lead carried the wheel (.whl/ in the tree):
if ls .whl/*.whl > /dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl
  PYTHONPATH=/tmp/site python3 -m flashprof summary reports/h200/kernel6.ncu-rep --format json --no-cache \
    | python3 -c "import json,sys; r=json.load(sys.stdin)[0]; print('with wheel:', r['flops_kind'], round(r['tflops'], 1), 'TFLOP/s', r['missing'])"
fi
date
