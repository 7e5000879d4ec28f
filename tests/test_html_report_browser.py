"""The report page in a real browser: headless Chromium driven by selenium (system chromedriver).

`.ci/run` installs Debian's chromium + chromium-driver when they are missing. Without a
browser this test says why in one line and FAILS under CI=true; elsewhere it skips with
that line. Chromium runs with every network-reaching feature off (this machine has no
network) and a fresh profile folder.
"""
from __future__ import annotations

import json
import re
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
H200 = ROOT / "reports" / "h200"
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-dev-shm-usage", "--window-size=1600,1400")


def _no_browser(why: str):
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"no headless browser for the report page test: {why} (.ci/run installs chromium chromium-driver)")
    pytest.skip(f"no headless browser: {why}")


def _find(*names: str) -> str | None:
    for n in names:
        p = shutil.which(n) or (n if os.path.isfile(n) else None)
        if p:
            return p
    return None


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        _no_browser("the selenium package is not installed (pip install -e '.[dev]')")
    browser = _find("chromium", "chromium-browser", "google-chrome", "/usr/bin/chromium")
    chromedriver = _find("chromedriver", "/usr/bin/chromedriver", "/usr/lib/chromium/chromedriver")
    if browser is None or chromedriver is None:
        _no_browser(f"{'chromium' if browser is None else 'chromedriver'} not found on PATH")
    opts = webdriver.ChromeOptions()
    opts.binary_location = browser
    for f in FLAGS:
        opts.add_argument(f)
    opts.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    opts.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    try:
        drv = webdriver.Chrome(service=Service(executable_path=chromedriver), options=opts)
    except Exception as exc:  # a driver/browser mismatch or a browser that cannot start
        _no_browser(f"chromium did not start: {str(exc).strip().splitlines()[0][:160]}")
    drv.set_page_load_timeout(120)
    yield drv
    drv.quit()


@pytest.fixture(scope="module")
def page(tmp_path_factory) -> Path:
    pytest.importorskip("plotly")
    if not any(H200.glob("*.ncu-rep")):
        pytest.skip("no shipped reports in reports/h200")
    out = tmp_path_factory.mktemp("page") / "report.html"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run([sys.executable, "-m", "flashprof", "report", str(H200), "--out", str(out)],
                       capture_output=True, text=True, cwd=ROOT, env=env)
    assert r.returncode == 0, r.stderr
    return out


def test_page_renders_in_chromium(driver, page, tmp_path):
    from selenium.webdriver.support.ui import WebDriverWait
    driver.get(page.as_uri())
    WebDriverWait(driver, 60).until(lambda d: d.execute_script("return document.body.dataset.ready === '1'"))
    errors = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
    assert not errors, errors
    # one trace per launch on each roofline chart, as the summary's FLOP kinds place them
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    summary = json.loads(subprocess.run([sys.executable, "-m", "flashprof", "summary", str(H200), "--format", "json"],
                                        capture_output=True, text=True, cwd=ROOT, env=env, check=True).stdout)
    drawn = driver.execute_script("""
        return Array.from(document.querySelectorAll('#roofline .chart')).map(div => ({kind: div.dataset.kind,
          launches: (div.data || []).filter(t => t.meta && t.meta.role === 'launch').map(t => t.meta.sid),
          svg: div.querySelectorAll('.scatterlayer .trace').length}));""")
    want: dict[str, set] = {}
    for r in summary:
        if r["flops_kind"] and r["tflops"] and r["time_share"] >= 0.01:  # fill kernels stay off the charts
            want.setdefault(r["flops_kind"], set()).add(f"{r['report']}#{r['launch']}")
    got: dict[str, list] = {}
    for c in drawn:
        got.setdefault(c["kind"], []).extend(c["launches"])
        assert c["svg"] >= len(c["launches"])  # plotly really drew them
    assert {k: sorted(v) for k, v in got.items()} == {k: sorted(v) for k, v in want.items()}
    # the source view of the launch shown starts with its hottest line (raw per-PC samples)
    sid = driver.execute_script("return document.getElementById('launch-select').value")
    report, launch = sid.rsplit("#", 1)
    from flashprof.analysis.report.parse import load_source_frame
    src = load_source_frame(H200 / f"{report}.ncu-rep", int(launch))
    cols = [c for c in src.columns if c.startswith("stall_") and not c.endswith("_not_issued") and c != "stall_selected"]
    total = src[cols].sum(axis=1)
    hottest = str(src.loc[int(total.idxmax()), "sass"])
    assert driver.find_element("id", "hottest-sass").text == hottest
    first_line = driver.execute_script("return document.querySelector('#src-view td.sass').textContent")
    groups = driver.execute_script("return document.querySelectorAll('#src-view tr.grp').length")
    assert groups >= 1 and first_line.strip()
    # searching narrows the view to matching lines
    box = driver.find_element("id", "src-search")
    box.send_keys(hottest.split()[0])
    texts = driver.execute_script("return Array.from(document.querySelectorAll('#src-view td.sass')).map(t => t.textContent)")
    assert texts and all(hottest.split()[0].lower() in t.lower() for t in texts)
    # sorting the summary by duration puts the longest launch first
    driver.execute_script("""const th = Array.from(document.querySelectorAll('#summary-table th'))
        .find(h => h.textContent.startsWith('duration')); th.click(); th.click();""")
    first = driver.execute_script("return document.querySelector('#summary-table tbody tr').dataset.sid")
    longest = max(summary, key=lambda r: r["duration_ns"] or 0)
    assert first == f"{longest['report']}#{longest['launch']}"
    shot = tmp_path / "report.png"
    assert driver.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    errors = [e for e in driver.get_log("browser") if e.get("level") == "SEVERE"]
    assert not errors, errors


