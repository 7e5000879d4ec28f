"""The bad-input matrix, end to end through real processes.

Every case: exactly one line on stderr, a non-zero exit, no traceback, and no file in
reports/ or tests/data touched. The cases run concurrently (one module fixture) so the
whole matrix runs at once. "GPU" and "no GPU" are simulated with a stand-in
``torch`` package put first on PYTHONPATH, so the order of the checks is tested the same
way whether or not the machine running the tests has torch.
"""
from __future__ import annotations

import os
import signal
import struct
import subprocess
import sys
import zlib
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
KERNEL6 = ROOT / "reports" / "h200" / "kernel6.ncu-rep"
VALID = "1, 2, 3, 4, 5, 6, 7, 7mma, ref, cudnn or all, or your own path/to/file.py:function"
NCU_MISSING = ("Nsight Compute ('ncu') not found: install Nsight Compute, put ncu on PATH or set "
               "FLASHPROF_NCU=/path/to/ncu")
NO_GPU = ("no CUDA GPU is visible (torch.cuda.is_available() is False); "
          "run this on a machine with an NVIDIA GPU (make doctor says what it sees)")
NO_TORCH = ("no CUDA GPU usable: torch is not installed (on a GPU machine: make setup GPU=1; "
            "make doctor says what is missing)")

FAKE_TORCH = '''"""Stand-in torch for the bad-input tests: FAKE_TORCH=gpu|nogpu|missing|hang."""
import os, sys, time
_mode = os.environ.get("FAKE_TORCH", "nogpu")
if _mode == "missing":
    raise ImportError("No module named 'torch' (fake)")


class cuda:
    @staticmethod
    def is_available():
        if _mode == "hang":  # a slow step, so the test can press Ctrl-C in the middle
            print("busy", flush=True)
            time.sleep(60)
        return _mode == "gpu"
'''


def png_bytes() -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(b"\x00\x00\x00\x00")) + chunk(b"IEND", b""))


def snapshot(*dirs: Path) -> dict:
    out = {}
    for d in dirs:
        for p in d.rglob("*"):
            if p.is_file():
                st = p.stat()
                out[str(p)] = (st.st_size, st.st_mtime_ns)
    return out


def _env(**kw) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("FLASHPROF_NCU", "PYTHONPATH")}
    for k, v in kw.items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = v
    return env


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad")
    (d / "empty.ncu-rep").write_bytes(b"")
    (d / "truncated.ncu-rep").write_bytes(KERNEL6.read_bytes()[:1000])
    (d / "picture.ncu-rep").write_bytes(png_bytes())
    (d / "noreports").mkdir()
    (d / "file.txt").write_text("a regular file: nothing can be created below it\n")
    torch_dir = d / "faketorch" / "torch"
    torch_dir.mkdir(parents=True)
    (torch_dir / "__init__.py").write_text(FAKE_TORCH)
    ncu = d / "fakebin" / "ncu"
    ncu.parent.mkdir()
    ncu.write_text("#!/bin/sh\necho 'Version 2025.1.1.0'\n")
    ncu.chmod(0o755)
    (d / "emptybin").mkdir()
    byo = d / "byo"  # user targets; none imports torch, so "no GPU" comes last
    byo.mkdir()
    (byo / "ok.py").write_text("def attention(q, k, v):\n    return q\n")
    (byo / "two_args.py").write_text("def attention(q, k):\n    return q\n")
    (byo / "raises.py").write_text("raise RuntimeError('this kernel needs sm_100')\n")
    return d


