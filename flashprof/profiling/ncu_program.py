"""The program Nsight Compute runs: warm up one target, optionally judge it with the
correctness gate, then launch it exactly once inside the NVTX range "flashprof"
(ncu --nvtx-include flashprof/ picks that launch).

python -m flashprof.profiling.ncu_program KERNEL --batch B --seq S --heads H --dtype fp16
                                          [--warmup N] [--verdict FILE]
KERNEL may be a user target (path/to/file.py:fn); its call may launch several kernels, all
inside the range. Also used, at small sizes, under compute-sanitizer.

--verdict FILE: run the correctness gate (flashprof.profiling.correctness) after the
warm-up and before the range, so none of its launches is profiled (ncu profiles only
kernels launched inside the range), and write its verdict to FILE as JSON:
{"verdict": {...}, "label": ..., "seconds": ...}. A failing kernel is then refused with one
line and exit status 3 before anything is profiled; the profiling stage reads FILE to say
why. This keeps torch out of the profiling stage's own process.
"""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

from flashprof.kernels.cli import ArgumentParser, run_cli

NVTX_RANGE = "flashprof"
#: Exit status of a kernel that fails the correctness gate (no launch was profiled).
EXIT_GATE = 3


def write_verdict(path: Path, data: dict) -> None:
    """Atomically: the reader never sees half a file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    tmp.write_text(json.dumps(data, indent=1) + "\n")
    os.replace(tmp, path)


def main(argv: list[str] | None = None) -> int:
    p = ArgumentParser(prog="target")
    p.add_argument("kernel")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--seq", type=int, default=4096)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--dtype", default="fp16")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--verdict", type=Path, default=None,
                   help="run the correctness gate outside the range and write its verdict here (JSON)")
    args = p.parse_args(argv)

    def body() -> int:
        from flashprof.profiling.env import gpu_info, require_gpu
        from flashprof.profiling.targets import resolve
        from flashprof.profiling.workload import Shape, check_dtype, make_inputs

        resolve(args.kernel)  # a bad KERNEL, dtype or shape is reported before "no GPU"
        check_dtype(args.dtype)
        shape = Shape(args.batch, args.seq, args.heads)
        torch = require_gpu()
        target = resolve(args.kernel, gpu=gpu_info()["slug"], seq=args.seq, dtype=args.dtype)
        fn = target.callable()
        q, k, v = make_inputs(shape, args.dtype, seed=args.seed)
        out = torch.empty_like(q)
        # References allocate their own output: passing out= would add a copy kernel.
        kw = {"out": out} if target.config is not None else {}
        for _ in range(args.warmup):
            res = fn(q, k, v, **kw)
        torch.cuda.synchronize()
        if args.verdict is not None:
            from flashprof.profiling.correctness import check, refusal

            t0 = time.perf_counter()
            verdict = check(fn, shape, args.dtype)  # its own fresh inputs, output poisoned
            torch.cuda.synchronize()
            torch.cuda.empty_cache()  # the references' buffers: the profiled launch sees the memory as before
            write_verdict(args.verdict, {"label": target.title, "verdict": verdict.to_dict(),
                                         "seconds": round(time.perf_counter() - t0, 3)})
            if not verdict.ok:
                print(f"target: error: {refusal(target.title, shape, args.dtype, verdict)}", file=sys.stderr)
                return EXIT_GATE
        torch.cuda.nvtx.range_push(NVTX_RANGE)
        res = fn(q, k, v, **kw)
        torch.cuda.nvtx.range_pop()
        out = res
        torch.cuda.synchronize()
        if not torch.isfinite(out).all():
            print("target: error: output has non-finite values", file=sys.stderr)
            return 3
        return 0

    return run_cli("target", body)


if __name__ == "__main__":
    sys.exit(main())
