"""The MIO queue depth (ceilings mio2, analysis/gap/mio_probe.py): the committed bursts time what
the probe says, the spans in the sidecar are the raw runs', the depth is the rule's choice on the
predictions written before the run, and the shipped GPU's model carries it as measured."""
from __future__ import annotations

import json
import statistics

import pytest

from flashprof.analysis.gap.ceil_run import same_chip_path
from flashprof.analysis.gap.data import REPO


def _sidecar() -> dict:
    path = same_chip_path("mio/mio2.json")
    if path is None:
        pytest.skip("no ceilings mio2 run committed")
    return json.loads(path.read_text())


def _raw() -> dict[str, dict]:
    path = same_chip_path("mio/mio2.raw.jsonl")
    return {r["name"]: r for r in map(json.loads, path.read_text().splitlines())
            if r.get("record") == "measurement" and r.get("kind") == "mio2"}


def test_each_committed_burst_is_n_ldsm_between_two_clock_reads_that_wait_on_nothing():
    """The property the probe rests on: nothing but the N loads between the clock reads, and the
    second read free to issue once the N-th load has (no scoreboard wait on a load in flight)."""
    from flashprof.analysis.gap.mio_probe import bursts

    got = bursts()
    assert {p for _n, p in got} == {1, 2} and len(got) == 28
    for (n, _p), body in got.items():
        assert [i.base for i in body] == ["CS2R"] + ["LDSM"] * n + ["CS2R"]
        assert all("SR_CLOCKLO" in i.operands for i in (body[0], body[-1]))
        assert body[-1].ctrl.waits_on == ()
        assert all(i.op == "LDSM.16.M88.4" for i in body[1:-1])


def test_the_sidecar_spans_are_the_raw_runs():
    side = _sidecar()
    raw = _raw()
    assert len(raw) == 28 and all(r["check"] == "ok" for r in raw.values())
    for name, r in raw.items():
        assert side["result"]["per_record"][name]["span"] == statistics.median(r["cycles"])
        assert side["result"]["per_record"][name]["sm_span"] == statistics.median(r["cycles_max"])


def test_one_warp_a_scheduler_issues_an_ldsm_every_4_cycles_until_its_queue_fills_then_every_16():
    """The measured shape the depth is read from (raw spans, not the model): slope 4 from N = 4 to 16,
    16 (the data path's quarter: 4 wavefronts x 4 schedulers) from N = 24 on."""
    raw = _raw()
    span = {r["n"]: statistics.median(r["cycles"]) for r in raw.values() if r["warps_per_scheduler"] == 1}
    assert (span[16] - span[4]) / 12 == pytest.approx(4.0, abs=0.2)
    for a, b in ((24, 32), (32, 48)):
        assert (span[b] - span[a]) / (b - a) == pytest.approx(16.0, abs=0.3)


def test_the_depth_is_the_rules_choice_on_the_predictions_written_before_the_run():
    side = _sidecar()
    raw = _raw()
    pred_file = REPO / side["predicted_before"]["file"]
    pred = json.loads(pred_file.read_text())
    assert pred["created"] <= side["created"]
    by = pred["by_depth"]
    fit = {d: statistics.fmean(abs(100 * (by[d][n] / statistics.median(r["cycles"]) - 1))
                               for n, r in raw.items() if r["warps_per_scheduler"] == 1)
           for d in by if d != "committed"}
    best = min(fit, key=lambda d: (fit[d], int(d)))
    assert side["result"]["depth"] == int(best)
    assert side["result"]["by_depth"][best]["fit_mae_pct"] == pytest.approx(fit[best])


def test_the_predictions_are_the_scheduler_on_the_committed_bursts():
    """Two records recomputed: the slowest warp's clock-to-clock cycles in scheduler.simulate."""
    import dataclasses

    from flashprof.analysis.gap.constants import machine
    from flashprof.analysis.gap.mio_probe import PREDICTIONS, bursts
    from flashprof.analysis.gap.scheduler import simulate
    from flashprof.kernels.gpus import SHIPPED

    by = json.loads(PREDICTIONS.read_text())["by_depth"]
    got = bursts()
    for (n, p), d in (((16, 1), "8"), ((24, 1), "12")):
        m = dataclasses.replace(machine(SHIPPED.model_key), mio_queue_depth=float(d))
        a, b = {}, {}
        simulate(list(got[(n, p)]), m, 1, 4 * p, 2, trace=a, trace_pc=0)
        simulate(list(got[(n, p)]), m, 1, 4 * p, 2, trace=b, trace_pc=n + 1)
        assert max(b[w][0] - a[w][0] for w in a) == by[d][f"mio_many_n{n}_p{p}"]


def test_the_shipped_model_carries_the_measured_depth():
    from flashprof.analysis.gap.constants import machine
    from flashprof.kernels.gpus import SHIPPED

    m = machine(SHIPPED.model_key)
    assert m.mio_queue_depth == _sidecar()["result"]["depth"]
    assert m.sources["mio_queue_depth"].startswith("measured") and "mio2" in m.sources["mio_queue_depth"]
