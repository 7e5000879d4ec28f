#!/usr/bin/env bash
# One GPU call (repo root; .whl/ carries ncu-report + plotly): the split-role wgmma benchmark at
# densities the exchange was not derived from (`ceilings wgsplit`: K = 8, 32, 256, and 16 again),
# against reports/h200/wgmma_mix/split_predictions.json written before it. Outputs under $OUT:
# wgsplit.raw.jsonl (run 1 of 2), wgsplit.run<k>.raw.jsonl, wgsplit_clocks.txt, wgsplit.log, setup.log.
set -uo pipefail
: "${OUT:?}"
. devjobs/ceilings_exe.sh  # say, the venv, $EXE, ceilings_runs
ceilings_runs wgsplit 2 200
rm -f "$OUT/ceilings_sm_90a.sass"  # the committed listing comes from the static build
.venv/bin/python - "$OUT" <<'PY'
import json, sys, pathlib, statistics
for run in (1, 2):
    for line in (pathlib.Path(sys.argv[1]) / f"wgsplit.run{run}.raw.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r.get("record") == "measurement":
            print(run, r["name"], statistics.median(r["cycles"]), statistics.median(r["cycles_2n"] or [0]), r.get("check"))
PY
