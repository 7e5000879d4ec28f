"""The tensor pipe as Nsight Compute defines it: the all-ops counter, split per instruction
kind, on real reports of each kind (H200: cuBLAS DGEMM = DMMA, torch._int_mm = IMMA, an
HFMA2 loop, cuBLAS bf16 = HGMMA, kernel 1 = HMMA; A100: CUTLASS int8 B2bGemm = IMMA). The
expected kind is what each program ran; the expected numbers are the raw counters, read here
with ncu_report."""
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest

from chip_lists import CHIPS, chip_metrics
from report_corpus import PUBLIC, PUBLIC_MISSING

ROOT = Path(__file__).resolve().parents[1]
KINDS = ROOT / "tests" / "data" / "kinds"
ALL_OPS = "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"
SUB = "sm__pipe_tensor_op_{}_cycles_active.avg.pct_of_peak_sustained_active"
CASES = {  # report -> (launch, the tensor instructions the program ran)
    KINDS / "h200_imma_int8_full.ncu-rep": (0, "IMMA"),
    KINDS / "h200_hfma2_full.ncu-rep": (0, "HFMA2.MMA"),
    KINDS / "h200_bf16_full.ncu-rep": (0, "HGMMA"),
    ROOT / "reports" / "h200" / "other-kinds" / "dgemm_fp64.ncu-rep": (0, "DMMA"),
    ROOT / "reports" / "h200" / "kernel1.ncu-rep": (0, "HMMA"),
    ROOT / "reports" / "h200" / "kernel7.ncu-rep": (0, "HGMMA"),
    PUBLIC / "panjd123__cutlass__384.ncu-rep": (0, "IMMA"),
}


def _raw(path: Path, launch: int) -> dict:
    import ncu_report
    a = ncu_report.load_report(str(path)).range_by_idx(0).action_by_idx(launch)
    return {n: a.metric_by_name(n).as_double() for n in a.metric_names()
            if n.startswith(("sm__pipe_tensor", "sm__pipe_fma_cycles"))}


@pytest.fixture(scope="module")
def summary():
    paths = [p for p in CASES if p.is_file()]
    out = subprocess.run([sys.executable, "-P", "-m", "flashprof", "summary", *map(str, paths), "--format", "json"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return {(r["path"], r["launch"]): r for r in json.loads(out.stdout)}


@pytest.mark.parametrize("path", list(CASES), ids=lambda p: p.stem)
def test_tensor_pipe_is_the_all_ops_counter_with_its_split(path, summary):
    if not path.is_file():
        pytest.skip(PUBLIC_MISSING or f"{path} absent")
    launch, kind = CASES[path]
    rec = summary[(str(path.resolve()), launch)] if (str(path.resolve()), launch) in summary else \
        summary[(str(path), launch)]
    raw = _raw(path, launch)
    assert rec["tensor_pipe_pct"] == pytest.approx(raw[ALL_OPS], rel=1e-12)
    for op in ("hmma", "imma", "dmma"):
        assert rec["tensor_pipe_split"][op] == pytest.approx(raw[SUB.format(op)], rel=1e-12)
    assert rec["tensor_pipe_work"] == kind
    if kind in ("DMMA", "IMMA"):  # the old recipe (HMMA sub-counter first) read 0 here
        assert raw[SUB.format("hmma")] == 0 and rec["tensor_pipe_pct"] > 20
    assert rec["provenance"]["tensor_pipe_pct"] == "exact"


def test_integer_mma_has_no_flop_roofline_point(summary):
    for path in (KINDS / "h200_imma_int8_full.ncu-rep", PUBLIC / "panjd123__cutlass__384.ncu-rep"):
        if not path.is_file():
            continue
        rows = [r for (p, _l), r in summary.items() if Path(p).name == path.name]
        assert rows
        for r in rows:
            assert r["tensor_pipe_work"] == "IMMA"
            assert r["flops_kind"] is None and r["tflops"] is None and r["ai_l2"] is None
            assert r["provenance"]["tflops"].startswith("null: the launch's main work is integer MMA")


def test_hfma2_loop_is_not_called_hmma(summary):
    (r,) = [r for (p, _l), r in summary.items() if Path(p).name == "h200_hfma2_full.ncu-rep"]
    assert r["flops_kind"] == "fp16" and r["tensor_tflops"] == 0
    assert "HFMA2" in r["provenance"]["tensor_pipe_work"]


def test_every_chip_has_the_all_ops_counter_and_each_split_it_can_run():
    """Checked against every chip Nsight Compute 2025.3.1 lists: the tensor pipe metric is the
    all-ops one everywhere; a chip that counts an op kind's instructions on the tensor pipe also
    has a cycles counter of that kind the split reads."""
    from flashprof.analysis.metrics.recipes import PIPE_METRICS, TENSOR_SPLIT
    base = lambda n: n.split(".")[0]
    for chip in CHIPS:
        names = set(chip_metrics(chip))
        assert base(PIPE_METRICS["tensor"][0]) in names, chip
        for op, alternatives in TENSOR_SPLIT.items():
            runs = {f"sm__inst_executed_pipe_tensor_op_{op}", f"sm__inst_executed_pipe_tensor_subpipe_{op}"} & names
            if runs:
                assert {base(a) for a in alternatives} & names, (chip, op)
