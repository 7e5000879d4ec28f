"""`flashprof report`: the self-contained HTML page and the data it embeds.

Expected values come from elsewhere than the page code: the summary JSON that `flashprof
summary --format json` prints (run here as its own process), raw metrics of the long frame
(gpu__time_duration.sum, the per-issue stall ratios) and the raw per-PC sample counts of
``load_source_frame``. The browser test is tests/test_html_report_browser.py.
"""
from __future__ import annotations

import functools
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

if os.environ.get("CI", "").lower() != "true":  # under CI a missing dependency fails at import
    pytest.importorskip("plotly")

ROOT = Path(__file__).resolve().parents[1]
H200 = ROOT / "reports" / "h200"
from report_corpus import PUBLIC  # noqa: E402
USER_TARGET = "triton_attention-attention"
BLOB = re.compile(r"<script id='flashprof-data' type='application/json'>(.*?)</script>", re.S)


def run(*args, **kw) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run([sys.executable, "-m", "flashprof", *map(str, args)], capture_output=True, text=True,
                          cwd=ROOT, env=env, **kw)


def blob(page: Path) -> dict:
    m = BLOB.search(page.read_text())
    assert m, "the page carries no data blob"
    return json.loads(m.group(1).replace("<\\/", "</"))


def summary_json(folder: Path) -> list[dict]:
    r = run("summary", folder, "--format", "json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


@pytest.fixture(scope="module")
def h200_page(tmp_path_factory) -> Path:
    if not any(H200.glob("*.ncu-rep")):
        pytest.skip("no shipped reports in reports/h200")
    out = tmp_path_factory.mktemp("page") / "h200.html"
    r = run("report", H200, "--out", out)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("report: ") and str(out) in r.stdout
    return out


def close(a, b, rel=1e-3) -> bool:
    if a is None or b is None:
        return a is None and b is None
    return math.isclose(float(a), float(b), rel_tol=rel, abs_tol=1e-12)


def test_embedded_summary_is_flashprof_summary_json(h200_page):
    data = blob(h200_page)
    assert data["summary"] == summary_json(H200)


def test_durations_dominant_and_stalls_match_raw_metrics(h200_page):
    from flashprof.analysis.report.parse import load_frame
    frame = load_frame(sorted(H200.glob("*.ncu-rep")))
    data = blob(h200_page)
    launches = {x["sid"]: x for x in data["launches"]}
    dur = frame[frame["metric"] == "gpu__time_duration.sum"]
    assert len(launches) == len(dur)
    longest = {}
    for rec in dur.to_dict("records"):
        sid = f"{rec['report']}#{rec['launch']}"
        assert close(launches[sid]["duration_ns"], rec["value"], 1e-5)
        if rec["report"] not in longest or rec["value"] > longest[rec["report"]][1]:
            longest[rec["report"]] = (sid, rec["value"])
    assert {s for s, x in launches.items() if x["dominant"]} == {s for s, _ in longest.values()}
    ratio = frame[frame["metric"].str.match(r"smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$")]
    checked = 0
    for rec in ratio.to_dict("records"):
        reason = rec["metric"][len("smsp__average_warps_issue_stalled_"):-len("_per_issue_active.ratio")]
        bars = data["stalls"][f"{rec['report']}#{rec['launch']}"]
        if reason in bars["reasons"]:
            assert close(bars["per_issue"][bars["reasons"].index(reason)], rec["value"], 1e-3)
            checked += 1
    assert checked > 100


def test_roofline_one_trace_per_launch_with_provenance_in_hover(h200_page):
    data = blob(h200_page)
    recs = {f"{r['report']}#{r['launch']}": r for r in data["summary"]}
    # every launch with a FLOP rate, but those under 1 % of their report's time (fill kernels)
    on_chart = {s for s, r in recs.items() if r["flops_kind"] and r["tflops"] and r["time_share"] >= 0.01}
    off = {o["sid"] for o in data["roofline"]["off_chart"]}
    assert {s for s, r in recs.items() if r["flops_kind"] and r["tflops"] and r["time_share"] < 0.01} <= off
    assert "flex_attention-attention#0" in off  # the 1.8 us fill kernel no longer gets a whole FP16 chart
    seen = []
    for chart in data["roofline"]["charts"]:
        traces = [t for t in chart["figure"]["data"] if (t.get("meta") or {}).get("role") == "launch"]
        assert [t["meta"]["sid"] for t in traces] == chart["launches"]
        assert [t["legendrank"] for t in traces] == sorted(t["legendrank"] for t in traces)  # legend = trace order
        assert chart["launches"] == [x["sid"] for x in data["launches"] if x["sid"] in chart["launches"]]  # series order
        for t in traces:
            r = recs[t["meta"]["sid"]]
            assert r["flops_kind"] == chart["kind"]
            assert all(close(y, r["tflops"], 1e-3) for y in t["y"])  # TFLOP/s on the y axis
            ais = sorted(v for v in (r["ai_l1"], r["ai_l2"], r["ai_dram"], r["ai_smem"]) if v)
            assert all(close(x, a, 1e-3) for x, a in zip(t["x"], ais))
            for text in t["text"]:
                assert r["provenance"]["tflops"] in text and "GHz" in text and "FLOP/B" in text
                assert "binding roof: " in text  # the roofline names the roof that binds this launch
        seen += chart["launches"]
    assert sorted(seen) == sorted(on_chart)
    tensor = [c for c in data["roofline"]["charts"] if c["kind"] == "tensor"]
    assert tensor and {m["roof"] for m in tensor[0]["roofs"]["measured"]} >= {"wgmma fp16", "DRAM"}


def _hottest(path: Path, launch: int) -> tuple[str, int]:
    from flashprof.analysis.report.parse import load_source_frame
    src = load_source_frame(path, launch)
    cols = [c for c in src.columns if c.startswith("stall_") and not c.endswith("_not_issued") and c != "stall_selected"]
    total = src[cols].sum(axis=1)
    i = int(total.idxmax())
    return str(src.loc[i, "sass"]), int(total[i])


def test_source_view_hottest_first_and_grouped_by_line(h200_page):
    data = blob(h200_page)
    for sid in ("kernel7#0", f"{USER_TARGET}#0"):
        view = data["sources"][sid]
        sass, n = _hottest(H200 / f"{sid.split('#')[0]}.ncu-rep", 0)
        lines = [ln for g in view["groups"] for ln in g["lines"]]
        top = max(lines, key=lambda ln: ln[2])
        assert (top[1], top[2]) == (sass, n)
        sums = [g["samples"] for g in view["groups"]]
        assert sums == sorted(sums, reverse=True)
        for g in view["groups"]:
            assert g["samples"] == sum(ln[2] for ln in g["lines"])
            assert [ln[2] for ln in g["lines"]] == sorted((ln[2] for ln in g["lines"]), reverse=True)
    # the user's Triton target has line info: its hottest groups sit under the .py file
    assert data["sources"][f"{USER_TARGET}#0"]["groups"][0]["loc"].split(":")[0].endswith(".py")


def test_header_and_self_contained(h200_page):
    text = h200_page.read_text()
    assert not any(tag in text for tag in ("<script src", "<link", "<img"))
    assert text.count("<script type='text/javascript'>") == 1  # plotly inlined once
    assert h200_page.stat().st_size < 8e6
    data = blob(h200_page)
    side = json.loads((H200 / "kernel7.json").read_text())
    hdr = {h["report"]: h for h in data["reports"]}["kernel7"]
    assert (hdr["driver"], hdr["ncu_version"]) == (side["gpu"]["driver"], side["ncu"]["version"])
    assert hdr["shape"] == ["B{batch} H{heads} S{seq} d{d_head}".format(**side["shape"])]


def test_compare_is_summary_compare(h200_page):
    data = blob(h200_page)
    r = run("compare", H200 / "kernel6.ncu-rep", H200 / "kernel7.ncu-rep", "--format", "json")
    assert r.returncode == 0, r.stderr
    want = json.loads(r.stdout)
    got = data["compare"]["kernel6|kernel7"]["pairs"]
    assert [p["regressions"] for p in got] == [p["regressions"] for p in want]
    rows = {row[0]: row for row in got[0]["rows"]}
    for w in want[0]["rows"]:
        assert close(rows[w["field"]][1], w["a"], 1e-3) and close(rows[w["field"]][2], w["b"], 1e-3)


def test_missing_quantities_and_hints_for_foreign_reports(tmp_path):
    one = PUBLIC / "AveryClapp__ESMM-Research__profile_output.ncu-rep"
    if not one.is_file():
        pytest.skip(f"{one} absent")
    folder = tmp_path / "foreign"
    folder.mkdir()
    (folder / one.name).symlink_to(one)
    out = tmp_path / "page.html"
    r = run("report", folder, "--out", out)
    assert r.returncode == 0, r.stderr
    data = blob(out)
    assert data["summary"] == summary_json(folder)
    hdr = data["reports"][0]
    recs = data["summary"]
    lost = sorted({q for rec in recs for q in rec["missing"]})
    from flashprof.analysis.metrics import recipes
    assert sorted(hdr["missing"]) == sorted(recipes.LABELS[q] for q in lost)
    for q in lost:
        assert recipes.COLLECT[q] in hdr["collect_hint"]
    assert hdr["driver"] is None and not hdr["sidecar"]  # no sidecar: said, not invented
    assert data["roofline"]["charts"] and all(c["kind"] == "fp32" for c in data["roofline"]["charts"])


@pytest.mark.slow
def test_public_reports_page(tmp_path):
    if not PUBLIC.is_dir():
        pytest.skip(f"{PUBLIC} absent")
    out = tmp_path / "public.html"
    r = run("report", PUBLIC, "--out", out, timeout=600)
    assert r.returncode == 0, r.stderr
    assert out.stat().st_size < 8e6
    data = blob(out)
    assert data["summary"] == summary_json(PUBLIC)
    assert len(data["launches"]) == len(data["summary"])
    assert len({c["gpu"] for c in data["roofline"]["charts"]}) >= 3


def test_bad_input_one_line(tmp_path):
    r = run("report", tmp_path / "nope")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and r.stderr.startswith("report: error:")
    empty = tmp_path / "empty"
    empty.mkdir()
    r = run("report", empty)
    assert r.returncode == 2 and "holds no" in r.stderr and "Traceback" not in r.stderr


def test_default_output_beside_the_figures():
    from flashprof.analysis.page.command import out_path
    from flashprof.kernels.cli import FlashprofError
    assert out_path(H200, None) == ROOT / "figures" / "report.html"
    assert out_path(PUBLIC, None) == ROOT / "figures" / PUBLIC.name / "report.html"
    with pytest.raises(FlashprofError):
        out_path(PUBLIC, ROOT / "figures" / "report.html")  # figures/ holds the shipped reports' files only


def test_verdict_first_from_raw_metrics(h200_page):
    """The first section names, per report, its longest launch, its speed-of-light bound and
    its two largest stalls, each recomputed here from the raw metrics of the long frame."""
    from flashprof.analysis.report.parse import load_frame
    frame = load_frame(sorted(H200.glob("*.ncu-rep")))
    text = h200_page.read_text()
    body = text[text.index("<body>"):]
    assert body.index("id=verdict") < body.index("id=summary") < body.index("id=reports")
    assert body.index("id=launch") < body.index("id=reports") and "<section id=reports><details>" in body
    data = blob(h200_page)
    raw: dict = {}
    for rec in frame.to_dict("records"):
        raw.setdefault((rec["report"], rec["launch"]), {})[rec["metric"]] = rec["value"]
    longest = {}
    for (report, launch), m in raw.items():
        d = m["gpu__time_duration.sum"]
        if report not in longest or d > longest[report][1]:
            longest[report] = (f"{report}#{launch}", d)
    verdict = {v["report"]: v for v in data["verdict"]}
    assert {r: v["sid"] for r, v in verdict.items()} == {r: s for r, (s, _d) in longest.items()}
    pat = re.compile(r"smsp__average_warps_issue_stalled_(.*)_per_issue_active\.ratio$")
    summary = {f"{r['report']}#{r['launch']}": r for r in summary_json(H200)}
    for report, v in verdict.items():
        m = raw[(report, int(v["sid"].split("#")[1]))]
        c = m["sm__throughput.avg.pct_of_peak_sustained_elapsed"]
        mem = m["gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"]
        assert v["sol_bound"] == ("latency" if max(c, mem) < 60 else "compute" if c >= mem else "memory")
        assert close(v["compute_pct"], c) and close(v["memory_pct"], mem)
        stalls = {pat.match(k).group(1): val for k, val in m.items() if pat.match(k) and "selected" not in k}
        top = sorted(stalls, key=lambda k: -stalls[k])[:2]
        assert [k for k, _ in v["stalls"]] == top, report
        assert close(v["duration_ns"], m["gpu__time_duration.sum"], 1e-9)
        want_fa2 = summary[v["sid"]]["pct_of_fa2"]
        assert v["pct_of_fa2"] == want_fa2  # dominant launches: the summary's value
    assert verdict["kernel1"]["sol_bound"] == "memory" and verdict["kernel1"]["roof"] == "shared memory"
    # a fill kernel of the FlexAttention report is not an attention launch: no % of FA2 anywhere on the page
    flex_fill = next(x for x in data["launches"] if x["sid"] == "flex_attention-attention#0")
    # the summary has none for it (null with a reason), and the page shows none: FA2's time over this
    # 1.8 us launch would read 331,675 %
    assert summary["flex_attention-attention#0"]["pct_of_fa2"] is None
    row = re.search(r"<tr data-i='\d+' data-sid='flex_attention-attention#0'[^>]*>(.*?)</tr>", body, re.S).group(1)
    assert "331,6" not in row and "3.32e+05" not in row
    assert not flex_fill["dominant"]


def test_series_order_and_stall_overview_by_size(h200_page):
    data = blob(h200_page)
    reports = list(dict.fromkeys(x["report"] for x in data["launches"]))
    series = [f"kernel{i}" for i in range(1, 8)] + ["kernel7mma", "ref", "cudnn"]
    assert reports[:10] == series and sorted(reports[10:]) == reports[10:]
    colors = [next(x["color"] for x in data["launches"] if x["report"] == r) for r in series]
    assert len(set(colors)) == 10  # one distinct colour per series kernel and anchor
    summary = summary_json(H200)
    big = [r for r in summary if r["time_share"] >= 0.01]
    fig = data["overview"]["stalls"]
    traces = [t for t in fig["data"] if t["meta"]["role"] == "reason"]
    assert len(traces[0]["y"]) == len(big)  # the 1.8 us fill kernels are not on the chart
    total = {}
    for r in big:
        for k, v in r["stalls"].items():
            if v is not None:
                total[k] = total.get(k, 0.0) + v
    want = sorted((k for k in total if k != "selected"), key=lambda k: -total[k])
    got = [t["meta"]["reason"] for t in traces if t["meta"]["reason"] != "selected"]
    assert got[:5] == want[:5]
    assert traces[-1]["meta"]["reason"] == "selected"  # the issuing warp last: not a stall


def test_summary_table_key_columns_carry_the_summary_numbers(h200_page):
    text = h200_page.read_text()
    table = text[text.index("<table id=summary-table"):]
    table = table[:table.index("</table>")]
    summary = {f"{r['report']}#{r['launch']}": r for r in summary_json(H200)}
    rows = re.findall(r"<tr data-i='\d+' data-sid='([^']+)'[^>]*>(.*?)</tr>", table, re.S)
    assert sorted(s for s, _ in rows) == sorted(summary)
    for sid, cells in rows:
        vals = re.findall(r"<td class='num (?:key|x)' data-v='([^']*)'>", cells)
        assert float(vals[0]) == summary[sid]["duration_ns"]  # the sort key is the exact summary value
        assert float(vals[1]) == pytest.approx(100 * summary[sid]["time_share"])
    heads = re.findall(r"<th class=(key|x) title='[^']*'>([^<]*)</th>", table)
    keys = [h for k, h in heads if k == "key"]
    assert keys[:5] == ["", "launch", "duration", "bound by", "top stall"]
    assert {"% of FA2", "tensor pipe %", "FP32 pipe %"} <= set(keys) and "AI L1" not in keys
    # '% of peak' and '% measured' agree on the H200 (same clock): one column, not two
    r = summary["kernel7#0"]
    assert abs(100 * r["tflops"] / r["peak_tflops"] - r["pct_of_measured_peak"]) < 0.01 * r["pct_of_measured_peak"]
    assert "% measured" not in [h for _k, h in heads]


def test_compare_leads_with_speedup_and_warns(h200_page):
    data = blob(h200_page)
    summary = {f"{r['report']}#{r['launch']}": r for r in summary_json(H200)}
    p = data["compare"]["kernel1|kernel7"]["pairs"][0]
    want = summary["kernel1#0"]["duration_ns"] / summary["kernel7#0"]["duration_ns"]
    assert close(p["speedup"], want, 1e-3) and p["speedup"] > 6  # kernel 7 is 6.4x faster than kernel 1
    # the wgmma kernel 7 is another function and ran at 1.70 GHz against kernel 1's 1.79
    assert sorted(w.split(":")[0] for w in p["warnings"]) == ["different SM clocks", "different kernels"]
    q = data["compare"]["kernel1|kernel6"]["pairs"][0]
    assert q["warnings"] == []  # same GPU, clock within 2 %, same function, same shape
    w = data["compare"]["kernel7|cudnn"]["pairs"][0]["warnings"]
    assert any(x.startswith("different kernels") for x in w)
    assert data["compare_default"] == ["kernel6", "kernel7"]
    assert data["compare_units"]["duration_ns"] == ["duration", "\u00b5s", 1e-3]
    assert data["compare_units"]["stalls.wait"][1] == "warps/issue"
    from flashprof.analysis.page import data as D
    a = {"report": "a", "launch": 0, "gpu": "NVIDIA A100", "sm_clock_hz": 1.41e9, "kernel": "k", "duration_ns": 10.0}
    b = dict(a, report="b", gpu="NVIDIA GeForce RTX 3090", sm_clock_hz=1.70e9, kernel="gemm", duration_ns=40.0)
    assert [x.split(":")[0] for x in D.pair_warnings(a, b)] == ["different GPUs", "different SM clocks", "different kernels"]
    assert D.speedup(a, b) == 0.25
    c = dict(a, report="c", kernel="gemm")
    # a foreign folder: the first pair on one GPU with one function, not the first two reports
    recs = [dict(b, dominant=True), dict(a, dominant=True), dict(c, dominant=True)]
    assert D.default_pair(recs) == ["a", "c"]  # one GPU, though not one function
    assert D.default_pair(recs + [dict(a, report="d", dominant=True)]) == ["a", "d"]  # one GPU and one function


def test_source_view_paths_relative_no_build_paths(h200_page):
    from flashprof.analysis.report.parse import load_source_frame
    text = h200_page.read_text()
    data = blob(h200_page)
    files = set()
    for sid in data["sources"]:
        report, launch = sid.rsplit("#", 1)
        src = load_source_frame(H200 / f"{report}.ncu-rep", int(launch))
        files |= {f for f in src["file"].dropna().unique() if f.startswith("/")}
    assert files and any(f.endswith("csrc/mma.cuh") for f in files)
    for f in files:
        # no absolute build path anywhere in the page (`not (... in ...)`: pytest's diff of a
        # failed `not in` over a 6 MB page would run for hours)
        assert not (f in text), f
    locs = {g["loc"].rsplit(":", 1)[0] for v in data["sources"].values() for g in v["groups"] if g["file"]}
    assert "csrc/mma.cuh" in locs and not any(loc.startswith("/") for loc in locs)
    v = data["sources"]["kernel1#0"]
    assert v["max_line"] == max(ln[2] for g in v["groups"] for ln in g["lines"])


@pytest.fixture(scope="module")
def foreign_page(tmp_path_factory):
    """Two public reports of two GPUs: CUTLASS launches named 'Kernel', a GEMM practice report."""
    names = ["panjd123__cutlass__384.ncu-rep", "AshunFeiyu__Cuda_Gemm_Practice__gemm_v9_alter.ncu-rep"]
    if not all((PUBLIC / n).is_file() for n in names):
        pytest.skip(f"{PUBLIC} absent")
    folder = tmp_path_factory.mktemp("foreign2")
    for n in names:
        (folder / n).symlink_to(PUBLIC / n)
    out = folder.parent / "foreign2.html"
    r = run("report", folder, "--out", out)
    assert r.returncode == 0, r.stderr
    return folder, out


def test_foreign_labels_whole_and_demangled_functions(foreign_page):
    from flashprof.analysis.report.parse import load_frame
    folder, out = foreign_page
    data = blob(out)
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the foreign reports lack sections: said on the page, not needed here
        frame = load_frame(sorted(folder.glob("*.ncu-rep")))
    full = {f"{r}#{n}": k for r, n, k in frame.drop_duplicates(["report", "launch"])[["report", "launch", "kernel_full"]]
            .itertuples(index=False)}
    for x in data["launches"]:
        stem_tail = "/".join(x["report"].split("__")[-2:])
        assert x["label"].startswith(stem_tail) and "\u2026" not in x["label"]  # never cut
        if x["kernel"].startswith("Kernel<"):  # CUTLASS: the demangled name tells the launches apart
            inner = full[x["sid"]].split("<", 2)[1].split("::")[-1]  # e.g. B2bGemm, Gemm
            assert x["function"].startswith(f"cutlass::Kernel<{inner}<"), (x["function"], full[x["sid"]])
    assert len({x["function"] for x in data["launches"] if x["kernel"].startswith("Kernel<")}) >= 2
    # two reports on two GPUs: the compare view says the pair is not like for like
    pairs = data["compare"]
    warn = next(iter(pairs.values()))["pairs"][0]["warnings"]
    assert any(w.startswith("different GPUs") for w in warn) and any(w.startswith("different kernels") for w in warn)
    assert f"{data['summary'][0]['report']}" in out.read_text()
    assert data["summary"] == summary_json(folder)


def test_story_gap_progression_and_mix_from_their_files(h200_page):
    import csv
    data = blob(h200_page)
    story = data["story"]
    rows = [r for r in json.loads((ROOT / "reports" / "gap" / "issue_model.json").read_text()) if r["kind"] == "row"]
    fig = story["gap"]["figure"]
    by_gpu = {}
    for t in fig["data"]:
        by_gpu.setdefault(t["meta"]["gpu_key"], {})[t["meta"]["role"]] = t
    assert set(by_gpu) == {"a100_80gb", "rtx3090", "h200_sxm"}
    for key, tr in by_gpu.items():
        binary = "series" if any(r["gpu_key"] == key and r["binary"] == "series" for r in rows) else "flashprof"
        mine = {"FA2" if r["target"] == "ref" else ("K" + r["target"]) if r["target"].isdigit() else r["target"]: r for r in rows
                if r["gpu_key"] == key and r["binary"] == binary and r["seq"] == 4096}
        assert tr["predicted"]["x"] == tr["observed"]["x"] and set(tr["predicted"]["x"]) == set(mine)
        for x, y, sd, obs in zip(tr["predicted"]["x"], tr["predicted"]["y"], tr["predicted"]["error_y"]["array"], tr["observed"]["y"]):
            assert close(y, mine[x]["pred_pct_of_fa2"]) and close(sd, mine[x]["pred_pct_sd"])
            assert close(obs, mine[x]["observed_pct"]) if mine[x]["observed_pct"] is not None else obs is None
    # kernels over S: bench.csv as written
    with open(H200 / "bench.csv", newline="") as fh:
        bench = list(csv.DictReader(fh))
    traces = {t["meta"]["target"]: t for t in story["progression"]["figure"]["data"]}
    # series order: kernels 1-7, kernel 7's mma.sync form (7mma) right after 7 when benched, then the references
    order = [t for t in ["1", "2", "3", "4", "5", "6", "7", "7mma", "ref", "cudnn"] if t in {r["target"] for r in bench}]
    assert len(order) >= 9 and list(traces)[:len(order)] == order
    for row in bench:
        t = traces[row["target"]]
        i = t["x"].index(int(row["seq"]))
        assert close(t["y"][i], float(row["tflops"]))
    # SASS mix: the summary's inst_mix of each dominant launch
    summary = {f"{r['report']}#{r['launch']}": r for r in summary_json(H200)}
    mix = story["mix"]
    for j, op in enumerate(mix["opcodes"]):
        for i, sid in enumerate(mix["sids"]):
            assert close(mix["counts"][i][j], summary[sid]["inst_mix"][op])
    assert mix["sids"][:2] == ["kernel1#0", "kernel2#0"] and all(summary[s]["dominant"] for s in mix["sids"])


def test_resources_and_memory_from_raw_metrics_and_summary(h200_page):
    from flashprof.analysis.report.parse import load_frame
    data = blob(h200_page)
    frame = load_frame(sorted(H200.glob("*.ncu-rep")))
    raw: dict = {}
    for rec in frame.to_dict("records"):
        raw.setdefault(f"{rec['report']}#{rec['launch']}", {})[rec["metric"]] = rec["value"]
    for x in data["launches"]:
        m, res = raw[x["sid"]], x["resources"]
        assert close(res["registers_per_thread"], m["launch__registers_per_thread"])
        assert close(res["smem_per_block"], m["launch__shared_mem_per_block"])
        assert close(res["achieved_occupancy_pct"], m["sm__warps_active.avg.pct_of_peak_sustained_active"])
        assert close(res["theoretical_occupancy_pct"], m["sm__maximum_warps_per_active_cycle_pct"])
        assert close(res["waves_per_sm"], m["launch__waves_per_multiprocessor"])
        limits = {k: m[f"launch__occupancy_limit_{k}"] for k in ("registers", "shared_mem", "warps", "blocks", "barriers")}
        assert res["blocks_per_sm"] == int(min(limits.values()))
    k1 = next(x for x in data["launches"] if x["sid"] == "kernel1#0")["resources"]
    assert k1["occupancy_limit"] == "registers = shared memory" and k1["blocks_per_sm"] == 2
    # memory: bytes/s at each level against its roof, from the summary's own fields
    summary = {f"{r['report']}#{r['launch']}": r for r in summary_json(H200)}
    names = {"L1": "l1", "L2": "l2", "DRAM": "dram", "shared memory": "smem"}
    checked = 0
    for sid, b in data["memory"].items():
        r = summary[sid]
        for level, pct in zip(b["levels"], b["pct"]):
            k = names[level]
            if pct is None or not r["tflops"] or not r[f"ai_{k}"]:
                continue
            # the roofline's bytes/s at that level: FLOP/s of the launch's kind / its intensity there
            want = 100 * r["tflops"] * 1e12 / r[f"ai_{k}"] / r[f"{k}_ceiling"]
            assert close(pct, want, 2e-3), (sid, level)
            checked += 1
    assert checked >= 40
    assert close(data["memory"]["kernel1#0"]["pct"][data["memory"]["kernel1#0"]["levels"].index("shared memory")], 92.3, 2e-3)


# --------------------------------------------------------------------------- issue 35: rules, source text, lacks
@functools.lru_cache(maxsize=None)
def _raw_actions(path: Path):
    """(report, its actions), loaded once per file (several tests read the same report) and
    returned together, so the report outlives the actions taken from it."""
    from flashprof.analysis.report.ncu_import import ncu_report
    try:
        report = ncu_report().load_report(str(path))
    except Exception as e:  # no usable ncu_report here
        pytest.skip(f"ncu_report cannot read {path}: {e}")
    out = []
    for r in range(report.num_ranges()):
        rng = report.range_by_idx(r)
        out += [rng.action_by_idx(j) for j in range(rng.num_actions())]
    return report, tuple(out)


def _plain_rule(text: str) -> str:
    text = re.sub(r"@section:[^:@]*:([^@]*)@", r"\1", text)
    text = re.sub(r"@url:([^:@]*):[^@]*@", r"\1", text)
    text = re.sub(r"@sass:[^:@]*:([^@]*)@", r"\1", text)
    return re.sub(r"@source:[^@]*:\d+:([^@]*)@", r"\1", text).strip()


def _expected_rules(action) -> list[tuple]:
    """(kind, title, message, speedup) most important first, from the raw rule results:
    error > warning > optimisation > info > none (MsgType 4, 3, 2, 1, 0), then a global
    estimated speed-up (largest first), a local one, none; empty messages dropped."""
    rank = {4: 0, 3: 1, 2: 2, 1: 3, 0: 4}
    names = {4: "error", 3: "warning", 2: "optimization", 1: "info", 0: "none"}
    rows = []
    for pos, d in enumerate(action.rule_results_as_dicts()):
        m = d["rule_message"]
        title, msg = m["title"].strip(), _plain_rule(m["message"])
        if not title and not msg:
            continue
        est = d.get("speedup_estimation")
        sp = est["speedup"] if est else None
        scope = 3 if sp is None else {2: 0, 1: 1}.get(int(est["type"]), 2)
        rows.append(((rank[int(m["type"])], scope, -(sp or 0.0), pos), (names[int(m["type"])], title, msg, sp)))
    return [r for _k, r in sorted(rows)]


def _check_rules(got: list[dict], action):
    want = _expected_rules(action)
    assert [(r["kind"], r["title"], r["message"]) for r in got] == [w[:3] for w in want]
    for r, w in zip(got, want):
        assert (r["speedup"] is None) == (w[3] is None)
        if w[3] is not None:
            assert close(r["speedup"], w[3], 1e-2)


def test_rules_per_launch_are_nsights_own_most_important_first(h200_page):
    data = blob(h200_page)
    text = h200_page.read_text()
    for report in ("kernel1", "kernel7", USER_TARGET):
        _r, actions = _raw_actions(H200 / f"{report}.ncu-rep")
        got = data["rules"][f"{report}#0"]
        assert got, report
        _check_rules(got, actions[0])
    k1 = data["rules"]["kernel1#0"]
    assert {"Shared Load Bank Conflicts", "Shared Store Bank Conflicts"} <= {r["title"] for r in k1}
    assert all("@section:" not in r["message"] and "@url:" not in r["message"] for r in k1)
    assert "id=launch-rules" in text and "RULES_OPEN = 3" in text  # the top three open, the rest folded


def test_rules_of_a_public_report(foreign_page):
    folder, out = foreign_page
    data = blob(out)
    name = "AshunFeiyu__Cuda_Gemm_Practice__gemm_v9_alter"
    _r, actions = _raw_actions(folder / f"{name}.ncu-rep")
    assert len(actions) == 2
    for launch, action in enumerate(actions):
        _check_rules(data["rules"].get(f"{name}#{launch}", []), action)
    assert any(data["rules"].get(f"{name}#{n}") for n in (0, 1))


def test_source_view_carries_each_lines_text(h200_page):
    data = blob(h200_page)
    text = h200_page.read_text()
    _r, actions = _raw_actions(H200 / "kernel1.ncu-rep")
    files = dict(actions[0].source_files())
    checked = 0
    for g in data["sources"]["kernel1#0"]["groups"]:
        if not g["file"]:
            continue
        raw = [f for f in files if f.endswith("/" + g["file"].split("/", 1)[-1])]
        assert len(raw) == 1, g["file"]
        line = files[raw[0]].splitlines()[g["line"] - 1]
        assert g["text"] == " ".join(line.split())[:160]
        checked += 1
    assert checked >= 10
    hot = data["sources"]["kernel1#0"]["groups"]
    # kernel 1's mma.cuh:42 (the inline mma.sync wrapper) splits by its context: QK^T's HMMAs
    # sit after the gemm_qk call line, PV's after s_to_p
    wrapper = [g for g in hot if g["loc"] == "csrc/mma.cuh:42"]
    assert len(wrapper) >= 2 and all(g["ctx"] and g["ctx"].startswith("csrc/flash_fwd.cuh:") for g in wrapper)
    assert "gemm_qk" in wrapper[0]["ctx_text"]
    assert any("s_to_p" in (g["ctx_text"] or "") for g in wrapper[1:])
    assert sum(g["samples"] for g in wrapper) == sum(g["samples"] for g in hot if g["loc"] == "csrc/mma.cuh:42")
    assert h200_page.stat().st_size < 8e6
    # the folder where kernel 1 was built (its sources' absolute paths) appears nowhere; the
    # checkout this test runs in may sit under the same path, so only the sources' folder counts
    built = {f[: f.index("kernels/csrc/")] + "kernels/" for f in files if "kernels/csrc/" in f}
    assert built and not any(b in text for b in built), f"an absolute build path of the profiling machine ({built}) is in the page"


def test_lacks_says_how_many_launches(tmp_path):
    one = PUBLIC / "2388612861__GPU-DEMO__ncu_detailed_occupancy_report.ncu-rep"  # 45 launches, one without a duration
    if not one.is_file():
        pytest.skip(f"{one} absent")
    folder = tmp_path / "demo"
    folder.mkdir()
    (folder / one.name).symlink_to(one)
    out = tmp_path / "page.html"
    r = run("report", folder, "--out", out)
    assert r.returncode == 0, r.stderr
    data = blob(out)
    recs = summary_json(folder)
    _r, actions = _raw_actions(one)
    def lacks_duration(a) -> bool:
        m = a.metric_by_name("gpu__time_duration.sum")
        v = None if m is None else m.value()
        return v is None or not math.isfinite(float(v))  # the last launch's duration is NaN
    no_duration = sum(1 for a in actions if lacks_duration(a))
    assert len(recs) == len(actions) == 45 and no_duration == 1
    from flashprof.analysis.metrics import recipes
    per = {m["quantity"]: (m["launches"], m["of"]) for m in data["reports"][0]["missing_launches"]}
    want = {}
    for rec in recs:
        for q in rec["missing"]:
            want[q] = want.get(q, 0) + 1
    assert per == {q: (n, 45) for q, n in want.items()}
    assert per["duration_ns"] == (no_duration, 45)
    assert f"{recipes.LABELS['duration_ns']}: 1 of 45 launches" in out.read_text()


def test_context_only_where_it_tells_call_sites_apart(foreign_page, h200_page):
    """A file:line under one PC-order context stays one group without a context (CUTLASS:
    everything sits under device_kernel.h's one call); one under several gets one group each."""
    for out in (foreign_page[1], h200_page):
        for sid, v in blob(out)["sources"].items():
            per: dict[str, list] = {}
            for g in v["groups"]:
                per.setdefault(g["loc"], []).append(g)
            for loc, gs in per.items():
                if len(gs) == 1:
                    assert gs[0]["ctx"] is None and gs[0]["key"] == loc, (sid, loc)
                else:
                    assert all(g["ctx"] for g in gs) and len({g["ctx"] for g in gs}) == len(gs), (sid, loc)
