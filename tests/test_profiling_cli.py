"""CPU tests of the Nsight Compute layer: the ncu command line, finding ncu,
recognising its failures, live replay progress, keeping old reports, and a whole
`profile_all` run against a fake `ncu` script. No GPU, no torch, no real ncu needed."""
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

from profiling import ncu as ncu_mod
from profiling.errors import FlashprofError
from profiling.ncu import ROOFLINE_SECTIONS, NcuOptions, diagnose, find_ncu, ncu_command, retire, run_ncu
from profiling.profile import check_seq, report_stem

PROGRAM = [sys.executable, "-m", "profiling.target", "6", "--batch", "16", "--seq", "4096"]


def _tail(out: Path) -> list[str]:
    """Everything after the section choice for the default options."""
    return ["--clock-control", "none", "--cache-control", "all", "--import-source", "yes",
            "--nvtx", "--nvtx-include", "flashprof/", "--kernel-name", "regex:flash_fwd_kernel",
            "--launch-count", "1", "--export", str(out), *PROGRAM]


# ------------------------------------------------------------------ command line
def test_default_command_exact(tmp_path):
    out = tmp_path / "kernel6"
    cmd = ncu_command("/x/ncu", NcuOptions(output=out, kernel_regex="flash_fwd_kernel"), PROGRAM)
    assert cmd == ["/x/ncu", "--set", "full", *_tail(out)]


@pytest.mark.parametrize("section_set", ["full", "detailed", "basic"])
def test_named_section_sets(tmp_path, section_set):
    out = tmp_path / "r"
    cmd = ncu_command("ncu", NcuOptions(output=out, kernel_regex="flash_fwd_kernel", section_set=section_set),
                      PROGRAM)
    assert cmd == ["ncu", "--set", section_set, *_tail(out)]


def test_roofline_set_lists_sections(tmp_path):
    out = tmp_path / "r"
    cmd = ncu_command("ncu", NcuOptions(output=out, kernel_regex="flash_fwd_kernel", section_set="roofline"),
                      PROGRAM)
    sections = [a for pair in zip(["--section"] * len(ROOFLINE_SECTIONS), ROOFLINE_SECTIONS) for a in pair]
    assert cmd == ["ncu", *sections, *_tail(out)]
    assert "--set" not in cmd
    # What the analysis reads must be in the small set.
    for needed in ("SpeedOfLight", "WarpStateStats", "SourceCounters", "InstructionStats"):
        assert needed in ROOFLINE_SECTIONS


def test_every_option_spelled_out(tmp_path):
    out = tmp_path / "sub dir" / "ref_s1024"
    opts = NcuOptions(output=out, kernel_regex="sdpa|fprop|cudnn", section_set="basic", clock_control="base",
                      cache_control="none", import_source=False, launch_count=3, extra=("--print-summary", "none"))
    cmd = ncu_command("/opt/ncu", opts, ["prog", "--flag"])
    assert cmd == ["/opt/ncu", "--set", "basic", "--clock-control", "base", "--cache-control", "none",
                   "--import-source", "no", "--nvtx", "--nvtx-include", "flashprof/",
                   "--kernel-name", "regex:sdpa|fprop|cudnn", "--launch-count", "3",
                   "--export", str(out), "--print-summary", "none", "prog", "--flag"]


def test_nvtx_filter_matches_target_range():
    from profiling.target import NVTX_RANGE

    cmd = ncu_command("ncu", NcuOptions(output=Path("o"), kernel_regex="k"), [])
    i = cmd.index("--nvtx-include")
    assert cmd[i - 1] == "--nvtx" and cmd[i + 1] == f"{NVTX_RANGE}/" == "flashprof/"


@pytest.mark.parametrize("field,value,words", [
    ("section_set", "everything", "unknown section set 'everything'"),
    ("clock_control", "boost", "unknown clock control 'boost'"),
    ("cache_control", "some", "unknown cache control 'some'"),
    ("launch_count", 0, "bad launch count 0"),
    ("launch_count", -2, "bad launch count -2"),
])
def test_invalid_options_raise(field, value, words):
    opts = NcuOptions(output=Path("o"), kernel_regex="k", **{field: value})
    with pytest.raises(FlashprofError) as e:
        ncu_command("ncu", opts, [])
    assert words in str(e.value) and "\n" not in str(e.value)


