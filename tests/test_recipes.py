"""Recipes on real reports of every FLOP kind (H200 probes) and on other people's public
reports (A100, H800, A10G, RTX 3080, RTX 4090, RTX 5060 Ti, A10; Nsight Compute 2020.2-2025.2).

Expected values are computed here from the raw ncu_report metrics with Nsight Compute's
chart formulas (ncu-metrics.md) or the raw-counter definitions, and checked against the
known FLOP counts of the probe kernels (tests/data/kinds/README.md): FLOP/s x duration.
"""
from __future__ import annotations

import json
import math
import os
import warnings
from pathlib import Path

import pytest

from flashprof.analysis.report.errors import FlashprofWarning
from flashprof.analysis.report.parse import load_frame
from flashprof.analysis.metrics.recipes import evaluate
from flashprof.analysis.stages.summary import summarize
from conftest import ROOT, raw_metrics

KINDS = ROOT / "tests" / "data" / "kinds"
DGEMM = ROOT / "reports" / "h200" / "other-kinds" / "dgemm_fp64.ncu-rep"
# ../shared beside the clone (CI); a git worktree elsewhere can point at it explicitly.
from report_corpus import PUBLIC  # noqa: E402 (../shared beside the checkout)
THREADS = 1056 * 256  # flops.cu: blocks x threads per block
GEMM_FLOPS = 2 * 4096 ** 3
KNOWN = {  # report -> (kind, FLOPs of the launch)
    "h200_hfma2_full": ("fp16", THREADS * 4096 * 4 * 2 * 2),   # HFMA2: 2 lanes x FMA
    "h200_dfma_full": ("fp64", THREADS * 1024 * 4 * 2),
    "h200_ffma_rooflineset": ("fp32", THREADS * 4096 * 4 * 2),
    "h200_bf16_full": ("tensor", GEMM_FLOPS),
    "dgemm_fp64": ("tensor", GEMM_FLOPS),
}


def _quiet_load(paths):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        frame = load_frame(paths, cache=False)
    return frame, [w for w in caught if issubclass(w.category, FlashprofWarning)]


@pytest.fixture(scope="module")
def kinds():
    paths = sorted(KINDS.glob("*.ncu-rep")) + [DGEMM]
    frame, caught = _quiet_load(paths)
    return {r["report"]: r for r in summarize(frame)}, caught


@pytest.mark.parametrize("report", sorted(KNOWN))
def test_flop_count_identity(kinds, report):
    """Each probe lands on its own chart with the right rate: FLOP/s x duration = FLOPs."""
    rec = kinds[0][report]
    kind, flops = KNOWN[report]
    assert rec["flops_kind"] == kind
    assert rec[f"{kind}_tflops"] == rec["tflops"]
    assert rec["tflops"] * 1e12 * rec["duration_ns"] * 1e-9 == pytest.approx(flops, rel=0.01)
    assert rec["provenance"]["tflops"] == "exact"
    assert 0 < rec["tflops"] <= rec["peak_tflops"]


def test_dgemm_on_dmma_tensor_cores(kinds):
    """The issue's check: FP64 DGEMM at ~59 TFLOP/s from sm__ops_path_tensor_src_fp64."""
    rec = kinds[0]["dgemm_fp64"]
    raw = raw_metrics(DGEMM)
    expected = raw["sm__ops_path_tensor_src_fp64.sum.per_cycle_elapsed"] * raw["sm__cycles_elapsed.avg.per_second"]
    assert rec["tensor_tflops"] == pytest.approx(expected / 1e12, rel=0.01)
    assert 55 < rec["tensor_tflops"] < 65 and rec["tensor_src"] == "fp64"
    assert rec["tensor_tflops_peak"] == pytest.approx(
        raw["sm__ops_path_tensor_src_fp64.sum.peak_sustained"] * raw["sm__cycles_elapsed.avg.per_second"] / 1e12, rel=0.01)
    # DFMA (non-tensor FP64) stays its own, tiny, field.
    assert rec["fp64_tflops"] < 0.01 * rec["tensor_tflops"]


