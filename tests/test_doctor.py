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


def _checks(out: str) -> dict[str, tuple[str, str]]:
    """{check name: (mark, detail)} from the doctor's output, by the check names (some
    have spaces), not by column positions."""
    names = sorted({n for needs in doctor.TARGETS.values() for n in needs} | {"kernel 7"}, key=len, reverse=True)
    found = {}
    for ln in out.splitlines():
        mark, _, rest = ln.strip().partition(" ")
        if mark not in ("ok", "NO", "--"):
            continue
        name = next((n for n in names if rest == n or rest.startswith(n + " ")), None)
        if name:
            found[name] = (mark, rest[len(name):].strip())
    return found


def _targets(out: str) -> dict[str, tuple[list[str], str]]:
    """{make target: (what it lacks, the fix)} from the lines after 'make targets:'."""
    lines = out.split("make targets:", 1)[1].splitlines()
    found = {}
    for ln in lines:
        target, _, rest = ln.strip().partition(" ")
        rest = rest.strip()
        if rest == "ready":
            found[target] = ([], "")
        elif rest.startswith("missing "):
            lacks, _, fix = rest[len("missing "):].partition(" -> ")
            found[target] = (lacks.split(", "), fix)
    return found


@pytest.fixture(scope="module")
def no_gpu_run(tmp_path_factory):
    if Path("/usr/bin/nvidia-smi").exists():
        pytest.skip("this machine has nvidia-smi in /usr/bin")
    return _doctor([tmp_path_factory.mktemp("empty")])


def test_runs_without_gpu_and_says_so(no_gpu_run):
    """Whatever else this machine has (a .venv or not, ncu or not), no GPU is said once and
    every GPU target says only that."""
    r = no_gpu_run
    assert r.returncode == 0 and r.stderr == "", r.stderr
    checks, targets = _checks(r.stdout), _targets(r.stdout)
    assert checks["GPU"] == ("NO", "no GPU: nvidia-smi not found")
    assert checks["counters"][0] == "--" and "not tried" in checks["counters"][1]
    assert set(targets) == set(doctor.TARGETS)
    for t in ("build", "bench", "tune", "profile", "gpu-session"):
        lacks, fix = targets[t]
        assert {"GPU", "torch"} <= set(lacks), t
        assert fix == "run on a machine with an NVIDIA GPU", t
    assert "ncu" in targets["profile"][0] or checks["ncu"][0] == "ok"
    # A target needing no GPU lacks at most what the check lines marked as not ok.
    not_ok = {n for n, (mark, _) in checks.items() if mark != "ok"}
    for t in ("test", "figures", "summary", "sass", "notebook"):
        assert set(targets[t][0]) <= not_ok and "GPU" not in targets[t][0], t


@pytest.mark.parametrize("venv, ok, words", [
    (None, False, "no .venv"),
    ("cpu", True, "CPU venv"),
    ("unfinished", False, "unfinished GPU venv"),
    ("gpu", True, "GPU venv"),
])
def test_python_check_says_which_venv(tmp_path, monkeypatch, venv, ok, words):
    v = tmp_path / ".venv"
    if venv:
        (v / "bin").mkdir(parents=True)
        (v / "bin" / "python").write_text("")
        (v / "pyvenv.cfg").write_text("include-system-site-packages = " + ("true" if venv != "cpu" else "false") + "\n")
    if venv == "gpu":
        (v / ".flashprof-gpu").write_text("")
    monkeypatch.setattr(doctor, "VENV", v)
    c = doctor.check_python()
    assert c.ok is ok and words in c.detail
    assert ok or "make setup" in c.fix
    c_all = {n: doctor.Check(n, True, "") for n in {n for needs in doctor.TARGETS.values() for n in needs}}
    c_all["python"] = c
    lines = _targets("make targets:\n" + "\n".join(doctor.target_lines(c_all)))
    assert all(("python" in lacks) is (not ok) for lacks, _ in lines.values())


def test_reads_both_reports_in_a_child(no_gpu_run):
    ncu_report = pytest.importorskip("ncu_report")
    full = doctor.full_set_report()
    assert full is not None and full.name == "kernel6.ncu-rep"
    counts = []
    for rep in (doctor.PROBE, full):
        action = ncu_report.load_report(str(rep)).range_by_idx(0).action_by_idx(0)
        counts.append(len(action.metric_names()))
    mark, detail = _checks(no_gpu_run.stdout)["ncu_report"]
    assert mark == "ok"
    assert f"probe.ncu-rep ({counts[0]} metrics)" in detail and f"kernel6.ncu-rep ({counts[1]} metrics)" in detail
    assert "wheel ncu-report" in detail or "bundled" in detail


def test_gpu_line_from_nvidia_smi(tmp_path):
    smi = ('case "$1" in --query-gpu=name) echo "NVIDIA H200";;\n'
           '*) echo "345, 1980, 3201, 3201, 75.31, 30, 580.159.04";; esac\n')
    _script(tmp_path / "bin", "nvidia-smi", smi)
    r = _doctor([tmp_path / "bin"])
    checks = _checks(r.stdout)
    mark, gpu = checks["GPU"]
    assert mark == "ok"
    assert "NVIDIA H200, driver 580.159.04, SM 345/1980 MHz, memory 3201/3201 MHz" in gpu
    tuned = json.loads((ROOT / "flashprof" / "kernels" / "tuned.json").read_text())["h200"]["slug"]
    assert f"{tuned}: tuned for h200" in checks["kernel 7"][1]


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
