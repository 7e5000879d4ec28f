#!/usr/bin/env bash
# One GPU call (repo root; .whl/ carries ncu-report + plotly): one warp issuing N independent ldmatrix.x4 back to back
# (flashprof/kernels/ceilings/mio.cuh, the ceilings binary's `mio` mode): how many shared-memory
# instructions a scheduler takes before mio_throttle. Outputs under $OUT: mio.raw.jsonl (run 1 of 2),
# mio.run<k>.raw.jsonl, mio_clocks.txt, ceilings_sm_90a.sass, mio.log, setup.log.
set -uo pipefail
: "${OUT:?}"
. devjobs/ceilings_exe.sh  # say, the venv, $EXE
CUBIN=$(.venv/bin/python -c "from flashprof.kernels import ceilings as b; print(b.build('sm_90a', cubin=True))") || exit 1
say "built $EXE and $CUBIN ($(nvcc --version | tail -1))"
cuobjdump -sass "$CUBIN" > "$OUT/ceilings_sm_90a.sass" 2>> "$OUT/mio.log"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader > "$OUT/mio_clocks.txt"
for run in 1 2; do
  timeout 200 "$EXE" mio > "$OUT/mio.run$run.raw.jsonl" 2>> "$OUT/mio.log"
  say "mio run $run exit $?: $(grep -c measurement "$OUT/mio.run$run.raw.jsonl") records"
done
cp "$OUT/mio.run1.raw.jsonl" "$OUT/mio.raw.jsonl"
.venv/bin/python - "$OUT" <<'PY'
import json, sys, pathlib, statistics
for run in (1, 2):
    for line in (pathlib.Path(sys.argv[1]) / f"mio.run{run}.raw.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r.get("record") == "measurement":
            print(run, r["name"], r["cycles"], r.get("check"))
PY