# ----------------------------------------------------------------- diagnose
PERM_OUTPUT = ("==PROF== Connected to process 4242 (/usr/bin/python3.12)\n"
               "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
               "Performance Counters on the target device 0.\n")


def test_diagnose_permission():
    msg = diagnose(PERM_OUTPUT, 1)
    assert "ERR_NVGPUCTRPERM" in msg and "NVreg_RestrictProfilingToAdminUsers=0" in msg and "root" in msg
    # recognised even if ncu's exit status were 0
    assert diagnose(PERM_OUTPUT, 0) == msg


def test_diagnose_no_kernels():
    msg = diagnose("==PROF== Disconnected from process 1\n==WARNING== No kernels were profiled.\n", 0)
    assert msg.startswith("ncu profiled no kernel") and "filter" in msg


def test_diagnose_nonzero_exit_quotes_the_error_line():
    out = "==PROF== Connected\n==ERROR== Failed to prepare kernel for profiling\nother noise\n"
    assert diagnose(out, 9) == "ncu failed (exit 9): ==ERROR== Failed to prepare kernel for profiling"
    assert diagnose("", 1) == "ncu failed (exit 1): (no output)"
    assert diagnose("just a last line\n", 2) == "ncu failed (exit 2): just a last line"


def test_diagnose_prefers_the_programs_own_error():
    out = ("==PROF== Connected\ntarget: error: target x.py:f raised ValueError: bad block\n"
           "==ERROR== The application returned an error code (2).\n")
    assert diagnose(out, 2) == "the profiled program failed under ncu: target x.py:f raised ValueError: bad block"


def test_diagnose_success_is_none():
    assert diagnose("==PROF== Report: /r/kernel6.ncu-rep\n", 0) is None


# ----------------------------------------------------------------- find_ncu
@pytest.fixture
def no_system_ncu(monkeypatch, tmp_path):
    """PATH without ncu, FLASHPROF_NCU unset, and the install-dir fallbacks empty."""
    monkeypatch.delenv("FLASHPROF_NCU", raising=False)
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    monkeypatch.setattr(ncu_mod.glob, "glob", lambda pattern: [])


def test_find_ncu_missing_everywhere(no_system_ncu):
    with pytest.raises(FlashprofError, match=r"Nsight Compute \('ncu'\) not found: .*FLASHPROF_NCU"):
        find_ncu()


def test_find_ncu_env_missing_path(no_system_ncu, monkeypatch, tmp_path):
    missing = tmp_path / "nope" / "ncu"
    monkeypatch.setenv("FLASHPROF_NCU", str(missing))
    with pytest.raises(FlashprofError) as e:
        find_ncu()
    assert str(e.value) == f"FLASHPROF_NCU={missing} is not an executable"


def test_find_ncu_env_not_executable(no_system_ncu, monkeypatch, tmp_path):
    f = tmp_path / "ncu"
    f.write_text("#!/bin/sh\n")
    f.chmod(0o644)
    monkeypatch.setenv("FLASHPROF_NCU", str(f))
    if os.access(f, os.X_OK):  # pragma: no cover - root with odd mount options
        pytest.skip("this filesystem reports 0644 files as executable")
    with pytest.raises(FlashprofError, match="is not an executable"):
        find_ncu()
    monkeypatch.setenv("FLASHPROF_NCU", str(tmp_path))  # a directory is not an executable either
    with pytest.raises(FlashprofError, match="is not an executable"):
        find_ncu()


def test_find_ncu_env_and_path(no_system_ncu, monkeypatch, tmp_path):
    f = tmp_path / "bin" / "ncu"
    f.parent.mkdir()
    f.write_text("#!/bin/sh\n")
    f.chmod(0o755)
    monkeypatch.setenv("PATH", str(f.parent))
    assert find_ncu() == str(f)
    other = tmp_path / "my-ncu"
    other.write_text("#!/bin/sh\n")
    other.chmod(0o755)
    monkeypatch.setenv("FLASHPROF_NCU", str(other))  # the variable wins over PATH
    assert find_ncu() == str(other)


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
if mode != "noreport":
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


