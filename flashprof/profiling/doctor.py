"""`make doctor`: what this machine has, on one screen, and what each make target lacks.

Input: the machine (nvidia-smi, nvcc, ncu, compute-sanitizer, the Python environment).
Output: text on stdout; nothing is written. Runs without a GPU too (and says so).

Whatever could crash or hang runs in a child process with a timeout: torch, the counter
test (one ncu run over a one-element torch kernel) and the report reader, which is tried
the way the analysis stage will use it (``flashprof.analysis.report.ncu_import``, run in the child, never
imported here) on the small probe report and on a full-set report: Nsight Compute
2025.3.1's bundled reader passed the first and crashed on the second under Python 3.12.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from flashprof.kernels.cli import ArgumentParser, FlashprofError, doc_summary
from flashprof.paths import PROBE_REPORT
from flashprof.profiling.env import ROOT, smi_clocks

VENV = ROOT / ".venv"
SETUP_FIX = "make setup GPU=1 [WHEELS=dir]"
PROBE = PROBE_REPORT


@dataclass
class Check:
    name: str
    ok: bool | None      # None: not tried (the reason is in detail)
    detail: str
    fix: str = ""


NO_RUN = -999  # _child's return code when the program timed out or could not start


def _child(args: list[str], timeout: float) -> tuple[int, str, str]:
    """(return code, stdout, stderr); a negative code other than NO_RUN is the signal that killed it."""
    try:
        r = subprocess.run(args, capture_output=True, text=True, timeout=timeout, cwd=ROOT)
    except subprocess.TimeoutExpired:
        return NO_RUN, "", f"timed out after {timeout:.0f} s"
    except OSError as e:
        return NO_RUN, "", str(e)
    return r.returncode, r.stdout, r.stderr


def _why(rc: int, err: str) -> str:
    if NO_RUN < rc < 0:
        return f"crashed (signal {-rc})"
    return (err.strip().splitlines() or [f"exit {rc}"])[-1]


def check_python() -> Check:
    """The venv make uses: the GPU one (`make setup GPU=1`), the CPU one (`make setup`), or none."""
    where = f"{sys.executable} (Python {sys.version.split()[0]})"
    if (VENV / ".flashprof-gpu").exists():
        return Check("python", True, f"{where}; .venv is the GPU venv")
    cfg = VENV / "pyvenv.cfg"
    if cfg.exists() and "include-system-site-packages = true" in cfg.read_text():
        return Check("python", False, f"{where}; .venv is an unfinished GPU venv", SETUP_FIX)
    if (VENV / "bin" / "python").exists():
        return Check("python", True, f"{where}; .venv is a CPU venv (on a GPU machine: rm -rf .venv; "
                                     f"{SETUP_FIX})")
    return Check("python", False, f"{where}; no .venv", SETUP_FIX + " or make setup (CPU)")


def check_gpu() -> Check:
    if not shutil.which("nvidia-smi"):
        return Check("GPU", False, "no GPU: nvidia-smi not found", "run on a machine with an NVIDIA GPU")
    name = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                          capture_output=True, text=True).stdout.strip().splitlines()
    c = smi_clocks()
    if not name or not c:
        return Check("GPU", False, "nvidia-smi found no GPU", "check the driver (nvidia-smi)")
    return Check("GPU", True, f"{name[0]}, driver {c['driver']}, SM {c['sm_mhz']}/{c['max_sm_mhz']} MHz, "
                              f"memory {c['mem_mhz']}/{c['max_mem_mhz']} MHz, {c['power_w']} W, {c['temp_c']} C")


def check_kernel7(gpu: Check) -> Check:
    """Which config `make profile KERNEL=7`, `make bench` and `load(7)` use on this GPU."""
    from flashprof.kernels.config import gpu_slug, variant, variant_origin

    slug = gpu_slug(gpu.detail.split(",")[0]) if gpu.ok else None
    return Check("kernel 7", True, f"{variant(7, slug).slug}: {variant_origin(7, slug)}")


def check_torch() -> Check:
    code = ("import json, torch; a = torch.cuda.is_available(); print(json.dumps([torch.__version__, "
            "torch.version.cuda, torch.cuda.get_device_name(0) if a else None]))")
    rc, out, err = _child([sys.executable, "-c", code], 120)
    if rc:
        return Check("torch", False, f"not usable: {_why(rc, err)}", SETUP_FIX)
    ver, cuda, dev = json.loads(out.strip().splitlines()[-1])
    if cuda is None:
        return Check("torch", False, f"{ver} without CUDA", "use the system's CUDA torch: " + SETUP_FIX)
    if dev is None:
        return Check("torch", False, f"{ver}, CUDA {cuda}, but no GPU visible", "run on a GPU machine")
    return Check("torch", True, f"{ver}, CUDA {cuda}, sees {dev}")


def check_tool(name: str, label: str, fix: str) -> Check:
    exe = shutil.which(name)
    if not exe:
        return Check(label, False, f"{name} not on PATH", fix)
    rc, out, err = _child([exe, "--version"], 60)
    lines = [ln.strip() for ln in (out + err).splitlines() if ln.strip()]
    m = re.search(r"(release [\d.]+, V[\d.]+|Version [\d.]+|^[\d.]+$)", "\n".join(lines), re.M)
    return Check(label, rc == 0, f"{m.group(0) if m else (lines or ['?'])[-1]} ({exe})", fix if rc else "")


def check_ncu() -> Check:
    from flashprof.profiling.ncu import find_ncu, ncu_version

    try:
        ncu = find_ncu()
        return Check("ncu", True, f"{ncu_version(ncu)} ({ncu})")
    except FlashprofError as e:
        return Check("ncu", False, str(e).split(":")[0], "install Nsight Compute or set FLASHPROF_NCU")


def check_counters(ncu: Check, torch: Check, skip: bool) -> Check:
    """One real ncu run: a one-element torch kernel, one metric."""
    from flashprof.profiling.ncu import diagnose, find_ncu

    if skip:
        return Check("counters", None, "not tried (--no-counters)")
    if not (ncu.ok and torch.ok):
        return Check("counters", None, "not tried: needs ncu and torch with a GPU")
    prog = "import torch; x = torch.ones(1, device='cuda'); x.add_(1); torch.cuda.synchronize()"
    cmd = [find_ncu(), "--metrics", "sm__cycles_elapsed.avg", "--launch-count", "1", "--csv",
           "--clock-control", "none",
           sys.executable, "-c", prog]
    t0 = time.perf_counter()
    rc, out, err = _child(cmd, 180)
    secs = time.perf_counter() - t0
    problem = _why(rc, err) if rc == NO_RUN else diagnose(out + err, rc)
    if problem:
        return Check("counters", False, problem, "see the line above")
    if "sm__cycles_elapsed.avg" not in out:
        return Check("counters", False, "ncu ran but reported no metric", "run the ncu command by hand")
    return Check("counters", True, f"readable: ncu read sm__cycles_elapsed.avg of one torch kernel "
                                   f"({secs:.1f} s)")


_READ = """import importlib.metadata as md, json, sys
from flashprof.analysis.report.ncu_import import ncu_report
m = ncu_report()
try:
    wheel = md.version("ncu-report")