def test_hfma2_rate_from_nsight_compute_derived_metric(kinds):
    rec = kinds[0]["h200_hfma2_full"]
    raw = raw_metrics(KINDS / "h200_hfma2_full.ncu-rep")
    d = "derived__smsp__sass_thread_inst_executed_op_{}"
    per_cycle = raw[d.format("hadd_pred_on_x2")] + raw[d.format("hmul_pred_on_x2")] + raw[d.format("hfma_pred_on_x4")]
    assert rec["fp16_tflops"] == pytest.approx(per_cycle * raw["smsp__cycles_elapsed.avg.per_second"] / 1e12, rel=0.01)
    assert rec["tensor_tflops"] == 0.0  # counters say no tensor op: 0, with provenance
    l2 = 32 * raw["lts__lts2xbar_cycles_active.sum.per_second"]
    assert rec["ai_l2"] == pytest.approx(rec["fp16_tflops"] * 1e12 / l2, rel=0.01)


def test_basic_set_gives_null_and_a_hint(kinds):
    rec = kinds[0]["h200_ffma_basic"]
    assert rec["tflops"] is None or math.isnan(rec["tflops"])
    assert rec["flops_kind"] is None and rec["provenance"]["tflops"] is None
    assert {"flops_fp32", "bytes_dram", "stalls"} <= set(rec["missing"])
    assert "--section SpeedOfLight_HierarchicalSingleRooflineChart" in rec["collect_hint"]
    assert "--section WarpStateStats" in rec["collect_hint"]
    lines = [str(w.message) for w in kinds[1] if "h200_ffma_basic" in str(w.message)]
    assert len(lines) == 1 and "FP32 FLOP/s" in lines[0] and "collect with: ncu --section" in lines[0]


# ------------------------------------------------------------------------ public reports
def _public():
    if not PUBLIC.is_dir():
        pytest.skip(f"{PUBLIC} is absent (public reports live beside the clone in ../shared)")
    return sorted(PUBLIC.glob("*.ncu-rep"))


def _all_raw(path: Path) -> list[dict]:
    ncu_report = pytest.importorskip("ncu_report")
    report = ncu_report.load_report(str(path))
    out = []
    for i in range(report.num_ranges()):
        rng = report.range_by_idx(i)
        for j in range(rng.num_actions()):
            a = rng.action_by_idx(j)
            out.append({n: a.metric_by_name(n).value() for n in a.metric_names()})
    return out


def _num(raw: dict, name: str) -> float:
    v = raw.get(name)
    return float(v) if isinstance(v, (int, float)) and math.isfinite(v) else math.nan


def _expected(raw: dict) -> dict:
    """Independent computation: Nsight Compute's chart formulas, else raw counters."""
    dur = _num(raw, "gpu__time_duration.sum") * 1e-9
    dram = _num(raw, "dram__bytes.sum.per_second")
    if math.isnan(dram):
        dram = (_num(raw, "dram__bytes_read.sum") + _num(raw, "dram__bytes_write.sum")) / dur
    op = "smsp__sass_thread_inst_executed_op_{}_pred_on.sum.per_cycle_elapsed"
    fp32 = (_num(raw, op.format("fadd")) + _num(raw, op.format("fmul")) + 2 * _num(raw, op.format("ffma"))) \
        * _num(raw, "smsp__cycles_elapsed.avg.per_second")
    l2 = 32 * _num(raw, "lts__lts2xbar_cycles_active.sum.per_second")
    if math.isnan(l2):
        l2 = 32 * _num(raw, "lts__t_sectors.sum") / dur
    return {"duration_ns": dur * 1e9, "dram": dram, "fp32": fp32, "l2": l2}


def _close(got, want) -> bool:
    if want is None or math.isnan(want):
        return got is None or (isinstance(got, float) and math.isnan(got))
    return got is not None and got == pytest.approx(want, rel=0.01)


@pytest.fixture(scope="module")
def public_summary():
    paths = _public()
    frame, caught = _quiet_load(paths)
    return paths, summarize(frame), caught


