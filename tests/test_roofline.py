"""Roofline stage: our numbers against Nsight Compute's chart formulas computed here,
independently, from raw ncu_report counters; the H200 baseline; ceilings; other paths."""
from __future__ import annotations

import math

import pandas as pd
import pytest

from flashprof.analysis.stages.roofline import CONVENTION, LEVELS, ROOFLINE_COLUMNS, roofline
from conftest import H200, REF, raw_metrics, sidecar

FA_FLOPS = 4 * 16 * 16 * 4096**2 * 128  # 4·B·H·S²·d for the profiled shape


@pytest.fixture(scope="module")
def roof(full_frame):
    return roofline(full_frame)


def _row(roof, report, level):
    sel = roof[(roof["report"] == report) & (roof["level"] == level)]
    assert len(sel) == 1
    return sel.iloc[0]


def _chart(raw: dict, tensor_name: str) -> dict:
    """Nsight Compute's hierarchical Tensor roofline chart, from raw counters."""
    clock = raw["sm__cycles_elapsed.avg.per_second"]
    tensor = raw[f"{tensor_name}.sum.per_cycle_elapsed"] * clock
    return {
        "tensor": tensor,
        "tensor_ceiling": raw[f"{tensor_name}.sum.peak_sustained"] * clock,
        "L1": tensor / (128 * raw["l1tex__lsu_writeback_active_mem_lgds.sum.per_second"]),
        "L2": tensor / (32 * raw["lts__lts2xbar_cycles_active.sum.per_second"]),
        "DRAM": tensor / raw["dram__bytes.sum.per_second"],
        # The chart's own derived byte rates, as stored in the report by Nsight Compute.
        "L1_ncu": tensor / raw["derived__l1tex__lsu_writeback_bytes_mem_lgds.sum.per_second"],
        "L2_ncu": tensor / raw["derived__lts__lts2xbar_bytes.sum.per_second"],
    }


HMMA = "sm__ops_path_tensor_op_hmma_src_fp16_dst_fp32_sparsity_off"
HGMMA = "sm__ops_path_tensor_op_hgmma_src_fp16_sparsity_off"


@pytest.mark.parametrize("report, raw_fixture, tensor_name", [("ref", "raw_ref", HMMA), ("cudnn", "raw_cudnn", HGMMA)])
def test_ai_matches_ncu_chart(roof, request, report, raw_fixture, tensor_name):
    raw = request.getfixturevalue(raw_fixture)
    chart = _chart(raw, tensor_name)
    assert _row(roof, report, "L1")["flops_tensor"] == pytest.approx(chart["tensor"], rel=1e-9)
    assert _row(roof, report, "L1")["tensor_ceiling"] == pytest.approx(chart["tensor_ceiling"], rel=1e-9)
    for level in ("L1", "L2", "DRAM"):
        assert _row(roof, report, level)["ai_tensor"] == pytest.approx(chart[level], rel=0.01), level
    assert _row(roof, report, "L1")["ai_tensor"] == pytest.approx(chart["L1_ncu"], rel=0.01)
    assert _row(roof, report, "L2")["ai_tensor"] == pytest.approx(chart["L2_ncu"], rel=0.01)


