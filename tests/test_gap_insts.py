"""The issue model's instruction accounting against Nsight Compute's count.

Per H200 report (one launch, S = 4096): the warp instructions the model has every warp issue
-- KV-loop passes x loop body + the instructions outside the loop, ``trips_and_tail`` -- times
the launch's warps (``launch__grid_size`` x ``launch__block_size`` / 32, read straight through
ncu_report) must match the report's ``smsp__inst_executed.sum`` within 1 %. FA2 runs its
first, masked KV block as a pass peeled out of the loop: counted both as a trip and in the
tail, the model had FA2 issue 1.7 % more instructions than it does (and FA2 1.7 % slower).
The persistent, warp-specialised kernel 7 is left out: its producer warps' instructions are
not the model's to issue (issue_report.trips_and_tail).
"""
from __future__ import annotations

import json

import pytest

from conftest import ROOT, raw_metrics

H200 = ROOT / "reports" / "h200"
TARGETS = ("ref", "1", "2", "3", "4", "5", "6", "7mma")


def _report(target: str):
    return H200 / ("ref.ncu-rep" if target == "ref" else f"kernel{target}.ncu-rep")


@pytest.mark.parametrize("target", TARGETS)
def test_model_issues_the_reports_instruction_count(target):
    path = _report(target)
    if not path.is_file():
        pytest.skip(f"{path.name} not in reports/h200")
    from flashprof.analysis.gap import issue_report as ir
    from flashprof.analysis.gap.loops import fa2_loop

    side = json.loads(path.with_suffix(".json").read_text())
    seq = int(side["shape"]["seq"])
    code = fa2_loop("sm_90") if target == "ref" else ir.codes_for(ir.H200, {target: side["config_slug"]})[target]
    raw = raw_metrics(path)
    warps = raw["launch__grid_size"] * raw["launch__block_size"] / 32
    trips, tail = ir.trips_and_tail(code, seq)
    model = warps * (trips * len(code.body) + tail)
    measured = raw["smsp__inst_executed.sum"]
    assert model == pytest.approx(measured, rel=0.01), \
        f"{target}: model {model:.4g} warp instructions, report {measured:.4g} ({100 * (model / measured - 1):+.2f} %)"


def test_fa2_peels_one_kv_pass_out_of_its_loop():
    """The static fact the count rests on, read from the SASS text alone: FA2's function has
    as many HMMAs outside its main loop's address span as inside it (one pass peeled), and
    the LoopCode's trips at S = 4096, B_c = 64 are 63, not 64."""
    from flashprof.analysis.gap import issue_report as ir
    from flashprof.analysis.gap.loops import fa2_loop

    from flashprof.analysis.gap.controls import main_loop, parse

    code = fa2_loop("sm_90")
    text = (ROOT / code.source).read_text()
    insts = next(iter(parse(text).values()))
    first, last = main_loop(insts)
    lo, hi = insts[first].addr, insts[last].addr
    inside = outside = 0
    for line in text.splitlines():
        if " HMMA." not in line or not line.lstrip().startswith("/*"):
            continue
        addr = int(line.split("*/")[0].strip().lstrip("/*"), 16)
        if lo <= addr <= hi:
            inside += 1
        else:
            outside += 1
    assert inside > 0 and outside == inside
    trips, _tail = ir.trips_and_tail(code, 4096)
    assert trips == pytest.approx(4096 / 64 - 1)