def cases(d: Path) -> dict:
    """id -> (argv, env overrides, expected stderr line, or a callable check)."""
    fake = str(d / "faketorch")
    gpu = dict(PYTHONPATH=fake, FAKE_TORCH="gpu")
    nogpu = dict(PYTHONPATH=fake, FAKE_TORCH="nogpu", FLASHPROF_NCU=str(d / "fakebin" / "ncu"))
    notorch = dict(PYTHONPATH=fake, FAKE_TORCH="missing")
    no_ncu = dict(gpu, PATH=str(d / "emptybin"), FLASHPROF_NCU=None)
    prof = [PY, "-m", "flashprof.profiling.profile"]
    byo = d / "byo"
    an = [PY, "-m", "flashprof", "summary", "--no-cache"]
    c = {
        # ---- KERNEL values: always the first thing checked, even with no GPU and no ncu
        "kernel_8": (prof + ["8"], no_ncu | nogpu, f"profile: error: unknown KERNEL '8': valid values are {VALID}"),
        "kernel_0": (prof + ["0"], {}, f"profile: error: unknown KERNEL '0': valid values are {VALID}"),
        "kernel_minus1": (prof + ["-1"], {}, f"profile: error: unknown KERNEL '-1': valid values are {VALID}"),
        "kernel_injection": (prof + ["6; rm -rf /"], {},
                             f"profile: error: unknown KERNEL '6; rm -rf /': valid values are {VALID}"),
        "kernel_empty": (prof + [""], {}, f"profile: error: unknown KERNEL '': valid values are {VALID}"),
        "kernel_absent": (prof, {}, "profile: error: the following arguments are required: kernel (see --help)"),
        "kernel_list_bad": (prof + ["1,2,x"], {}, f"profile: error: unknown KERNEL 'x': valid values are {VALID}"),
        "kernel_before_dtype": (prof + ["9", "--dtype", "fp32"], {},
                                f"profile: error: unknown KERNEL '9': valid values are {VALID}"),
        # ---- dtype / shape / tile: before anything about the machine
        "dtype_fp32": (prof + ["6", "--dtype", "fp32"], notorch, "profile: error: bad dtype 'fp32': choose one of fp16, bf16"),
        "batch_0": (prof + ["6", "--batch", "0"], notorch, "profile: error: bad shape: batch=0 must be a positive integer"),
        "seq_negative": (prof + ["6", "--seq", "-64"], notorch, "profile: error: bad shape: seq=-64 must be a positive integer"),
        "seq_not_int": (prof + ["6", "--seq", "4k"], {}, "profile: error: argument --seq: invalid int value: '4k' (see --help)"),
        "seq_tile": (prof + ["6", "--seq", "100"], notorch, "profile: error: SEQ=100 is not a multiple of kernel 6's tile (64)"),
        "seq_tile_all": (prof + ["all", "--seq", "100"], notorch,
                         "profile: error: SEQ=100 is not a multiple of 64, the largest tile of kernels 1, 2, 3, 4, 5, 6, 7, 7mma"),
        "set_bogus": (prof + ["6", "--set", "everything"], {},
                      "profile: error: argument --set: invalid choice: 'everything' (choose from 'full', 'detailed', "
                      "'basic', 'roofline') (see --help)"),
        # ---- reports directory cannot be created (root ignores permission bits, so a path
        # below a regular file stands in for a read-only directory)
        "out_dir_unwritable": (prof + ["6", "--out-dir", str(d / "file.txt" / "reports")], notorch,
                               f"profile: error: cannot create {d / 'file.txt' / 'reports'}: Not a directory"),
        # ---- the machine: GPU first, then ncu
        "no_torch": (prof + ["6"], notorch, f"profile: error: {NO_TORCH}"),
        "no_gpu": (prof + ["6"], nogpu, f"profile: error: {NO_GPU}"),
        "no_gpu_no_ncu": (prof + ["ref"], no_ncu | {"FAKE_TORCH": "nogpu"}, f"profile: error: {NO_GPU}"),
        "no_ncu": (prof + ["6"], no_ncu, f"profile: error: {NCU_MISSING}"),
        "ncu_env_missing": (prof + ["6"], gpu | {"FLASHPROF_NCU": str(d / "nope" / "ncu")},
                            f"profile: error: FLASHPROF_NCU={d / 'nope' / 'ncu'} is not an executable"),
        "this_machine": (prof + ["6"], {}, lambda line: line.startswith("profile: error: no CUDA GPU")),
        # ---- bench / tune / build / target
        "bench_reps": ([PY, "-m", "flashprof.profiling.bench", "--reps", "5"], {},
                       "bench: error: --reps must be at least 20 (medians of fewer repeats are noise)"),
        "bench_seqs": ([PY, "-m", "flashprof.profiling.bench", "--seqs", "abc"], {},
                       "bench: error: bad --seqs 'abc': give comma-separated integers"),
        "bench_seqs_zero": ([PY, "-m", "flashprof.profiling.bench", "--seqs", "1024,0"], {},
                            "bench: error: bad shape: seq=0 must be a positive integer"),
        "bench_dtype": ([PY, "-m", "flashprof.profiling.bench", "--dtype", "x"], {},
                        "bench: error: bad dtype 'x': choose one of fp16, bf16"),
        "bench_kernel": ([PY, "-m", "flashprof.profiling.bench", "--kernels", "6,8"], {},
                         f"bench: error: unknown KERNEL '8': valid values are {VALID}"),
        "bench_no_gpu": ([PY, "-m", "flashprof.profiling.bench"], nogpu, f"bench: error: {NO_GPU}"),
        "tune_dtype": ([PY, "-m", "flashprof.profiling.tune", "--dtype", "x"], {},
                       "tune: error: bad dtype 'x': choose one of fp16, bf16"),
        "tune_seqs": ([PY, "-m", "flashprof.profiling.tune", "--seqs", "1024,x"], {},
                      "tune: error: bad --seqs '1024,x': give comma-separated integers"),
        "tune_no_gpu": ([PY, "-m", "flashprof.profiling.tune"], nogpu, f"tune: error: {NO_GPU}"),
        "build_9": ([PY, "-m", "flashprof.kernels.build", "9"], {}, "build: error: unknown kernel 9: valid kernels are 1-7 and 7mma"),
        "build_no_torch": ([PY, "-m", "flashprof.kernels.build", "6"], notorch | {"TORCH_CUDA_ARCH_LIST": None},
                           "build: error: torch is not installed: building a kernel needs torch with CUDA "
                           "(the 'gpu' extra) on a machine with an NVIDIA GPU"),
        "target_9": ([PY, "-m", "flashprof.profiling.ncu_program", "9"], notorch,
                     f"target: error: unknown KERNEL '9': valid values are {VALID}"),
        "target_all": ([PY, "-m", "flashprof.profiling.ncu_program", "all"], notorch,
                       "target: error: one KERNEL expected here, got 'all' (10 targets)"),
        "target_no_gpu": ([PY, "-m", "flashprof.profiling.ncu_program", "6"], nogpu, f"target: error: {NO_GPU}"),
        # ---- user targets (TARGET=file.py:fn): checked before the machine, like KERNEL
        "target_missing_file": (prof + [f"{byo}/missing.py:attention"], nogpu,
                                f"profile: error: target {byo}/missing.py:attention: no such file {byo}/missing.py"),
        "target_no_function": (prof + [f"{byo}/ok.py:attn"], nogpu,
                               f"profile: error: target {byo}/ok.py:attn: {byo}/ok.py has no attribute 'attn'"),
        "target_signature": (prof + [f"{byo}/two_args.py:attention"], nogpu,
                             f"profile: error: target {byo}/two_args.py:attention: attention(q, k) cannot be "
                             "called as attention(q, k, v)"),
        "target_import_raises": (prof + [f"{byo}/raises.py:attention"], nogpu,
                                 f"profile: error: target {byo}/raises.py:attention: importing {byo}/raises.py "
                                 "failed: RuntimeError: this kernel needs sm_100"),
        "target_bad_spec": (prof + ["x.py:1fn"], {}, "profile: error: bad target 'x.py:1fn': '1fn' is not a Python name"),
        "target_no_module": (prof + ["no_such_pkg_byo:attention"], nogpu,
                             "profile: error: target no_such_pkg_byo:attention: no module named 'no_such_pkg_byo' "
                             "(is it installed in this Python?)"),
        "target_regex": (prof + [f"{byo}/ok.py:attention", "--kernel-regex", "("], nogpu,
                         lambda line: line.startswith("profile: error: bad KERNEL_REGEX '(': ")),
        "target_max_launches": (prof + [f"{byo}/ok.py:attention", "--max-launches", "0"], nogpu,
                                "profile: error: bad MAX_LAUNCHES 0: must be a positive integer"),
        "target_ok_no_gpu": (prof + [f"{byo}/ok.py:attention"], nogpu, f"profile: error: {NO_GPU}"),
        "bench_target_missing": ([PY, "-m", "flashprof.profiling.bench", "--kernels", f"{byo}/missing.py:attention"], nogpu,
                                 f"bench: error: target {byo}/missing.py:attention: no such file {byo}/missing.py"),
        "target_prog_signature": ([PY, "-m", "flashprof.profiling.ncu_program", f"{byo}/two_args.py:attention"], nogpu,
                                  f"target: error: target {byo}/two_args.py:attention: attention(q, k) cannot be "
                                  "called as attention(q, k, v)"),
        # ---- reports the analysis cannot read
        "empty_report": (an + [str(d / "empty.ncu-rep")], {}, f"summary: error: {d / 'empty.ncu-rep'}: empty file"),
        "truncated_report": (an + [str(d / "truncated.ncu-rep")], {},
                             lambda line: line.startswith(f"summary: error: {d / 'truncated.ncu-rep'}: truncated or "
                                                          "incomplete report (1000 bytes: block ")),
        "png_report": (an + [str(d / "picture.ncu-rep")], {},
                       f"summary: error: {d / 'picture.ncu-rep'}: not an Nsight Compute report (bad file signature)"),
        "missing_report": (an + [str(d / "missing.ncu-rep")], {},
                           f"summary: error: {d / 'missing.ncu-rep'}: no such file"),
        "dir_without_reports": (an + [str(d / "noreports")], {},
                                f"summary: error: {d / 'noreports'}: directory holds no *.ncu-rep files"),
        "figures_missing_dir": ([PY, "-m", "flashprof.analysis.charts", "--reports", "/nonexistent"], {},
                                "figures: error: reports directory /nonexistent does not exist"),
        "figures_empty_dir": ([PY, "-m", "flashprof.analysis.charts", "--reports", str(d / "noreports"), "--out",
                               str(d / "figs")], {}, f"figures: error: {d / 'noreports'} holds no *.ncu-rep files"),
    }
    return c


