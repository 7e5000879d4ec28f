"""The compute-side dispatch rule (analysis/gap/dispatch_rule.py, docs/METHOD.md): both candidate
costs do what they say in the scheduler, the committed judgement follows the rule as written, its
skeleton scores are what the raw spans and the scheduler give now, and the model reads the choice."""
from __future__ import annotations

import dataclasses
import json
import statistics

import pytest

from conftest import stored_rule


def _inst(text: str, stall: int = 1):
    from flashprof.analysis.gap.controls import Control, Inst

    op, _, operands = text.partition(" ")
    return Inst(addr=0, predicate="", op=op, operands=operands, low=0, high=0,
                ctrl=Control(stall=stall, yield_flag=0, write_barrier=None, read_barrier=None, wait_mask=0, reuse=0))


def _machine(**kw):
    from flashprof.analysis.gap.constants import machine
    from flashprof.kernels.gpus import SHIPPED

    m = dataclasses.replace(machine(SHIPPED.model_key), hmma_switch_dispatch=0.0, mufu_in_mio=False)
    return dataclasses.replace(m, **kw)


def test_h1_costs_a_cycle_only_where_the_sub_partitions_hmma_changes_warp():
    """HMMAs a warp can issue only every 8 cycles (stall count 8), the tensor pipe taking one every 6:
    one warp leaves the pipe idle and never switches (H1 changes nothing); two warps on one
    scheduler take turns at a pipe-bound rate, every HMMA after the other warp's, and H1 adds its
    cycle to each (a pass of 2 x 8 HMMA: 16 x 6 cycles, with H1 16 x 7), counted as dispatch."""
    from flashprof.analysis.gap.scheduler import simulate

    body = [_inst(f"HMMA.16816.F32 R{8 * k}, R100, R104, R{8 * k}", stall=8) for k in range(8)]
    h0, h1 = _machine(), _machine(hmma_switch_dispatch=1.0)
    one = [simulate(list(body), m, 1, 1, 8, subpartitions=1)["cycles_per_iter"] for m in (h0, h1)]
    assert one[0] == pytest.approx(one[1]) == pytest.approx(64, abs=1)
    two = [simulate(list(body), m, 1, 2, 8, subpartitions=1) for m in (h0, h1)]
    assert two[0]["cycles_per_iter"] == pytest.approx(16 * h0.hmma_interval, rel=0.01)
    assert two[1]["cycles_per_iter"] == pytest.approx(16 * (h0.hmma_interval + 1), rel=0.01)
    assert two[1]["warps_per_issue"].get("dispatch", 0) > two[0]["warps_per_issue"].get("dispatch", 0)


def test_h2_lets_a_mufu_issue_into_the_mio_queue_and_throttles_when_it_is_full():
    """One warp issuing independent MUFU.EX2 back to back: without the queue each waits at issue
    for the XU pipe ("xu pipe"); with it, up to mio_queue_depth issue ahead and the warp then
    waits as "mio throttle". The XU pipe's rate bounds both."""
    from flashprof.analysis.gap.scheduler import simulate

    body = [_inst(f"MUFU.EX2 R{k}, R{100 + k}") for k in range(16)]
    h0, h2 = _machine(), _machine(mufu_in_mio=True)
    r0 = simulate(list(body), h0, 1, 1, 8, subpartitions=1)
    r2 = simulate(list(body), h2, 1, 1, 8, subpartitions=1)
    assert r0["warps_per_issue"].get("xu pipe", 0) > 0 and "mio throttle" not in r0["warps_per_issue"]
    assert r2["warps_per_issue"].get("mio throttle", 0) > 0 and "xu pipe" not in r2["warps_per_issue"]
    for r in (r0, r2):  # 16 EX2 a pass at the pipe's rate
        assert r["cycles_per_iter"] == pytest.approx(16 * h0.mufu_interval, rel=0.02)


def test_the_rule_as_written():
    from flashprof.analysis.gap.dispatch_rule import choose

    assert choose({"H0": 3.0, "H1": 2.5, "H2": 3.5, "H3": 2.2}) == "H0"  # none more than 1 pp better
    assert choose({"H0": 5.0, "H1": 3.6, "H2": 4.5, "H3": 3.0}) == "H1"  # within 1 pp of the best: simpler
    assert choose({"H0": 5.0, "H1": 4.5, "H2": 2.0, "H3": 2.5}) == "H2"
    assert choose({"H0": 5.0, "H1": 4.5, "H2": 3.5, "H3": 2.0}) == "H3"


def test_the_committed_choice_follows_the_rule():
    from flashprof.analysis.gap.dispatch_rule import choose

    rule = stored_rule("dispatch_rule")
    errs = rule["error_pct"]
    pooled = {c: statistics.fmean(abs(v) for by in errs[c].values() for v in by.values()) for c in errs}
    for c in ("H0", "H1", "H2", "H3"):
        assert rule["pooled_mae_pct"][c] == pytest.approx(pooled[c])
        assert len(errs[c]["mma_mix"]) == 74 and len(errs[c]["skeleton"]) == 6
    best = min(pooled.values())
    assert rule["choice"] == choose(pooled)
    assert (rule["choice"] == "H0") == (pooled["H0"] - best <= 1.0)


def test_the_skeleton_scores_are_the_raw_runs_against_the_scheduler_now():
    """Recomputed here for H0 and H1: the skeleton's cycles per HMMA from the raw spans (slowest
    warp, median over launches) against the scheduler on the committed SASS."""
    from flashprof.analysis.gap import dispatch_rule
    from flashprof.analysis.gap.ceil_run import same_chip_path
    from flashprof.analysis.gap.data import REPO
    from flashprof.analysis.gap.scheduler import simulate
    from flashprof.analysis.gap.yield_probe import loop_of
    from flashprof.kernels.gpus import SHIPPED

    rule = stored_rule("dispatch_rule")
    ms = dispatch_rule.candidates()
    for mode, kernel in (("mix", "fa2_skel"), ("mix2", "fa2_skel_noexp")):
        raw = same_chip_path(f"yield/{mode}.raw.jsonl")
        recs = {r["name"]: r for r in map(json.loads, raw.read_text().splitlines()) if r.get("record") == "measurement"}
        body = loop_of((REPO / SHIPPED.reports / "yield" / f"{mode}.sass").read_text(), kernel, "HMMA")
        for c in ("H0", "H1"):
            for w in (1, 2, 4):
                name = f"yield_{kernel}_orig_w{w}"
                r = recs[name]
                meas = statistics.median(max(s) for s in r["spans"]) / (r["work"] * w)
                pred = simulate(list(body), ms[c], 1, 4 * w, 8, seed=1)["cycles_per_iter"] / (96 * w)
                assert 100 * (pred / meas - 1) == pytest.approx(rule["error_pct"][c]["skeleton"][name], abs=1e-6)


def test_the_model_reads_the_choice():
    from flashprof.analysis.gap.constants import machine
    from flashprof.kernels.gpus import SHIPPED

    rule = stored_rule("dispatch_rule")
    m = machine(SHIPPED.model_key)
    assert (m.hmma_switch_dispatch > 0) == (rule["choice"] in ("H1", "H3"))
    assert m.mufu_in_mio == (rule["choice"] in ("H2", "H3"))
