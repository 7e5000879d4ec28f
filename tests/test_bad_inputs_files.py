"""Files that are not what a command expects: one line naming the file, exit non-zero, no
traceback; and a report with a non-UTF-8 file name is read like any other."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
KERNEL6 = ROOT / "reports" / "h200" / "kernel6.ncu-rep"


def run(*args, cwd=None):
    return subprocess.run([sys.executable, "-P", "-m", "flashprof", *map(str, args)], capture_output=True,
                          text=True, timeout=600, cwd=cwd, errors="backslashreplace")


def one_line_error(r, verb: str, names: str):
    assert r.returncode != 0 and "Traceback" not in r.stderr, r.stderr[-2000:]
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{verb}: error: ") and names in lines[0], lines


def test_ceilings_from_a_binary_file(tmp_path):
    f = tmp_path / "noise.out"
    f.write_bytes(bytes(range(256)) * 8)
    one_line_error(run("ceilings", "--from-output", f), "ceilings", str(f))


def test_figures_with_a_corrupt_bench_csv(tmp_path):
    d = tmp_path / "r"
    d.mkdir()
    shutil.copy(KERNEL6, d)
    (d / "bench.csv").write_bytes(b'target,seq\n1,"unclosed\n\x00\x01')
    one_line_error(run("figures", "--reports", d, "--out", tmp_path / "out", "--only", "progression"), "figures",
                   str(d / "bench.csv"))


def test_gap_pipes_with_a_corrupt_bench_csv(tmp_path):
    bad = tmp_path / "bench.csv"
    bad.write_bytes(b'target,seq\n1,"unclosed\n')
    one_line_error(run("gap", "--model", "pipes", "--bench", bad, KERNEL6), "gap", str(bad))


@pytest.mark.skipif(sys.platform == "darwin", reason="macOS file systems refuse non-UTF-8 names")
def test_a_report_with_a_non_utf8_name_reads_like_any_other(tmp_path):
    name = os.fsdecode(b"k\xff6.ncu-rep")
    shutil.copy(KERNEL6, tmp_path / name)
    got = run("summary", name, "--format", "json", cwd=tmp_path)
    assert got.returncode == 0, got.stderr
    want = run("summary", KERNEL6, "--format", "json")
    (g,), (w,) = json.loads(got.stdout), json.loads(want.stdout)
    assert g["report"] == "k\\xff6" and g["duration_ns"] == w["duration_ns"] and g["stalls"] == w["stalls"]
