# Sourced by the ceilings devjobs (mma_mix.sh, wgmma_mix.sh, mix1.sh, mio.sh), repo root, $OUT set: a timer
# (say), the GPU machine's venv (.whl/ carries ncu-report + plotly) and the ceilings binary
# for sm_90a in $EXE; exits with setup's last lines if setup fails.
. devjobs/setup.sh  # say, the venv
EXE=$(.venv/bin/python -c "from flashprof.kernels import ceilings as b; print(b.build('sm_90a'))") || exit 1
# ceilings_runs MODE RUNS SECONDS: the cubin's SASS ($OUT/ceilings_sm_90a.sass), the clocks
# ($OUT/MODE_clocks.txt), then RUNS runs of `ceilings MODE` into $OUT/MODE.run<k>.raw.jsonl (run 1
# also as $OUT/MODE.raw.jsonl), stderr in $OUT/MODE.log (devjobs/mix1.sh, mio.sh).
ceilings_runs() {
  local mode=$1 runs=$2 secs=$3 cubin run
  cubin=$(.venv/bin/python -c "from flashprof.kernels import ceilings as b; print(b.build('sm_90a', cubin=True))") || exit 1
  say "built $EXE and $cubin ($(nvcc --version | tail -1))"
  cuobjdump -sass "$cubin" > "$OUT/ceilings_sm_90a.sass" 2>> "$OUT/$mode.log"
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader > "$OUT/${mode}_clocks.txt"
  for run in $(seq 1 "$runs"); do
    timeout "$secs" "$EXE" "$mode" > "$OUT/$mode.run$run.raw.jsonl" 2>> "$OUT/$mode.log"
    say "$mode run $run exit $?: $(grep -c measurement "$OUT/$mode.run$run.raw.jsonl") records"
  done
  cp "$OUT/$mode.run1.raw.jsonl" "$OUT/$mode.raw.jsonl"
}
