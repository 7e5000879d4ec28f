#!/usr/bin/env bash
# One lean GPU call (repo root, nothing carried) for one or more `ceilings <mode>` runs: the
# ceilings program built with the machine's own nvcc straight from the source (no `make setup`,
# no Python there), each mode run twice. Usage: bash devjobs/ceil_modes.sh wgsplit4 smemshare
# Outputs under $OUT, per mode: <mode>.raw.jsonl (run 1), <mode>.run<k>.raw.jsonl, <mode>.log;
# clocks.txt, nvcc.log; for a mode whose run 1 records nothing, compute-sanitizer's first
# errors (<mode>.sanitizer.txt).
set -uo pipefail
: "${OUT:?}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader > "$OUT/clocks.txt"
nvcc --version | tail -1 > "$OUT/nvcc.log"
EXE=$(mktemp -d)/ceilings
nvcc -O3 -std=c++17 -lineinfo -arch=sm_90a -o "$EXE" flashprof/kernels/ceilings/ceilings.cu 2>> "$OUT/nvcc.log" \
  || { tail -20 "$OUT/nvcc.log"; exit 1; }
for mode in "$@"; do
  for run in 1 2; do
    timeout 120 "$EXE" "$mode" > "$OUT/$mode.run$run.raw.jsonl" 2>> "$OUT/$mode.log"
    echo "$mode run $run exit $?: $(grep -c measurement "$OUT/$mode.run$run.raw.jsonl") records"
  done
  cp "$OUT/$mode.run1.raw.jsonl" "$OUT/$mode.raw.jsonl"
  if ! grep -q measurement "$OUT/$mode.raw.jsonl"; then
    timeout 120 compute-sanitizer --print-limit 3 "$EXE" "$mode" 2>&1 | grep -v '^{' | head -40 > "$OUT/$mode.sanitizer.txt"
    cat "$OUT/$mode.sanitizer.txt"
  fi
done
nvidia-smi --query-gpu=clocks.sm --format=csv,noheader >> "$OUT/clocks.txt"
# What Nsight Compute counts on the shared-memory data path for each smemshare launch (one of
# each mode): wavefronts by op, LDGSTS and LDSM executed.
if [[ " $* " == *" smemshare "* ]] && command -v ncu > /dev/null; then
  timeout 60 ncu --clock-control none -k regex:k_smem_share -c 18 --csv --metrics \
    l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,smsp__inst_executed_op_ldgsts.sum,smsp__inst_executed_op_ldsm.sum,sm__cycles_elapsed.max \
    "$EXE" smemshare > "$OUT/smemshare_ncu.csv" 2> "$OUT/smemshare_ncu.log"
  echo "ncu exit $?"
fi
