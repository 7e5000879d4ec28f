"""The common head of a ``ceilings <mode>`` run's sidecar (devjobs/ceil_modes.sh output copied
into a reports folder): what ran, on which GPU, by which command, when the sidecar was written,
the clocks, the raw file and the runs beside it."""
from __future__ import annotations

import datetime
import json
from pathlib import Path

from flashprof.kernels.gpus import GPUS, SHIPPED
from flashprof.paths import ROOT as REPO


def sidecar_head(folder: Path, mode: str, what: str, command: str) -> dict:
    """``folder`` holds ``<mode>.raw.jsonl`` (run 1), ``<mode>.run<k>.raw.jsonl`` and
    ``<mode>_clocks.txt``; the device record is the raw file's first ``device`` line."""
    raw = folder / f"{mode}.raw.jsonl"
    device = next((json.loads(x) for x in raw.read_text().splitlines() if '"record": "device"' in x), {})
    clocks = folder / f"{mode}_clocks.txt"
    return {"schema": 1, "what": what, "gpu": device.get("name"), "arch": device.get("arch"), "command": command,
            "created": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"),
            "clocks": clocks.read_text().strip() if clocks.is_file() else None,
            "raw": raw.name, "runs": [r.name for r in sorted(folder.glob(f"{mode}.run*.raw.jsonl"))]}


def same_chip_path(rel: str) -> Path | None:
    """``rel`` under the shipped GPU's reports folder, else under a same-chip GPU's (a ceilings
    run measures the SM, which the H100 and H200 share); None where neither has it."""
    for g in sorted(GPUS, key=lambda g: g.slug != SHIPPED.slug):
        if g.chip == SHIPPED.chip and (REPO / g.reports / rel).is_file():
            return REPO / g.reports / rel
    return None
