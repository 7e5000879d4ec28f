"""% of FA2 only where it means something: per launch for the attention launch of a call,
null with a reason for its helpers (FlexAttention's fill kernels read 331,675 % before), and
per call for the whole user target. Expected values from raw durations (ncu_report)."""
import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
H200 = ROOT / "reports" / "h200"
FLEX, REF = H200 / "flex_attention-attention.ncu-rep", H200 / "ref.ncu-rep"


def _durations(path: Path) -> list[float]:
    import ncu_report
    r = ncu_report.load_report(str(path)).range_by_idx(0)
    return [r.action_by_idx(i).metric_by_name("gpu__time_duration.sum").as_double() for i in range(r.num_actions())]


@pytest.fixture(scope="module")
def rows():
    out = subprocess.run([sys.executable, "-P", "-m", "flashprof", "summary", str(FLEX), str(REF), "--format", "json"],
                         capture_output=True, text=True, timeout=600)
    assert out.returncode == 0, out.stderr
    return [r for r in json.loads(out.stdout) if r["report"] == FLEX.stem]


def test_only_the_attention_launch_has_a_pct_of_fa2(rows):
    (ref,) = _durations(REF)
    durs = _durations(FLEX)
    assert len(rows) == len(durs) == 3
    attn = [r for r in rows if r["pct_of_fa2"] is not None]
    assert [r["kernel"] for r in attn] == [max(rows, key=lambda r: r["duration_ns"])["kernel"]]
    (a,) = attn
    assert a["pct_of_fa2"] == pytest.approx(100 * ref / durs[a["launch"]], rel=1e-12)
    for r in rows:
        if r is not a:
            assert r["provenance"]["pct_of_fa2"].startswith("null: ")
        # the call: FA2's time over all three launches of one fn(q, k, v)
        assert r["pct_of_fa2_call"] == pytest.approx(100 * ref / sum(durs), rel=1e-12)
    assert a["pct_of_fa2_call"] < a["pct_of_fa2"]


def test_a_single_launch_kernel_call_equals_its_launch():
    out = subprocess.run([sys.executable, "-P", "-m", "flashprof", "summary", str(H200 / "kernel6.ncu-rep"), str(REF),
                          "--format", "json"], capture_output=True, text=True, timeout=600)
    (k6,) = [r for r in json.loads(out.stdout) if r["report"] == "kernel6"]
    assert k6["pct_of_fa2"] == k6["pct_of_fa2_call"] == pytest.approx(100 * _durations(REF)[0] / _durations(H200 / "kernel6.ncu-rep")[0])
