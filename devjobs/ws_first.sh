#!/usr/bin/env bash
# First H200 run of the warp-specialised kernel 7 (TMA producer, overlap, ping-pong): each
# config gated and timed in its own process under a timeout, then compute-sanitizer
# (memcheck, racecheck, synccheck) on the standalone driver of each.
set -uo pipefail
: "${OUT:?}"
T0=$(date +%s)
say() { echo "=== [$(( $(date +%s) - T0 )) s] $*"; }
make setup GPU=1 WHEELS=.whl > "$OUT/setup.log" 2>&1 || { tail -20 "$OUT/setup.log"; exit 1; }
if [ -z "${FLASHPROF_CUDA_HOME:-}" ] && [ -x /usr/local/cuda/bin/nvcc ]; then export FLASHPROF_CUDA_HOME=/usr/local/cuda; fi
say setup
CFGS=$(.venv/bin/python - <<'PY'
import json
from flashprof.profiling.tune import hopper_space
for c in hopper_space()[0]:
    if c.warp_specialized and c.kv_stages == 2 or c.slug.endswith("ws3_ovl_pp"):
        print(json.dumps(c.to_dict(), separators=(",", ":")))
PY
)
mkdir -p "$OUT/libs"
# build all shared libraries in parallel first
echo "$CFGS" | xargs -P 8 -I{} .venv/bin/python -c "import json,sys; from pathlib import Path; from flashprof.kernels.config import KernelConfig; from flashprof.profiling.shared_lib import build_shared_lib; build_shared_lib(KernelConfig.from_dict(json.loads(sys.argv[1])), 'sm_90', Path('build/wslibs'))" {} > "$OUT/build.log" 2>&1
say "built: $(ls build/wslibs | wc -l) libs"
while read -r C; do
  timeout 120 .venv/bin/python devjobs/ws_check.py "$C" build/wslibs >> "$OUT/check.log" 2>&1
  say "check exit $? $(echo "$C" | head -c 0)"
done <<< "$CFGS"
grep RECORD "$OUT/check.log" | sed 's/^RECORD //' > "$OUT/ws_first.jsonl"
SAN=$(command -v compute-sanitizer || echo /usr/local/cuda/bin/compute-sanitizer)
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
i=0
while read -r C; do
  i=$((i+1))
  FLAGS=$(.venv/bin/python -c "import json,sys; from flashprof.kernels.config import KernelConfig; print(' '.join(KernelConfig.from_dict(json.loads(sys.argv[1])).nvcc_flags()))" "$C")
  $NVCC -O3 -std=c++17 -lineinfo -gencode=arch=compute_90a,code=sm_90a $FLAGS flashprof/kernels/csrc/driver.cu flashprof/kernels/csrc/flash_fwd.cu -o build/drv$i > "$OUT/drv$i.build.log" 2>&1 || { say "driver $i build failed"; continue; }
  echo "$C" > "$OUT/drv$i.cfg"
  timeout 60 build/drv$i 1 512 2 fp16 > "$OUT/drv$i.plain.log" 2>&1; say "drv$i plain exit $?: $(tail -1 "$OUT/drv$i.plain.log")"
  for tool in memcheck racecheck synccheck; do
    timeout 200 "$SAN" --tool $tool --error-exitcode 9 build/drv$i 1 512 2 fp16 > "$OUT/drv$i.$tool.log" 2>&1
    say "drv$i $tool exit $?: $(grep -E 'SUMMARY' "$OUT/drv$i.$tool.log" | tail -1)"
  done
done <<< "$(echo "$CFGS" | sed -n "1p;3p;8p;10p")"
