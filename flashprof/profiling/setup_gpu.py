"""`make setup GPU=1 [WHEELS=dir]`: the venv every GPU target runs in.

Input: the interpreter running this (the GPU machine's ``python3``, which has CUDA torch),
pyproject.toml's requirements (base + ``gpu`` extra) and, on a machine without a package
registry, a folder of wheels. Output: ``.venv`` that sees that interpreter's packages, with
what is missing installed into it, flashprof on its path, and the stamp ``.venv/.flashprof-gpu``.

Standard library only: it runs before anything is installed.

``--system-site-packages`` alone is not enough when ``python3`` is itself a venv (as on the
project's H200 machine, /opt/torch/.venv): the new venv then sees the *base* interpreter's
site-packages, not the ones holding torch. So the creating interpreter's site-packages are
listed in a .pth file too. flashprof itself goes on the path the way an editable install
does (a .pth naming a folder that links to the checkout's flashprof/ alone), which needs no
build backend and no setuptools wheel; .venv/bin/flashprof is the console command.
"""
from __future__ import annotations

import json
import platform
import re
import shutil
import site
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

from flashprof.kernels.cli import ArgumentParser, FlashprofError, run_cli, doc_summary

from flashprof.paths import ROOT  # noqa: E402
STAMP = ".flashprof-gpu"
PARENT_PTH = "_flashprof_parent_site.pth"
SELF_PTH = "_flashprof_repo.pth"
# Import names that differ from the distribution name.
MODULES = {"ncu-report": "ncu_report"}


class SetupError(FlashprofError):
    """One line for the user, then exit 1."""

    exit_code = 1


def requirements(pyproject: Path = ROOT / "pyproject.toml", extras: tuple[str, ...] = ()) -> list[str]:
    """The base dependencies, the ``gpu`` extra and any further ``extras`` (e.g. ``notebook``),
    as written in pyproject.toml; an unknown extra is a SetupError naming the known ones."""
    try:
        import tomllib
    except ImportError:  # Python 3.10
        from pip._vendor import tomli as tomllib
    project = tomllib.loads(pyproject.read_text())["project"]
    optional = project["optional-dependencies"]
    unknown = [e for e in extras if e not in optional]
    if unknown:
        raise SetupError(f"unknown extra {', '.join(unknown)}: pyproject.toml has {', '.join(sorted(optional))}")
    reqs = list(project["dependencies"]) + list(optional["gpu"])
    for e in extras:
        reqs += [r for r in optional[e] if r not in reqs]
    return reqs


def dist_name(req: str) -> str:
    return re.split(r"[\s<>=!~;\[]", req.strip(), maxsplit=1)[0]


def _norm(name: str) -> str:
    """PEP 503 name, as wheel file names spell it ('ncu-report' -> 'ncu_report')."""
    return re.sub(r"[-_.]+", "_", name).lower()


def make_venv(path: Path) -> Path:
    """Create (or reuse) a venv at ``path`` that sees this interpreter's packages; returns its python."""
    path = path.resolve()  # absolute: its script's #! line and its .pth work from any directory
    cfg = path / "pyvenv.cfg"
    if cfg.exists() and "include-system-site-packages = true" not in cfg.read_text():
        raise SetupError(f"{path} exists but cannot see the system's packages (a CPU venv from "
                         f"'make setup'?): remove it (rm -rf {path}) and run 'make setup GPU=1' again")
    venv.EnvBuilder(system_site_packages=True, with_pip=False, symlinks=True).create(path)
    py = path / "bin" / "python"
    site_dir = Path(_child(py, "import sysconfig; print(sysconfig.get_paths()['purelib'])"))
    parent = site.getsitepackages() if sys.prefix != sys.base_prefix else []
    # addsitedir, not a bare path: the parent's own .pth files (editable installs...) count too.
    (site_dir / PARENT_PTH).write_text("".join(f"import site; site.addsitedir({d!r})\n" for d in parent))
    # Only the package `flashprof` goes on the path (a folder holding a link to it), never the
    # checkout root: its kernels/, profiling/ and analysis/ must not shadow PyPI packages of
    # those names (Hugging Face's `kernels`, for one).
    src = path / "flashprof-src"
    src.mkdir(exist_ok=True)
    link = src / "flashprof"
    if link.is_symlink() or link.exists():
        link.unlink()
    link.symlink_to(ROOT / "flashprof", target_is_directory=True)
    (site_dir / SELF_PTH).write_text(f"{src}\n")
    script = path / "bin" / "flashprof"  # the console command, as pip would write it
    script.write_text(f"#!{py}\nimport sys\nfrom flashprof.verbs import main\nsys.exit(main())\n")
    script.chmod(0o755)
    return py


