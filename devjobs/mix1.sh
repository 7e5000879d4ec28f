#!/usr/bin/env bash
# One GPU call (repo root; .whl/ carries ncu-report + plotly): the HMMA mix kernels at one warp
# per scheduler (issue 31; flashprof/kernels/ceilings/mix.cuh bench_mma_mixes_w1, the ceilings
# binary's `mix1` mode): how long the warp that issued an HMMA waits before its next
# instruction, by the kind of that instruction. Outputs under $OUT: mix1.raw.jsonl (run 1 of 2),
# mix1.run<k>.raw.jsonl, mix1_clocks.txt, ceilings_sm_90a.sass, mix1.log, setup.log.
set -uo pipefail
: "${OUT:?}"
. devjobs/ceilings_exe.sh  # say, the venv, $EXE, ceilings_runs
ceilings_runs mix1 2 200
.venv/bin/python - "$OUT" <<'PY'
import json, sys, pathlib, statistics
runs = {}
for run in (1, 2):
    for line in (pathlib.Path(sys.argv[1]) / f"mix1.run{run}.raw.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r.get("record") == "measurement":
            runs.setdefault(r["name"], []).append((r["work"] / statistics.median(r["cycles"]), r.get("check")))
for k, v in runs.items():
    print(k, [f"{x:.1f}" for x, _ in v], v[0][1])
PY
