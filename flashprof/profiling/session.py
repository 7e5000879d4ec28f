"""`make gpu-session`: everything a GPU machine is needed for, in one call.

Builds every variant in parallel, runs the GPU tests (correctness of every variant in fp16
and bf16, the gate on broken variants, compute-sanitizer), optionally re-tunes kernel 7,
benchmarks, and profiles every target. Each step's output goes to reports/<gpu>/logs/<step>.log
and a one-line status with its wall time is printed; a failing step stops the session.
This is how the shipped H200 data was produced (in a few device calls).
"""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from flashprof.kernels.cli import ArgumentParser, FlashprofError, run_cli, doc_summary
from flashprof.kernels.gpus import reports_folder

from flashprof.paths import ROOT  # noqa: E402


def steps(tune: bool, seq: int, dtype: str) -> list[tuple[str, list[str]]]:
    py = sys.executable
    out = [("build", [py, "-P", "-m", "flashprof.kernels.build", "all"]),
           ("gpu_tests", [py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--noconftest",
                                     "tests/test_gpu_kernels.py"])]
    if tune:
        out.append(("tune", [py, "-P", "-m", "flashprof.profiling.tune"]))
        out.append(("build_tuned", [py, "-P", "-m", "flashprof.kernels.build", "7"]))
    out.append(("bench", [py, "-P", "-m", "flashprof.profiling.bench", "--dtype", dtype]))
    out.append(("profile", [py, "-P", "-m", "flashprof.profiling.profile", "all", "--seq", str(seq), "--dtype", dtype]))
    return out


def main(argv: list[str] | None = None) -> int:
    p = ArgumentParser(prog="flashprof session", description=doc_summary(__doc__))
    p.add_argument("--tune", action="store_true", help="re-run the kernel-7 sweep first")
    p.add_argument("--seq", type=int, default=4096, help="sequence length of the profiles (default: %(default)s)")
    p.add_argument("--dtype", default="fp16", help="fp16 or bf16 (default: %(default)s)")
    args = p.parse_args(argv)

    def body() -> int:
        from flashprof.profiling.env import gpu_info

        logs = ROOT / reports_folder(gpu_info()["slug"]) / "logs"
        logs.mkdir(parents=True, exist_ok=True)
        t_all = time.perf_counter()
        for name, cmd in steps(args.tune, args.seq, args.dtype):
            t0 = time.perf_counter()
            log = logs / f"{name}.log"
            print(f"[{name}] running ... (log: {log})", file=sys.stderr, flush=True)
            with log.open("w") as f:
                rc = subprocess.run(cmd, cwd=ROOT, stdout=f, stderr=subprocess.STDOUT).returncode
            print(f"[{name}] {'ok' if rc == 0 else f'FAILED (exit {rc})'} in {time.perf_counter() - t0:.0f}s",
                  file=sys.stderr, flush=True)
            if rc:
                raise FlashprofError(f"step {name} failed; see {log}")
        print(f"session done in {time.perf_counter() - t_all:.0f}s", file=sys.stderr)
        return 0

    return run_cli("session", body)


if __name__ == "__main__":
    sys.exit(main())
