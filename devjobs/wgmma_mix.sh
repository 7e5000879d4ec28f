#!/usr/bin/env bash
# One GPU call (repo root; .whl/ carries ncu-report + plotly): issue 32's candidate cost beside
# warpgroup MMA, measured. The ceilings binary's `wgmix` mode (flashprof/kernels/ceilings/
# wgmma_mix.cuh): two warpgroups of HGMMA.64x128x16 groups with 8 x K FFMA / MUFU.EX2 / FMNMX
# issued while each group runs; the SASS of that very build (the model simulates it); then the
# same kernels under Nsight Compute (stall reasons, issue slots).
# (the same mode then times how two warpgroups' groups share the pipe: the order / pair records)
# Outputs under $OUT: wgmma_mix.raw.jsonl, wgmma_mix_clocks.txt, wgmma_mix_sm_90a.sass,
# wgmma_mix.ncu-rep (not with NCU=0), wgmma_mix.log, setup.log.
set -uo pipefail
: "${OUT:?}"
. devjobs/ceilings_exe.sh  # say, the venv, $EXE
CUBIN=$(.venv/bin/python -c "from flashprof.kernels import ceilings as b; print(b.build('sm_90a', cubin=True))") || exit 1
say "built $EXE and $CUBIN ($(nvcc --version | tail -1))"
cuobjdump -sass "$CUBIN" > "$OUT/wgmma_mix_sm_90a.sass" 2>> "$OUT/wgmma_mix.log"
cp "$CUBIN.log" "$OUT/wgmma_mix_ptxas.log" 2>/dev/null
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader > "$OUT/wgmma_mix_clocks.txt"
( while sleep 0.5; do nvidia-smi --query-gpu=clocks.sm --format=csv,noheader,nounits; done ) >> "$OUT/wgmma_mix_clocks.txt" &
SMI=$!
timeout 240 "$EXE" wgmix > "$OUT/wgmma_mix.raw.jsonl" 2>> "$OUT/wgmma_mix.log"
say "wgmix exit $?: $(grep -c measurement "$OUT/wgmma_mix.raw.jsonl") records"
kill $SMI 2>/dev/null
[ "${NCU:-1}" = 1 ] || exit 0  # NCU=0: the timed run only
# every launch (the 1-block probe, the warm-up and the timed ones: 7 per point); analysis reads the full-grid ones
timeout 200 ncu --clock-control none -f -k regex:k_wgmma_mix \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section SchedulerStats \
    --section WarpStateStats --section LaunchStats --section Occupancy --section InstructionStats \
    -o "$OUT/wgmma_mix" "$EXE" wgmix >> "$OUT/wgmma_mix.log" 2>&1
say "ncu exit $?"; tail -n 3 "$OUT/wgmma_mix.log"; ls -la "$OUT"
