"""Nsight Compute runs without a GPU: a fake ncu (progress, failures) and profile_all over it,
for the series' kernels and user targets (split from test_profiling_cli.py)."""
from __future__ import annotations

import argparse
import io
import os
import re
import stat
import sys
import time
from pathlib import Path

import pytest

from flashprof.profiling import ncu as ncu_mod
from flashprof.kernels.cli import FlashprofError
from flashprof.profiling.ncu import (ROOFLINE_SECTIONS, NcuOptions, diagnose, find_ncu, ncu_command, retire, run_ncu)
from flashprof.profiling.profile import check_seq, report_stem
from test_profiling_cli import MTIME, _report  # a report + sidecar pair with a fixed mtime

PROGRAM = [sys.executable, "-m", "flashprof.profiling.ncu_program", "6", "--batch", "16", "--seq", "4096"]


def _tail(out: Path) -> list[str]:
    """Everything after the section choice for the default options."""
    return ["--clock-control", "none", "--cache-control", "all", "--import-source", "yes",
            "--nvtx", "--nvtx-include", "flashprof/", "--kernel-name", "regex:flash_fwd_kernel",
            "--launch-count", "1", "--export", str(out), *PROGRAM]


# ------------------------------------------------------------------ fake ncu
FAKE_NCU = r'''#!{python}
"""A stand-in for Nsight Compute: FAKE_NCU_MODE picks what it does."""
import os, sys, time
mode = os.environ.get("FAKE_NCU_MODE", "ok")
args = sys.argv[1:]
if args == ["--version"]:
    print("NVIDIA (R) Nsight Compute Command Line Profiler\nCopyright (c) 2018-2025 NVIDIA Corporation\n"
          "Version 2025.1.1.0 (build 35528883) (public-release)")
    sys.exit(0)
w = sys.stdout.write
w("==PROF== Connected to process 4242 (/usr/bin/python3)\n"); sys.stdout.flush()
if mode == "slow":  # a long replay: the caller must stop it
    time.sleep(60)
# The profiled program's correctness gate (ncu_program --verdict FILE), before the range:
# FAKE_NCU_GATE=ok|fail|silent (silent: the program wrote no verdict).
if "--verdict" in args:
    gate = os.environ.get("FAKE_NCU_GATE", "ok")
    verdict = {{"ok": gate != "fail", "max_err": 0.5 if gate == "fail" else 1.0e-3, "ref_err": 2.0e-3,
               "unwritten": 0, "reason": "max error 5.000e-01 > 2 x low-precision PyTorch error 2.000e-03"
               if gate == "fail" else ""}}
    if gate != "silent":
        import json
        with open(args[args.index("--verdict") + 1], "w") as f:
            json.dump({{"label": "fake", "verdict": verdict, "seconds": 0.25}}, f)
    if gate == "fail":
        w("target: error: kernel fails the correctness check; refusing to continue\n")
        w("==PROF== Disconnected from process 4242\n==WARNING== No kernels were profiled.\n")
        sys.exit(3)
if mode == "perm":
    w("==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU Performance "
      "Counters on the target device 0. For instructions on enabling permissions, see "
      "https://developer.nvidia.com/ERR_NVGPUCTRPERM\n")
    sys.exit(1)
if mode == "nokernel":
    w("==PROF== Disconnected from process 4242\n==WARNING== No kernels were profiled.\n")
    sys.exit(0)
if mode == "crash":
    w("==ERROR== The application returned an error code (11).\n")
    sys.exit(11)
# ncu draws replay progress on one line, without newlines, as passes complete.
# FAKE_NCU_SEEN=DIR: go on after "0%" and "50%" only once the caller has shown each (a
# file DIR/<pct> it creates), so the run completes only if progress is relayed live.
seen = os.environ.get("FAKE_NCU_SEEN")


def wait_shown(pct):
    if not seen:  # pace like a real replay, so each percentage arrives in its own read
        time.sleep(0.3)
        return
    for _ in range(200):
        if os.path.exists(os.path.join(seen, pct)):
            return
        time.sleep(0.05)
    w(f"==ERROR== {{pct}}% progress was not shown while ncu ran\n"); sys.exit(3)


w('==PROF== Profiling "flash_fwd_kernel" - 0: 0%'); sys.stdout.flush(); wait_shown("0")
w("....50%"); sys.stdout.flush(); wait_shown("50")
w("....100% - 38 passes\n"); sys.stdout.flush()
if mode == "many":  # a user target whose call launched more kernels
    for i, name in enumerate(("softmax_kernel", "gemm_kernel"), 1):
        w(f'==PROF== Profiling "{{name}}" - {{i}}: 0%....50%....100% - 38 passes\n')
out = args[args.index("--export") + 1]
out = out if out.endswith(".ncu-rep") else out + ".ncu-rep"
copy = os.environ.get("FAKE_NCU_COPY")  # a real report's bytes, for the analysis stage
if mode != "noreport":
    if copy:
        with open(copy, "rb") as src, open(out, "wb") as f:
            f.write(src.read())
    else:
        with open(out, "w") as f:
            f.write("NEW REPORT " + " ".join(args))
w("==PROF== Disconnected from process 4242\n")
w(f"==PROF== Report: {{out}}\n")
'''


