# Sourced by the ceilings devjobs (mma_mix.sh, wgmma_mix.sh), repo root, $OUT set: a timer
# (say), the GPU machine's venv (.whl/ carries ncu-report + plotly) and the ceilings binary
# for sm_90a in $EXE; exits with setup's last lines if setup fails.
T0=$(date +%s)
say() { echo "=== [$(( $(date +%s) - T0 )) s] $*"; }
make setup GPU=1 WHEELS=.whl > "$OUT/setup.log" 2>&1 || { tail -20 "$OUT/setup.log"; exit 1; }
EXE=$(.venv/bin/python -c "from flashprof.kernels import ceilings as b; print(b.build('sm_90a'))") || exit 1
