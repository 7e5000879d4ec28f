"""CPU tests of the Nsight Compute layer: the ncu command line, finding ncu, recognising
its failures, keeping old reports, report names. No GPU, no torch, no real ncu needed
(the fake-ncu runs are in test_profile_fake_ncu.py)."""
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

PROGRAM = [sys.executable, "-m", "flashprof.profiling.ncu_program", "6", "--batch", "16", "--seq", "4096"]


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
    from flashprof.profiling.ncu_program import NVTX_RANGE

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


