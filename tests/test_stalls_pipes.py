"""Pipes and stalls stages against raw counters and the H200 baseline."""
from __future__ import annotations

import warnings

import pytest

from analysis.pipes import ISSUE_METRIC, PIPE_METRICS, PIPE_ORDER, pipe_table, pipes
from analysis.stalls import (REASON_FAMILY, STALL_FAMILIES, STALL_REASONS, bank_conflicts, stalls,
                             top_stall_lines)


@pytest.fixture(scope="module")
def pipe_frame(full_frame):
    return pipes(full_frame)


@pytest.fixture(scope="module")
def stall_frame(full_frame):
    return stalls(full_frame)


def test_pipe_utilisation_baseline(pipe_frame):
    t = pipe_table(pipe_frame).set_index("report")
    assert t.loc["ref", "tensor"] == pytest.approx(57, abs=1)
    assert t.loc["ref", "fma"] == pytest.approx(18, abs=1)
    assert t.loc["ref", "issue_active"] == pytest.approx(46, abs=1)
    assert list(t.columns[2:]) == list(PIPE_ORDER) + ["issue_active"]


def test_pipe_values_are_the_named_metrics(pipe_frame, raw_ref):
    ref = pipe_frame[(pipe_frame["report"] == "ref") & pipe_frame["category"].isin(["utilization", "issue"])]
    for _, r in ref.iterrows():
        assert r["metric"] in raw_ref
        assert r["value"] == pytest.approx(raw_ref[r["metric"]])
        if r["category"] == "utilization":
            assert r["metric"] in PIPE_METRICS[r["name"]]
        else:
            assert r["metric"] == ISSUE_METRIC


def test_opcode_mix(pipe_frame):
    mix = pipe_frame[(pipe_frame["report"] == "ref") & (pipe_frame["category"] == "inst_mix_opcode")]
    assert mix["share"].sum() == pytest.approx(1.0)
    assert mix.set_index("name").loc["HMMA", "value"] == 536870912
    assert (mix["value"].diff().dropna() <= 0).all()  # largest first


def test_stall_order_and_families(stall_frame):
    ref = stall_frame[stall_frame["report"] == "ref"]
    assert list(ref["reason"].astype(str)) == list(STALL_REASONS)
    assert list(stall_frame["reason"].cat.categories) == list(STALL_REASONS)
    assert set(REASON_FAMILY) == set(STALL_REASONS)
    assert REASON_FAMILY["mio_throttle"] == REASON_FAMILY["short_scoreboard"] == "shared memory/MIO"
    assert REASON_FAMILY["math_pipe_throttle"] == "tensor/math"
    assert REASON_FAMILY["long_scoreboard"] == REASON_FAMILY["lg_throttle"] == "memory (global)"
    assert STALL_FAMILIES["barrier"] == ("barrier",)


@pytest.mark.parametrize("report", ["ref", "cudnn"])
def test_stall_fractions_sum_to_one(stall_frame, report):
    sub = stall_frame[stall_frame["report"] == report]
    assert sub["fraction"].sum() == pytest.approx(1.0)


def test_stall_values_and_baseline(stall_frame, raw_ref):
    ref = stall_frame[stall_frame["report"] == "ref"].astype({"reason": str}).set_index("reason")
    assert ref.loc["math_pipe_throttle", "per_issue"] == pytest.approx(0.68, abs=0.01)
    assert ref.loc["short_scoreboard", "per_issue"] == pytest.approx(0.32, abs=0.01)
    for reason, r in ref.iterrows():
        if r["metric"] in raw_ref:
            assert r["per_issue"] == pytest.approx(raw_ref[r["metric"]])
    # The sum over reasons is Nsight Compute's warp latency per issued instruction.
    assert ref["per_issue"].sum() == pytest.approx(raw_ref["smsp__average_warp_latency_per_inst_issued.ratio"], rel=1e-3)
    assert not ref.loc["selected", "is_stall"]


def test_small_report_gives_nan_without_new_warnings(sol_load):
    frame, _ = sol_load
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s, p, b = stalls(frame), pipes(frame), bank_conflicts(frame)
    assert s["per_issue"].isna().all() and s["fraction"].isna().all()
    assert p[p["category"] == "utilization"]["value"].isna().all()
    assert b[["conflicts", "wavefronts", "nway"]].isna().all().all()


def test_bank_conflicts(full_frame, raw_ref):
    b = bank_conflicts(full_frame)
    ref = b[b["report"] == "ref"].set_index("op")
    for op in ("ld", "st"):
        c = raw_ref[f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{op}.sum"]
        w = raw_ref[f"l1tex__data_pipe_lsu_wavefronts_mem_shared_op_{op}.sum"]
        assert ref.loc[op, "conflicts"] == c
        assert ref.loc[op, "nway"] == pytest.approx(w / (w - c))
        assert ref.loc[op, "nway"] >= 1.0
    assert ref.loc["ld", "ldsm_inst"] == raw_ref["smsp__inst_executed_op_ldsm.sum"]


def test_top_stall_lines(ref_source):
    top = top_stall_lines(ref_source, n=10)
    assert len(top) == 10
    assert (top["stall_samples"].diff().dropna() <= 0).all()
    assert set(top["dominant_reason"]) <= set(STALL_REASONS)
    stall_cols = [c for c in ref_source.columns if c.startswith("stall_") and not c.endswith("_not_issued")
                  and c != "stall_selected"]
    best = ref_source.assign(t=ref_source[stall_cols].sum(axis=1)).sort_values("t", ascending=False).iloc[0]
    assert top.iloc[0]["pc"] == best["pc"] and top.iloc[0]["stall_samples"] == best["t"]
    assert (top["dominant_share"] <= 1).all() and (top["location"] == "").all()


def test_top_stall_lines_empty():
    import pandas as pd
    assert top_stall_lines(pd.DataFrame({"pc": []})).empty
