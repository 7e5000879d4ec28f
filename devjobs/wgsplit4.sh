#!/usr/bin/env bash
# `ceilings wgsplit4` alone (devjobs/ceil_modes.sh: the machine's nvcc, no setup, nothing
# carried). Afterwards, here (the files copied into reports/<gpu>/wgmma_mix, clocks.txt as
# wgsplit4_clocks.txt):
#   python -m flashprof.analysis.gap.xu_pair --sidecar reports/<gpu>/wgmma_mix
#   python -m flashprof.analysis.gap.xu_pair --judge --backlog
# (the predictions in reports/h200/wgmma_mix/xu_pair_predictions.json were written before it).
set -uo pipefail
: "${OUT:?}"
bash "$(dirname "$0")/ceil_modes.sh" wgsplit4
cp "$OUT/clocks.txt" "$OUT/wgsplit4_clocks.txt"