@pytest.fixture
def fake_ncu(tmp_path) -> Path:
    path = tmp_path / "fakebin" / "ncu"
    path.parent.mkdir()
    path.write_text(FAKE_NCU.format(python=sys.executable))
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


class _Marks(io.StringIO):
    """A stream that creates ``folder/<pct>`` as soon as a "replaying <pct>%" line is written."""

    def __init__(self, folder: Path):
        super().__init__()
        self.folder = folder

    def write(self, text):
        m = re.search(r"replaying (\d+)%", text)
        if m:
            (self.folder / m.group(1)).touch()
        return super().write(text)


def test_fake_ncu_progress_is_live(fake_ncu, tmp_path, monkeypatch):
    # The fake ncu waits (10 s at most, then fails) for the files the stream creates on
    # "replaying 0%" and "50%": it finishes only if progress is relayed while ncu runs.
    flag = tmp_path / "seen"
    flag.mkdir()
    monkeypatch.setenv("FAKE_NCU_MODE", "ok")
    monkeypatch.setenv("FAKE_NCU_SEEN", str(flag))
    out = tmp_path / "kernel6"
    cmd = ncu_command(str(fake_ncu), NcuOptions(output=out, kernel_regex="flash_fwd_kernel"), ["prog"])
    stream = _Marks(flag)
    text, secs = run_ncu(cmd, "kernel6", stream=stream)
    lines = stream.getvalue().splitlines()
    pat = re.compile(r"^  \[kernel6\] (.+) \.\.\. +(\d+\.\d)s$")
    parsed = [pat.match(ln) for ln in lines]
    assert all(parsed), lines
    msgs = [m.group(1) for m in parsed]
    assert msgs == ["replaying 0%", "replaying 50%", "replayed 38 passes", f"Report: {out}.ncu-rep"]
    elapsed = [float(m.group(2)) for m in parsed]
    assert elapsed == sorted(elapsed) and secs >= elapsed[-1] - 0.05
    assert "==PROF== Profiling" in text and (tmp_path / "kernel6.ncu-rep").read_text().startswith("NEW REPORT")


@pytest.mark.parametrize("mode,expected", [
    ("perm", "ncu may not read the GPU performance counters (ERR_NVGPUCTRPERM): run as root, or load the "
             "driver with NVreg_RestrictProfilingToAdminUsers=0 (see NVIDIA's ERR_NVGPUCTRPERM page)"),
    ("nokernel", "ncu profiled no kernel: the NVTX range or the kernel-name filter matched nothing "
                 "(is the target's kernel name what the filter expects?)"),
    ("crash", "ncu failed (exit 11): ==ERROR== The application returned an error code (11)."),
])
def test_fake_ncu_failures_are_one_line(fake_ncu, tmp_path, monkeypatch, mode, expected):
    monkeypatch.setenv("FAKE_NCU_MODE", mode)
    cmd = ncu_command(str(fake_ncu), NcuOptions(output=tmp_path / "r", kernel_regex="k"), ["prog"])
    with pytest.raises(FlashprofError) as e:
        run_ncu(cmd, "kernel6", stream=io.StringIO())
    assert str(e.value) == expected


