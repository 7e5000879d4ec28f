"""`make setup GPU=1`: a venv made from an interpreter that is itself a venv must see that
venv's packages (not only the base interpreter's), install what is missing from a wheel
folder with no registry, and say exactly which wheels to bring when one is absent.

A throwaway "system" venv stands in for the GPU machine's /opt/torch/.venv: it holds a
package of its own (fp_parentpkg) that the base interpreter does not have."""
from __future__ import annotations

import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from flashprof.profiling import setup_gpu

ROOT = Path(__file__).resolve().parent.parent


def _wheel(folder: Path, name: str, version: str = "1.0") -> Path:
    """A minimal pure-Python wheel holding module ``name`` with VALUE = version."""
    dist = f"{name}-{version}.dist-info"
    path = folder / f"{name}-{version}-py3-none-any.whl"
    files = {f"{name}/__init__.py": f"VALUE = {version!r}\n",
             f"{dist}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n",
             f"{dist}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
    files[f"{dist}/RECORD"] = "".join(f"{f},,\n" for f in files) + f"{dist}/RECORD,,\n"
    with zipfile.ZipFile(path, "w") as z:
        for f, text in files.items():
            z.writestr(f, text)
    return path


@pytest.fixture(scope="module")
def system_venv(tmp_path_factory):
    """A venv (no pip of its own) with a package only it has, like /opt/torch/.venv's torch."""
    base = tmp_path_factory.mktemp("system")
    venv_dir = base / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--system-site-packages", str(venv_dir)],
                   check=True, capture_output=True)
    py = venv_dir / "bin" / "python"
    site_dir = subprocess.run([str(py), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
                              check=True, capture_output=True, text=True).stdout.strip()
    pkg = Path(site_dir) / "fp_parentpkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("WHERE = 'system venv'\n")
    (Path(site_dir) / "fp_parentpkg-2.0.dist-info").mkdir()
    (Path(site_dir) / "fp_parentpkg-2.0.dist-info" / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: fp_parentpkg\nVersion: 2.0\n")
    # and a folder it adds through a .pth file of its own (as editable installs do)
    extra = base / "extra"
    (extra / "fp_viapth").mkdir(parents=True)
    (extra / "fp_viapth" / "__init__.py").write_text("")
    (Path(site_dir) / "fp_extra.pth").write_text(f"{extra}\n")
    return py


def _setup(py: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([str(py), "-m", "flashprof.profiling.setup_gpu", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)


def test_plain_system_site_packages_misses_the_parent_venv(system_venv, tmp_path):
    """The trap this module exists for: `python -m venv --system-site-packages` from a venv."""
    child = tmp_path / "plain"
    subprocess.run([str(system_venv), "-m", "venv", "--without-pip", "--system-site-packages", str(child)],
                   check=True)
    r = subprocess.run([str(child / "bin" / "python"), "-c", "import fp_parentpkg"], capture_output=True)
    assert r.returncode != 0


def test_gpu_venv_sees_parent_and_installs_from_wheels(system_venv, tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    _wheel(wheels, "fp_carried", "3.1")
    gpu_venv = tmp_path / "gpu-venv"
    r = _setup(system_venv, "--venv", str(gpu_venv), "--wheels", str(wheels),
               "--require", "fp_parentpkg", "--require", "fp_carried")
    assert r.returncode == 0, r.stderr
    assert "fp_carried 3.1" in r.stdout and "fp_parentpkg 2.0" in r.stdout
    assert (gpu_venv / setup_gpu.STAMP).is_file()
    code = ("import fp_parentpkg, fp_viapth, fp_carried, flashprof.kernels.config, sys; "
            "print(fp_parentpkg.WHERE, fp_carried.__file__.startswith(sys.prefix), flashprof.kernels.config.__file__)")
    out = subprocess.run([str(gpu_venv / "bin" / "python"), "-c", code], cwd=tmp_path,
                         capture_output=True, text=True, check=True).stdout.split()
    assert out[:3] == ["system", "venv", "True"]  # carried wheel went into the GPU venv itself
    assert Path(out[3]).resolve() == (ROOT / "flashprof" / "kernels" / "config.py").resolve()
    # Run again: reuses the venv, nothing left to install.
    again = _setup(system_venv, "--venv", str(gpu_venv), "--wheels", str(wheels), "--require", "fp_carried")
    assert again.returncode == 0 and "installing" not in again.stdout


def test_missing_wheel_names_what_to_bring(system_venv, tmp_path):
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    r = _setup(system_venv, "--venv", str(tmp_path / "v"), "--wheels", str(wheels),
               "--require", "fp_parentpkg", "--require", "ncu-report>=2025")
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    version = "%d.%d" % sys.version_info[:2]
    assert r.stderr.startswith("setup GPU=1: error: ncu-report not installed and no wheel in ")
    assert f"pip download --only-binary=:all: --python-version {version} " in r.stderr
    assert "-d wheels 'ncu-report>=2025'" in r.stderr and "fp_parentpkg" not in r.stderr


def test_refuses_a_cpu_venv(tmp_path):
    cpu = tmp_path / "cpu"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(cpu)], check=True)
    r = _setup(Path(sys.executable), "--venv", str(cpu), "--require", "pip")
    assert r.returncode == 1 and "rm -rf" in r.stderr and "Traceback" not in r.stderr


def test_requirements_come_from_pyproject():
    tomllib = pytest.importorskip("tomllib")

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = setup_gpu.requirements()
    assert set(project["dependencies"]) <= set(reqs) and "torch" in reqs and "ncu-report" in reqs
    assert [setup_gpu.dist_name(r) for r in ("ncu-report>=2025", "numpy; python_version>'3'", "a[b]")] == \
        ["ncu-report", "numpy", "a"]


def test_unpack_wheel_without_pip(tmp_path):
    """The no-pip fallback: the wheel's package and metadata land in site-packages."""
    import importlib.metadata as md

    site_dir = tmp_path / "site"
    site_dir.mkdir()
    setup_gpu.unpack_wheel(_wheel(tmp_path, "fp_unpacked", "0.7"), site_dir)
    (dist,) = md.distributions(path=[str(site_dir)])
    assert (dist.metadata["Name"], dist.version) == ("fp_unpacked", "0.7")
    assert (site_dir / "fp_unpacked" / "__init__.py").read_text() == "VALUE = '0.7'\n"
    assert dist.read_text("INSTALLER").strip() == "flashprof-setup-gpu"


def test_unpack_moves_platlib_up_and_refuses_scripts(tmp_path):
    """ncu-report's wheel keeps its files under <name>.data/purelib/; scripts need pip."""
    whl = _wheel(tmp_path, "fp_data")
    with zipfile.ZipFile(whl, "a") as z:
        z.writestr("fp_data-1.0.data/platlib/fp_data_ext/__init__.py", "X = 1\n")
    site_dir = tmp_path / "site"
    site_dir.mkdir()
    setup_gpu.unpack_wheel(whl, site_dir)
    assert (site_dir / "fp_data_ext" / "__init__.py").read_text() == "X = 1\n"
    assert not (site_dir / "fp_data-1.0.data").exists()
    with zipfile.ZipFile(whl, "a") as z:
        z.writestr("fp_data-1.0.data/scripts/tool", "#!/bin/sh\n")
    with pytest.raises(setup_gpu.SetupError, match="bring the pip wheel"):
        setup_gpu.unpack_wheel(whl, tmp_path / "other")


def test_a_failed_setup_leaves_no_venv(system_venv, tmp_path):
    (tmp_path / "wheels").mkdir()
    r = _setup(system_venv, "--venv", str(tmp_path / "v"), "--wheels", str(tmp_path / "wheels"),
               "--require", "fp_not_here")
    assert r.returncode == 1 and not (tmp_path / "v").exists()


def _make_targets() -> set[str]:
    import re

    return set(re.findall(r"^([a-z][a-z-]*):", (ROOT / "Makefile").read_text(), re.M))


def test_readme_gpu_block_uses_real_targets():
    """devjobs/gpu_fresh.sh runs this block as written: it must exist and name real targets."""
    from flashprof.profiling import doctor

    text = (ROOT / "README.md").read_text()
    block = text.split("<!-- gpu-setup")[1].split("<!-- /gpu-setup -->")[0]
    lines = [ln.split("#")[0].split() for ln in block.splitlines()[1:] if ln.strip() and not ln.startswith("```")]
    assert lines[0] == ["make", "setup", "GPU=1", "WHEELS=.whl"]
    assert all(words[0] == "make" and words[1] in _make_targets() for words in lines)
    assert set(doctor.TARGETS) <= _make_targets()


def test_gpu_venv_made_with_a_relative_path_works_from_any_directory(system_venv, tmp_path):
    """`make setup GPU=1` passes `--venv .venv`: the venv's .pth and its flashprof script must not
    keep that relative path (on the H200 `.venv/bin/flashprof` failed outside the checkout)."""
    work = tmp_path / "checkout-like"
    work.mkdir()
    code = (f"import sys; sys.path.insert(0, {str(ROOT)!r}); from flashprof.profiling.setup_gpu import main; "
            "sys.exit(main(sys.argv[1:]))")
    r = subprocess.run([str(system_venv), "-c", code, "--venv", "rel-venv", "--require", "fp_parentpkg"],
                       cwd=work, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    script = work / "rel-venv" / "bin" / "flashprof"
    assert script.read_text().startswith("#!/")
    r = subprocess.run([str(script), "--version"], cwd=elsewhere, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip(), r.stderr
    r = subprocess.run([str(work / "rel-venv" / "bin" / "python"), "-c", "import flashprof.paths as p; print(p.PACKAGE)"],
                       cwd=elsewhere, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and Path(r.stdout.strip()) == (ROOT / "flashprof").resolve(), r.stderr


def test_the_gpu_venv_offers_the_notebook_extra():
    """`make setup GPU=1 EXTRAS=notebook` installs pyproject's notebook extra on top of the GPU
    venv's requirements; an unknown extra is one line naming the known ones."""
    import tomllib
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = setup_gpu.requirements(extras=("notebook",))
    assert set(project["optional-dependencies"]["notebook"]) <= set(reqs)
    assert set(setup_gpu.requirements()) == set(reqs) - set(project["optional-dependencies"]["notebook"])
    with pytest.raises(setup_gpu.SetupError, match="unknown extra jupyterlab: pyproject.toml has .*notebook"):
        setup_gpu.requirements(extras=("jupyterlab",))
    make = (ROOT / "Makefile").read_text()
    assert '--extras "$$EXTRAS"' in make and "EXTRAS" in make.split("export ", 1)[1].splitlines()[0]


def test_notebook_without_jupyter_says_how_to_add_it(monkeypatch):
    import importlib.util
    from flashprof import verbs
    from flashprof.kernels.cli import FlashprofError
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    with pytest.raises(FlashprofError, match="make setup GPU=1 EXTRAS=notebook"):
        verbs.jupyter_command(Path("x.ipynb"), [])