# ------------------------------------------------------------------- retire
def _report(d: Path, stem: str, body: str, mtime: float) -> Path:
    rep = d / f"{stem}.ncu-rep"
    rep.write_text(body)
    (d / f"{stem}.json").write_text('{"sidecar": "%s"}' % body)
    os.utime(rep, (mtime, mtime))
    return rep


MTIME = 1735787045.0  # 2025-01-02T03:04:05Z


def test_retire_moves_report_and_sidecar(tmp_path):
    rep = _report(tmp_path, "kernel6", "first", MTIME)
    dest = retire(rep)
    assert dest == tmp_path / "history" / "kernel6.20250102T030405.ncu-rep"
    assert dest.read_text() == "first"
    assert (tmp_path / "history" / "kernel6.20250102T030405.json").read_text() == '{"sidecar": "first"}'
    assert not rep.exists() and not (tmp_path / "kernel6.json").exists()


def test_second_retire_same_stamp_never_clobbers(tmp_path):
    first = retire(_report(tmp_path, "kernel6", "first", MTIME))
    second = retire(_report(tmp_path, "kernel6", "second", MTIME))
    third = retire(_report(tmp_path, "kernel6", "third", MTIME))
    hist = tmp_path / "history"
    assert second == hist / "kernel6.20250102T030405-1.ncu-rep"
    assert third == hist / "kernel6.20250102T030405-2.ncu-rep"
    assert [p.read_text() for p in (first, second, third)] == ["first", "second", "third"]
    assert (hist / "kernel6.20250102T030405-2.json").read_text() == '{"sidecar": "third"}'
    assert len(list(hist.iterdir())) == 6  # nothing deleted


def test_retire_does_not_replace_a_lone_old_sidecar(tmp_path):
    hist = tmp_path / "history"
    hist.mkdir()
    (hist / "kernel6.20250102T030405.json").write_text("older sidecar")
    dest = retire(_report(tmp_path, "kernel6", "new", MTIME))
    assert dest.name == "kernel6.20250102T030405-1.ncu-rep"
    assert (hist / "kernel6.20250102T030405.json").read_text() == "older sidecar"


def test_retire_without_report_or_sidecar(tmp_path):
    assert retire(tmp_path / "kernel1.ncu-rep") is None
    rep = tmp_path / "ref.ncu-rep"
    rep.write_text("only the report")
    dest = retire(rep)
    assert dest.read_text() == "only the report" and list(dest.parent.glob("*.json")) == []


def test_retire_unwritable_history_is_one_line_and_keeps_report(tmp_path):
    rep = _report(tmp_path, "kernel6", "keep me", MTIME)
    blocker = tmp_path / "file.txt"
    blocker.write_text("a regular file where history/ should go")
    with pytest.raises(FlashprofError) as e:
        retire(rep, history=blocker / "history")
    assert "cannot move the old kernel6.ncu-rep" in str(e.value) and "\n" not in str(e.value)
    assert rep.read_text() == "keep me" and (tmp_path / "kernel6.json").exists()


# ------------------------------------------------------------- naming, tiles
def test_report_stem():
    assert report_stem("kernel6", 4096, 16, 16, "fp16", "full") == "kernel6"
    assert report_stem("ref", 4096, 16, 16, "fp16", "full") == "ref"
    assert report_stem("kernel6", 1024, 16, 16, "fp16", "full") == "kernel6_s1024_b16_h16_fp16_full"
    assert report_stem("cudnn", 4096, 16, 16, "bf16", "full") == "cudnn_s4096_b16_h16_bf16_full"
    assert report_stem("kernel7", 4096, 16, 16, "fp16", "roofline") == "kernel7_s4096_b16_h16_fp16_roofline"
    assert report_stem("kernel1", 4096, 8, 16, "fp16", "full") == "kernel1_s4096_b8_h16_fp16_full"


