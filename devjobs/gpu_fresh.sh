#!/usr/bin/env bash
# Issue 15 on the GPU machine: a new user's path, from a fresh copy of the repository.
#
# Run from the repository root with the carried wheels in .whl/ (run(..., carry=[".whl"])):
#   bash devjobs/gpu_fresh.sh
# 1. copies the carried tree to /tmp/fresh, leaving out build outputs (.venv, build/, caches);
# 2. runs the README's GPU set-up block (between <!-- gpu-setup --> and <!-- /gpu-setup -->)
#    line by line, exactly as written: make setup GPU=1 WHEELS=.whl, make doctor,
#    make profile KERNEL=6;
# 3. then make bench, and prints str(flashprof.kernels.api.load(7)) (which config kernel 7 is).
# Before that, in a second fresh copy: what a user sees with no venv (make build) and with a
# wheel folder that lacks ncu-report (make setup GPU=1 WHEELS=empty-wheels).
# Every step runs under a share of a 530 s budget. Output under $OUT (4 files):
#   gpu_fresh.log  each step: command, seconds, exit code, its output (long ones: the tail)
#   bench.csv      the fresh copy's make bench
#   kernel6.json   the fresh copy's profile sidecar (config, GPU, clocks, ncu, verdict)
#   roofline_kernel6.png   the figure make profile drew from the fresh report
set -u
OUT=${OUT:-/tmp/gpu_fresh_out}
mkdir -p "$OUT"
LOG=$OUT/gpu_fresh.log
SRC=$(pwd)
FRESH=/tmp/fresh
DEMO=/tmp/fresh_demo
START=$(date +%s)
BUDGET=530

say() { echo "$*" | tee -a "$LOG"; }

copy_tree() {  # a clone's worth of files: no venv, no build outputs, no caches
    rm -rf "$1" && mkdir -p "$1"
    tar -C "$SRC" --exclude=./.venv --exclude=./build --exclude=./.git --exclude=__pycache__ \
        --exclude=.pytest_cache --exclude='*.egg-info' --exclude=.flashprof-cache \
        --exclude=.incomplete -cf - . | tar -C "$1" -xf -
}

# step DIR LIMIT_S TAIL_LINES COMMAND: run COMMAND with bash in DIR, log time, exit code, output.
step() {
    local dir=$1 limit=$2 tail_n=$3 cmd=$4 left t0 t1 rc
    left=$(( BUDGET - ($(date +%s) - START) ))
    if (( left < 10 )); then say "=== SKIPPED (budget spent): $cmd"; return 1; fi
    (( limit > left )) && limit=$left
    say "=== \$ $cmd    (in $dir, limit ${limit}s)"
    t0=$(date +%s.%N)
    (cd "$dir" && timeout "$limit" bash -c "$cmd") >"$OUT/.step.txt" 2>&1
    rc=$?
    t1=$(date +%s.%N)
    tail -n "$tail_n" "$OUT/.step.txt" >>"$LOG"
    say "--- exit $rc, $(awk "BEGIN {printf \"%.1f\", $t1 - $t0}") s"
    rm -f "$OUT/.step.txt"
    return $rc
}

say "gpu_fresh $(date -u +%FT%TZ) on $(hostname); python3 = $(command -v python3)"
say "$(nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm --format=csv,noheader 2>&1)"
say "carried wheels: $(ls "$SRC"/.whl 2>&1 | tr '\n' ' ')"
say "python3 -m pip: $(python3 -m pip --version 2>&1 | head -n 1)"

# What a user sees when something is missing (a second fresh copy, nothing installed).
copy_tree "$DEMO"
mkdir -p "$DEMO/empty-wheels"
step "$DEMO" 30 5 "make build"
step "$DEMO" 60 5 "make setup GPU=1 WHEELS=empty-wheels"

copy_tree "$FRESH"
say "fresh copy: $(du -sh "$FRESH" | cut -f1) in $FRESH (no .venv: $(test -e "$FRESH/.venv" && echo NO || echo yes))"

# The README's block, exactly as written, in order.
mapfile -t LINES < <(awk '/<!-- gpu-setup/{f=1; next} /<!-- \/gpu-setup -->/{f=0} f && !/^```/' "$FRESH/README.md")
say "README gpu-setup block: ${#LINES[@]} commands"
for line in "${LINES[@]}"; do
    step "$FRESH" 300 80 "$line" || say "!!! README command failed: $line"
done

step "$FRESH" 330 30 "make bench"
step "$FRESH" 60 5 ".venv/bin/python -c 'from flashprof.kernels.api import load; print(load(7))'"

cp "$FRESH/reports/h200/bench.csv" "$FRESH/reports/h200/kernel6.json" "$OUT/" 2>>"$LOG"
cp "$FRESH/figures/roofline_kernel6.png" "$OUT/" 2>>"$LOG"
say "total $(( $(date +%s) - START )) s"