def _child(py: Path, code: str, *args: str) -> str:
    r = subprocess.run([str(py), "-c", code, *args], capture_output=True, text=True, timeout=300)
    if r.returncode:
        last = (r.stderr.strip().splitlines() or [f"exit {r.returncode}"])[-1]
        raise SetupError(f"{py} failed: {last}")
    return r.stdout.strip()


_FIND = """import importlib.metadata as m, importlib.util as u, json, sys
out = {}
for dist, mod in zip(sys.argv[1::2], sys.argv[2::2]):
    try:
        d = m.distribution(dist)
        out[dist] = [d.version, str(d.locate_file(""))] if u.find_spec(mod) else None
    except m.PackageNotFoundError:
        out[dist] = None
print(json.dumps(out))"""


def installed(py: Path, reqs: list[str]) -> dict[str, list[str] | None]:
    """dist name -> [version, where] as the venv sees it, or None when missing."""
    names = [dist_name(r) for r in reqs]
    args = [a for n in names for a in (n, MODULES.get(n, _norm(n)))]
    return json.loads(_child(py, _FIND, *args))


def wheel_for(wheels: Path, name: str) -> Path | None:
    found = sorted(wheels.glob(f"{_norm(name)}-*.whl"), key=lambda p: p.name.lower())
    return found[-1] if found else None


def bring_hint(reqs: list[str], py_version: str, wheels: Path) -> str:
    """The exact command that fetches those wheels (and their dependencies) elsewhere."""
    names = ", ".join(dist_name(r) for r in reqs)
    arch = platform.machine()
    quoted = " ".join(f"'{r}'" if re.search(r"[<>=!;\[ ]", r) else r for r in reqs)
    return (f"bring wheels for {names} (Python {py_version}, linux {arch}): on a machine with a "
            f"registry run 'pip download --only-binary=:all: --python-version {py_version} "
            f"--platform manylinux_2_28_{arch} --platform manylinux2014_{arch} -d {wheels.name} "
            f"{quoted}' and carry {wheels.name}/ here")


def pip_cmd(py: Path) -> list[str] | None:
    """A pip that installs into the venv: one it sees (its parent's), else ensurepip's, else None."""
    for attempt in ([], [str(py), "-m", "ensurepip", "-q"]):
        if attempt:
            subprocess.run(attempt, capture_output=True)
        if subprocess.run([str(py), "-m", "pip", "--version"], capture_output=True).returncode == 0:
            return [str(py), "-m", "pip"]
    return None


def unpack_wheel(wheel: Path, site_dir: Path) -> None:
    """Install a wheel without pip, as the wheel spec says for a venv (purelib = platlib =
    site-packages): unpack it there, moving ``<name>.data/purelib|platlib/`` up, and mark the
    installer. Scripts, headers or data files need pip. Dependencies are checked afterwards."""
    with zipfile.ZipFile(wheel) as z:
        members = [m for m in z.infolist() if not m.is_dir()]
        for m in members:
            top, _, rest = m.filename.partition("/")
            if top.endswith(".data"):
                kind, _, rest = rest.partition("/")
                if kind not in ("purelib", "platlib"):
                    raise SetupError(f"no pip to install {wheel.name} (it has {kind} files): bring "
                                     "the pip wheel (pip-*-py3-none-any.whl) in WHEELS too")
                m.filename = rest
            target = (site_dir / m.filename).resolve()
            if site_dir.resolve() not in target.parents:
                raise SetupError(f"{wheel.name}: member {m.filename} would land outside site-packages")
            z.extract(m, site_dir)
            if m.external_attr >> 16 & 0o111:  # keep shared objects and scripts executable
                target.chmod(target.stat().st_mode | 0o755)
    info = next(m.filename.split("/")[0] for m in members if m.filename.split("/")[0].endswith(".dist-info"))
    (site_dir / info / "INSTALLER").write_text("flashprof-setup-gpu\n")


