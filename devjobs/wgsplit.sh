#!/usr/bin/env bash
# One GPU call (repo root; .whl/ carries ncu-report + plotly): a split-role wgmma run, MODE (default
# wgsplit) one of the ceilings binary's modes: `wgsplit`, densities the exchange was not derived from
# (K = 8, 32, 256, and 16 again), against reports/h200/wgmma_mix/split_predictions.json written before
# it; `wgsplit2`, A from registers (kernel 7's P x V) and FMNMX / kernel 7's softmax mix beside the
# HGMMAs; `wgsplit3`, MUFU.EX2 in mixed streams (alone, and three beside the HGMMAs); `wgsplit4`,
# one warp's EX2 (or mix) beside a neighbour warp's FFMA / FMNMX / EX2 on every sub-partition (k_xu_pair). Outputs under $OUT: MODE.raw.jsonl (run 1 of 2), MODE.run<k>.raw.jsonl, MODE_clocks.txt,
# MODE.log, setup.log.
set -uo pipefail
: "${OUT:?}"
. devjobs/ceilings_exe.sh  # say, the venv, $EXE, ceilings_runs
MODE=${1:-wgsplit}
ceilings_runs "$MODE" 2 200
rm -f "$OUT/ceilings_sm_90a.sass"  # the committed listing comes from the static build
.venv/bin/python - "$OUT" "$MODE" <<'PY'
import json, sys, pathlib, statistics
for run in (1, 2):
    for line in (pathlib.Path(sys.argv[1]) / f"{sys.argv[2]}.run{run}.raw.jsonl").read_text().splitlines():
        r = json.loads(line)
        if r.get("record") == "measurement":
            print(run, r["name"], statistics.median(r["cycles"]), statistics.median(r["cycles_2n"] or [0]), r.get("check"))
PY
