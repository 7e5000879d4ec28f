#!/usr/bin/env bash
# One GPU call (repo root; .whl/ carries ncu-report + plotly): one warp issuing N independent ldmatrix.x4 back to back
# (flashprof/kernels/ceilings/mio.cuh, the ceilings binary's `mio` mode): how many shared-memory
# instructions a scheduler takes before mio_throttle. Outputs under $OUT: mio.raw.jsonl (run 1 of 2),
# mio.run<k>.raw.jsonl, mio_clocks.txt, ceilings_sm_90a.sass, mio.log, setup.log.
set -uo pipefail
: "${OUT:?}"
. devjobs/ceilings_exe.sh  # say, the venv, $EXE, ceilings_runs
ceilings_runs mio 2 200
.venv/bin/python - "$OUT" <<'PY'
import json, sys, pathlib, statistics
for run in (1, 2):
    for line in (pathlib.Path(sys.argv[1]) / f"mio.run{run}.raw.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r.get("record") == "measurement":
            print(run, r["name"], r["cycles"], r.get("check"))
PY
