#!/usr/bin/env bash
# One H200 call: (1) every chip's metric names from the installed Nsight Compute
# (ncu --list-chips, --query-metrics [--query-metrics-mode suffix] --chip C; no GPU of that
# chip needed); (2) where `make profile KERNEL=6` spends its time (cProfile of each step,
# the bare ncu command from the sidecar, timed the same way); (3) a multi-launch user target
# (FlexAttention through torch.compile); (4) kernel 7 and FA2 reports at S=512.
# Run from the repo root with the ncu-report wheel carried in .whl/. Results under $OUT.
set -u
: "${OUT:?}"
LOG=$OUT/probe.log
exec > >(tee -a "$LOG") 2>&1
T0=$(date +%s)
stamp() { echo "=== [$(( $(date +%s) - T0 )) s] $*"; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader
ncu --version | tail -n 1

stamp "chips"
mkdir -p /tmp/chips
ncu --list-chips > /tmp/chips/list-chips.txt 2>&1
cat /tmp/chips/list-chips.txt
for c in $(tr ', ' '\n\n' < /tmp/chips/list-chips.txt | grep -E '^[a-z]+[0-9a-z]*$'); do
    ncu --query-metrics --chip "$c" > "/tmp/chips/$c.base.txt" 2>&1
    ncu --query-metrics --chip "$c" --query-metrics-mode suffix > "/tmp/chips/$c.suffix.txt" 2>&1
    echo "$c: $(wc -l < /tmp/chips/$c.base.txt) base lines, $(wc -l < /tmp/chips/$c.suffix.txt) suffix lines"
done
tar -C /tmp -czf "$OUT/ncu_chips.tar.gz" chips

stamp "setup"
make setup GPU=1 WHEELS=.whl >/tmp/setup.log 2>&1 || { tail -20 /tmp/setup.log; exit 1; }
PY=.venv/bin/python
mkdir -p /tmp/prof
stamp "make profile KERNEL=6 (cold: build included)"
/usr/bin/time -f "make_profile_cold_s %e" make --no-print-directory profile KERNEL=6 > /tmp/prof/cold.log 2>&1; tail -n 3 /tmp/prof/cold.log
stamp "profile KERNEL=6 warm, each step under cProfile"
s1=$(date +%s.%N)
$PY -m cProfile -o /tmp/prof/step1_profile.prof -m flashprof profile 6 --seq 4096 --dtype fp16 --set full --max-launches 8 --paths-file build/last_profile.txt > /tmp/prof/step1.log 2>&1
s2=$(date +%s.%N)
$PY -m cProfile -o /tmp/prof/step2_summary.prof -m flashprof summary $(cat build/last_profile.txt) > /tmp/prof/step2.log 2>&1
s3=$(date +%s.%N)
$PY -m cProfile -o /tmp/prof/step3_figures.prof -m flashprof figures --reports reports/h200 > /tmp/prof/step3.log 2>&1
s4=$(date +%s.%N)
echo "steps_s profile=$(echo "$s2-$s1"|bc) summary=$(echo "$s3-$s2"|bc) figures=$(echo "$s4-$s3"|bc)"
stamp "make profile KERNEL=6 warm"
/usr/bin/time -f "make_profile_warm_s %e" make --no-print-directory profile KERNEL=6 > /tmp/prof/warm.log 2>&1; tail -n 2 /tmp/prof/warm.log
stamp "bare ncu (the sidecar's args)"
mapfile -t ARGS < <($PY -c "import json; [print(a) for a in json.load(open('reports/h200/kernel6.json'))['ncu']['args']]")
ARGS=("${ARGS[@]/reports\/h200\/kernel6/\/tmp\/bare6}")
rm -f /tmp/bare6.ncu-rep
b1=$(date +%s.%N); ncu "${ARGS[@]}" > /tmp/prof/bare.log 2>&1; b2=$(date +%s.%N)
echo "bare_ncu_s $(echo "$b2-$b1"|bc)"; tail -n 2 /tmp/prof/bare.log
b1=$(date +%s.%N); rm -f /tmp/bare6.ncu-rep; ncu "${ARGS[@]}" > /tmp/prof/bare2.log 2>&1; b2=$(date +%s.%N)
echo "bare_ncu_s (again) $(echo "$b2-$b1"|bc)"
tar -C /tmp -czf "$OUT/profile_timing.tar.gz" prof

stamp "FlexAttention target"
make --no-print-directory profile TARGET=examples/flex_attention.py:attention MAX_LAUNCHES=16 > /tmp/flex.log 2>&1; tail -n 15 /tmp/flex.log
stamp "kernel 7 and FA2 at S=512"
make --no-print-directory profile KERNEL=7 SEQ=512 > /tmp/s512.log 2>&1; tail -n 4 /tmp/s512.log
make --no-print-directory profile KERNEL=ref SEQ=512 >> /tmp/s512.log 2>&1; tail -n 4 /tmp/s512.log
tar -C reports/h200 -czf "$OUT/new_reports.tar.gz" $(cd reports/h200 && ls -t *flex* other-shapes/*s512* *s512* 2>/dev/null | sort -u) 
stamp "done"
