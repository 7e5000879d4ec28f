#!/usr/bin/env bash
# One GPU call (repo root; .whl/ carries ncu-report + plotly): which of two ready warps a
# scheduler issues (issue 32; flashprof/kernels/ceilings/sched.cuh, the ceilings binary's
# `sched` mode). Outputs under $OUT: sched.raw.jsonl (run 1 of 3), sched.run<k>.raw.jsonl, sched_clocks.txt, ceilings_sm_90a.sass,
# sched.log, setup.log.
set -uo pipefail
: "${OUT:?}"
. devjobs/ceilings_exe.sh  # say, the venv, $EXE
CUBIN=$(.venv/bin/python -c "from flashprof.kernels import ceilings as b; print(b.build('sm_90a', cubin=True))") || exit 1
say "built $EXE and $CUBIN ($(nvcc --version | tail -1))"
cuobjdump -sass "$CUBIN" > "$OUT/ceilings_sm_90a.sass" 2>> "$OUT/sched.log"  # the whole cubin (-fun wants the mangled name)
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader > "$OUT/sched_clocks.txt"
for run in 1 2 3; do
  timeout 60 "$EXE" sched > "$OUT/sched.run$run.raw.jsonl" 2>> "$OUT/sched.log"
  say "sched run $run exit $?: $(grep -c measurement "$OUT/sched.run$run.raw.jsonl") records"
done
cp "$OUT/sched.run1.raw.jsonl" "$OUT/sched.raw.jsonl"
.venv/bin/python - "$OUT" <<'PY'
import json, sys, pathlib
for run in (1, 2, 3):
    for line in (pathlib.Path(sys.argv[1]) / f"sched.run{run}.raw.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r.get("record") == "measurement":
            print(run, r["name"], "w0", [int(x) for x in r["cycles"]], "\n   w4", [int(x) for x in r["cycles_2n"]])
PY
