#!/usr/bin/env bash
# One H200 call: the refactored ceilings wgmma kernels (Ones) re-measured (raw records only, nothing
# written over reports/h200), then the GPU test suite.
set -uo pipefail
: "${OUT:?}"
T0=$(date +%s)
say() { echo "=== [$(( $(date +%s) - T0 )) s] $*"; }
make setup GPU=1 WHEELS=.whl > "$OUT/setup.log" 2>&1 || { tail -20 "$OUT/setup.log"; exit 1; }
if [ -z "${FLASHPROF_CUDA_HOME:-}" ] && [ -x /usr/local/cuda/bin/nvcc ]; then export FLASHPROF_CUDA_HOME=/usr/local/cuda; fi
EXE=$(.venv/bin/python -c "from flashprof.kernels import ceilings as b; print(b.build('sm_90'))") || exit 1
timeout 60 "$EXE" wgmma > "$OUT/wgmma.raw.jsonl" 2> "$OUT/wgmma.err"; say "ceilings wgmma exit $?"
.venv/bin/python - "$OUT/wgmma.raw.jsonl" <<'PY'
import json, sys, statistics
for line in open(sys.argv[1]):
    r = json.loads(line)
    if r.get("record") != "measurement": continue
    if r["kind"] == "latency":
        v = statistics.median((b - a) / r["n"] for a, b in zip(r["cycles"], r["cycles_2n"]))
    else:
        v = statistics.median(r["work"] / c for c in r["cycles"])
    print(r["name"], r["kind"], round(v, 2), r["check"])
PY
timeout 420 .venv/bin/python -m pytest -q -p no:cacheprovider -m gpu tests/ > "$OUT/gpu_tests.log" 2>&1
say "GPU tests exit $?: $(tail -n 1 "$OUT/gpu_tests.log")"