def test_run_ncu_cannot_start(tmp_path):
    with pytest.raises(FlashprofError, match="cannot start ncu"):
        run_ncu([str(tmp_path / "no-such-ncu")], "x", stream=io.StringIO())


def test_ncu_version_from_fake(fake_ncu):
    assert ncu_mod.ncu_version(str(fake_ncu)) == "2025.1.1.0"


# --------------------------------------------------- profile_all with a fake ncu
@pytest.fixture
def fake_machine(monkeypatch):
    """Everything profile_all asks of the GPU machine, answered on the CPU."""
    from flashprof.profiling import env, targets

    monkeypatch.setattr(env, "gpu_info", lambda: {"name": "NVIDIA H200", "slug": "h200", "driver": "570"})
    monkeypatch.setattr(env, "smi_clocks", lambda: {})
    monkeypatch.setattr(env, "software", lambda: {"torch": "fake"})
    monkeypatch.setattr(env, "git_info", lambda: {"revision": "abc", "dirty": False})
    monkeypatch.setattr(targets.Target, "callable", lambda self: (lambda q, k, v, out=None: out))


def _args(tmp_path, **kw):
    base = dict(out_dir=tmp_path / "reports", paths_file=tmp_path / "build" / "paths.txt",
                section_set="full", clock_control="none", no_gate=True, dtype="fp16")
    base.update(kw)
    return argparse.Namespace(**base)


def test_profile_all_fake_ncu_keeps_old_report(fake_ncu, fake_machine, tmp_path, monkeypatch, capsys):
    from flashprof.profiling.profile import profile_all
    from flashprof.profiling.workload import Shape

    monkeypatch.setenv("FAKE_NCU_MODE", "ok")
    args = _args(tmp_path)
    args.out_dir.mkdir()
    args.paths_file.parent.mkdir()
    _report(args.out_dir, "ref", "OLD", MTIME)
    assert profile_all(["ref"], Shape(16, 4096), args, str(fake_ncu)) == 0
    rep = args.out_dir / "ref.ncu-rep"
    assert rep.read_text().startswith("NEW REPORT")
    assert (args.out_dir / "history" / "ref.20250102T030405.ncu-rep").read_text() == "OLD"
    assert (args.out_dir / "history" / "ref.20250102T030405.json").read_text() == '{"sidecar": "OLD"}'
    import json

    side = json.loads((args.out_dir / "ref.json").read_text())
    assert side["target_key"] == side["kernel"] == "ref" and side["ncu"]["version"] == "2025.1.1.0"
    assert side["shape"] == {"batch": 16, "seq": 4096, "heads": 16, "d_head": 128}
    assert args.paths_file.read_text() == f"{rep}\n"
    assert list(args.out_dir.glob("*.ncu-rep")) == [rep]  # no half-written report is visible
    err = capsys.readouterr().err
    assert "[1/1 ref]" in err and "replaying 50%" in err and "previous report kept as" in err


@pytest.mark.parametrize("mode", ["perm", "noreport"])
def test_profile_all_failed_ncu_leaves_reports_alone(fake_ncu, fake_machine, tmp_path, monkeypatch, mode):
    from flashprof.profiling.profile import profile_all
    from flashprof.profiling.workload import Shape

    monkeypatch.setenv("FAKE_NCU_MODE", mode)
    args = _args(tmp_path)
    args.out_dir.mkdir()
    _report(args.out_dir, "ref", "OLD", MTIME)
    with pytest.raises(FlashprofError) as e:
        profile_all(["ref"], Shape(16, 4096), args, str(fake_ncu))
    assert "\n" not in str(e.value)
    assert (args.out_dir / "ref.ncu-rep").read_text() == "OLD"
    assert (args.out_dir / "ref.json").exists() and not (args.out_dir / "history").exists()


def test_profile_all_checks_tuned_tile_before_profiling(fake_ncu, fake_machine, tmp_path):
    from flashprof.profiling.profile import profile_all
    from flashprof.profiling.workload import Shape

    args = _args(tmp_path)
    with pytest.raises(FlashprofError, match="largest tile"):
        profile_all(["6", "7"], Shape(16, 192), args, str(fake_ncu))
    assert not list(args.out_dir.rglob("*.ncu-rep"))  # refused before anything ran


