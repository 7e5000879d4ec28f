"""Gap stage, pipes model: the tables only the superseded fitted model uses (the modelled
pipes, its default static-SASS input, the GPUs it compares). The shared data files, targets
and opcode -> pipe table are ``flashprof.analysis.gap.data``.
"""
from __future__ import annotations

import json
from collections.abc import Mapping

import pandas as pd

from flashprof.analysis.gap.data import PUBLISHED_FILE, REPO
from flashprof.kernels.gpus import GPUS, SHIPPED

# the GPUs with published numbers and the shipped one, in kernels/gpus.py order
DEFAULT_GPUS = tuple(g.model_key for g in GPUS
                     if g is SHIPPED or g.slug in json.loads(PUBLISHED_FILE.read_text())["gpus"])

MODEL_PIPES = ("tensor", "fma", "alu", "xu", "lsu", "smem", "issue", "dram")
DEFAULT_SASS = REPO / "reports" / "sass" / "opcodes.csv"


def entry_value(entry) -> float:
    if isinstance(entry, Mapping):
        return float(entry["value"])
    return float(entry)


def gpu_specs(gpus: dict) -> pd.DataFrame:
    """Wide frame, one row per GPU key, the numeric ``value`` of every field."""
    rows = []
    for key, g in gpus["gpus"].items():
        row = {"gpu_key": key, "name": g["name"], "chip": g["chip"], "arch": g["arch"]}
        for field, entry in g.items():
            if isinstance(entry, Mapping) and "value" in entry:
                row[field] = entry_value(entry)
        rows.append(row)
    return pd.DataFrame(rows)
