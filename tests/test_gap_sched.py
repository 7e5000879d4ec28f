"""Issue 32: the issue model's warp choice and its steady state.

* Against ``ceilings sched`` (two warps on one scheduler, passes of 128 independent FFMAs
  ending in a clock read; reports/h100/sched/sched.raw.jsonl): the measured period of a pass
  and the offset between the two warps' clock reads are read from the raw records here, with
  their own arithmetic, and the scheduler's greedy rule must reproduce both while round robin
  must not (its offset is the one that tells them apart).
* Two TMA-fed warpgroups that start in phase need passes to settle (issue_report.passes): the
  shipped kernel 7's loop timed over 32 passes, last 16, agrees with 48 passes, last 24; loops
  that load their own tiles keep 8 passes.
"""
from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest

from flashprof.analysis.gap import issue_report, sched_check
from flashprof.analysis.gap.constants import machine
from flashprof.analysis.gap.issue_report import H200
from flashprof.analysis.gap.loops import LOOP_DIR, kernel_loop
from flashprof.analysis.gap.scheduler import simulate

REPO = Path(__file__).resolve().parents[1]
RUN = REPO / "reports" / "h100" / "sched" / "sched.raw.jsonl"
K7_SHIPPED = "d128_br128_bc128_w8_async_eager_swz_f000_optsm_pers_wgmma_ws2_ovl"


def _measured(name):
    for line in RUN.read_text().splitlines():
        r = json.loads(line)
        if r.get("name") == name:
            return r["cycles"][1:], r["cycles_2n"][1:]
    raise AssertionError(f"{name} not in {RUN}")


needs_run = pytest.mark.skipif(not RUN.is_file(), reason=f"{RUN.relative_to(REPO)} absent")


@needs_run
def test_the_measured_together_case_alternates_whole_passes():
    older, younger = _measured("sched_together")
    both = range(3, 13)
    period = statistics.median([older[k + 1] - older[k] for k in both])
    first = _measured("sched_older_first")[0]  # the older warp's passes before the younger one starts
    alone = statistics.median([first[k + 1] - first[k] for k in range(3)])
    # two warps share one scheduler: a pass takes longer than alone, less than twice (each
    # fills the other's stall cycles at the end of a pass)
    assert 1.5 * alone < period < 2.0 * alone
    # and the two warps' clock reads are far apart: they do not interleave instruction by instruction
    offsets = [(younger[k] - older[k]) % period for k in both]
    assert statistics.median([min(o, period - o) for o in offsets]) > 0.25 * period


@needs_run
def test_greedy_reproduces_the_measured_timeline_and_round_robin_does_not():
    older, younger = _measured("sched_together")
    both = range(2, len(older) - 2)
    period = statistics.median([older[k + 1] - older[k] for k in list(both)[:-1]])
    offset = statistics.median([min((younger[k] - older[k]) % period, period - (younger[k] - older[k]) % period)
                                for k in both])
    greedy, rr = sched_check.simulated("greedy"), sched_check.simulated("round_robin")
    assert abs(greedy["period"] / period - 1) < 0.05
    assert abs(greedy["offset"] - offset) < 0.1 * period
    assert abs(rr["offset"] - offset) > 0.2 * period


def test_an_unknown_warp_choice_is_refused():
    with pytest.raises(ValueError, match="warp choice"):
        simulate(sched_check.loop_body(), machine(H200), 1, 2, policy="oldest")


def test_one_subpartition_puts_both_warps_on_one_scheduler():
    body = sched_check.loop_body()
    one, four = {}, {}
    simulate(body, machine(H200), 1, 2, iterations=6, subpartitions=1, trace=one)
    simulate(body, machine(H200), 1, 2, iterations=6, trace=four)
    step = lambda tr: statistics.median(b - a for a, b in zip(tr[0], tr[0][1:]))
    assert step(one) > 1.5 * step(four)  # sharing one scheduler: each warp fills only the other one's stalls


@pytest.mark.skipif(not (LOOP_DIR / f"{K7_SHIPPED}_sm_90.sass").is_file(), reason="kernel 7 loop SASS absent")
def test_two_warpgroup_loops_are_timed_after_they_settle():
    code = kernel_loop("7", "sm_90", K7_SHIPPED)
    assert issue_report.passes(code, 1) == (32, 16)
    # a mma.sync loop, and a wgmma loop that loads its own tiles with cp.async, keep the short run
    for other in (f for f in LOOP_DIR.glob("*_sm_90.sass") if "_ws" not in f.name):
        assert issue_report.passes(kernel_loop("x", "sm_90", other.name[:-len("_sm_90.sass")]), 2) == (8, 1)


@pytest.mark.skipif(not (LOOP_DIR / f"{K7_SHIPPED}_sm_90.sass").is_file(), reason="kernel 7 loop SASS absent")
# seed 1 stayed locked in phase longer with the XU costs alone (5.2 %, strict xfail until 2026-12-07);
# with the HGMMA issue backlog measured by ceilings wgsplit4 it settles like the rest
@pytest.mark.parametrize("seed", [1, 3])
def test_the_settled_window_holds_at_48_passes(seed):
    code = kernel_loop("7", "sm_90", K7_SHIPPED)
    m = machine(H200)
    opts = dict(issue_report.with_tma_writes(code, ()))
    a = simulate(list(code.body), m, 1, code.warps, iterations=32, seed=seed, warmup=16, **opts)
    b = simulate(list(code.body), m, 1, code.warps, iterations=48, seed=seed, warmup=24, **opts)
    assert abs(a["cycles_per_iter"] / b["cycles_per_iter"] - 1) < 0.03