def test_two_profiles_in_a_row_both_complete(fake_ncu, fake_machine, tmp_path, monkeypatch):
    """`make profile KERNEL=7` then `KERNEL=6` (the H200 hang of issue 33), as far as a CPU
    can run it: both in one process, kernel 6 cold (it must build) after kernel 7, each under
    a time limit; both reports and sidecars land."""
    import threading

    from flashprof.profiling import profile
    from flashprof.profiling.profile import profile_all
    from flashprof.profiling.workload import Shape

    monkeypatch.setenv("FAKE_NCU_MODE", "ok")
    monkeypatch.setattr(profile, "_built", lambda cfg: False)  # cold: the build-in-this-process path
    # the analysis stays on (the background thread imports it while this one "builds"); only its
    # last step, which would parse the fake reports, is left out
    monkeypatch.setattr(profile, "analyse", lambda paths, machine, stream: machine.join_preload(60) and {})
    args = _args(tmp_path, no_analysis=False)
    args.out_dir.mkdir()
    args.paths_file.parent.mkdir()
    done = []
    for name in ("7", "6"):
        t = threading.Thread(target=lambda n=name: done.append(profile_all([n], Shape(16, 4096), args, str(fake_ncu))),
                             daemon=True)
        t.start()
        t.join(120)
        assert not t.is_alive(), f"make profile KERNEL={name} did not finish in 120 s"
    assert done == [0, 0]
    for stem in ("kernel7", "kernel6"):
        assert (args.out_dir / f"{stem}.ncu-rep").read_text().startswith("NEW REPORT")
        assert (args.out_dir / f"{stem}.json").is_file()


def test_build_progress_format(capsys):
    from flashprof.kernels.build import _progress

    _progress(3, 7, "built d128_br64 in 41.2s")
    assert capsys.readouterr().out == "[3/7] built d128_br64 in 41.2s\n"



# -------------------------------------------------------------- user targets
@pytest.fixture
def user_file(tmp_path):
    f = tmp_path / "src" / "my_attn.py"
    f.parent.mkdir()
    f.write_text('def attention(q, k, v):\n    """Mine."""\n    return q\n')
    return f


def test_profile_all_user_target(fake_ncu, fake_machine, user_file, tmp_path, monkeypatch):
    import hashlib
    import json

    from flashprof.profiling import profile
    from flashprof.profiling.workload import Shape

    monkeypatch.setenv("FAKE_NCU_MODE", "many")
    monkeypatch.setattr(profile, "precount", lambda *a: ["flash_fwd_kernel", "softmax_kernel", "gemm_kernel"])
    args = _args(tmp_path, kernel_regex=None, max_launches=3)
    args.paths_file.parent.mkdir()
    spec = f"{user_file}:attention"
    assert profile.profile_all([spec], Shape(2, 1024, 4), args, str(fake_ncu)) == 0
    rep = args.out_dir / "my_attn-attention_s1024_b2_h4_fp16_full.ncu-rep"
    assert rep.read_text().startswith("NEW REPORT")
    cmd = rep.read_text().split()
    assert cmd[cmd.index("--kernel-name") + 1] == "regex:.*" and cmd[cmd.index("--launch-count") + 1] == "4"
    i = cmd.index("flashprof.profiling.ncu_program")
    assert cmd[i + 1:i + 3] == [spec, "--batch"]
    side = json.loads(rep.with_name("my_attn-attention_s1024_b2_h4_fp16_full.json").read_text())
    assert side["target_key"] == side["kernel"] == "my_attn-attention" and side["title"] == "my_attn-attention: Mine."
    assert side["ncu"]["profiled_kernels"] == ["flash_fwd_kernel", "softmax_kernel", "gemm_kernel"]
    assert side["ncu"]["launch_count"] == 4 and side["ncu"]["kernel_regex"] == ".*"
    t = side["target"]
    assert t["spec"] == spec and t["file"] == str(user_file) and t["max_launches"] == 3
    assert t["sha256"] == hashlib.sha256(user_file.read_bytes()).hexdigest() and t["layout"] == "bshd"


