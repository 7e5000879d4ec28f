# Sourced by devjobs at the repo root with $OUT set: a timer (say) and the GPU machine's venv
# (.whl/ carries ncu-report + plotly); exits with setup's last lines if setup fails.
T0=$(date +%s)
say() { echo "=== [$(( $(date +%s) - T0 )) s] $*"; }
make setup GPU=1 WHEELS=.whl > "$OUT/setup.log" 2>&1 || { tail -20 "$OUT/setup.log"; exit 1; }