BOXES = """
    return Array.from(document.querySelectorAll('.chart')).filter(d => d.offsetParent !== null && d.querySelector('.main-svg'))
      .map(d => { const b = d.getBoundingClientRect(), p = d.querySelector('.main-svg').getBoundingClientRect();
        return {id: d.id, box: [b.left + scrollX, b.top + scrollY, b.right + scrollX, b.bottom + scrollY],
                plot: [p.left + scrollX, p.top + scrollY, p.right + scrollX, p.bottom + scrollY]}; });"""


def _overlap(a, b) -> float:
    w = min(a[2], b[2]) - max(a[0], b[0])
    h = min(a[3], b[3]) - max(a[1], b[1])
    return w * h if w > 0 and h > 0 else 0.0


def test_charts_never_overlap_on_resize_and_zoom(driver, page):
    """Resize the window and zoom the page: every plot stays inside its own chart box and no
    two chart boxes overlap (their bounding rectangles, page coordinates)."""
    import time
    from selenium.webdriver.support.ui import WebDriverWait
    driver.set_window_size(1600, 1400)
    driver.get(page.as_uri())
    WebDriverWait(driver, 60).until(lambda d: d.execute_script("return document.body.dataset.ready === '1'"))
    checked = []
    for size, zoom in (((1600, 1400), 1), ((900, 700), 1), ((600, 900), 1), ((1600, 1400), 1.5), ((1200, 800), 0.67),
                       ((1600, 1400), 1)):
        driver.set_window_size(*size)
        driver.execute_script(f"document.body.style.zoom = '{zoom}'; window.dispatchEvent(new Event('resize'));")
        time.sleep(1.2)  # plotly's responsive relayout is debounced
        boxes = driver.execute_script(BOXES)
        assert len(boxes) >= 4, boxes
        for b in boxes:
            x0, y0, x1, y1 = b["box"]
            px0, py0, px1, py1 = b["plot"]
            assert y1 - y0 >= 150, (size, zoom, b)  # never collapsed to a sliver
            assert py0 >= y0 - 1 and py1 <= y1 + 1, (size, zoom, b)  # the plot inside its box, top to bottom
        for i, a in enumerate(boxes):
            for c in boxes[i + 1:]:
                assert _overlap(a["box"], c["box"]) == 0, (size, zoom, a, c)
        checked.append((size, zoom, len(boxes)))
    assert len(checked) == 6
    driver.execute_script("document.body.style.zoom = '1'")
    driver.set_window_size(1600, 1400)


def test_summary_filter_group_and_columns(driver, page):
    from selenium.webdriver.support.ui import WebDriverWait
    driver.get(page.as_uri())
    WebDriverWait(driver, 60).until(lambda d: d.execute_script("return document.body.dataset.ready === '1'"))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    summary = json.loads(subprocess.run([sys.executable, "-m", "flashprof", "summary", str(H200), "--format", "json"],
                                        capture_output=True, text=True, cwd=ROOT, env=env, check=True).stdout)
    visible = """return Array.from(document.querySelectorAll('#summary-table tbody tr[data-sid]'))
                 .filter(r => r.offsetParent !== null).map(r => r.dataset.sid);"""
    heads = """return Array.from(document.querySelectorAll('#summary-table th')).filter(h => h.offsetParent !== null)
                 .map(h => h.textContent);"""
    assert sorted(driver.execute_script(visible)) == sorted(f"{r['report']}#{r['launch']}" for r in summary)
    key = driver.execute_script(heads)
    assert key[1:5] == ["launch", "duration", "bound by", "top stall"] and "% of FA2" in key and len(key) <= 12
    assert "AI L1" not in key
    box = driver.find_element("id", "sum-filter")
    box.send_keys("flex")
    want = sorted(f"{r['report']}#{r['launch']}" for r in summary if "flex" in r["report"])
    assert sorted(driver.execute_script(visible)) == want
    box.clear()
    driver.execute_script("const b = document.getElementById('sum-filter'); b.value = ''; b.dispatchEvent(new Event('input'));")
    driver.find_element("id", "sum-group").click()  # grouped: one row per report until a group is opened
    shown = driver.execute_script(visible)
    assert sorted(shown) == sorted(f"{r['report']}#{r['launch']}" for r in summary if r["dominant"])
    driver.execute_script("document.querySelector(\"#summary-table tr.rgrp[data-report='flex_attention-attention']\").click()")
    assert len(driver.execute_script(visible)) == len(summary)
    driver.find_element("id", "sum-more").click()
    assert "AI L1" in driver.execute_script(heads)


