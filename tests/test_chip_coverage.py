"""Every chip Nsight Compute 2025.3.1 knows (tests/data/chips) against the recipe table.

For each chip a synthetic launch is built from the chip's own metric list: every metric the
recipes, pipes, stalls and tensor counters can read, kept only where the chip lists its base
with a suffix that its type takes (tests/chip_lists.py). Each quantity must then evaluate, or
recipes.NOT_ON_CHIP must say why it cannot exist on that chip; each tensor instruction family
the chip shows (recipes.TENSOR_PATHS) must have a FLOP counter the recipes pick, or
recipes.TENSOR_PATH_ABSENT its reason. Reasons that a working recipe contradicts fail too.
The null-with-reason rule is checked on frames built the same way: tensor-pipe work with no
FLOP counter the recipes understand, or FLOP counters reading 0, gives null with a reason.
"""
from __future__ import annotations

import os
import math
import re

import pytest

from chip_lists import CHIP_ARCH, CHIPS, chip_metrics, on_chip, split
from flashprof.analysis.metrics import recipes as R
from flashprof.analysis.metrics.recipe_kit import _PIPE_PCT, _TENSOR_RE

EXTRA = ("pipes", "issue_active", "stalls", "bank_conflicts")


def candidates(chip: str) -> set[str]:
    """Every metric name the analysis can read that could exist on ``chip``."""
    out = set(_PIPE_PCT) | {R.ISSUE_METRIC, R.BANK_METRIC}
    for rs in R.RECIPES.values():
        for r in rs:
            out |= set(r.metrics)
    for alts in R.PIPE_METRICS.values():
        out |= set(alts)
    for b in chip_metrics(chip):
        if b.startswith("sm__ops_path_tensor_"):
            out |= {b + ".sum.per_cycle_elapsed", b + ".sum.peak_sustained"}
        if b.startswith(R.STALL_PREFIX) and b.endswith("_per_issue_active"):
            out.add(b + ".ratio")
    return out


def synthetic(chip: str, value: float = 1.0) -> dict[str, float]:
    return {n: value for n in candidates(chip) if on_chip(n, chip)}


def test_every_chip_listed():
    assert len(CHIPS) == 28 and set(CHIPS) == set(CHIP_ARCH)
    assert "gv100" not in CHIPS  # Volta: not in Nsight Compute 2025.3.1's list (README)
    for chip in CHIPS:
        types = set(chip_metrics(chip).values())
        assert types <= {"Counter", "Ratio", "Throughput"} and len(chip_metrics(chip)) > 1500


@pytest.mark.parametrize("chip", CHIPS)
def test_each_quantity_has_a_recipe_or_a_reason(chip):
    m = synthetic(chip)
    res = R.evaluate(m, CHIP_ARCH[chip])
    lost = set(R.missing(m, res)) | {q for q, r in res.items() if r.provenance is None}
    for q in list(R.RECIPES) + list(EXTRA):
        why = R.chip_reason(R.NOT_ON_CHIP, q, chip)
        if q in lost:
            assert why, f"{chip}: no recipe of {q} has its metrics on this chip and NOT_ON_CHIP gives no reason"
        else:
            assert not why, f"{chip}: NOT_ON_CHIP says {q} cannot exist, but a recipe works: {res.get(q)}"


def _family(n: str) -> tuple[str, str]:
    hit = _TENSOR_RE.match(n)
    return hit["op"] or "", hit["src"]


@pytest.mark.parametrize("chip", CHIPS)
def test_each_tensor_path_has_a_flop_counter_or_a_reason(chip):
    picked = [_family(n) for n in R.tensor_counters(synthetic(chip))]
    bases = chip_metrics(chip)
    for path, spec in R.TENSOR_PATHS.items():
        has = any(b in bases for b in spec["shown_by"])
        counted = any(re.search(spec["op"], op) and re.search(spec["src"], src) for op, src in picked)
        why = R.chip_reason(R.TENSOR_PATH_ABSENT, path, chip)
        if has and counted:
            assert not why, f"{chip}: TENSOR_PATH_ABSENT says no {path}, but the chip has it and a counter"
        else:
            assert why, f"{chip}: {path} ({spec['what']}) shown={has}, counted={counted}, and no reason"