def _run(argv, env):
    p = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    return p.returncode, p.stdout, p.stderr


@pytest.fixture(scope="module")
def results(files):
    table = cases(files)
    keep = {n: files.joinpath(n).read_bytes() for n in ("empty.ncu-rep", "truncated.ncu-rep", "picture.ncu-rep")}
    before = snapshot(ROOT / "reports", ROOT / "tests" / "data")
    with ThreadPoolExecutor(max_workers=max(2, min(8, os.cpu_count() or 2))) as pool:
        futs = {cid: pool.submit(_run, argv, _env(**env)) for cid, (argv, env, _) in table.items()}
        out = {cid: (f.result(), table[cid][2]) for cid, f in futs.items()}
    after = snapshot(ROOT / "reports", ROOT / "tests" / "data")
    assert before == after, "a bad-input run changed files under reports/ or tests/data"
    for n, data in keep.items():
        assert files.joinpath(n).read_bytes() == data, f"{n} was modified"
    assert not (files / "figs").exists() and not (files / "file.txt").is_dir()
    return out


CASE_IDS = list(cases(Path("/d")))


@pytest.mark.slow
@pytest.mark.parametrize("cid", CASE_IDS)
def test_bad_input_one_line(results, cid):
    (rc, stdout, stderr), expected = results[cid]
    lines = stderr.splitlines()
    assert "Traceback" not in stderr, stderr
    assert rc != 0, (rc, stderr)
    assert len(lines) == 1, stderr
    if callable(expected):
        assert expected(lines[0]), lines[0]
    else:
        assert lines[0] == expected
    assert stdout == ""


