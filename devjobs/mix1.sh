#!/usr/bin/env bash
# One GPU call (repo root; .whl/ carries ncu-report + plotly): the HMMA mix kernels at one warp
# per scheduler (issue 31; flashprof/kernels/ceilings/mix.cuh bench_mma_mixes_w1, the ceilings
# binary's `mix1` mode): how long the warp that issued an HMMA waits before its next
# instruction, by the kind of that instruction. Outputs under $OUT: mix1.raw.jsonl (run 1 of 2),
# mix1.run<k>.raw.jsonl, mix1_clocks.txt, ceilings_sm_90a.sass, mix1.log, setup.log.
set -uo pipefail
: "${OUT:?}"
. devjobs/ceilings_exe.sh  # say, the venv, $EXE
CUBIN=$(.venv/bin/python -c "from flashprof.kernels import ceilings as b; print(b.build('sm_90a', cubin=True))") || exit 1
say "built $EXE and $CUBIN ($(nvcc --version | tail -1))"
cuobjdump -sass "$CUBIN" > "$OUT/ceilings_sm_90a.sass" 2>> "$OUT/mix1.log"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader > "$OUT/mix1_clocks.txt"
for run in 1 2; do
  timeout 200 "$EXE" mix1 > "$OUT/mix1.run$run.raw.jsonl" 2>> "$OUT/mix1.log"
  say "mix1 run $run exit $?: $(grep -c measurement "$OUT/mix1.run$run.raw.jsonl") records"
done
cp "$OUT/mix1.run1.raw.jsonl" "$OUT/mix1.raw.jsonl"
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