def test_profile_all_user_target_over_limit_writes_nothing(fake_ncu, fake_machine, user_file, tmp_path,
                                                           monkeypatch):
    """ncu's count is the authority: 3 kernels in the range with MAX_LAUNCHES=2 is refused."""
    from flashprof.profiling import profile
    from flashprof.profiling.workload import Shape

    monkeypatch.setenv("FAKE_NCU_MODE", "many")
    monkeypatch.setattr(profile, "precount", lambda *a: None)  # the PyTorch profiler saw nothing
    args = _args(tmp_path, kernel_regex="kernel$", max_launches=2)
    with pytest.raises(FlashprofError) as e:
        profile.profile_all([f"{user_file}:attention"], Shape(2, 1024, 4), args, str(fake_ncu))
    assert str(e.value) == (f"target {user_file}:attention launched 3 kernels in one call (flash_fwd_kernel, "
                            "softmax_kernel, gemm_kernel), more than MAX_LAUNCHES=2: raise MAX_LAUNCHES or pick "
                            "some with KERNEL_REGEX=")
    assert [p for p in args.out_dir.rglob("*") if p.is_file()] == []


# ------------------------------------------------ the gate inside the profiled program
def _gated(tmp_path, **kw):
    return _args(tmp_path, no_gate=False, paths_file=None, **kw)


def _program(cmd: list[str]) -> list[str]:
    return cmd[cmd.index("flashprof.profiling.ncu_program") + 1:]


@pytest.fixture
def warm_build(monkeypatch):
    """Kernels 1-7 already built: this process never loads one (nor imports torch)."""
    from flashprof.profiling import profile, targets

    monkeypatch.setattr(profile, "_built", lambda cfg, slug=None: True)
    monkeypatch.setattr(targets.Target, "callable",
                        lambda self: pytest.fail("the profiling process loaded the kernel"))


def test_gate_runs_in_the_profiled_program(fake_ncu, fake_machine, warm_build, tmp_path, monkeypatch):
    import json

    from flashprof.profiling.profile import profile_all
    from flashprof.profiling.workload import Shape

    monkeypatch.setenv("FAKE_NCU_MODE", "ok")
    monkeypatch.setenv("FAKE_NCU_GATE", "ok")
    args = _gated(tmp_path)
    assert profile_all(["6"], Shape(16, 4096), args, str(fake_ncu)) == 0
    rep = args.out_dir / "kernel6.ncu-rep"
    cmd = rep.read_text().split()[2:]  # the fake ncu wrote its argv after "NEW REPORT"
    prog = _program(cmd)
    verdict_path = Path(prog[prog.index("--verdict") + 1])
    assert prog[0] == "6" and verdict_path.parent == args.out_dir / ".incomplete"
    assert cmd[cmd.index("--nvtx-include") + 1] == "flashprof/"  # only the range is profiled
    assert not verdict_path.exists()  # its content went into the sidecar
    side = json.loads((args.out_dir / "kernel6.json").read_text())
    assert side["correctness"] == {"ok": True, "max_err": 1.0e-3, "ref_err": 2.0e-3, "unwritten": 0, "reason": ""}
    assert side["correctness_where"] == "the profiled program, before the NVTX range"
    assert side["ncu"]["args"][-2:] == ["--verdict", str(verdict_path)]
    assert sorted(p.name for p in args.out_dir.rglob("*") if p.is_file()) == ["kernel6.json", "kernel6.ncu-rep"]


def test_no_gate_passes_no_verdict(fake_ncu, fake_machine, warm_build, tmp_path, monkeypatch):
    from flashprof.profiling.profile import profile_all
    from flashprof.profiling.workload import Shape

    monkeypatch.setenv("FAKE_NCU_GATE", "fail")  # would refuse, were the gate run
    args = _args(tmp_path, paths_file=None)  # no_gate=True
    assert profile_all(["6"], Shape(16, 4096), args, str(fake_ncu)) == 0
    assert "--verdict" not in (args.out_dir / "kernel6.ncu-rep").read_text().split()