@pytest.mark.skipif(Path("/opt/nvidia/nsight-compute").exists() or Path("/usr/local/cuda/bin/ncu").exists(),
                    reason="ncu is installed in a fallback location on this machine")
def test_no_ncu_case_really_has_no_ncu(files):
    import shutil

    assert shutil.which("ncu", path=str(files / "emptybin")) is None


@pytest.mark.slow
@pytest.mark.parametrize("report", ["fa2_sol_only", "gemm_foreign"])
def test_smaller_or_foreign_report_works_with_one_warning(report):
    rc, stdout, stderr = _run([PY, "-m", "flashprof", "summary", "--no-cache",
                                  str(ROOT / "tests" / "data" / f"{report}.ncu-rep")], _env())
    assert rc == 0 and "Traceback" not in stderr
    lines = stderr.splitlines()
    # One line per report: the quantities it lacks and the ncu options that collect them.
    assert len(lines) == 1 and lines[0].startswith(f"summary: warning: {report}: no "), stderr
    assert "(null); collect with: ncu --section " in lines[0]
    assert report in stdout and "duration_ns" in stdout
    tensor = next(ln for ln in stdout.splitlines() if ln.startswith("tensor_tflops "))
    assert tensor.split()[-1] == "-"  # NaN shown as "-"


