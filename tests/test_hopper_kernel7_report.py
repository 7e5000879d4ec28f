"""The kernel 7 the H200 dispatches (wgmma), profiled: reports/h200/kernel7.ncu-rep.
Its summary names the Hopper tensor instruction, HGMMA, with the count the report holds and the
count the kernel's shape implies."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import raw_metrics, raw_opcodes

ROOT = Path(__file__).resolve().parents[1]
REPORT = ROOT / "reports" / "h200" / "kernel7.ncu-rep"
pytestmark = pytest.mark.skipif(not REPORT.is_file(), reason=f"{REPORT} absent")


@pytest.fixture(scope="module")
def record() -> dict:
    r = subprocess.run([sys.executable, "-P", "-m", "flashprof", "summary", str(REPORT), "--format", "json",
                        "--no-cache"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    (rec,) = json.loads(r.stdout)
    return rec


def test_sidecar_names_the_dispatched_wgmma_config():
    side = json.loads(REPORT.with_suffix(".json").read_text())
    from flashprof.kernels.config import load_dispatch
    assert side["config_slug"] == load_dispatch()["h200"].default.slug
    assert side["config"]["wgmma"] is True


def test_instruction_mix_has_hgmma(record):
    raw = raw_opcodes(REPORT)
    assert record["inst_mix"]["HGMMA"] == pytest.approx(raw["HGMMA"])
    assert record["inst_mix"]["HMMA"] == raw.get("HMMA", 0) == 0
    # per CTA (one warpgroup of 4 warps, 64 query rows) and KV block of 128 keys:
    # d/16 = 8 m64n128k16 for S = Q K^T and 128/16 = 8 for O += P V, issued by each of 4 warps
    side = json.loads(REPORT.with_suffix(".json").read_text())
    sh, cfg = side["shape"], side["config"]
    ctas = sh["batch"] * sh["heads"] * sh["seq"] // cfg["B_r"]
    per_block = (cfg["d_head"] // 16 + cfg["B_c"] // 16) * (cfg["n_warps"])
    assert raw["HGMMA"] == ctas * (sh["seq"] // cfg["B_c"]) * per_block


def test_tensor_numbers_against_raw_counters(record):
    raw = raw_metrics(REPORT)
    assert record["tensor_path"] == "hgmma"
    pct = raw["sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"]
    assert record["tensor_pipe_pct"] == pytest.approx(pct, rel=1e-6)
    dur = raw["gpu__time_duration.sum"]
    assert record["duration_ns"] == pytest.approx(dur, rel=1e-9)