def test_gate_failure_in_the_program_is_one_line_and_lands_nothing(fake_ncu, fake_machine, warm_build, tmp_path,
                                                                   monkeypatch, capsys):
    from flashprof.profiling.profile import profile_all
    from flashprof.profiling.workload import Shape

    monkeypatch.setenv("FAKE_NCU_GATE", "fail")
    args = _gated(tmp_path)
    args.out_dir.mkdir()
    _report(args.out_dir, "kernel6", "OLD", MTIME)
    before = {p: p.read_bytes() for p in args.out_dir.rglob("*") if p.is_file()}
    with pytest.raises(FlashprofError) as e:
        profile_all(["6"], Shape(16, 4096), args, str(fake_ncu))
    # the refusal the parent gate used to raise, from the verdict the program wrote
    assert str(e.value) == ("kernel 6: FP32 instruction fusion fails the correctness check at 16x4096x16x128 fp16: "
                            "max error 5.000e-01 > 2 x low-precision PyTorch error 2.000e-03; refusing to continue")
    after = {p: p.read_bytes() for p in args.out_dir.rglob("*") if p.is_file()}
    assert after == before  # the old report and sidecar as they were, nothing in history/ or .incomplete/
    assert not (args.out_dir / ".incomplete").exists()


def test_gate_failure_exits_nonzero_with_one_line(fake_ncu, fake_machine, warm_build, tmp_path, monkeypatch,
                                                  capsys):
    """Through main(): exit 2, one error line on stderr, no traceback."""
    from flashprof.profiling import profile

    monkeypatch.setenv("FAKE_NCU_GATE", "fail")
    monkeypatch.setenv("FLASHPROF_NCU", str(fake_ncu))
    out = tmp_path / "reports"
    rc = profile.main(["6", "--out-dir", str(out), "--no-analysis"])
    err = capsys.readouterr().err.splitlines()
    errors = [ln for ln in err if "error" in ln]
    assert rc == 2 and len(errors) == 1 and errors[0].startswith("profile: error: kernel 6: FP32 instruction "
                                                                   "fusion fails the correctness check at ")
    assert "Traceback" not in "\n".join(err)
    assert [p for p in out.rglob("*") if p.is_file()] == []


def test_missing_verdict_lands_nothing(fake_ncu, fake_machine, warm_build, tmp_path, monkeypatch):
    from flashprof.profiling.profile import profile_all
    from flashprof.profiling.workload import Shape

    monkeypatch.setenv("FAKE_NCU_GATE", "silent")
    args = _gated(tmp_path)
    with pytest.raises(FlashprofError, match=r"the profiled program wrote no correctness verdict .*nothing was kept"):
        profile_all(["ref"], Shape(16, 4096), args, str(fake_ncu))
    assert [p for p in args.out_dir.rglob("*") if p.is_file()] == []


def test_no_gpu_found_while_ncu_runs_wins_and_stops_it(fake_ncu, fake_machine, warm_build, tmp_path, monkeypatch,
                                                        capsys):
    """The GPU check runs beside ncu: its refusal is the one line, ncu (a 60 s replay) is
    stopped, nothing was said before it and nothing lands."""
    from flashprof.profiling import env
    from flashprof.profiling.profile import profile_all
    from flashprof.profiling.workload import Shape

    def no_gpu():
        time.sleep(0.5)  # ncu has started by now
        raise FlashprofError("no CUDA GPU is visible (fake)")

    monkeypatch.setattr(env, "gpu_info", no_gpu)
    monkeypatch.setenv("FAKE_NCU_MODE", "slow")
    args = _gated(tmp_path)
    t0 = time.perf_counter()
    with pytest.raises(FlashprofError) as e:
        profile_all(["6"], Shape(16, 4096), args, str(fake_ncu))
    assert str(e.value) == "no CUDA GPU is visible (fake)"
    assert time.perf_counter() - t0 < 30
    assert capsys.readouterr().err == ""  # the progress lines were held, then dropped
    assert [p for p in args.out_dir.rglob("*") if p.is_file()] == []


