"""The installed name: the wheel holds one top-level package, ``flashprof``, with every
stage folder inside it, and installing it beside another ``kernels`` leaves that one alone."""
from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    pytest.importorskip("setuptools")
    out = tmp_path_factory.mktemp("wheel")
    r = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                        "-w", str(out), str(ROOT)], capture_output=True, text=True, timeout=600,
                       cwd=out)
    assert r.returncode == 0, r.stderr[-2000:]
    (whl,) = out.glob("*.whl")
    return whl


def test_wheel_has_one_top_level_name(wheel):
    names = zipfile.ZipFile(wheel).namelist()
    tops = {n.split("/")[0] for n in names}
    dist_info = {t for t in tops if t.endswith(".dist-info")}
    assert tops - dist_info == {"flashprof"}
    assert wheel.name.startswith("flashprof_ncu-")


def test_wheel_holds_every_package_of_the_checkout(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    # every package of the checkout (a folder under flashprof/ with an __init__.py) is in it
    inits = sorted((ROOT / "flashprof").rglob("__init__.py"))
    assert len(inits) >= 10
    for init in inits:
        rel = init.relative_to(ROOT).as_posix()
        assert rel in names, f"{rel} is not in the wheel"
    # the data the code reads at run time
    for need in ("flashprof/kernels/csrc/flash_fwd.cu", "flashprof/kernels/tuned.json",
                 "flashprof/kernels/ceilings/peaks.json", "flashprof/analysis/gpus.json",
                 "flashprof/analysis/data/probe.ncu-rep", "flashprof/analysis/explore_stalls.ipynb"):
        assert need in names, need
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry).decode()
    assert "flashprof = flashprof.verbs:main" in text


def test_installing_beside_another_kernels_package_leaves_it_theirs(wheel, tmp_path):
    site = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    theirs = tmp_path / "theirs" / "kernels"
    theirs.mkdir(parents=True)
    (theirs / "__init__.py").write_text("OWNER = 'huggingface'\n")
    code = ("import kernels, flashprof.kernels.config as c, flashprof.verbs; "
            "print(kernels.OWNER, c.KernelConfig().slug, flashprof.verbs.main(['--version']))")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(tmp_path / "theirs")])}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, env=env,
                       timeout=120)
    assert r.returncode == 0, r.stderr[-2000:]
    assert r.stdout.splitlines()[-1].startswith("huggingface d128_br64_bc64_w4")
    # and the installed package is the wheel's copy, not this checkout
    r = subprocess.run([sys.executable, "-c", "import flashprof.kernels.config as c; print(c.__file__)"],
                       capture_output=True, text=True, cwd=tmp_path, env=env, timeout=60)
    assert r.stdout.strip().startswith(str(site)), r.stdout


def test_no_search_path_surgery():
    """The stages are real subpackages: no module of the package edits a ``__path__``."""
    hits = [p.relative_to(ROOT).as_posix() for p in (ROOT / "flashprof").rglob("*.py")
            if "__path__" in p.read_text()]
    assert not hits, hits


def test_installed_wheel_writes_into_the_working_directory(wheel, tmp_path):
    """Installed from the wheel and run from a scratch folder, summary's cache and the figures land
    in that folder, and nothing new appears inside the installed package."""
    site = tmp_path / "site"
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(site), str(wheel)],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-2000:]
    before = {p.relative_to(site) for p in site.rglob("*")}
    work = tmp_path / "work"
    (work / "mine").mkdir(parents=True)
    src = ROOT / "reports" / "h200" / "kernel6.ncu-rep"
    (work / "mine" / "kernel6.ncu-rep").write_bytes(src.read_bytes())
    env = {k: v for k, v in os.environ.items() if k != "FLASHPROF_HOME"}
    env["PYTHONPATH"] = str(site)
    run = lambda *a: subprocess.run([sys.executable, "-P", "-m", "flashprof", *a], capture_output=True, text=True,
                                    cwd=work, env=env, timeout=600)
    r = run("summary", "mine/kernel6.ncu-rep", "--format", "json")
    assert r.returncode == 0, r.stderr[-2000:]
    import json
    recs = json.loads(r.stdout)
    assert recs and all(x["duration_ns"] > 0 for x in recs)
    r = run("figures", "--reports", "mine", "--only", "roofline")
    assert r.returncode == 0, r.stderr[-2000:]
    pngs = sorted(p.relative_to(work).as_posix() for p in work.rglob("*.png"))
    assert pngs and all(p.startswith("figures/mine/") for p in pngs), pngs
    after = {p.relative_to(site) for p in site.rglob("*")}
    new = {p for p in after - before if "__pycache__" not in p.parts}
    assert not new, sorted(map(str, new))[:10]
