"""FA2 as the series measured it (the fork's kernel) built for sm_90 and profiled beside
PyTorch's FA2 and series kernels (issue 31): reports, SASS and the model's comparison.

Expected values come from the raw Nsight Compute metrics (ncu_report, inside the test), the
SASS text and the ptxas logs, not from what fa2_official prints."""
import json
import re

import pytest

from conftest import raw_metrics

from flashprof.analysis.gap import fa2_official as fo
from flashprof.analysis.gap.controls import parse
from flashprof.analysis.gap.data import REPO
from flashprof.analysis.gap.scheduler import flop_per_warp

GPU = next((g for g in ("h200", "h100") if fo.folder(g).is_dir() and any(fo.folder(g).glob("*.ncu-rep"))), None)
pytestmark = pytest.mark.skipif(GPU is None, reason="no reports/<gpu>/series/fa2_official in this checkout")


def _raw(path, name):
    return raw_metrics(path)[name]


def test_every_report_has_a_sidecar_a_passed_gate_and_the_series_shape():
    reps = sorted(fo.folder(GPU).glob("*.ncu-rep"))
    names = {p.name for p in reps}
    assert {"ref.ncu-rep", "series_targets-fa2_official.ncu-rep", "series_targets-fa2_official_bn32.ncu-rep"} <= names
    for p in reps:
        side = json.loads(p.with_suffix(".json").read_text())
        assert side["shape"] == {"batch": 16, "seq": 4096, "heads": 16, "d_head": 128}
        assert side["correctness"]["ok"] is True


def test_the_fork_kernel_ran_its_own_tile_and_function():
    """The report's launch is the fork's flash_fwd_kernel at the traits the build asked for: grid
    (S / 128, B, H) x 128 threads, its dynamic shared memory (128 + 2 B_c) x 128 x 2 bytes."""
    for name, bn in fo.OFFICIAL.items():
        p = fo.folder(GPU) / f"series_targets-{name}.ncu-rep"
        assert _raw(p, "launch__grid_size") == 4096 // 128 * 16 * 16
        assert _raw(p, "launch__block_size") == 128
        assert _raw(p, "launch__shared_mem_per_block_dynamic") == (128 + 2 * bn) * 128 * 2


@pytest.fixture(scope="module")
def result():
    path = REPO / "reports" / "gap" / f"fa2_official_{GPU}.json"
    if not path.is_file():
        pytest.skip(f"no reports/gap/fa2_official_{GPU}.json")
    return json.loads(path.read_text())


def test_measured_ratios_are_cycles_over_cycles_from_the_raw_metric(result):
    f = fo.folder(GPU)
    cyc = {n: _raw(f / ("ref.ncu-rep" if n == "ref" else f"series_targets-{fn}.ncu-rep"), "sm__cycles_elapsed.avg")
           for n, fn in (("ref", "ref"), ("fa2_official", "fa2_official"), ("16_A100", "k16_A100"))}
    rows = {r["name"]: r for r in result["rows"]}
    for n, c in cyc.items():
        assert rows[n]["meas_cycles"] == pytest.approx(c, rel=1e-12)
        assert rows[n]["meas_pct_of_fa2_official"] == pytest.approx(100 * cyc["fa2_official"] / c, rel=1e-9)
        assert rows[n]["meas_pct_of_ref"] == pytest.approx(100 * cyc["ref"] / c, rel=1e-9)
        assert rows[n]["cycles_error_pct"] == pytest.approx(100 * (rows[n]["pred_cycles"] / c - 1), rel=1e-9)


def test_imported_sass_is_the_fork_kernel_with_its_ptxas_registers_and_tile_work():
    """Header registers = the ptxas log's; the loop does one B_r x B_c x 128 tile's two GEMMs
    per pass (per warp: 4 B_r B_c 128 / 4 warps FLOP in HMMA)."""
    from flashprof.analysis.gap.loops import series_loop

    for name, bn in fo.OFFICIAL.items():
        path = REPO / "reports" / "sass" / "series" / GPU / fo.FOLDER / f"{name}_sm_90.sass"
        text = path.read_text()
        fn = next(iter(parse(text)))
        assert fn.startswith("_ZN5flash16flash_fwd_kernelI23Flash_fwd_kernel_traitsILi128ELi128ELi%dELi4E" % bn)
        ptxas = (fo.folder(GPU) / "sass" / f"{name}_sm_90.ptxas").read_text()
        regs = int(re.search(r"Used (\d+) registers", ptxas).group(1))
        assert f"# registers: {regs}" in text
        code = series_loop("ref", f"{GPU}/{fo.FOLDER}/{name}_sm_90")
        assert sum(flop_per_warp(i) for i in code.body) == pytest.approx(4 * 128 * bn * 128 / 4)


def test_the_a100_absolute_errors_are_the_rows_own_tflops_against_published_pct_times_fa2(result):
    """Each A100 series row's throughput error, worked from issue_model.json's rows and the
    published FA2 TFLOP/s (published.json), not from a100_context."""
    rows = [r for r in json.loads((REPO / "reports" / "gap" / "issue_model.json").read_text())
            if r.get("kind") == "row" and r.get("gpu_key") == "a100_80gb" and r.get("binary") == "series"]
    pub = json.loads((REPO / "flashprof" / "analysis" / "published.json").read_text()) \
        if (REPO / "flashprof" / "analysis" / "published.json").is_file() else None
    fa2 = result["published"]["fa2_published_tflops"]
    if pub is not None:
        assert fa2 == next(g["reference_tflops"]["seq_4096"] for g in pub["gpus"].values() if g.get("gpu_key") == "a100_80gb")
    assert fa2 == 186.4  # series-published.md: FA2 186.4 TFLOP/s at S = 4096 on the A100
    got = result["published"]["kernels"]
    for r in rows:
        pct = 100.0 if r["target"] == "ref" else r["published_pct"]
        assert got[r["target"]]["tflops_error_pct"] == pytest.approx(100 * (r["pred_tflops"] / (fa2 * pct / 100) - 1))
    assert len(got) == 17