@pytest.mark.skipif(os.geteuid() == 0, reason="root bypasses permission bits (os.access says writable); "
                    "the unwritable case is covered by out_dir_unwritable (a path below a regular file)")
def test_read_only_reports_dir(tmp_path):  # pragma: no cover - CI runs as root
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    try:
        rc, _, stderr = _run([PY, "-m", "flashprof.profiling.profile", "6", "--out-dir", str(ro)],
                                _env(PYTHONPATH=None))
        assert rc == 2 and stderr.strip() == f"profile: error: {ro} is not writable"
        assert list(ro.iterdir()) == []
    finally:
        ro.chmod(0o755)


def test_check_writable_reports_read_only(monkeypatch, tmp_path):
    """The os.access branch (what a non-root user hits), driven in-process."""
    from flashprof.profiling import env
    from flashprof.kernels.cli import FlashprofError

    monkeypatch.setattr(env.os, "access", lambda path, mode: False)
    with pytest.raises(FlashprofError) as e:
        env.check_writable(tmp_path)
    assert str(e.value) == f"{tmp_path} is not writable"


def test_ctrl_c_is_one_line(files, tmp_path):
    """SIGINT in the middle of a run: 'profile: interrupted', exit 130, no traceback. The
    process's own exit is waited for (not end of file on its pipes, which a child still
    sleeping in the stand-in torch can hold open), and its stderr goes to a file. The child
    starts with SIGINT at its default, as under a terminal: a suite launched in the background
    of a non-interactive shell inherits SIGINT ignored, and Python then installs no handler."""
    env = _env(PYTHONPATH=str(files / "faketorch"), FAKE_TORCH="hang")
    err = tmp_path / "stderr.txt"
    with err.open("w") as err_file:
        p = subprocess.Popen([PY, "-m", "flashprof.profiling.profile", "6"], cwd=ROOT, env=env, stdout=subprocess.PIPE,
                             stderr=err_file, text=True,
                             preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
        try:
            assert p.stdout.readline().strip() == "busy"
            p.send_signal(signal.SIGINT)
            p.wait(timeout=60)
        finally:
            if p.poll() is None:
                p.kill()
            p.stdout.close()
    assert p.returncode == 130 and err.read_text() == "profile: interrupted\n"


def test_run_cli_keyboard_interrupt(capsys):
    from flashprof.kernels.cli import run_cli

    def body():
        raise KeyboardInterrupt

    assert run_cli("bench", body) == 130
    assert capsys.readouterr().err == "bench: interrupted\n"


@pytest.mark.parametrize("target,setting,refusal", [
    ("profile", "KERNEL=6; echo INJECTED", "unknown KERNEL '6; echo INJECTED'"),
    ("profile", "TARGET=x.py:f; echo INJECTED", "bad target 'x.py:f; echo INJECTED': 'f; echo INJECTED' is not a Python name"),
    ("bench", "TARGET=x.py:f; echo INJECTED", "bad target 'x.py:f; echo INJECTED'"),
    ("profile", "KERNEL_REGEX=x\"; echo INJECTED; \"", "no such file x.py"),
])
def test_makefile_quotes_user_values(target, setting, refusal):
    """`make profile KERNEL='6; echo X'` must not run `echo X` (the value reaches a shell):
    each value is one argument, refused by the CLI."""
    import shutil

    if not shutil.which("make"):
        pytest.skip("make is not installed")
    extra = ["TARGET=x.py:f"] if setting.startswith("KERNEL_REGEX") else []
    r = subprocess.run(["make", "--no-print-directory", target, setting, *extra, f"PY={PY}"],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode != 0
    assert "INJECTED" not in r.stdout.splitlines()  # the echo never ran
    assert refusal in r.stderr