def test_turing_tensor_flops_use_the_turing_names():
    """tu10x counts fp32-accumulate HMMA as src_fp16_bf16_tf32_dst_fp32: a T4 WMMA GEMM's
    tensor FLOPs must come from it (once it was dropped and the launch read 0.0)."""
    for chip in ("tu102", "tu104", "tu106"):
        names = R.tensor_counters(synthetic(chip))
        assert "sm__ops_path_tensor_src_fp16_bf16_tf32_dst_fp32.sum.per_cycle_elapsed" in names, chip
        assert "sm__ops_path_tensor_src_fp16_dst_fp16.sum.per_cycle_elapsed" in names, chip
    # A T4-like launch: fp32-accumulate HMMA only. Expected FLOP/s = ops per cycle x SM clock.
    m = {n: 0.0 for n in synthetic("tu104")}
    m["sm__ops_path_tensor_src_fp16_bf16_tf32_dst_fp32.sum.per_cycle_elapsed"] = 20480.0
    m["sm__ops_path_tensor_src_fp16_bf16_tf32_dst_fp32.sum.peak_sustained"] = 40960.0
    m["sm__cycles_elapsed.avg.per_second"] = 1.59e9
    m["sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active"] = 50.0
    res = R.evaluate(m, "sm_75")
    assert res["flops_tensor"].value == pytest.approx(20480.0 * 1.59e9)
    assert res["tensor_ceiling"].value == pytest.approx(40960.0 * 1.59e9)


def _zero_launch(chip: str) -> dict[str, float]:
    """Every metric the chip has, all 0, with a real clock and duration."""
    m = {n: 0.0 for n in synthetic(chip)}
    m.update({"gpu__time_duration.sum": 1e6, "sm__cycles_elapsed.avg.per_second": 1.5e9,
              "smsp__cycles_elapsed.avg.per_second": 1.5e9, "launch__sm_count": 80.0})
    return m


@pytest.mark.parametrize("chip", CHIPS)
def test_tensor_work_without_flop_counters_is_null_with_reason(chip):
    """HMMA on the tensor pipe, but the report has no sm__ops_path_tensor_* counter (e.g. a
    --section ComputeWorkloadAnalysis report): null with the reason, never 0."""
    m = {n: v for n, v in _zero_launch(chip).items() if not n.startswith("sm__ops_path_tensor")}
    m = {n: v for n, v in m.items() if not n.startswith("derived__")}
    pipe = next(b for b in R.TENSOR_PATHS["hmma"]["shown_by"] if b in chip_metrics(chip))
    m[pipe + ".avg.pct_of_peak_sustained_active"] = 40.0
    m[pipe + ".avg.pct_of_peak_sustained_elapsed"] = 40.0
    res = R.evaluate(m, CHIP_ARCH[chip])["flops_tensor"]
    if res.provenance and res.provenance.startswith("estimated"):
        assert res.value > 0  # sm_80/sm_90: the labelled pipe-activity estimate
        return
    assert math.isnan(res.value) and res.provenance is None
    assert res.reason and pipe in res.reason and "no tensor FLOP counter" in res.reason


@pytest.mark.parametrize("chip", [c for c in CHIPS if c not in ("tu116", "tu117")])
def test_tensor_work_with_zero_flop_counters_is_null_with_reason(chip):
    """The FLOP counters are there but read 0 while HMMA instructions ran (and no FP16 FMA
    explains the HMMA-pipe activity): null with reason."""
    m = _zero_launch(chip)
    inst = next(b for b in ("sm__inst_executed_pipe_tensor_op_hmma", "sm__inst_executed_pipe_tensor_subpipe_hmma")
                if b in chip_metrics(chip))
    m[inst + ".sum"] = 1e6
    res = R.evaluate(m, CHIP_ARCH[chip])["flops_tensor"]
    assert math.isnan(res.value) and res.reason and inst in res.reason and "reads 0" in res.reason