def test_compare_headline_and_no_clipped_columns(driver, page):
    from selenium.webdriver.support.ui import WebDriverWait
    driver.set_window_size(1600, 1400)
    driver.get(page.as_uri())
    WebDriverWait(driver, 60).until(lambda d: d.execute_script("return document.body.dataset.ready === '1'"))
    driver.execute_script("""const a = document.getElementById('cmp-a'), b = document.getElementById('cmp-b');
        a.value = 'kernel1'; b.value = 'kernel7'; a.dispatchEvent(new Event('change'));""")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    summary = {r["report"]: r for r in json.loads(subprocess.run(
        [sys.executable, "-m", "flashprof", "summary", str(H200), "--format", "json"],
        capture_output=True, text=True, cwd=ROOT, env=env, check=True).stdout)}
    head = driver.find_element("css selector", "#cmp-head .speedup").text
    x = summary["kernel1"]["duration_ns"] / summary["kernel7"]["duration_ns"]
    m = re.match(r"kernel7 #0 is (\d+(?:\.(\d+))?)\u00d7 faster than kernel1 #0", head)
    assert m, head
    shown, decimals = float(m.group(1)), len(m.group(2) or "")
    assert decimals >= 1 and abs(shown - x) <= 0.5 * 10 ** -decimals + 1e-9, (head, x)  # x as rounded
    for width in (1600, 1000):
        driver.set_window_size(width, 1200)
        clipped = driver.execute_script("""return Array.from(document.querySelectorAll('#cmp-out .pair')).map(p => {
            const t = p.querySelector('table').getBoundingClientRect(), b = p.getBoundingClientRect();
            return [t.right - b.right, p.scrollWidth - p.clientWidth]; });""")
        assert clipped and all(r <= 1 for r, _ in clipped), (width, clipped)  # the table's columns inside the box


def test_source_bars_absolute_and_shares_rounded(driver, page):
    from selenium.webdriver.support.ui import WebDriverWait
    driver.get(page.as_uri())
    WebDriverWait(driver, 60).until(lambda d: d.execute_script("return document.body.dataset.ready === '1'"))
    driver.execute_script("const s = document.getElementById('launch-select'); s.value = 'kernel1#0'; s.dispatchEvent(new Event('change'));")
    rows = driver.execute_script("""return Array.from(document.querySelectorAll('#src-view tr')).filter(r => r.querySelector('td.sass'))
        .map(r => [r.querySelector('td.sass').textContent, parseInt(r.cells[2].textContent), r.cells[3].textContent,
                   Array.from(r.querySelectorAll('.bar > span')).reduce((a, s) => a + parseFloat(s.style.width), 0)]);""")
    from flashprof.analysis.report.parse import load_source_frame
    src = load_source_frame(H200 / "kernel1.ncu-rep", 0)
    cols = [c for c in src.columns if c.startswith("stall_") and not c.endswith("_not_issued") and c != "stall_selected"]
    per = src[cols].sum(axis=1)
    top, total = float(per.max()), float(per.sum())
    assert len(rows) > 5
    for sass, n, share, width in rows:
        assert width == pytest.approx(100 * n / top, abs=0.05)  # scaled to the hottest line, not each to full width
        assert "e-" not in share and (share == "<0.01 %" or len(share.split(".")[-1].rstrip(" %")) <= 2)
        x = 100 * n / total
        if x >= 0.01:
            assert float(share.rstrip(" %")) == pytest.approx(x, abs=0.051 if x < 10 else 0.051)
    assert max(r[3] for r in rows) == pytest.approx(100, abs=0.05) and min(r[3] for r in rows) < 50


