"""The issue model's loop is the loop the GPU ran: every instruction an H200 report executes
once per KV pass is in the model's body, and every body instruction runs once per pass.

Counts come straight from ncu_report (``inst_executed`` per PC, SourceCounters), offsets from
the function's first PC. ``n`` is the median count of the body's instructions. An instruction
outside the body run between 0.9 n and 1.1 n times is one the model leaves out -- PyTorch's
FA2 keeps its next-K cp.async block out of line (run on every pass but the last); before
loops.fa2_loop spliced it in, the H200 FA2 loop lacked 30 instructions a pass, 8 of them
LDGSTS. Warp-specialised loops (SYNCS in the body) are checked one way only: their producer
warp's code is not in the consumer body by design.
"""
from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

import pytest

from flashprof.analysis.gap import series_measured as sm
from flashprof.analysis.gap.loops import fa2_loop, kernel_loop

REPO = Path(__file__).resolve().parents[1]
H200 = REPO / "reports" / "h200"
SERIES = H200 / "series"


def _pairs():
    out = []
    for t in ("1", "2", "3", "4", "5", "6", "7", "7mma"):
        rep = H200 / f"kernel{t}.ncu-rep"
        if rep.is_file():
            out.append(pytest.param(rep, ("kernel", t), id=f"kernel{t}"))
    if (H200 / "ref.ncu-rep").is_file():
        out.append(pytest.param(H200 / "ref.ncu-rep", ("ref", None), id="ref"))
    for rep in sorted(SERIES.glob("series_targets-k*.ncu-rep")):
        listing = re.search(r"-k(.+)\.ncu-rep$", rep.name).group(1)
        out.append(pytest.param(rep, ("series", listing), id=f"series-{listing}"))
    return out


def _code(kind, name, rep):
    if kind == "ref":
        return fa2_loop("sm_90")
    if kind == "series":
        return sm.series_code(sm.listing_of(name), "h200")
    slug = json.loads(rep.with_suffix(".json").read_text())["config_slug"]
    return kernel_loop(name, "sm_90", slug)


def _executed(rep: Path) -> dict[int, float]:
    ncu_report = pytest.importorskip("ncu_report")
    action = ncu_report.load_report(str(rep)).range_by_idx(0).action_by_idx(0)
    m = action.metric_by_name("inst_executed")
    if m is None or not m.has_correlation_ids():
        pytest.skip(f"{rep.name}: no per-PC instruction counts")
    ids = m.correlation_ids()
    counts = {int(ids.value(i)): float(m.value(i) or 0) for i in range(m.num_instances())}
    base = min(counts)
    return {pc - base: v for pc, v in counts.items()}


@pytest.mark.parametrize("rep,which", _pairs())
def test_the_model_body_is_the_loop_the_report_ran(rep, which):
    code = _code(*which, rep)
    executed = _executed(rep)
    body = {i.addr for i in code.body}
    assert len(body) == len(code.body), "an instruction spliced in twice"
    n = statistics.median(executed.get(a, 0.0) for a in body)
    assert n > 0
    # every body instruction runs once per pass (forward branches inside the loop are rare paths)
    off = sorted(a for a in body if abs(executed.get(a, 0.0) / n - 1) > 0.1)
    assert len(off) <= 0.02 * len(body), f"{len(off)} body instructions not run once per pass: {off[:8]}"
    if any(i.base == "SYNCS" for i in code.body):
        return
    missing = sorted(a for a, v in executed.items() if a not in body and 0.9 <= v / n <= 1.1)
    assert not missing, f"{rep.name}: {len(missing)} instructions run once per pass outside the model's loop, " \
                        f"first at {missing[:4]}"
