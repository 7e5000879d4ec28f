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
    > "$OUT/venv_elsewhere.log" 2>&1; say "venv from /tmp: exit $?"
mkdir -p /tmp/scratch
for k in 7 6; do
    say "profile $k"
    timeout -s ABRT ${LIMIT:-200} .venv/bin/python -X faulthandler -P -m flashprof profile $k --out-dir /tmp/scratch \
        --timing-json "$OUT/timing_$k.json" > "$OUT/profile_$k.log" 2>&1
    say "profile $k exit $?"; tail -n 4 "$OUT/profile_$k.log"
done
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