except md.PackageNotFoundError:
    wheel = None
r = m.load_report(sys.argv[1])
a = r.range_by_idx(0).action_by_idx(0)
print(json.dumps([m.__file__, wheel, r.num_ranges(), len(a.metric_names())]))"""


def full_set_report() -> Path | None:
    hits = sorted((ROOT / "reports").glob("*/kernel6.ncu-rep")) or sorted((ROOT / "reports").glob("*/*.ncu-rep"))
    return hits[0] if hits else None


def check_ncu_report() -> Check:
    """Load the probe and a full-set report, each in its own child, as the analysis will."""
    reports = [p for p in (PROBE, full_set_report()) if p is not None and p.exists()]
    if not reports:
        return Check("ncu_report", None, "not tried: no report in analysis/data or reports/")
    read, source = [], "?"
    for rep in reports:
        rc, out, err = _child([sys.executable, "-c", _READ, str(rep)], 180)
        name = rep.relative_to(ROOT)
        if rc:
            return Check("ncu_report", False, f"{name}: {_why(rc, err)}",
                         SETUP_FIX + " (without a registry: ncu_report-*.whl in dir)")
        file, wheel, ranges, metrics = json.loads(out.strip().splitlines()[-1])
        bundled = "nsight-compute" in file.lower() or not wheel
        source = f"bundled with Nsight Compute ({Path(file).parent})" if bundled else f"wheel ncu-report {wheel}"
        read.append(f"{name} ({metrics} metrics)")
    return Check("ncu_report", True, f"{source}; read {' and '.join(read)} in a child process")


def check_import(modules: list[str], label: str, fix: str) -> Check:
    code = ("import importlib, sys; print(', '.join(f'{m} ' + getattr(importlib.import_module(m), "
            "'__version__', '') for m in sys.argv[1:]))")
    rc, out, err = _child([sys.executable, "-c", code, *modules], 60)
    if rc:
        return Check(label, False, f"not importable: {_why(rc, err)}", fix)
    return Check(label, True, out.strip())


def check_sass_tools() -> Check:
    from flashprof.kernels.toolchain import ToolchainError, find_toolchain

    try:
        tc = find_toolchain("nvcc", "cuobjdump", "nvdisasm")
        return Check("sass tools", True, ", ".join(f"{t} ({tc.origin[t]})" for t in ("nvcc", "cuobjdump", "nvdisasm")))
    except ToolchainError as e:
        return Check("sass tools", False, str(e).split(" (")[0], "make setup (CPU: the CUDA wheels)")


_BUILD = ["python", "GPU", "torch", "nvcc", "ninja"]
TARGETS = {
    "test": ["python", "pytest"],
    "figures": ["python", "plotting", "ncu_report"],
    "summary": ["python", "plotting", "ncu_report"],
    "build": _BUILD,
    "bench": _BUILD,
    "tune": _BUILD,
    "profile": _BUILD + ["ncu", "counters", "ncu_report", "plotting"],
    "gpu-session": _BUILD + ["ncu", "counters", "ncu_report", "plotting", "compute-sanitizer", "pytest"],
    "sass": ["python", "sass tools"],
    "notebook": ["python", "jupyter"],
}


def run_checks(counters: bool = True) -> dict[str, Check]:
    checks = [check_python(), check_gpu(), check_torch(),
              check_tool("nvcc", "nvcc", "install the CUDA toolkit (nvcc on PATH)"),
              check_tool("ninja", "ninja", "put ninja on PATH or " + SETUP_FIX), check_ncu()]
    c = {k.name: k for k in checks}
    c["counters"] = check_counters(c["ncu"], c["torch"], skip=not counters)
    c["kernel 7"] = check_kernel7(c["GPU"])
    for k in (check_tool("compute-sanitizer", "compute-sanitizer", "install the CUDA toolkit"),
              check_ncu_report(),
              check_import(["matplotlib", "pandas"], "plotting", SETUP_FIX),
              check_import(["pytest"], "pytest", SETUP_FIX),
              check_import(["jupyter_core"], "jupyter", "make setup (CPU: the notebook extra)"),
              check_sass_tools()):
        c[k.name] = k
    return c


def target_lines(c: dict[str, Check]) -> list[str]:
    lines = []
    for target, needs in TARGETS.items():
        missing = [n for n in needs if c[n].ok is not True]
        if not missing:
            lines.append(f"  {target:12s} ready")
            continue
        # Without a GPU the other fixes are moot: say only that.
        fixes = list(dict.fromkeys(c[n].fix for n in (["GPU"] if "GPU" in missing else missing) if c[n].fix))
        fixes = [f for f in fixes if not any(f != g and f in g for g in fixes)]  # the longer one says it
        lines.append(f"  {target:12s} missing {', '.join(missing)}" + (f" -> {'; '.join(fixes)}" if fixes else ""))
    return lines


def render(c: dict[str, Check]) -> str:
    mark = {True: "ok", False: "NO", None: "--"}
    lines = [f"flashprof doctor ({os.uname().nodename})"]
    lines += [f"  {mark[k.ok]:2s} {k.name:17s} {k.detail}" for k in c.values()]
    lines.append("make targets:")
    lines += target_lines(c)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    p = ArgumentParser(prog="flashprof doctor", description=doc_summary(__doc__))
    p.add_argument("--no-counters", action="store_true", help="skip the ncu run that tests counter access")
    args = p.parse_args(argv)
    print(render(run_checks(counters=not args.no_counters)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
