"""The issue model against ``ceilings mix1``: the HMMA mix kernels at one warp per scheduler.

At four warps per scheduler (``ceilings mix``, analysis/gap/interplay.py) other warps fill a
warp's waits, so those points measure issue and pipe costs, not how long one warp waits. At one
warp per scheduler nothing hides that: a point's HMMA rate is its warp's own issue chain (stall
counts, the tensor pipe's interval, the cost of issuing beside a busy tensor pipe). The
measured points (``reports/<gpu>/mma_mix_w1/mix1.raw.jsonl``, a GPU of the shipped GPU's chip) are held out: no constant of
the model comes from them. The loops are the committed listing of the same kernels
(reports/sass/ceilings/mma_mix_sm_90a.sass; the GPU build's loops are identical).

``python -m flashprof.analysis.gap.mix_w1`` prints measured and modelled cycles per HMMA per
scheduler, point by point.
"""
from __future__ import annotations

import json
import re
import statistics
import sys
from pathlib import Path

from flashprof.analysis.gap.constants import SUBPARTITIONS, Machine, machine
from flashprof.analysis.gap.data import REPO
from flashprof.analysis.gap.interplay import points, rate
from flashprof.kernels.gpus import GPUS, SHIPPED

# the run on a GPU of the shipped GPU's chip (the same SM), the shipped GPU's own first
RUN = next((p for p in (REPO / g.reports / "mma_mix_w1" / "mix1.raw.jsonl"
                        for g in sorted(GPUS, key=lambda g: g.slug != SHIPPED.slug) if g.chip == SHIPPED.chip)
            if p.is_file()), REPO / SHIPPED.reports / "mma_mix_w1" / "mix1.raw.jsonl")
FLOP_PER_HMMA = 2 * 16 * 8 * 16  # m16n8k16
_NAME = re.compile(r"^mma_mix_([a-z0-9]+)_k(\d+)(_noreuse)?_w1$")


def measured(path: Path = RUN) -> dict[tuple[str, int, bool], float]:
    """(kind, K, reuse) -> cycles per HMMA per scheduler (median of the repeats)."""
    out = {}
    for line in Path(path).read_text().splitlines():
        r = json.loads(line)
        m = _NAME.match(r.get("name", "")) if r.get("record") == "measurement" else None
        if m is None or r.get("check") != "ok":
            continue
        hmma_per_clk_sm = r["work"] / statistics.median(r["cycles"]) / FLOP_PER_HMMA
        out[(m.group(1), int(m.group(2)), m.group(3) is None)] = SUBPARTITIONS / hmma_per_clk_sm
    return out


def modelled(body, m: Machine) -> float:
    """Cycles per HMMA per scheduler of one mix loop, one warp on each of the four schedulers."""
    return SUBPARTITIONS / rate(body, m, warps_per_scheduler=1)


def compare(m: Machine | None = None, path: Path = RUN) -> list[dict]:
    m = m or machine(SHIPPED.model_key)
    loops = points()
    rows = []
    for p, cyc in sorted(measured(path).items()):
        pred = modelled(loops[p], m)
        rows.append({"kind": p[0], "k": p[1], "reuse": p[2], "measured_cycles": cyc,
                     "model_cycles": pred, "error_pct": 100 * (cyc / pred - 1)})
    return rows


def main(argv=None) -> int:
    if not RUN.is_file():
        print(f"mix_w1: {RUN.relative_to(REPO)} absent (bash devjobs/mix1.sh on a GPU)", file=sys.stderr)
        return 2
    rows = compare()
    print("cycles per HMMA per scheduler, one warp per scheduler (error: model rate vs measured)")
    for r in rows:
        print(f"  {r['kind']:6s} K={r['k']} {'reuse' if r['reuse'] else 'no reuse':8s} measured {r['measured_cycles']:6.2f}"
              f"  model {r['model_cycles']:6.2f}  {r['error_pct']:+5.1f} %")
    print(f"mean |error| {statistics.fmean(abs(r['error_pct']) for r in rows):.1f} % over {len(rows)} points")
    return 0


if __name__ == "__main__":
    sys.exit(main())
