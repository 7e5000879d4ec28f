#!/usr/bin/env bash
# One device call for issue 31: FA2 as the series measured it (the fork's kernel,
# devjobs/series/fa2/launch_fa2.cu, --use_fast_math) built for this GPU from the same source,
# gated, benchmarked and profiled (`ncu --set full`, S = 4096, B = 16, H = 16, d = 128) beside
# PyTorch's FA2 (ref) and the series' kernels 6, 9 (A100 config) and 16 (both configs) in the
# same run: the denominator the published % of FA2 divides by, measured on the H200's SM.
#
# Carried: .whl (ncu-report, plotly, narwhals), .series (the series at 58b7e33 + COMMIT),
# .fa2src/fa2src.tar.xz (sonnyli/flash-attention @ 84623a9 csrc/flash_attn/src + NVIDIA/cutlass
# @ e9627ce include/). Back under $OUT: fa2_official_<gpu>.tar.xz (reports + sidecars, bench
# CSV + sidecar, SASS + ptxas logs of every shared library that ran, logs).
set -uo pipefail
: "${OUT:?}"
T0=$(date +%s)
say() { echo "=== [$(( $(date +%s) - T0 )) s] $*"; }
left() { echo $(( ${LIMIT:-570} - ($(date +%s) - T0) )); }
make setup GPU=1 WHEELS=.whl > "$OUT/setup.log" 2>&1 || { tail -20 "$OUT/setup.log"; exit 1; }
if [ -z "${FLASHPROF_CUDA_HOME:-}" ] && [ -x /usr/local/cuda/bin/nvcc ]; then export FLASHPROF_CUDA_HOME=/usr/local/cuda; fi
export SERIES_SRC=$PWD/.series PYTHONUNBUFFERED=1
PY=.venv/bin/python
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case $GPU in *H200*) G=h200;; *H100*) G=h100;; *) G=other;; esac
D=${DEST:-reports/$G/series/fa2_official}; mkdir -p $D/sass $D/logs  # DEST: another folder (a repeat run)
say "setup done on $GPU"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv,noheader | tee $D/logs/gpu.txt
$PY -P - > $D/logs/build.log 2>&1 <<'PY'
import sys
from concurrent.futures import ThreadPoolExecutor
sys.path.insert(0, "devjobs/series")
import series_targets as s
jobs = [(s.build_fa2, n) for n in s.FA2_LISTINGS] + [(s.build, n) for n in ("16_A100", "16_RTX3090", "9_A100", "6")]
with ThreadPoolExecutor(len(jobs)) as ex:
    for f in ex.map(lambda j: j[0](j[1]), jobs):
        print("built", f)
PY
say "build exit $?: $(tail -n 1 $D/logs/build.log | cut -c1-200)"
for so in build/series/*.so; do
  b=$(basename "$so" .so)
  cuobjdump -sass "$so" | tr -s ' ' > $D/sass/$b.sass
  cp build/series/$b.ptxas $D/sass/$b.ptxas 2>/dev/null
done
T=devjobs/series/series_targets.py
K="fa2_official fa2_official_bn32 k16_A100 k16_RTX3090 k9_A100 k6"
list() { local out=""; for f in "$@"; do out+="${out:+,}$T:$f"; done; echo "$out"; }
timeout 170 $PY -P -m flashprof bench --kernels "$(list $K)" --rounds 3 --seqs 4096 --out $D/bench.csv \
  > $D/logs/bench.log 2>&1
say "bench exit $?"; grep -E "^ +(ref|fa2_official|fa2_official_bn32|k16_A100|k16_RTX3090|k9_A100|k6) " $D/logs/bench.log
[ "$(left)" -gt 60 ] && timeout $(( $(left) - 25 )) $PY -P -m flashprof profile "ref,$(list $K)" --seq 4096 --set full \
  --out-dir $D --no-analysis > $D/logs/profile.log 2>&1
say "profile exit $?: $(ls $D/*.ncu-rep 2>/dev/null | wc -l) reports"; tail -n 6 $D/logs/profile.log
tar cJf "$OUT/fa2_official_$G.tar.xz" $D
say "packed $(du -h "$OUT"/fa2_official_*.tar.xz | cut -f1)"
