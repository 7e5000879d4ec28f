#!/usr/bin/env bash
# GPU job (one H200): `make ceilings` from the repo root, then hand the results back.
#
# Produces under $OUT (flat, 6 files, all small):
#   ceilings.json ceilings.csv ceilings.meta.json ceilings.raw.jsonl   (copies of reports/<gpu>/)
#   ceilings.log      stdout+stderr of `make ceilings` (the table, warnings, self-check failures)
#   ceilings.nvcc.log the nvcc log of the binary's build
# Commit the first four into reports/h200/ (they are what `make ceilings` wrote there).
# Exit status: that of `make ceilings` (1 = a self-check failed; the files are still written).
set -uo pipefail
cd "$(dirname "$0")/.."
: "${OUT:?set OUT to the folder that comes back}"
mkdir -p "$OUT"
# The system CUDA 13.0 toolkit: nvcc from /usr/local/cuda unless FLASHPROF_CUDA_HOME says otherwise.
if [ -z "${FLASHPROF_CUDA_HOME:-}" ] && [ -x /usr/local/cuda/bin/nvcc ]; then
    export FLASHPROF_CUDA_HOME=/usr/local/cuda
fi
nvidia-smi --query-gpu=name,compute_cap,clocks.sm,clocks.max.sm,driver_version --format=csv 2>&1 | tee "$OUT/ceilings.log"
start=$(date +%s)
timeout 280 ${PY:-python3} -m flashprof ceilings 2>&1 | tee -a "$OUT/ceilings.log"
rc=${PIPESTATUS[0]}
echo "make ceilings: exit $rc after $(( $(date +%s) - start )) s" | tee -a "$OUT/ceilings.log"
gpu=$(python3 -c "from flashprof.kernels.config import gpu_slug; import subprocess as s; print(gpu_slug(s.run(['nvidia-smi','--query-gpu=name','--format=csv,noheader'],capture_output=True,text=True).stdout.splitlines()[0]))" 2>/dev/null || echo h200)
for f in ceilings.json ceilings.csv ceilings.meta.json ceilings.raw.jsonl; do
    [ -f "reports/$gpu/$f" ] && cp "reports/$gpu/$f" "$OUT/"
done
log=$(ls -t build/ceilings/*/ceilings.log 2>/dev/null | head -n 1)
[ -n "$log" ] && cp "$log" "$OUT/ceilings.nvcc.log"
exit "$rc"
