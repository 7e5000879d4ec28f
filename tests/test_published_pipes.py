"""The series' own Nsight Compute pipe utilisation (published.json ``pipe_utilisation``, its Part 7
profiles of kernel 7 and FA2 on the A100 and the RTX 3090) and what the model makes of it.

* The unit: Nsight Compute's tensor pipe % on GA10x counts an fp32-accumulate HMMA at the
  fp16-accumulate rate (gpus.json ``tensor_pipe_counted_flop_per_clk_sm``). Checked here from
  published numbers alone -- the published TFLOP/s over the counted peak at the bench clock is the
  published pipe % -- and the FP32-accumulate rate would miss by half.
* The committed result's ``published_pipes`` records, recomputed from its rows and published.json.
"""
from __future__ import annotations

import json
import math

import pytest

from flashprof.analysis.gap.constants import FLOP_PER_HMMA, SUBPARTITIONS, machine
from flashprof.paths import ROOT as REPO

PUB = json.loads((REPO / "flashprof" / "analysis" / "published.json").read_text())
GPUS = json.loads((REPO / "flashprof" / "analysis" / "gpus.json").read_text())["gpus"]
RESULT = REPO / "reports" / "gap" / "issue_model.json"


def _v(e):
    return e["value"] if isinstance(e, dict) else e


def _published_tflops(slug: str, target: str) -> float:
    g = PUB["gpus"][slug]
    fa2 = g["reference_tflops"]["seq_4096"]
    return fa2 if target == "ref" else fa2 * g["pct_of_fa2"][target]["seq_4096"] / 100


def _counted_pct(slug: str, target: str, rate_key: str) -> float:
    """Tensor pipe % the published TFLOP/s comes to at the bench clock, the pipe counted at ``rate_key``
    (FLOP/clk/SM, falling back to the mma.sync rate)."""
    g = GPUS[PUB["gpus"][slug]["gpu_key"]]
    rate = _v(g.get(rate_key, g["mma_sync_flop_per_clk_sm"]))
    peak = rate * _v(g["sm_count"]) * _v(g["issue_model"]["bench_clock_mhz"]) * 1e6
    return 100 * _published_tflops(slug, target) * 1e12 / peak


@pytest.mark.parametrize("slug", sorted(PUB["pipe_utilisation"]["gpus"]))
def test_published_tensor_pct_is_published_tflops_over_the_counted_peak(slug):
    """Every published tensor % is within 1 pp of the published TFLOP/s over the counted peak (the
    kernel's tail and its clock under the profiler take the rest)."""
    for target, pipes in PUB["pipe_utilisation"]["gpus"][slug].items():
        got = _counted_pct(slug, target, "tensor_pipe_counted_flop_per_clk_sm")
        assert got - 1.0 <= pipes["tensor"] <= got + 0.5, (slug, target, got, pipes["tensor"])


def test_ga10x_counts_fp32_accumulate_hmma_at_the_fp16_accumulate_rate():
    """On the RTX 3090 the fp32-accumulate rate (the rate the HMMAs run at) would put FA2 and kernel 7
    at about twice what Nsight Compute reports; the A100 has one rate for both."""
    for target, pipes in PUB["pipe_utilisation"]["gpus"]["rtx3090"].items():
        runs_at = _counted_pct("rtx3090", target, "mma_sync_flop_per_clk_sm")
        assert runs_at > 90 and runs_at / pipes["tensor"] == pytest.approx(2.0, rel=0.03)
    assert "tensor_pipe_counted_flop_per_clk_sm" not in GPUS[PUB["gpus"]["a100"]["gpu_key"]]
    m = machine("rtx3090")
    assert m.hmma_counted_interval == pytest.approx(FLOP_PER_HMMA / (1024 / SUBPARTITIONS))
    assert m.hmma_interval == pytest.approx(2 * m.hmma_counted_interval)
    assert "hmma_counted_interval" not in m.fitted and machine("a100_80gb").hmma_counted_interval is None


@pytest.fixture(scope="module")
def recs():
    if not RESULT.is_file():
        pytest.skip("no committed issue_model.json")
    return json.loads(RESULT.read_text())


def test_published_pipes_records_recomputed_from_the_rows(recs):
    pp = [r for r in recs if r["kind"] == "published_pipes"]
    want = {(PUB["gpus"][s]["gpu_key"], t) for s, ks in PUB["pipe_utilisation"]["gpus"].items() for t in ks}
    assert {(r["gpu_key"], r["target"]) for r in pp} == want
    slug = {PUB["gpus"][s]["gpu_key"]: s for s in PUB["gpus"]}
    for r in pp:
        row = next(x for x in recs if x["kind"] == "row" and x["gpu_key"] == r["gpu_key"] and x["target"] == r["target"]
                   and x.get("binary") == "series" and x.get("seq", 4096) == 4096)
        published = PUB["pipe_utilisation"]["gpus"][slug[r["gpu_key"]]][r["target"]]
        assert r["published_pct"] == published and r["sass"] == row["sass"]
        pub_time = 1 / _published_tflops(slug[r["gpu_key"]], r["target"])
        pred_time = 1 / row["pred_tflops"]
        assert r["pred_time_over_published"] == pytest.approx(pred_time / pub_time)
        for pipe_, v in published.items():
            pred = sum(row["pred_pipe_pct"][q] for q in pipe_.split("+"))
            assert r["pred_pct"][pipe_] == pytest.approx(pred)
            assert r["work_ratio"][pipe_] == pytest.approx(v * pub_time / (pred * pred_time))
            assert math.isfinite(r["work_ratio"][pipe_]) and 0.5 < r["work_ratio"][pipe_] < 2


def test_rtx_tensor_pct_in_the_committed_rows_is_in_nsight_units(recs):
    """The RTX 3090 rows' tensor % is the FLOP over the counted (fp16-accumulate) peak and the
    model's time: about half of the pipe's busy time."""
    g = GPUS["rtx3090"]
    flop = 4.0 * 16 * 16 * 4096 ** 2 * 128
    peak = _v(g["tensor_pipe_counted_flop_per_clk_sm"]) * _v(g["sm_count"])
    for row in (x for x in recs if x["kind"] == "row" and x["gpu_key"] == "rtx3090" and x.get("binary") == "series"
                and x["target"] in ("ref", "16")):
        assert row["pred_pipe_pct"]["tensor"] == pytest.approx(100 * flop / peak / row["pred_cycles"], rel=0.01)
        assert row["pred_pipe_pct"]["tensor"] < 50
