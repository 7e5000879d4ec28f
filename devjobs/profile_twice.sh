#!/usr/bin/env bash
# One H200 call (repo root; .whl/ carries ncu-report + plotly): issue 33's two profiles in a row
# and issue 32's dispatched kernel 7, into a scratch folder (the committed reports/h200 stay).
#   1. make setup GPU=1 WHEELS=.whl; the venv's flashprof from another directory
#   2. flashprof profile 7 then flashprof profile 6, each under a time limit; a hang dumps
#      every thread's stack (faulthandler on SIGABRT) into the log
#   3. an int8 torch._int_mm under ncu (IMMA test data)
# Outputs under $OUT: logs, profiles.tar (the reports + sidecars).
set -uo pipefail
: "${OUT:?}"
T0=$(date +%s)
say() { echo "=== [$(( $(date +%s) - T0 )) s] $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
make setup GPU=1 WHEELS=.whl > "$OUT/setup.log" 2>&1 || { tail -20 "$OUT/setup.log"; exit 1; }
say "setup done"
ROOT=$PWD
(cd /tmp && "$ROOT/.venv/bin/flashprof" --version && "$ROOT/.venv/bin/flashprof" summary "$ROOT/tests/data/kinds/h200_bf16_full.ncu-rep" --format csv | head -c 300) \
    > "$OUT/venv_elsewhere.log" 2>&1; say "venv from /tmp: exit $?: $(head -c 200 "$OUT/venv_elsewhere.log")"
mkdir -p /tmp/scratch
export PYTHONFAULTHANDLER=1   # a hang dumps every thread's stack when the watchdog sends SIGABRT
for k in 7 6; do
    say "make profile KERNEL=$k"
    make --no-print-directory profile KERNEL=$k > "$OUT/profile_$k.log" 2>&1 &
    pid=$!; t=0
    while kill -0 $pid 2>/dev/null && [ $t -lt ${LIMIT:-200} ]; do sleep 2; t=$((t + 2)); done
    if kill -0 $pid 2>/dev/null; then
        say "make profile KERNEL=$k still running after $t s: SIGABRT to its Python processes"
        pkill -ABRT -f "flashprof profile|flashprof.profiling" ; sleep 3; kill $pid 2>/dev/null
    fi
    wait $pid; say "make profile KERNEL=$k exit $?"; tail -n 3 "$OUT/profile_$k.log"
done
cp build/profile_timing.json "$OUT/timing_last.json" 2>/dev/null
cp reports/h200/kernel7.ncu-rep reports/h200/kernel7.json reports/h200/kernel6.json /tmp/scratch/ 2>/dev/null
[ "${INT_MM:-1}" = 1 ] || { tar -C /tmp/scratch -cf "$OUT/profiles.tar" .; say done; exit 0; }
say "int_mm under ncu"
cat > /tmp/int_mm.py <<'PY'
import torch
a = torch.randint(-8, 8, (4096, 4096), dtype=torch.int8, device="cuda")
b = torch.randint(-8, 8, (4096, 4096), dtype=torch.int8, device="cuda")
for _ in range(2): c = torch._int_mm(a, b)
torch.cuda.synchronize(); print(c.dtype, c.shape, int(c.float().abs().sum().item()) > 0)
PY
timeout 120 ncu --clock-control none --set full -k regex:'.*' -c 1 -s 1 -f -o /tmp/scratch/int_mm_int8 python3 /tmp/int_mm.py > "$OUT/int_mm.log" 2>&1
say "int_mm exit $?"
ls -la /tmp/scratch
tar -C /tmp/scratch -cf "$OUT/profiles.tar" . 2>/dev/null
say "done"
