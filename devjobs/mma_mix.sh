#!/usr/bin/env bash
# One H200 call (repo root; .whl/ carries ncu-report + plotly): issue 31's candidate costs around
# HMMA, measured. The ceilings binary's `mix` mode (flashprof/kernels/ceilings/mix.cuh): HMMA at
# full rate with K interleaved FFMA / IMAD / MUFU.EX2 per HMMA, with and without operand reuse;
# then the same kernels under Nsight Compute (stall reasons, pipes, issue slots).
# Outputs under $OUT: mma_mix.raw.jsonl, mma_mix_clocks.txt, mma_mix.ncu-rep (not with NCU=0), mma_mix.log.
set -uo pipefail
: "${OUT:?}"
. devjobs/ceilings_exe.sh  # say, the venv, $EXE
say "built $EXE"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader > "$OUT/mma_mix_clocks.txt"
( while sleep 0.5; do nvidia-smi --query-gpu=clocks.sm --format=csv,noheader,nounits; done ) >> "$OUT/mma_mix_clocks.txt" &
SMI=$!
timeout 300 "$EXE" mix > "$OUT/mma_mix.raw.jsonl" 2> "$OUT/mma_mix.log"
say "mix exit $?: $(grep -c measurement "$OUT/mma_mix.raw.jsonl") records"
kill $SMI 2>/dev/null
[ "${NCU:-1}" = 1 ] || exit 0  # NCU=0: the timed run only
timeout 150 ncu --clock-control none -f -k regex:k_mma_mix --section SpeedOfLight --section ComputeWorkloadAnalysis \
    --section SchedulerStats --section WarpStateStats --section LaunchStats --section Occupancy \
    --section InstructionStats -o "$OUT/mma_mix" "$EXE" mix >> "$OUT/mma_mix.log" 2>&1
say "ncu exit $?"; tail -n 3 "$OUT/mma_mix.log"; ls -la "$OUT"