def test_launch_facts_name_resources_and_bound(driver, page):
    from selenium.webdriver.support.ui import WebDriverWait
    from flashprof.analysis.report.parse import load_frame
    driver.get(page.as_uri())
    WebDriverWait(driver, 60).until(lambda d: d.execute_script("return document.body.dataset.ready === '1'"))
    driver.execute_script("const s = document.getElementById('launch-select'); s.value = 'kernel7#0'; s.dispatchEvent(new Event('change'));")
    text = driver.find_element("id", "launch-facts").text
    f = load_frame([H200 / "kernel7.ncu-rep"])
    m = dict(zip(f["metric"], f["value"]))
    assert f"{int(m['launch__registers_per_thread'])} registers/thread" in text
    assert f"{m['launch__shared_mem_per_block'] / 1024:.3g} KiB shared memory/block" in text
    assert f"{m['launch__waves_per_multiprocessor']:.3g} waves/SM" in text
    bound = "memory" if m["gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed"] > \
        m["sm__throughput.avg.pct_of_peak_sustained_elapsed"] else "compute"
    assert f"bound by: {bound}" in text
    import re
    assert re.search(r"duration \d+(\.\d+)? ms", text), text  # a unit that fits, no thousands separator


def test_roof_labels_clear_of_points(driver, page):
    """On every roofline chart no roof label (its drawn rectangle) covers a launch's point."""
    from selenium.webdriver.support.ui import WebDriverWait
    driver.set_window_size(1600, 1400)
    driver.get(page.as_uri())
    WebDriverWait(driver, 60).until(lambda d: d.execute_script("return document.body.dataset.ready === '1'"))
    found = driver.execute_script("""
        return Array.from(document.querySelectorAll('#roofline .chart')).map(div => {
          const r = e => { const b = e.getBoundingClientRect(); return [b.left, b.top, b.right, b.bottom]; };
          return {labels: Array.from(div.querySelectorAll('.annotation')).map(r),
                  points: Array.from(div.querySelectorAll('.scatterlayer .trace .points path.point')).map(r)}; });""")
    assert found and all(c["labels"] and c["points"] for c in found)
    for c in found:
        for lab in c["labels"]:
            for pt in c["points"]:
                assert _overlap(lab, pt) == 0, (lab, pt)


def test_rules_top_three_open_and_source_text_beside_its_lines(driver, page):
    """kernel 1: Nsight Compute's rule results (read here from ncu_report), three open and
    the rest folded; each source group shows its line's text, the mma.sync wrapper's line
    once per context (near the gemm_qk call, near s_to_p)."""
    from selenium.webdriver.support.ui import WebDriverWait
    from flashprof.analysis.report.ncu_import import ncu_report
    driver.get(page.as_uri())
    WebDriverWait(driver, 60).until(lambda d: d.execute_script("return document.body.dataset.ready === '1'"))
    driver.execute_script("const s = document.getElementById('launch-select'); s.value = 'kernel1#0'; s.dispatchEvent(new Event('change'));")
    got = driver.execute_script("""const box = document.getElementById('launch-rules');
        const open = Array.from(box.children).filter(e => e.classList.contains('rule'));
        const folded = box.querySelectorAll('#rules-more .rule');
        return [open.map(e => [e.querySelector('b').textContent, e.offsetHeight > 0]), folded.length,
                box.querySelector('#rules-more') ? box.querySelector('#rules-more').open : null, box.textContent];""")
    action = ncu_report().load_report(str(H200 / "kernel1.ncu-rep")).range_by_idx(0).action_by_idx(0)
    raw = [d for d in action.rule_results_as_dicts() if d["rule_message"]["title"] or d["rule_message"]["message"]]
    open_rules, n_folded, is_open, text = got
    assert len(open_rules) == 3 and all(visible for _t, visible in open_rules)
    assert len(open_rules) + n_folded == len(raw) and is_open is False
    est = [d for d in raw if d.get("speedup_estimation") and int(d["speedup_estimation"]["type"]) == 2]
    best = max(est, key=lambda d: d["speedup_estimation"]["speedup"])  # the largest global estimate leads
    assert open_rules[0][0] in (best["rule_message"]["title"], best["name"])
    assert f"est. speed-up {best['speedup_estimation']['speedup']:.3g} %" in text and "@section:" not in text
    groups = driver.execute_script("""return Array.from(document.querySelectorAll('#src-view tr.grp td.loc'))
        .map(td => [td.childNodes[0].textContent.trim(), (td.querySelector('code.srctext') || {}).textContent || '',
                    (td.querySelector('span.ctx') || {}).textContent || '']);""")
    files = dict(action.source_files())
    mma = next(t for f, t in files.items() if f.endswith("csrc/mma.cuh")).splitlines()
    wrapper = [g for g in groups if g[0] == "csrc/mma.cuh:42"]
    assert len(wrapper) >= 2 and all(g[1] == " ".join(mma[41].split()) for g in wrapper)
    assert "gemm_qk" in wrapper[0][2] and any("s_to_p" in g[2] for g in wrapper[1:])
