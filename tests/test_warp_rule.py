"""The warp-choice rule (analysis/gap/warp_rule.py, docs/METHOD.md): the candidate warp choice does
what it says in the scheduler, the committed judgement follows the rule as written from its own
numbers, its stall-probe scores under W0 are the probe sidecar's (predicted before the run, greedy),
and the model as shipped keeps greedy."""
from __future__ import annotations

import json
import statistics

import pytest

from conftest import stored_rule


def _ffma_stream(stall: int = 3):
    """The stall probe's own loop (reports/h200/yield/ffma_s<stall>y1.sass: 128 FFMAs a pass, every
    one at that stall count, the loop counter and branch)."""
    from flashprof.analysis.gap.data import REPO
    from flashprof.analysis.gap.yield_probe import loop_of

    path = REPO / "reports" / "h200" / "yield" / f"ffma_s{stall}y1.sass"
    if not path.is_file():
        pytest.skip(f"{path} absent")
    return loop_of(path.read_text(), "yield_ffma", "FFMA")


@pytest.mark.parametrize("policy,lo,hi", [("greedy", 1.4, 1.6), ("greedy_lri", 0.99, 1.1), ("round_robin", 0.99, 1.1)])
def test_four_warps_at_stall_count_three(policy, lo, hi):
    """Four warps on one scheduler, every FFMA at stall count 3: warp order lets three warps take
    every slot and the fourth waits for them to finish (1.5 cycles an instruction over the whole
    run); taking the warp that issued least recently, or turns, keeps the scheduler busy (about 1)."""
    from flashprof.analysis.gap.constants import machine
    from flashprof.analysis.gap.scheduler import simulate
    from flashprof.kernels.gpus import SHIPPED

    body = _ffma_stream()
    r = simulate(list(body), machine(SHIPPED.model_key), 1, 4, 8, subpartitions=1, policy=policy)
    per_inst = r["cycles_per_iter"] / (sum(i.base == "FFMA" for i in body) * 4)
    assert lo <= per_inst <= hi


def test_the_machine_carries_the_choice_into_an_unnamed_policy():
    import dataclasses

    from flashprof.analysis.gap.constants import machine
    from flashprof.analysis.gap.scheduler import simulate
    from flashprof.kernels.gpus import SHIPPED

    m = machine(SHIPPED.model_key)
    assert m.warp_choice == "greedy"  # as shipped
    body = _ffma_stream()
    lri = dataclasses.replace(m, warp_choice="greedy_lri")
    a = simulate(list(body), lri, 1, 4, 8, subpartitions=1)["cycles_per_iter"]
    b = simulate(list(body), m, 1, 4, 8, subpartitions=1, policy="greedy_lri")["cycles_per_iter"]
    c = simulate(list(body), lri, 1, 4, 8, subpartitions=1, policy="greedy")["cycles_per_iter"]
    assert a == b and c > 1.3 * a


def test_the_committed_judgement_follows_the_rule_from_its_own_numbers():
    from flashprof.analysis.gap import warp_rule as wr

    rule = stored_rule("warp_rule")
    for c in wr.CANDIDATES:
        flat = [abs(v) for by in rule["error_pct"][c].values() for v in by.values()]
        assert rule["pooled_mae_pct"][c] == pytest.approx(statistics.fmean(flat))
    ok = [c for c in ("W1", "W2") if rule["pooled_mae_pct"][c] < rule["pooled_mae_pct"]["W0"] - wr.MARGIN_PP
          and abs(rule["sched_period_error_pct"][c]) <= wr.SCHED_PCT]
    assert rule["choice"] == (min(ok, key=lambda c: rule["pooled_mae_pct"][c]) if ok else "W0")
    assert set(rule["records"]) == set(wr.SETS)
    assert not any(n.endswith("_w1") for by in rule["error_pct"]["W0"].values() for n in by)


def test_w0_stall_scores_are_the_probe_sidecars_predictions_made_before_the_run():
    """Under W0 (greedy) the rule's stall-probe errors are the sidecar's: its predictions were
    written before the run with the same scheduler and warp choice."""
    from flashprof.analysis.gap.ceil_run import same_chip_path

    rule = stored_rule("warp_rule")
    side = same_chip_path("yield/stall.json")
    if side is None:
        pytest.skip("no stall probe run committed")
    per = json.loads(side.read_text())["per_record"]
    stall = rule["error_pct"]["W0"]["stall"]
    assert set(stall) == {n for n in per if not n.endswith("_w1")}
    for n, v in stall.items():
        assert v == pytest.approx(per[n]["error_pct"], abs=1e-6)
