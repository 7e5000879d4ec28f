#!/usr/bin/env bash
# One H200 call for issue 31: the series' kernels (sonnyli/flash_attention_from_scratch @
# 58b7e33) built for this GPU from their own source (devjobs/series/launch.cu; the mma.sync
# path), gated, benchmarked beside FA2 (SDPA FLASH_ATTENTION) in the same run, and profiled
# with `ncu --set full` at the series' profiling shape (S = 4096, B = 16, H = 16, d = 128).
#
#   devjobs/series_h200.sh SET [BENCH]
#     SET    a100 | rtx3090 | all | none: which measured configs to profile (1-7 are in both)
#     BENCH  1 (default): also `flashprof bench` every measured config, 2 interleaved rounds
#   ROUNDS=n bench rounds (default 2); SEQS=1024,4096 bench these S only; LIMIT=s the seconds this call may take (default 580); YIELD=0 skips devjobs/series/yield_flip.py (the yield-bit microbenchmark, about a minute)
#
# Carried: .whl (ncu-report, plotly) and .series (git archive of the series at 58b7e33 with a
# COMMIT file). Back under $OUT (8 files at most):
#   series_<gpu>_<SET>.tar.xz  reports (+ sidecars), bench CSV + sidecar, SASS (cuobjdump -sass of each
#                        .so), ptxas logs, logs
set -uo pipefail
: "${OUT:?}"
SET=${1:-a100}; BENCH=${2:-1}
T0=$(date +%s)
say() { echo "=== [$(( $(date +%s) - T0 )) s] $*"; }
left() { echo $(( ${LIMIT:-580} - ($(date +%s) - T0) )); }  # LIMIT: seconds this call may take
make setup GPU=1 WHEELS=.whl > "$OUT/setup.log" 2>&1 || { tail -20 "$OUT/setup.log"; exit 1; }
if [ -z "${FLASHPROF_CUDA_HOME:-}" ] && [ -x /usr/local/cuda/bin/nvcc ]; then export FLASHPROF_CUDA_HOME=/usr/local/cuda; fi
export SERIES_SRC=$PWD/.series PYTHONUNBUFFERED=1
PY=.venv/bin/python
GPU=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case $GPU in *H200*) G=h200;; *H100*) G=h100;; *) G=other;; esac
D=reports/$G/series; mkdir -p $D/sass $D/logs
say "setup; series source $(cat .series/COMMIT)"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem --format=csv,noheader | tee $D/logs/gpu_$SET.txt

$PY -P -c "
import sys; sys.path.insert(0, 'devjobs/series'); import series_targets as s
built = s.build_all(); print(len(built), 'built:', ' '.join(sorted(built)))" > $D/logs/build.log 2>&1
say "build exit $?: $(tail -n 1 $D/logs/build.log | cut -c1-200)"
for so in build/series/*.so; do
  b=$(basename "$so" .so)
  cuobjdump -sass "$so" | tr -s ' ' > $D/sass/$b.sass
  cp build/series/$b.ptxas $D/sass/$b.ptxas 2>/dev/null
done
T=devjobs/series/series_targets.py
A100="k1 k2 k3 k4 k5 k6 k7 k8_A100 k9_A100 k10_A100 k11_A100 k12_A100 k13_A100 k14_A100 k15_A100 k16_A100"
RTX="k8_RTX3090 k9_RTX3090 k10_RTX3090 k11_RTX3090 k12_RTX3090 k13_RTX3090 k14_RTX3090 k15_RTX3090 k16_RTX3090"
list() { local out=""; for f in "$@"; do out+="${out:+,}$T:$f"; done; echo "$out"; }
if [ "$BENCH" = 1 ]; then
  timeout 200 $PY -P -m flashprof bench --kernels "$(list $A100 $RTX)" --rounds ${ROUNDS:-2} ${SEQS:+--seqs $SEQS} --out $D/bench_series.csv \
    > $D/logs/bench.log 2>&1
  say "bench exit $?"; grep -E "^ +(ref|k1|k7|k16_A100|k16_RTX3090) " $D/logs/bench.log
fi
if [ "${YIELD:-1}" = 1 ]; then
  timeout 150 $PY -P devjobs/series/yield_flip.py --listings 16_A100,7_64_64_swizzling,16_RTX3090 --out $D/yield \
    > $D/logs/yield.log 2>&1; say "yield flip exit $?"; tail -n 14 $D/logs/yield.log; rm -rf $D/yield/build
fi
case $SET in a100) P="$A100";; rtx3090) P="$RTX";; all) P="$A100 $RTX";; none) P="";; esac
# FA2 first (a run cut short still has its denominator); a set other than a100 in its own folder
PD=$D; [ "$SET" != a100 ] && PD=$D/$SET; mkdir -p $PD
[ -n "$P" ] && [ "$(left)" -gt 60 ] && timeout $(( $(left) - 25 )) $PY -P -m flashprof profile "ref,$(list $P)" --seq 4096 --set full --out-dir $PD \
  --no-analysis > $D/logs/profile_$SET.log 2>&1
say "profile exit $?: $(ls $PD/*.ncu-rep 2>/dev/null | wc -l) reports"; tail -n 4 $D/logs/profile_$SET.log
tar cJf "$OUT/series_${G}_$SET.tar.xz" $D
say "packed $(du -h "$OUT"/series_*.tar.xz | cut -f1)"