def test_public_reports_parse_together(public_summary):
    """Eight reports, seven GPUs, Nsight Compute 2020.2-2025.2, five section sets: one frame,
    one record per launch (launch counts from SOURCES.tsv), one warning line per report."""
    paths, rows, caught = public_summary
    launches = {}
    for line in (PUBLIC / "SOURCES.tsv").read_text().splitlines()[1:]:
        cols = line.split("\t")
        launches[cols[0].removesuffix(".ncu-rep")] = int(cols[7])
    counts = {}
    for r in rows:
        counts[r["report"]] = counts.get(r["report"], 0) + 1
    assert counts == launches
    json.dumps(rows, default=str)  # JSON-able after jsonable() in the CLI; no crash here
    for w in caught:
        assert str(w.message).count("\n") == 0 and "collect with: ncu" in str(w.message)
    assert len({str(w.message).split(":")[0] for w in caught}) == len(caught)


def test_public_values_match_raw_counters(public_summary):
    paths, rows, _ = public_summary
    by_report = {}
    for r in rows:
        by_report.setdefault(r["report"], []).append(r)
    checked = 0
    for path in paths:
        recs = by_report[path.name.removesuffix(".ncu-rep")]
        for rec, raw in zip(recs[:6], _all_raw(path)[:6]):
            want = _expected(raw)
            assert _close(rec["duration_ns"], want["duration_ns"]), (path.name, rec["launch"])
            assert _close(rec["fp32_tflops"] * 1e12 if rec["fp32_tflops"] is not None else None, want["fp32"])
            if rec["flops_kind"] is not None and rec["ai_dram"] is not None and not math.isnan(rec["ai_dram"]):
                flops = rec["tflops"] * 1e12
                assert rec["ai_dram"] == pytest.approx(flops / want["dram"], rel=0.01), path.name
                if rec["ai_l2"] is not None and not math.isnan(rec["ai_l2"]):
                    assert rec["ai_l2"] == pytest.approx(flops / want["l2"], rel=0.01), path.name
                checked += 1
    assert checked >= 10


def test_public_fp32_gemm_is_on_the_single_precision_chart(public_summary):
    """RTX 3080 full set (2023.2): the custom SGEMM and cuBLAS's ampere_sgemm are FP32."""
    _paths, rows, _ = public_summary
    gemm = [r for r in rows if r["report"].startswith("AshunFeiyu")]
    assert [r["flops_kind"] for r in gemm] == ["fp32", "fp32"]
    for r in gemm:
        assert r["tflops"] > 5 and r["ai_dram"] > 10
        assert r["provenance"]["ai_dram"] == "exact" and r["provenance"]["ai_l2"] == "derived"


def test_a100_tensor_estimate_is_labelled(public_summary):
    _paths, rows, _ = public_summary
    a100 = [r for r in rows if r["report"].startswith("panjd123")]
    for r in a100:
        assert r["provenance"]["tensor_tflops"].startswith("estimated:")
        assert r["fp16_tflops"] is None or math.isnan(r["fp16_tflops"])
        assert "flops_fp16" in r["missing"]


def test_evaluate_handles_an_empty_launch():
    res = evaluate({}, None)
    assert all(math.isnan(r.value) and r.provenance is None for r in res.values())


def test_method_md_carries_the_recipe_table():
    """docs/METHOD.md shows the recipe table exactly as analysis/metrics/recipes.py defines it."""
    from flashprof.analysis.metrics.recipes import markdown_table
    assert markdown_table() in (ROOT / "docs" / "METHOD.md").read_text()


def test_sm_clock_from_gpc_cycles_when_nothing_else(public_summary):
    """RTX 4090 report with custom sections: no clock metric, but GPC cycles and duration."""
    paths, rows, _ = public_summary
    path = next(p for p in paths if p.name.startswith("Lashi0812"))
    for rec, raw in zip([r for r in rows if r["report"].startswith("Lashi0812")], _all_raw(path)):
        want = raw["gpc__cycles_elapsed.max"] / (raw["gpu__time_duration.sum"] * 1e-9)
        assert rec["sm_clock_hz"] == pytest.approx(want, rel=0.01) and rec["provenance"]["sm_clock_hz"] == "derived"
        assert 1.0e9 < rec["sm_clock_hz"] < 3.2e9
