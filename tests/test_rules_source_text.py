"""Nsight Compute's rule results (``parse.load_rules``) and the source text of the per-PC
frame (``load_source_frame``: ``source_text``, ``ctx_file``/``ctx_line``).

Expected values are read here, in the test process, straight from ``ncu_report``
(``rule_results_as_dicts``, ``source_files``, ``source_info``), with this file's own markup
rule, never through flashprof's extraction code."""
from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

from report_corpus import PUBLIC, PUBLIC_MISSING

ROOT = Path(__file__).resolve().parents[1]
H200 = ROOT / "reports" / "h200"
KERNEL1 = H200 / "kernel1.ncu-rep"
GEMM = PUBLIC / "AshunFeiyu__Cuda_Gemm_Practice__gemm_v9_alter.ncu-rep"  # 2 launches, rule types 0, 1, 2
CUTLASS = PUBLIC / "panjd123__cutlass__384.ncu-rep"  # imported its (CUTLASS) sources


def _actions(path: Path):
    from flashprof.analysis.report.ncu_import import ncu_report
    try:
        report = ncu_report().load_report(str(path))
    except Exception as e:  # no usable ncu_report here
        pytest.skip(f"ncu_report cannot read {path}: {e}")
    out = []
    for r in range(report.num_ranges()):
        rng = report.range_by_idx(r)
        out += [rng.action_by_idx(j) for j in range(rng.num_actions())]
    return report, out


def _plain(text: str) -> str:
    text = re.sub(r"@section:[^:@]*:([^@]*)@", r"\1", text)
    text = re.sub(r"@url:([^:@]*):[^@]*@", r"\1", text)
    text = re.sub(r"@sass:[^:@]*:([^@]*)@", r"\1", text)
    return re.sub(r"@source:[^@]*:\d+:([^@]*)@", r"\1", text)


def _need(path: Path):
    if not path.is_file():
        pytest.skip(PUBLIC_MISSING or f"{path} absent")


@pytest.mark.parametrize("path", [KERNEL1, GEMM], ids=["h200-kernel1", "public-gemm"])
def test_rules_are_ncu_reports_own(path):
    from flashprof.analysis.report.parse import load_rules
    _need(path)
    _report, actions = _actions(path)
    got = load_rules(path)
    assert len(got), "the report carries rule results"
    for launch, action in enumerate(actions):
        want = action.rule_results_as_dicts()
        mine = got[got["launch"] == launch]
        assert len(mine) == len(want)
        for (_i, row), raw in zip(mine.iterrows(), want):
            msg = raw["rule_message"]
            assert row["rule"] == raw["rule_identifier"] and row["section"] == raw["section_identifier"]
            assert row["title"] == msg["title"] and int(row["type"]) == int(msg["type"])
            assert row["message"] == _plain(msg["message"]) and "@section:" not in row["message"]
            est = raw.get("speedup_estimation")
            if est:
                assert math.isclose(row["speedup"], est["speedup"], rel_tol=1e-12)
                assert row["speedup_type"] == {1: "local", 2: "global"}.get(int(est["type"]), "unknown")
            else:
                assert row["speedup"] is None or math.isnan(row["speedup"])
            assert [f["metric"] for f in row["focus"]] == [f["name"] for f in raw.get("focus_metrics", [])]
    if path == KERNEL1:  # the texts this report is known for
        titles = set(got["title"])
        assert {"Shared Load Bank Conflicts", "Short Scoreboard Stalls"} <= titles
        assert any("Memory Workload Analysis section" in m for m in got["message"])


@pytest.mark.parametrize("path", [KERNEL1, CUTLASS], ids=["h200-kernel1", "public-cutlass"])
def test_source_text_is_the_imported_line(path):
    from flashprof.analysis.report.parse import load_source_frame
    _need(path)
    _report, actions = _actions(path)
    action = actions[0]
    files = dict(action.source_files())
    src = load_source_frame(path, 0)
    checked = 0
    for pc, f, ln, text in zip(src["pc"], src["file"], src["line"], src["source_text"]):
        info = action.source_info(int(pc))
        if info is None or not files.get(info.file_name()):
            assert text == ""
            continue
        assert (f, int(ln)) == (info.file_name(), info.line())
        rows = files[info.file_name()].splitlines()
        assert text == (rows[info.line() - 1].rstrip()[:240] if 0 < info.line() <= len(rows) else "")
        checked += 1
    assert checked > 0.5 * len(src), "most instructions have their line's text"


def test_inline_wrapper_context_splits_qk_from_pv():
    """kernel 1: mma.cuh:42 (Mma::run, the inline mma.sync wrapper) is under both gemm_qk
    and gemm_pv; ncu_report gives only the innermost file:line per PC, so the frame carries
    the nearest earlier instruction of the kernel's own file (PC order)."""
    from flashprof.analysis.report.parse import load_source_frame
    _need(KERNEL1)
    _report, actions = _actions(KERNEL1)
    action = actions[0]
    src = load_source_frame(KERNEL1, 0)
    pcs = sorted(int(p) for p in src["pc"])
    where = {pc: action.source_info(pc) for pc in pcs}
    entry = next(where[pc].file_name() for pc in pcs if where[pc] is not None)
    assert entry.endswith("flash_fwd.cuh")
    ctx, want = None, {}
    for pc in pcs:
        info = where[pc]
        if info is not None and info.file_name() == entry:
            ctx = info.line()
        want[pc] = ctx
    for pc, cf, cl in zip(src["pc"], src["ctx_file"], src["ctx_line"]):
        if want[int(pc)] is None:
            assert cf == "" and math.isnan(cl)
        else:
            assert cf == entry and int(cl) == want[int(pc)]
    text = dict(action.source_files())[entry].splitlines()
    wrapper = src[src["file"].str.endswith("mma.cuh") & (src["line"] == 42)]
    ctx_lines = set(int(v) for v in wrapper.loc[wrapper["samples"] > 0, "ctx_line"].dropna())
    calls = {ln: text[ln - 1] for ln in ctx_lines}
    assert any("gemm_qk" in t for t in calls.values()), calls  # QK^T's HMMAs follow the gemm_qk call line
    assert any("s_to_p" in t or "gemm_pv" in t for t in calls.values()), calls  # PV's follow s_to_p / gemm_pv
