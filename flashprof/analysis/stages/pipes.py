"""Pipes stage: long frame -> pipe utilisation and instruction mix (pure; long format out).

Input: the long frame from ``flashprof.analysis.report.parse.load_frame``.
Output: ``pipes(frame)``, one row per (report, launch, category, name), columns
PIPES_COLUMNS; ``category`` is one of

* ``"utilization"``: % of peak sustained *active* (i.e. over cycles the SM was busy, the
  number Nsight Compute's Compute Workload Analysis shows) per pipe; the metric used is
  in the ``metric`` column and listed in PIPE_METRICS (first alternative present wins);
* ``"issue"``: ``smsp__issue_active.avg.pct_of_peak_sustained_active``, the share of
  scheduler cycles that issued an instruction;
* ``"inst_mix_pipe"``: instructions executed per pipe from ``sm__inst_executed_pipe_<p>.sum``
  when the report collected those counters (``--set full`` does not);
* ``"inst_mix_opcode"``: warp instructions executed per SASS opcode from the Instruction
  Statistics section (``sass__inst_executed_per_opcode``), with ``share`` of the total.

Absent metrics give a NaN ``value`` (utilization, issue) or no rows (mixes).
``provenance``: ``exact`` (the section's own metric), ``derived`` (a later alternative,
e.g. instruction-issue share instead of active cycles) or None (absent).
"""
from __future__ import annotations

import math

import pandas as pd

from flashprof.analysis.report.parse import LAUNCH_KEY
from flashprof.analysis.metrics.recipes import DERIVED, EXACT, ISSUE_METRIC, PIPE_METRICS  # noqa: F401 (re-exported)
from flashprof.analysis.stages.launches import launch_records

# Pipe -> metric alternatives live in flashprof.analysis.metrics.recipes (one table for every number). The
# tensor pipe's hmma counter covers mma.sync and, on sm_90, wgmma (both run on the same
# tensor pipe); the XU (MUFU: exp2, rcp), LSU and uniform pipes have no *_cycles_active
# counter, so their instruction-issue share is used.
PIPE_ORDER = tuple(PIPE_METRICS)
INST_PIPE_PREFIX = "sm__inst_executed_pipe_"
OPCODE_PREFIX = "sass__inst_executed_per_opcode["

PIPES_COLUMNS = ("report", "range_idx", "launch", "kernel", "variant", "category", "name",
                 "metric", "value", "unit", "share", "provenance")


def pipes(frame: pd.DataFrame) -> pd.DataFrame:
    """Pipe utilisation, issue activity and instruction mixes per launch (long format)."""
    rows = []
    for rec in launch_records(frame):
        key, m = rec.key, rec.metrics
        base = {"report": key[0], "range_idx": key[1], "launch": key[2],
                "kernel": rec.ident["kernel"], "variant": rec.ident["variant"]}
        for pipe, alternatives in PIPE_METRICS.items():
            metric = next((a for a in alternatives if a in m), alternatives[0])
            prov = None if metric not in m else EXACT if metric == alternatives[0] else DERIVED
            rows.append({**base, "category": "utilization", "name": pipe, "metric": metric,
                         "value": m.get(metric, math.nan), "unit": "%", "share": math.nan,
                         "provenance": prov})
        rows.append({**base, "category": "issue", "name": "issue_active", "metric": ISSUE_METRIC,
                     "value": m.get(ISSUE_METRIC, math.nan), "unit": "%", "share": math.nan,
                     "provenance": EXACT if ISSUE_METRIC in m else None})

        per_pipe = {name[len(INST_PIPE_PREFIX):-len(".sum")]: (name, v) for name, v in m.items()
                    if name.startswith(INST_PIPE_PREFIX) and name.endswith(".sum")}
        total = sum(v for _n, v in per_pipe.values())
        for pipe, (name, v) in sorted(per_pipe.items(), key=lambda kv: -kv[1][1]):
            rows.append({**base, "category": "inst_mix_pipe", "name": pipe, "metric": name,
                         "value": v, "unit": "inst", "share": v / total if total else math.nan,
                         "provenance": EXACT})

        opcodes = {name[len(OPCODE_PREFIX):-1]: v for name, v in m.items() if name.startswith(OPCODE_PREFIX)}
        total = sum(opcodes.values())
        for op, v in sorted(opcodes.items(), key=lambda kv: -kv[1]):
            rows.append({**base, "category": "inst_mix_opcode", "name": op,
                         "metric": f"{OPCODE_PREFIX}{op}]", "value": v, "unit": "inst",
                         "share": v / total if total else math.nan, "provenance": EXACT})
    return pd.DataFrame(rows, columns=list(PIPES_COLUMNS))


def pipe_table(pipes_frame: pd.DataFrame) -> pd.DataFrame:
    """Wide convenience view: one row per launch, one column per pipe utilisation + issue."""
    sub = pipes_frame[pipes_frame["category"].isin(["utilization", "issue"])]
    wide = sub.pivot(index=list(LAUNCH_KEY), columns="name", values="value")
    wide.columns.name = None
    return wide.reindex(columns=list(PIPE_ORDER) + ["issue_active"]).reset_index()
