"""flashprof.analysis.stages.limiter: the speed-of-light bound and the binding roofline roof.

Expected values are computed here from the raw SpeedOfLight metrics of the long frame and
from the summary records' own intensities and roofs (``ai_<level> x <level>_ceiling``,
``peak_tflops``), not from the limiter's output.
"""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from flashprof.analysis.stages import limiter as L

ROOT = Path(__file__).resolve().parents[1]
H200 = ROOT / "reports" / "h200"


def test_sol_bound_rule():
    assert L.sol_bound(80, 40) == "compute"
    assert L.sol_bound(40, 80) == "memory"
    assert L.sol_bound(59.9, 12) == "latency"
    assert L.sol_bound(60, 12) == "compute"
    assert L.sol_bound(math.nan, 70) is None and L.sol_bound(None, 70) is None


def test_binding_roof_is_the_lowest_attainable():
    # compute roof 100; L2: 2 FLOP/B x 30 B/s = 60; DRAM: 10 x 20 = 200 -> L2 binds, 30/60 = 50 %
    roof, att, pct = L.binding_roof(30, 100, {"L2": (2, 30), "DRAM": (10, 20)})
    assert (roof, att, pct) == ("L2", 60, 50)
    roof, att, pct = L.binding_roof(90, 100, {"L2": (20, 30), "DRAM": (math.nan, 20)})
    assert (roof, att, pct) == ("compute", 100, 90)
    assert L.binding_roof(1, math.nan, {})[0] is None
    assert L.busiest_unit({"L2": 3, "DRAM": math.nan, "L1/shared": 7}) == ("L1/shared", 7)


@pytest.fixture(scope="module")
def h200():
    paths = [H200 / f"{s}.ncu-rep" for s in ("kernel1", "kernel7", "flex_attention-attention", "cudnn")]
    if not all(p.is_file() for p in paths):
        pytest.skip("shipped reports absent")
    from flashprof.analysis.report.parse import load_frame
    from flashprof.analysis.stages.roofline import roofline
    from flashprof.analysis.stages.summary import summarize_paths
    frame = load_frame(paths)
    return frame, L.limiters(frame, roofline(frame)), summarize_paths(paths)


def test_limiters_against_raw_metrics_and_summary(h200):
    frame, lim, records = h200
    rows = {(r["report"], r["launch"]): r for r in lim.to_dict("records")}
    assert len(rows) == len(records)
    raw = {}
    for rec in frame[frame["metric"].str.endswith("throughput.avg.pct_of_peak_sustained_elapsed")].to_dict("records"):
        raw.setdefault((rec["report"], rec["launch"]), {})[rec["metric"].split(".")[0]] = rec["value"]
    levels = {"L1": "l1", "L2": "l2", "DRAM": "dram", "shared memory": "smem"}
    for r in records:
        key = (r["report"], r["launch"])
        got, m = rows[key], raw[key]
        c, mem = m["sm__throughput"], m["gpu__compute_memory_throughput"]
        assert got["compute_pct"] == pytest.approx(c) and got["memory_pct"] == pytest.approx(mem)
        want = "latency" if max(c, mem) < 60 else ("compute" if c >= mem else "memory")
        assert got["sol_bound"] == want
        units = {"L1/shared": m["l1tex__throughput"], "L2": m["lts__throughput"], "DRAM": m["gpu__dram_throughput"]}
        assert got["memory_unit"] == max(units, key=units.get)
        if not r["flops_kind"]:
            assert got["roof"] is None
            continue
        att = {"compute": r["peak_tflops"] * 1e12}
        for level, k in levels.items():
            if r[f"ai_{k}"] and r[f"{k}_ceiling"]:
                att[level] = r[f"ai_{k}"] * r[f"{k}_ceiling"]
        best = min(att, key=att.get)
        assert got["roof"] == best, key
        assert got["pct_of_roof"] == pytest.approx(100 * r["tflops"] * 1e12 / att[best], rel=1e-6)
    # the shipped story: kernel 1 is shared-memory bound at ~92 %, cuDNN compute bound
    assert rows[("kernel1", 0)]["sol_bound"] == "memory" and rows[("kernel1", 0)]["roof"] == "shared memory"
    assert rows[("cudnn", 0)]["sol_bound"] == "compute" and rows[("cudnn", 0)]["roof"] == "compute"
    assert rows[("flex_attention-attention", 0)]["sol_bound"] == "latency"  # a 1.8 us fill kernel


def test_verdict_text():
    assert L.verdict_text({"sol_bound": "memory", "compute_pct": 8.6, "memory_pct": 92.4,
                           "memory_unit": "L1/shared"}) == "memory 92 % (busiest: L1/shared)"
    assert L.verdict_text({"sol_bound": None}).startswith("unknown")