def install(py: Path, reqs: list[str], wheels: Path | None, say=print) -> None:
    """Install the requirements the venv lacks, from ``wheels`` only when given."""
    have = installed(py, reqs)
    missing = [r for r in reqs if have[dist_name(r)] is None]
    if not missing:
        return
    py_version = _child(py, "import sys; print('%d.%d' % sys.version_info[:2])")
    if wheels is not None:
        if not wheels.is_dir():
            raise SetupError(f"WHEELS={wheels} is not a folder")
        absent = [r for r in missing if wheel_for(wheels, dist_name(r)) is None]
        if absent:
            raise SetupError(f"{', '.join(map(dist_name, absent))} not installed and no wheel in "
                             f"{wheels}; {bring_hint(absent, py_version, wheels)}")
    say(f"installing {', '.join(missing)}" + (f" from {wheels}" if wheels else ""))
    pip = pip_cmd(py)
    if pip is None and wheels is not None:
        site_dir = Path(_child(py, "import sysconfig; print(sysconfig.get_paths()['purelib'])"))
        for r in missing:
            unpack_wheel(wheel_for(wheels, dist_name(r)), site_dir)
        return
    if pip is None:
        raise SetupError("no pip for the venv (neither its parent's nor ensurepip): pass WHEELS=dir")
    where = ["--no-index", "--find-links", str(wheels)] if wheels is not None else []
    r = subprocess.run([*pip, "install", "-q", "--disable-pip-version-check", *where, *missing],
                       capture_output=True, text=True)
    if r.returncode:
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()] or [f"pip exit {r.returncode}"]
        raise SetupError(f"pip could not install {', '.join(missing)}: {lines[-1].strip()}"
                         + (" (a wheel's own dependencies must be in WHEELS too)" if wheels else ""))


def setup(venv_dir: Path, wheels: Path | None, reqs: list[str], say=print) -> dict:
    py = make_venv(venv_dir)
    install(py, reqs, wheels, say)
    have = installed(py, reqs)
    still = [n for n, v in have.items() if v is None]
    if still:
        raise SetupError(f"still missing after install: {', '.join(still)}")
    _child(py, "import flashprof.kernels.config, flashprof.profiling.env")  # flashprof is on the venv's path
    (venv_dir / STAMP).write_text(json.dumps(have, indent=1) + "\n")
    return have


def main(argv: list[str] | None = None) -> int:
    p = ArgumentParser(prog="flashprof setup-gpu", description=doc_summary(__doc__))
    p.add_argument("--venv", type=Path, default=ROOT / ".venv", help="the venv to make (default: %(default)s)")
    p.add_argument("--wheels", default="", help="install only from this folder (no registry)")
    p.add_argument("--require", action="append", default=None,
                   help="requirement (repeatable); default: pyproject's dependencies + the gpu extra")
    p.add_argument("--extras", default="",
                   help="further pyproject extras, comma list (e.g. notebook: Jupyter for make notebook)")
    args = p.parse_args(argv)
    extras = tuple(e.strip() for e in args.extras.split(",") if e.strip())
    wheels = Path(args.wheels).resolve() if args.wheels else None
    fresh = not args.venv.exists()

    def body() -> int:
        try:
            have = setup(args.venv, wheels, args.require or requirements(extras=extras))
        except SetupError:
            if fresh:  # leave no half-made venv behind for the GPU targets to run in
                shutil.rmtree(args.venv, ignore_errors=True)
            raise
        _ready(args.venv, have)
        return 0

    return run_cli("setup GPU=1", body)


def _ready(venv: Path, have: dict) -> None:
    print(f"GPU venv ready: {venv} (python {sys.version.split()[0]}); "
          + ", ".join(f"{n} {v[0]}" for n, v in have.items()))
    print("next: make doctor")


if __name__ == "__main__":
    sys.exit(main())