def test_fp32_matches_single_precision_chart(roof, raw_ref):
    per_cycle = sum(raw_ref[f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum.per_cycle_elapsed"] * k
                    for op, k in (("fadd", 1), ("fmul", 1), ("ffma", 2)))
    fp32 = per_cycle * raw_ref["smsp__cycles_elapsed.avg.per_second"]
    row = _row(roof, "ref", "L2")
    assert row["flops_fp32"] == pytest.approx(fp32, rel=1e-9)
    assert row["flops_total"] == pytest.approx(fp32 + row["flops_tensor"], rel=1e-12)
    assert row["fp32_ceiling"] == pytest.approx(
        raw_ref["derived__sm__sass_thread_inst_executed_op_ffma_pred_on_x2"] * raw_ref["sm__cycles_elapsed.avg.per_second"])


def test_h200_baseline(roof, raw_ref):
    """FA2 baseline on the H200: every expected number is computed here from raw counters
    (ncu-metrics.md formulas), plus bounds a reader can check by hand."""
    clock = raw_ref["sm__cycles_elapsed.avg.per_second"]
    tensor = raw_ref[f"{HMMA}.sum.per_cycle_elapsed"] * clock
    l2 = _row(roof, "ref", "L2")
    assert l2["flops_tensor"] == pytest.approx(tensor, rel=1e-9)
    assert l2["duration_ns"] == raw_ref["gpu__time_duration.sum"]
    assert l2["sm_clock_hz"] == clock
    # mma.sync roof = 360448 FLOP/clk (132 SMs x 2730.67) at the report's own clock.
    assert raw_ref[f"{HMMA}.sum.peak_sustained"] == 360448
    assert l2["tensor_ceiling"] == pytest.approx(360448 * clock, rel=1e-9)
    assert l2["ai_tensor"] == pytest.approx(tensor / (32 * raw_ref["lts__lts2xbar_cycles_active.sum.per_second"]), rel=1e-9)
    assert _row(roof, "ref", "DRAM")["ai_tensor"] == pytest.approx(tensor / raw_ref["dram__bytes.sum.per_second"], rel=1e-9)
    # Bounds: the clock is 1.5-1.98 GHz (nvidia-smi max 1.98 GHz), FA2 runs at 40-70 %
    # of the mma.sync roof, and DRAM sees fewer bytes than L2 (higher intensity).
    assert 1.5e9 < clock <= 1.98e9
    assert 0.4 < l2["flops_tensor"] / l2["tensor_ceiling"] < 0.7
    assert _row(roof, "ref", "DRAM")["ai_tensor"] > l2["ai_tensor"]
    # Duration x FLOP/s = 4·B·H·S²·d, and the sidecar agrees with that count.
    assert sidecar(REF)["flops"] == FA_FLOPS


@pytest.mark.parametrize("report", ["ref", "cudnn"])
def test_flops_equal_attention_flop_count(roof, report):
    row = _row(roof, report, "DRAM")
    assert row["flops_tensor"] * row["duration_ns"] * 1e-9 == pytest.approx(FA_FLOPS, rel=0.01)


@pytest.fixture(scope="module")
def kroof(kernel_frame):
    return roofline(kernel_frame)


def _flops_from_sidecar(report: str) -> float:
    shape = sidecar(H200 / f"{report}.ncu-rep")["shape"]
    return 4 * shape["batch"] * shape["heads"] * shape["seq"] ** 2 * shape["d_head"]


@pytest.mark.parametrize("report", [f"kernel{i}" for i in range(1, 8)] + ["kernel7mma", "ref", "cudnn"])
def test_kernel_flops_times_duration(kroof, report):
    """Tensor FLOP/s x duration = 4·B·H·S²·d (shape from the sidecar) within 1 %, and the
    tensor FLOP/s equals the raw chart counter x SM clock."""
    row = _row(kroof, report, "L2")
    assert row["flops_tensor"] * row["duration_ns"] * 1e-9 == pytest.approx(_flops_from_sidecar(report), rel=0.01)
    raw = raw_metrics(H200 / f"{report}.ncu-rep")
    wgmma = report == "cudnn" or (sidecar(H200 / f"{report}.ncu-rep").get("config") or {}).get("wgmma")
    name = HGMMA if wgmma else HMMA  # the sidecar's config says which instruction the kernel ran
    clock = raw["sm__cycles_elapsed.avg.per_second"]
    assert row["flops_tensor"] == pytest.approx(raw[f"{name}.sum.per_cycle_elapsed"] * clock, rel=1e-9)
    assert row["ai_tensor"] == pytest.approx(
        row["flops_tensor"] / (32 * raw["lts__lts2xbar_cycles_active.sum.per_second"]), rel=1e-9)


def test_kernel_ceilings_at_or_above_achieved(kroof):
    assert len(kroof) == 10 * len(LEVELS)
    for _, r in kroof.iterrows():
        assert r["tensor_ceiling"] >= r["flops_tensor"] > 0, r["report"]
        assert r["fp32_ceiling"] >= r["flops_fp32"] > 0, r["report"]
        assert r["bw_ceiling"] >= r["bytes_per_s"] > 0, (r["report"], r["level"])


def test_kernels_run_fp32_flops_from_counters(kroof, raw_kernels):
    for k, raw in raw_kernels.items():
        per_cycle = sum(raw[f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum.per_cycle_elapsed"] * w
                        for op, w in (("fadd", 1), ("fmul", 1), ("ffma", 2)))
        row = _row(kroof, f"kernel{k}", "DRAM")
        assert row["flops_fp32"] == pytest.approx(per_cycle * raw["smsp__cycles_elapsed.avg.per_second"], rel=1e-9)


def test_paths(roof):
    assert _row(roof, "ref", "L2")["tensor_path"] == "hmma"
    assert _row(roof, "cudnn", "L2")["tensor_path"] == "hgmma"


def test_ceilings_at_or_above_achieved(roof):
    for _, r in roof.iterrows():
        assert r["tensor_ceiling"] >= r["flops_tensor"]
        assert r["fp32_ceiling"] >= r["flops_fp32"]
        assert r["bw_ceiling"] >= r["bytes_per_s"], (r["report"], r["level"])
        assert r["ridge_tensor"] == pytest.approx(r["tensor_ceiling"] / r["bw_ceiling"])


def test_shared_memory_level(roof, raw_ref):
    row = _row(roof, "ref", "shared memory")
    assert row["convention"] != CONVENTION and not row["in_ncu_chart"]
    # Our 128 B/clk/SM roof agrees with Nsight Compute's own utilisation of that pipe.
    pct = raw_ref["l1tex__data_pipe_lsu_wavefronts_mem_shared.sum.pct_of_peak_sustained_elapsed"]
    assert 100 * row["bytes_per_s"] / row["bw_ceiling"] == pytest.approx(pct, rel=0.01)
    expected = 128 * raw_ref["l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"] / (raw_ref["gpu__time_duration.sum"] * 1e-9)
    assert row["bytes_per_s"] == pytest.approx(expected)


def test_frame_shape_and_convention(roof, full_frame):
    assert tuple(roof.columns) == ROOFLINE_COLUMNS
    assert len(roof) == 2 * len(LEVELS)
    assert set(roof.loc[roof["in_ncu_chart"], "convention"]) == {CONVENTION}
    before = full_frame.copy()
    roofline(full_frame)
    pd.testing.assert_frame_equal(before, full_frame)  # pure: input untouched


def test_foreign_and_small_reports_give_nan_rows(gemm_load, sol_load):
    import warnings
    for frame, _ in (gemm_load, sol_load):
        with warnings.catch_warnings():
            warnings.simplefilter("error")  # the parser warned already; no second warning
            r = roofline(frame)
        assert list(r["level"]) == list(LEVELS)
        assert r["ai_tensor"].isna().all() and r["duration_ns"].notna().all()


def _synthetic(metrics: dict) -> pd.DataFrame:
    base = {"report": "x", "path": "x.ncu-rep", "gpu": "G", "arch": "sm_80", "kernel": "k",
            "kernel_full": "k", "range_idx": 0, "launch": 0, "variant": math.nan, "title": math.nan,
            "batch": math.nan, "seq": math.nan, "heads": math.nan, "d_head": math.nan, "dtype": math.nan}
    return pd.DataFrame([{**base, "metric": k, "unit": "", "value": v} for k, v in metrics.items()])


def test_ampere_names_and_no_double_counting():
    frame = _synthetic({
        "sm__cycles_elapsed.avg.per_second": 1e9,
        "sm__ops_path_tensor_src_fp16_dst_fp32_sparsity_off.sum.per_cycle_elapsed": 1000.0,
        "sm__ops_path_tensor_src_fp16_dst_fp32_sparsity_off.sum.peak_sustained": 4000.0,
        "sm__ops_path_tensor_src_bf16_dst_fp32_sparsity_off.sum.per_cycle_elapsed": 500.0,
        # dst-less aggregate of the same (path, src) must not be added on top
        "sm__ops_path_tensor_src_fp16_sparsity_off.sum.per_cycle_elapsed": 1000.0,
        "l1tex__lsu_writeback_active_mem_lg.sum.per_second": 1e9,
        "l1tex__lsu_writeback_active_mem_lg.sum.peak_sustained": 10.0,
        "l1tex__cycles_elapsed.avg.per_second": 1e9,
    })
    r = roofline(frame).set_index("level")
    assert r.loc["L1", "tensor_path"] == "tensor"
    assert r.loc["L1", "flops_tensor"] == pytest.approx(1500 * 1e9)
    assert r.loc["L1", "tensor_ceiling"] == pytest.approx(4000 * 1e9)
    assert r.loc["L1", "ai_tensor"] == pytest.approx(1500e9 / 128e9)
