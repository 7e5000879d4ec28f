"""The program Nsight Compute runs: warm up one target, then launch it exactly once
inside the NVTX range "flashprof" (ncu --nvtx-include flashprof/ picks that launch).

python -m flashprof.profiling.ncu_program KERNEL --batch B --seq S --heads H --dtype fp16 [--warmup N]
KERNEL may be a user target (path/to/file.py:fn); its call may launch several kernels, all
inside the range. Also used, at small sizes, under compute-sanitizer.
"""
from __future__ import annotations

import sys

from flashprof.kernels.cli import ArgumentParser, run_cli

NVTX_RANGE = "flashprof"


def main(argv: list[str] | None = None) -> int:
    p = ArgumentParser(prog="target")
    p.add_argument("kernel")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--seq", type=int, default=4096)
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--dtype", default="fp16")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--seed", type=int, default=1234)
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
