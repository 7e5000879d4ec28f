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
    assert "measured" in m.sources["mio_queue_depth"] and "mio2" in m.sources["mio_queue_depth"]


# ---- ceilings mio3: does SHFL wait behind the ldmatrix queue? ----------------------------------

def _sidecar3() -> dict:
    path = same_chip_path("mio/mio3.json")
    if path is None:
        pytest.skip("no ceilings mio3 run committed")
    return json.loads(path.read_text())


def test_the_mio3_chains_are_what_the_listing_says():
    from flashprof.analysis.gap.controls import parse
    from flashprof.analysis.gap.mio_probe import SASS3_FILE

    fns = parse(SASS3_FILE.read_text())
    chains = {f: b for f, b in fns.items() if not f.endswith(".flood")}
    assert len(chains) == 6 and sum(f.endswith(".flood") for f in fns) == 3
    for f, body in chains.items():
        kind = {"0": "SHFL", "1": "LDS", "2": "FFMA"}[f.split("k_chain_besideILi")[1][0]]
        assert sum(i.base == kind for i in body) == 64
    for f, body in fns.items():
        if f.endswith(".flood"):
            assert sum(i.base == "LDSM" for i in body) == 8 and body[-1].base == "BRA"


def test_the_mio3_judgement_is_the_raw_runs_against_the_predictions_written_before():
    import math

    side = _sidecar3()
    res = side["result"]
    raw = same_chip_path("mio/mio3.raw.jsonl")
    meas = {r["name"]: statistics.median(r["cycles"]) for r in map(json.loads, raw.read_text().splitlines())
            if r.get("record") == "measurement" and r.get("kind") == "mio3"}
    assert set(meas) == {f"chain_{k}_{w}" for k in ("shfl", "lds", "ffma") for w in ("alone", "flood")}
    pred = json.loads((REPO / res["predicted_before"]["file"]).read_text())
    assert pred["created"] <= side["created"]
    got = meas["chain_shfl_flood"] / meas["chain_shfl_alone"]
    dist = {c: abs(math.log(got / (v["chain_shfl_flood"] / v["chain_shfl_alone"]))) for c, v in pred["by_candidate"].items()}
    assert res["choice"] == min(dist, key=dist.get)
    assert res["measured_flood_over_alone"]["shfl"] == pytest.approx(got)
    # the control chain (no MIO) barely moves under the flood; LDS slows, as the model says it must
    assert meas["chain_ffma_flood"] / meas["chain_ffma_alone"] < 1.1
    assert meas["chain_lds_flood"] / meas["chain_lds_alone"] > 1.3


def test_a_shuffle_in_the_mio_queue_waits_behind_shared_memory_requests():
    """The scheduler's shfl_in_smem: a SHFL issued after a burst of LDSM completes after them."""
    import dataclasses

    from flashprof.analysis.gap.constants import machine
    from flashprof.analysis.gap.controls import Control, Inst
    from flashprof.analysis.gap.scheduler import simulate
    from flashprof.kernels.gpus import SHIPPED

    def inst(op, operands, stall=1, wb=None, wait=0):
        return Inst(addr=0, predicate="", op=op, operands=operands, low=0, high=0,
                    ctrl=Control(stall=stall, yield_flag=0, write_barrier=wb, read_barrier=None, wait_mask=wait, reuse=0))

    body = [inst("LDSM.16.M88.4", f"R{4 * k}, [R100+{512 * k:#x}]", stall=1) for k in range(8)]
    body += [inst("SHFL.BFLY", "PT, R50, R51, 0x1, 0x1f", stall=1, wb=5), inst("IADD3", "R52, R50, 0x1, RZ", wait=1 << 5)]
    base = dataclasses.replace(machine(SHIPPED.model_key), mio_queue_depth=64.0)
    spans = {}
    for flag in (False, True):
        a, b = {}, {}
        m = dataclasses.replace(base, shfl_in_smem=flag)
        simulate(list(body), m, 1, 4, 2, trace=a, trace_pc=8)
        simulate(list(body), m, 1, 4, 2, trace=b, trace_pc=9)
        spans[flag] = max(b[w][0] - a[w][0] for w in a)
    assert spans[False] == pytest.approx(base.smem_latency, abs=2)
    assert spans[True] > spans[False] + 50  # behind 4 warps x 8 LDSM.x4 = 128 wavefronts, a share of them


def test_the_model_reads_the_shuffle_path_from_gpus_json_and_says_why_it_is_held():
    """The rule chose S1; gpus.json holds the flag at 0 with the reason (docs/METHOD.md): the model
    carries what gpus.json says, and where it departs from the rule's choice the source says so."""
    from flashprof.analysis.gap.constants import machine
    from flashprof.analysis.gap.data import REPO as root
    from flashprof.kernels.gpus import SHIPPED

    res = _sidecar3()["result"]
    entry = json.loads((root / "flashprof" / "analysis" / "gpus.json").read_text())["gpus"][SHIPPED.model_key][
        "issue_model"]["shfl_in_smem"]
    m = machine(SHIPPED.model_key)
    assert m.shfl_in_smem == bool(entry["value"])
    assert "mio3" in entry["source"] and res["choice"] in entry["source"]
    if m.shfl_in_smem != (res["choice"] == "S1"):
        assert "Held" in entry["source"]
    assert not machine("a100_80gb").shfl_in_smem and not machine("rtx3090").shfl_in_smem
