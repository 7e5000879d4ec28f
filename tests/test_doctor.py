"""`make doctor` on a machine without a GPU (this one), with a stand-in nvidia-smi, and the
counter test against stand-in ncu binaries that answer the way ncu does."""
from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from flashprof.profiling import doctor

ROOT = Path(__file__).resolve().parent.parent


def _script(folder: Path, name: str, body: str) -> Path:
    folder.mkdir(exist_ok=True)
    path = folder / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return path


def _doctor(path_dirs: list[Path], **env) -> subprocess.CompletedProcess:
    """Run the doctor with only these folders (and the basics) on PATH."""
    path = os.pathsep.join([*map(str, path_dirs), str(Path(sys.executable).parent), "/usr/bin", "/bin"])
    full = {**os.environ, "PATH": path, **env}
    full.pop("FLASHPROF_NCU", None)
    return subprocess.run([sys.executable, "-m", "flashprof.profiling.doctor", "--no-counters"], cwd=ROOT, env=full,
                          capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def no_gpu_run(tmp_path_factory):
    if Path("/usr/bin/nvidia-smi").exists():
        pytest.skip("this machine has nvidia-smi in /usr/bin")
    return _doctor([tmp_path_factory.mktemp("empty")])


def test_runs_without_gpu_and_says_so(no_gpu_run):
    r = no_gpu_run
    assert r.returncode == 0 and r.stderr == "", r.stderr
    lines = r.stdout.splitlines()
    assert "NO GPU               no GPU: nvidia-smi not found" in [ln.strip() for ln in lines]
    assert any(ln.split()[:3] == ["build", "missing", "GPU,"] for ln in lines)
    assert any(ln.split()[:2] == ["profile", "missing"] and "a machine with an NVIDIA GPU" in ln for ln in lines)
    assert any(ln.split()[:2] == ["--", "counters"] and "not tried" in ln for ln in lines)


def test_reads_both_reports_in_a_child(no_gpu_run):
    ncu_report = pytest.importorskip("ncu_report")
    full = doctor.full_set_report()
    assert full is not None and full.name == "kernel6.ncu-rep"
    counts = []
    for rep in (doctor.PROBE, full):
        action = ncu_report.load_report(str(rep)).range_by_idx(0).action_by_idx(0)
        counts.append(len(action.metric_names()))
    line = next(ln for ln in no_gpu_run.stdout.splitlines() if " ncu_report " in ln)
    assert line.split()[0] == "ok"
    assert f"probe.ncu-rep ({counts[0]} metrics)" in line and f"kernel6.ncu-rep ({counts[1]} metrics)" in line
    assert "wheel ncu-report" in line or "bundled" in line


def test_gpu_line_from_nvidia_smi(tmp_path):
    smi = ('case "$1" in --query-gpu=name) echo "NVIDIA H200";;\n'
           '*) echo "345, 1980, 3201, 3201, 75.31, 30, 580.159.04";; esac\n')
    _script(tmp_path / "bin", "nvidia-smi", smi)
    r = _doctor([tmp_path / "bin"])
    gpu = next(ln for ln in r.stdout.splitlines() if ln.split()[1:2] == ["GPU"])
    assert gpu.split()[0] == "ok"
    assert "NVIDIA H200, driver 580.159.04, SM 345/1980 MHz, memory 3201/3201 MHz" in gpu
    k7 = next(ln for ln in r.stdout.splitlines() if ln.split()[1:3] == ["kernel", "7"])
    tuned = json.loads((ROOT / "kernels" / "tuned.json").read_text())["h200"]["slug"]
    assert f"{tuned}: tuned for h200" in k7


_OK = doctor.Check("x", True, "")


@pytest.mark.parametrize("body, ok, words", [
    ('echo "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU '
     'Performance Counters on the target device 0."; exit 1\n', False, "ERR_NVGPUCTRPERM"),
    ('echo \'"ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\'\n'
     'echo \'"0","fill","sm__cycles_elapsed.avg","cycle","2,911.50"\'\n', True, "readable"),
    ("echo '==PROF== Disconnected'\n", False, "no metric"),
])
def test_counter_check_reads_ncu_answers(tmp_path, monkeypatch, body, ok, words):
    monkeypatch.setenv("FLASHPROF_NCU", str(_script(tmp_path, "ncu", body)))
    c = doctor.check_counters(_OK, _OK, skip=False)
    assert c.ok is ok and words in c.detail


def test_counter_check_not_tried_without_gpu():
    c = doctor.check_counters(_OK, doctor.Check("torch", False, "no torch"), skip=False)
    assert c.ok is None and "not tried" in c.detail


def test_a_crashing_child_is_named():
    rc, _, err = doctor._child([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGSEGV)"], 60)
    assert doctor._why(rc, err) == "crashed (signal 11)"


def test_make_targets_need_the_venv(tmp_path):
    """No .venv: a GPU target stops with one line that names the set-up command."""
    if not shutil.which("make"):
        pytest.skip("make is not installed")
    r = subprocess.run(["make", "--no-print-directory", "-s", f"VENV={tmp_path / 'none'}", "build"], cwd=ROOT,
                       capture_output=True, text=True)
    assert r.returncode != 0 and r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1 and "make setup GPU=1" in r.stderr
