"""Pipes and stalls stages against raw counters and the H200 baseline."""
from __future__ import annotations

import warnings

import pytest

from flashprof.analysis.stages.pipes import ISSUE_METRIC, PIPE_METRICS, PIPE_ORDER, pipe_table, pipes
from conftest import KERNELS, raw_metrics, raw_opcodes
from flashprof.analysis.stages.stalls import (REASON_FAMILY, STALL_FAMILIES, STALL_REASONS, bank_conflicts, stalls, top_stall_lines)


@pytest.fixture(scope="module")
def pipe_frame(full_frame):
    return pipes(full_frame)


@pytest.fixture(scope="module")
def stall_frame(full_frame):
    return stalls(full_frame)


def test_pipe_utilisation_baseline(pipe_frame, raw_ref):
    t = pipe_table(pipe_frame).set_index("report")
    assert t.loc["ref", "tensor"] == raw_ref["sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"]
    assert t.loc["ref", "fma"] == raw_ref["sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active"]
    assert t.loc["ref", "issue_active"] == raw_ref[ISSUE_METRIC]
    # Bounds: percentages; FA2 keeps the tensor pipe busier than the FMA pipe.
    assert 0 <= t.loc["ref", "fma"] < t.loc["ref", "tensor"] <= 100
    # Tensor pipe % tracks achieved / peak tensor FLOP/s (one is per active cycle, the
    # other per elapsed cycle: within a few points).
    name = "sm__ops_path_tensor_op_hmma_src_fp16_dst_fp32_sparsity_off.sum"
    flop_pct = 100 * raw_ref[f"{name}.per_cycle_elapsed"] / raw_ref[f"{name}.peak_sustained"]
    assert t.loc["ref", "tensor"] == pytest.approx(flop_pct, abs=3)
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
    # Every HMMA is m16n8k16 (2*16*8*16 FLOP): the count is the attention FLOP count / 4096.
    assert mix.set_index("name").loc["HMMA", "value"] == 4 * 16 * 16 * 4096**2 * 128 / (2 * 16 * 8 * 16)
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
    for reason in ("math_pipe_throttle", "short_scoreboard"):
        assert ref.loc[reason, "per_issue"] == raw_ref[
            f"smsp__average_warps_issue_stalled_{reason}_per_issue_active.ratio"]
    # The issuing warp is exactly one warp per issued instruction.
    assert ref.loc["selected", "per_issue"] == pytest.approx(1.0)
    # FA2's largest real stall is the tensor pipe being full (math_pipe_throttle), not memory.
    real = ref[ref["is_stall"] & (ref.index != "wait")]
    assert real["per_issue"].idxmax() == "math_pipe_throttle"
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


# ----------------------------------------------------------------------------- kernels 1-7
@pytest.fixture(scope="module")
def kbanks(kernel_frame):
    return bank_conflicts(kernel_frame).set_index(["report", "op"])


def test_swizzling_cuts_bank_conflicts(kbanks, raw_kernels):
    """Kernel 2 only adds the XOR swizzle to kernel 1: shared-memory bank conflicts (both
    loads and stores) must drop by a large factor; checked on the raw counters too."""
    for op in ("ld", "st"):
        name = f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{op}.sum"
        c1, c2 = raw_kernels["1"][name], raw_kernels["2"][name]
        assert kbanks.loc[("kernel1", op), "conflicts"] == c1
        assert kbanks.loc[("kernel2", op), "conflicts"] == c2
        assert c1 > 10 * c2, (op, c1, c2)
    # Kernel 1's ldmatrix reads are ~8-way conflicted (d=128 fp16 rows are 256 B: every
    # row of an 8x8 ldmatrix tile falls in the same 4 banks); kernel 2's are conflict-free.
    assert kbanks.loc[("kernel1", "ld"), "nway"] == pytest.approx(8, rel=0.05)
    assert kbanks.loc[("kernel2", "ld"), "nway"] == pytest.approx(1, abs=0.01)
    for k in ("kernel1", "kernel2"):
        raw = raw_kernels[k[-1]]
        w = raw["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"]
        c = raw["l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"]
        assert kbanks.loc[(k, "ld"), "nway"] == pytest.approx(w / (w - c))
        assert kbanks.loc[(k, "ld"), "ldsm_inst"] == raw["smsp__inst_executed_op_ldsm.sum"]


def test_fp32_fusion_kernel6_vs_kernel5(kernel_frame, raw_kernels):
    """Kernel 6 folds the softmax scale into FFMA: fewer FMUL, more FFMA than kernel 5,
    in the dynamic per-opcode counts and in the raw thread-instruction counters."""
    mix = pipes(kernel_frame)
    mix = mix[mix["category"] == "inst_mix_opcode"].set_index(["report", "name"])["value"]
    ops5, ops6 = raw_opcodes(KERNELS["5"]), raw_opcodes(KERNELS["6"])
    for k, ops in (("kernel5", ops5), ("kernel6", ops6)):
        for op in ("FMUL", "FFMA", "FADD"):
            assert mix[(k, op)] == ops[op], (k, op)
    assert ops6["FMUL"] < 0.5 * ops5["FMUL"]
    assert ops6["FFMA"] > 5 * ops5["FFMA"]
    # Tensor work is unchanged by the fusion.
    assert ops6["HMMA"] == ops5["HMMA"]

    def threads(raw, op):  # thread instructions = per-cycle rate x SMSP cycles elapsed
        return (raw[f"smsp__sass_thread_inst_executed_op_{op}_pred_on.sum.per_cycle_elapsed"]
                * raw["smsp__cycles_elapsed.avg"])
    r5, r6 = raw_kernels["5"], raw_kernels["6"]
    assert threads(r6, "fmul") < threads(r5, "fmul")
    assert threads(r6, "ffma") > threads(r5, "ffma")
    # A warp instruction has at most 32 predicated-on threads.
    for raw, ops in ((r5, ops5), (r6, ops6)):
        for op in ("fmul", "ffma"):
            assert threads(raw, op) <= 32 * ops[op.upper()] * (1 + 1e-9)


@pytest.mark.parametrize("k", list(KERNELS))
def test_kernel_stall_fractions_sum_to_one(kernel_frame, k):
    s = stalls(kernel_frame)
    sub = s[s["report"] == f"kernel{k}"]
    assert sub["fraction"].sum() == pytest.approx(1.0)
    raw = raw_metrics(KERNELS[k])
    # Stall ratios and the latency ratio come from different replay passes: agree to
    # a fraction of a percent (kernel 2: 0.12 %), not exactly.
    assert sub["per_issue"].sum() == pytest.approx(raw["smsp__average_warp_latency_per_inst_issued.ratio"], rel=5e-3)


def test_kernel_top_stall_lines_have_locations():
    from flashprof.analysis.report.parse import load_source_frame
    top = top_stall_lines(load_source_frame(KERNELS["1"]), n=5)
    assert len(top) == 5
    assert top["location"].str.contains("kernels/csrc/").all()
    # Kernel 1's hottest stall is waiting on conflicted shared-memory reads.
    assert top.iloc[0]["dominant_reason"] == "short_scoreboard"