@pytest.mark.parametrize("chip", ["ga100", "gh100", "tu104", "ga102", "gb202"])
def test_integer_mma_and_hfma2_keep_tensor_flops_zero(chip):
    """IMMA only (integer: no FLOPs), or HFMA2.MMA counted under the HMMA pipe: 0 is right."""
    m = _zero_launch(chip)
    imma = "sm__pipe_tensor_op_imma_cycles_active" if chip != "gb202" else "sm__pipe_tensor_subpipe_imma_cycles_active"
    assert imma in chip_metrics(chip)
    m[imma + ".avg.pct_of_peak_sustained_active"] = 30.0
    m["sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"] = 30.0
    assert R.evaluate(m, CHIP_ARCH[chip])["flops_tensor"].value == 0.0
    m = _zero_launch(chip)
    hmma = R.TENSOR_PATHS["hmma"]["shown_by"][0 if chip != "gb202" else 1]
    m[hmma + ".avg.pct_of_peak_sustained_active"] = 60.0
    m["smsp__sass_thread_inst_executed_op_hfma_pred_on.sum.per_cycle_elapsed"] = 100.0
    assert R.evaluate(m, CHIP_ARCH[chip])["flops_tensor"].value == 0.0


@pytest.mark.parametrize("quantity,counter", [
    ("flops_fp32", "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"),
    ("flops_fp16", "smsp__sass_thread_inst_executed_op_hfma_pred_on.sum"),
    ("flops_fp64", "smsp__sass_thread_inst_executed_op_dfma_pred_on.sum"),
    ("bytes_dram", ("dram__bytes_read.sum", "dram__bytes_op_read.sum")),
    ("bytes_l2", "lts__t_sectors_op_read.sum"),
    ("bytes_l1", "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"),
    ("bytes_smem", "smsp__inst_executed_op_shared_ld.sum"),
])
@pytest.mark.parametrize("chip", ["tu104", "ga102", "gh100", "gb202"])
def test_work_shown_but_recipe_reads_zero_is_null_with_reason(chip, quantity, counter):
    options = (counter,) if isinstance(counter, str) else counter
    counter = next((c for c in options if on_chip(c, chip)), None)
    assert counter, f"none of {options} is a {chip} metric"
    m = _zero_launch(chip)
    before = R.evaluate(m, CHIP_ARCH[chip])[quantity]
    assert before.value == 0.0 and before.reason is None  # no work shown: 0 is the answer
    m[counter] = 4096.0
    res = R.evaluate(m, CHIP_ARCH[chip])[quantity]
    assert math.isnan(res.value) and res.provenance is None and counter in res.reason


def test_suffix_model_matches_real_reports():
    """The suffix model (README) against every metric name of the real reports whose base
    is in its chip's list: each must split into base + a suffix of the base's type."""
    ncu_report = pytest.importorskip("ncu_report")
    from report_corpus import report_paths, chip_of
    bad = []
    for path in report_paths():
        rep = ncu_report.load_report(str(path))
        for ri in range(rep.num_ranges()):
            rng = rep.range_by_idx(ri)
            for ai in range(rng.num_actions()):
                act = rng.action_by_idx(ai)
                chip = chip_of(act)
                if chip is None:
                    continue
                for n in act.metric_names():
                    hit = split(n, chip)
                    if hit and not on_chip(n, chip):
                        bad.append(f"{path.name}: {n}")
    assert not bad, bad[:20]


def test_public_reports_are_found_beside_the_checkout():
    """The corpus finds ../shared relative to the checkout (CI lays it there) and says so when
    it is missing, rather than losing the foreign reports without a word."""
    import report_corpus
    if report_corpus.PUBLIC_MISSING:
        pytest.skip(report_corpus.PUBLIC_MISSING)
    assert report_corpus.PUBLIC.resolve().parent.parent == report_corpus.ROOT.parent.resolve() \
        or os.environ.get("FLASHPROF_PUBLIC_REPORTS")
    assert sum(p.parent == report_corpus.PUBLIC for p in report_corpus.report_paths()) >= 8