def test_check_seq():
    check_seq(["6"], 4096)
    check_seq(["ref", "cudnn"], 100)  # references have no tile
    with pytest.raises(FlashprofError, match=r"^SEQ=100 is not a multiple of kernel 6's tile \(64\)$"):
        check_seq(["6"], 100)
    with pytest.raises(FlashprofError, match=r"^SEQ=96 is not a multiple of 64, the largest tile of kernels "
                                             r"1, 2, 3, 4, 5, 6, 7$"):
        check_seq([str(k) for k in range(1, 8)] + ["ref"], 96)
    # The H200's tuned kernel 7 uses 128-wide tiles: caught once the GPU is known.
    check_seq(["7"], 192)
    with pytest.raises(FlashprofError, match=r"kernel 7's tile \(128\)"):
        check_seq(["7"], 192, gpu="h200")


# --------------------------------------------------- profile_all with a fake ncu
@pytest.fixture
def fake_machine(monkeypatch):
    """Everything profile_all asks of the GPU machine, answered on the CPU."""
    from profiling import env, targets

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
    from profiling.profile import profile_all
    from profiling.workload import Shape

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
    assert side["kernel"] == "ref" and side["ncu"]["version"] == "2025.1.1.0"
    assert side["shape"] == {"batch": 16, "seq": 4096, "heads": 16, "d_head": 128}
    assert args.paths_file.read_text() == f"{rep}\n"
    assert list(args.out_dir.glob("*.ncu-rep")) == [rep]  # no half-written report is visible
    err = capsys.readouterr().err
    assert "[1/1 ref]" in err and "replaying 50%" in err and "previous report kept as" in err


@pytest.mark.parametrize("mode", ["perm", "noreport"])
def test_profile_all_failed_ncu_leaves_reports_alone(fake_ncu, fake_machine, tmp_path, monkeypatch, mode):
    from profiling.profile import profile_all
    from profiling.workload import Shape

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
    from profiling.profile import profile_all
    from profiling.workload import Shape

    args = _args(tmp_path)
    with pytest.raises(FlashprofError, match="largest tile"):
        profile_all(["6", "7"], Shape(16, 192), args, str(fake_ncu))
    assert not list(args.out_dir.rglob("*.ncu-rep"))  # refused before anything ran


def test_build_progress_format(capsys):
    from kernels.build import _progress

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

    from profiling import profile
    from profiling.workload import Shape

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
    i = cmd.index("profiling.target")
    assert cmd[i + 1:i + 3] == [spec, "--batch"]
    side = json.loads(rep.with_name("my_attn-attention_s1024_b2_h4_fp16_full.json").read_text())
    assert side["kernel"] == "my_attn-attention" and side["title"] == "my_attn-attention: Mine."
    assert side["ncu"]["profiled_kernels"] == ["flash_fwd_kernel", "softmax_kernel", "gemm_kernel"]
    assert side["ncu"]["launch_count"] == 4 and side["ncu"]["kernel_regex"] == ".*"
    t = side["target"]
    assert t["spec"] == spec and t["file"] == str(user_file) and t["max_launches"] == 3
    assert t["sha256"] == hashlib.sha256(user_file.read_bytes()).hexdigest() and t["layout"] == "bshd"


def test_profile_all_user_target_over_limit_writes_nothing(fake_ncu, fake_machine, user_file, tmp_path,
                                                           monkeypatch):
    """ncu's count is the authority: 3 kernels in the range with MAX_LAUNCHES=2 is refused."""
    from profiling import profile
    from profiling.workload import Shape

    monkeypatch.setenv("FAKE_NCU_MODE", "many")
    monkeypatch.setattr(profile, "precount", lambda *a: None)  # the PyTorch profiler saw nothing
    args = _args(tmp_path, kernel_regex="kernel$", max_launches=2)
    with pytest.raises(FlashprofError) as e:
        profile.profile_all([f"{user_file}:attention"], Shape(2, 1024, 4), args, str(fake_ncu))
    assert str(e.value) == (f"target {user_file}:attention launched 3 kernels in one call (flash_fwd_kernel, "
                            "softmax_kernel, gemm_kernel), more than MAX_LAUNCHES=2: raise MAX_LAUNCHES or pick "
                            "some with KERNEL_REGEX=")
    assert [p for p in args.out_dir.rglob("*") if p.is_file()] == []
