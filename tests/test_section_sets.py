"""The smaller SET=roofline section list gives the same analysis as --set full.

Both reports are real H200 collections of kernel 6 at the same shape, in different
ncu runs: values must agree within run-to-run noise (1 %), every summary field that the
smaller set can compute must be present, and mixing section sets in one frame must work.
"""
from pathlib import Path

import pytest

from flashprof.analysis.stages.summary import summarize_paths
from flashprof.profiling.ncu import ROOFLINE_SECTIONS

ROOT = Path(__file__).resolve().parent.parent
FULL = ROOT / "reports/h200/kernel6.ncu-rep"
SMALL = ROOT / "reports/h200/section-sets/kernel6_s4096_b16_h16_fp16_roofline.ncu-rep"
FIELDS = ["duration_ns", "tflops", "tensor_tflops", "ai_l2", "ai_dram", "ai_smem", "tensor_pipe_pct",
          "fma_pipe_pct", "alu_pipe_pct", "xu_pipe_pct", "lsu_pipe_pct"]


@pytest.fixture(scope="module")
def rows():
    with pytest.warns(Warning, match="SchedulerStats"):
        out = summarize_paths([FULL, SMALL], cache=False)
    return {r["report"]: r for r in out}


def test_smaller_set_matches_full_set(rows):
    full, small = rows["kernel6"], rows[SMALL.name[: -len(".ncu-rep")]]
    for f in FIELDS:
        assert small[f] == pytest.approx(full[f], rel=0.01), f
    for reason in ("short_scoreboard", "mio_throttle", "math_pipe_throttle", "wait"):
        assert small["stalls"][reason] == pytest.approx(full["stalls"][reason], rel=0.02), reason


def test_smaller_set_lacked_only_scheduler_stats(rows):
    small = rows[SMALL.name[: -len(".ncu-rep")]]
    assert small["issue_active_pct"] != small["issue_active_pct"]  # NaN: not collected
    # ...which the section list now includes, so a new collection has issue slots too.
    assert "SchedulerStats" in ROOFLINE_SECTIONS
