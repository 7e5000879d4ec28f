#!/usr/bin/env bash
# One GPU call (repo root; .whl/ carries ncu-report + plotly): ceilings mio2 (flashprof/kernels/ceilings/mio.cuh,
# k_mio_many): 1 or 2 warps on every scheduler issue N independent ldmatrix.x4 at once (the MIO queue depth,
# analysis/gap/mio_probe.py; predictions committed before the run). Outputs under $OUT: mio2.raw.jsonl (run 1 of 2),
# mio2.run<k>.raw.jsonl, mio2_clocks.txt, ceilings_sm_90a.sass, mio2.log, setup.log, then Nsight Compute's warp
# states of every launch (mio2_ncu.csv) where ncu exists.
set -uo pipefail
: "${OUT:?}"
. devjobs/ceilings_exe.sh  # say, the venv, $EXE, ceilings_runs
MODE=${1:-mio2}  # mio3: a SHFL / LDS / FFMA chain beside an ldmatrix flood (the same outputs, mio3.*)
ceilings_runs "$MODE" 2 200
command -v ncu > /dev/null || exit 0
timeout 200 ncu --clock-control none --section WarpStateStats --section SchedulerStats --csv "$EXE" "$MODE" \
  > "$OUT/${MODE}_ncu.csv" 2> "$OUT/${MODE}_ncu.log"
say "ncu exit $?: $(wc -l < "$OUT/${MODE}_ncu.csv") lines"