def test_cold_build_happens_in_this_process_first(fake_ncu, fake_machine, tmp_path, monkeypatch, capsys):
    from flashprof.profiling import profile, targets
    from flashprof.profiling.workload import Shape

    loaded = []
    monkeypatch.setattr(profile, "_built", lambda cfg, slug=None: False)
    monkeypatch.setattr(targets.Target, "callable", lambda self: loaded.append(self.name))
    args = _gated(tmp_path)
    assert profile.profile_all(["6"], Shape(16, 4096), args, str(fake_ncu)) == 0
    assert loaded == ["6"]  # built here, with its progress; the gate still ran in the program
    assert "--verdict" in (args.out_dir / "kernel6.ncu-rep").read_text().split()
    assert "build + correctness check" in capsys.readouterr().err


def test_built_compares_with_every_source(tmp_path, monkeypatch):
    from flashprof.kernels import build as kb
    from flashprof.kernels.config import variant
    from flashprof.profiling.profile import _built

    cfg = variant(6)
    csrc = tmp_path / "csrc"
    csrc.mkdir()
    (csrc / "a.cu").write_text("x")
    monkeypatch.setattr(kb, "BUILD_ROOT", tmp_path / "ext")
    monkeypatch.setattr(kb, "CSRC", csrc)
    assert not _built(cfg)
    so = tmp_path / "ext" / cfg.slug / f"{cfg.module_name}.so"
    so.parent.mkdir(parents=True)
    so.write_text("so")
    os.utime(csrc / "a.cu", (1000, 1000))
    assert _built(cfg)
    os.utime(so, (500, 500))  # a source newer than the build
    assert not _built(cfg)


# ------------------------------------------- summary and figures in the same process
H200 = Path(__file__).resolve().parents[1] / "reports" / "h200"


def _copy_report(src: str, dest: Path, stem: str) -> None:
    import shutil

    shutil.copyfile(H200 / f"{src}.ncu-rep", dest / f"{stem}.ncu-rep")
    shutil.copyfile(H200 / f"{src}.json", dest / f"{stem}.json")


@pytest.mark.slow
def test_profile_draws_only_what_the_new_report_changes(fake_ncu, fake_machine, warm_build, tmp_path, monkeypatch,
                                                        capsys):
    """kernel6 re-profiled (the fake ncu writes kernel5's real report): the summary is
    printed, the files it feeds are redrawn, every other file is left alone, and each
    file equals what a full `flashprof figures` draws from the same reports."""
    pytest.importorskip("pyarrow")
    from flashprof.analysis.charts import driver
    from flashprof.analysis.charts.inputs import make_inputs
    from flashprof.profiling.profile import profile_all
    from flashprof.profiling.workload import Shape

    if not all((H200 / f"{s}.ncu-rep").is_file() for s in ("kernel4", "kernel5", "kernel6", "cudnn")):
        pytest.skip("the shipped reports are not here")
    folder = tmp_path / "box"
    folder.mkdir()
    for stem in ("kernel4", "kernel6", "cudnn"):  # kernel4: the first series launch (gpu_ceilings' input)
        _copy_report(stem, folder, stem)
    figs = tmp_path / "figures"
    monkeypatch.setattr(driver, "DEFAULT_OUT", figs)
    out = driver.out_dir(folder)
    driver.build(make_inputs(folder), out, jobs=1, log=lambda m: None)
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in out.iterdir()}

    monkeypatch.setenv("FAKE_NCU_COPY", str(H200 / "kernel5.ncu-rep"))
    args = _gated(tmp_path, out_dir=folder, no_analysis=False)
    capsys.readouterr()
    assert profile_all(["6"], Shape(16, 4096), args, str(fake_ncu)) == 0
    stdout = capsys.readouterr().out
    assert "duration_ns" in stdout and "kernel6" in stdout.splitlines()[1]  # the summary table of the new report
    after = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in out.iterdir()}
    redrawn = {n for n in after if after[n][1] != before.get(n, (None, None))[1]}
    assert redrawn == {"roofline_kernel6.png", "roofline_overlay.png", "stall_lines_kernel6.png", "stalls.png",
                       "pipes.png", "bank_conflicts.png", "pipe_shares.png", "gap.png"} & set(before) | (
        redrawn & {"index.md"})

    full = tmp_path / "full"
    driver.build(make_inputs(folder), full, jobs=1, log=lambda m: None)
    for name in before:  # redrawn or not, each file is what a full redraw gives now
        assert after[name][0] == (full / name).read_bytes(), name
