#!/usr/bin/env bash
# The shortest useful call: smemshare from its own small build (seconds), twice, and Nsight
# Compute's counters on it; then wgsplit4 through ceil_modes.sh if the call's time allows.
set -uo pipefail
: "${OUT:?}"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader > "$OUT/clocks.txt"
EXE=$(mktemp -d)/smemshare
nvcc -O3 -std=c++17 -lineinfo -arch=sm_90a -o "$EXE" devjobs/smemshare_main.cu 2> "$OUT/nvcc.log" || { tail "$OUT/nvcc.log"; exit 1; }
for run in 1 2; do
  timeout 60 "$EXE" > "$OUT/smemshare.run$run.raw.jsonl" 2>> "$OUT/smemshare.log"
  echo "smemshare run $run exit $?: $(grep -c measurement "$OUT/smemshare.run$run.raw.jsonl") records"
done
cp "$OUT/smemshare.run1.raw.jsonl" "$OUT/smemshare.raw.jsonl"
timeout 60 ncu --clock-control none -k regex:k_smem_share -c 18 --csv --metrics \
  l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,smsp__inst_executed_op_ldgsts.sum,smsp__inst_executed_op_ldsm.sum,sm__cycles_elapsed.max \
  "$EXE" > "$OUT/smemshare_ncu.csv" 2> "$OUT/smemshare_ncu.log"
echo "ncu exit $?"
mkdir -p "$OUT/w4" && OUT="$OUT/w4" bash devjobs/ceil_modes.sh wgsplit4
