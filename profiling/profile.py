"""`make profile KERNEL=<1..7|ref|cudnn|all>` or `TARGET=path/to/file.py:fn`: build, gate,
collect one Nsight Compute report per target, and write its sidecar.

A user target (see user_target.py) gets every kernel its one call launches inside the NVTX
range, each its own record in the report (or those matching --kernel-regex), at most
--max-launches of them; its sidecar also records the spec, the source's sha256 and git state.

Output: reports/<gpu>/<stem>.ncu-rep + <stem>.json (variant config, shape, dtype, GPU,
driver, clocks, ncu version and command, git revision). An existing report is moved to
reports/<gpu>/history/ first, never overwritten. The analysis summary and figures are a
separate stage (the Makefile chains them using --paths-file).
"""
from __future__ import annotations

import math
import os
import shlex
import sys
import time
from pathlib import Path

from flashprof.kernels.config import variant

from flashprof.kernels.cli import ArgumentParser, FlashprofError, run_cli
from flashprof.profiling.launches import check_count, check_limit, check_regex, matching, ncu_kernels
from flashprof.profiling.ncu import (SECTION_SETS, NcuOptions, find_ncu, ncu_command, ncu_version, retire, run_ncu)
from flashprof.profiling.user_target import MAX_LAUNCHES, is_spec, source_info

ROOT = Path(__file__).resolve().parent.parent


def report_stem(base: str, seq: int, batch: int, heads: int, dtype: str, section_set: str) -> str:
    """Shipped default shape keeps the plain name (kernel6); anything else is spelled out."""
    if (seq, batch, heads, dtype, section_set) == (4096, 16, 16, "fp16", "full"):
        return base
    return f"{base}_s{seq}_b{batch}_h{heads}_{dtype}_{section_set}"


def check_seq(names: list[str], seq: int, gpu: str | None = None) -> None:
    """SEQ must be a multiple of the tile of every variant asked for (references have none).

    Without ``gpu`` this uses kernel 7's fallback config, so it can run before any GPU is
    touched; profile_all repeats it with the GPU's tuned kernel 7.
    """
    tiles = {n: variant(n, gpu=gpu).seq_multiple() for n in names if n.isdigit()}
    if not tiles or all(seq % t == 0 for t in tiles.values()):
        return
    if len(tiles) == 1:
        ((n, t),) = tiles.items()
        raise FlashprofError(f"SEQ={seq} is not a multiple of kernel {n}'s tile ({t})")
    need = math.lcm(*tiles.values())
    raise FlashprofError(f"SEQ={seq} is not a multiple of {need}, the largest tile of kernels "
                         f"{', '.join(tiles)}")


def dispatch_record(name: str, gpu: str, seq: int, dtype: str) -> dict | None:
    """Kernel 7's per-shape table and why this shape got its config (None for other targets)."""
    if name != "7":
        return None
    from flashprof.kernels.config import dispatch, variant_origin

    return {"table": dispatch(7, gpu).to_dict(), "choice": variant(7, gpu, seq, dtype).slug,
            "why": variant_origin(7, gpu, seq, dtype)}


def parse_args(argv):
    p = ArgumentParser(prog="flashprof profile", description=__doc__.splitlines()[0])
    p.add_argument("kernel", help="1-7, ref, cudnn, all, path/to/file.py:fn, module:fn, or a comma list")
    p.add_argument("--seq", type=int, default=4096)
    p.add_argument("--batch", type=int, default=None, help="default: the series' batch for SEQ (16 up to 4096, 8 at 8192, 4 at 16384)")
    p.add_argument("--heads", type=int, default=16)
    p.add_argument("--dtype", default="fp16")
    p.add_argument("--set", dest="section_set", default="full", choices=SECTION_SETS)
    p.add_argument("--clock-control", default="none", choices=("none", "base"))
    p.add_argument("--out-dir", type=Path, default=None, help="default: reports/<gpu>")
    p.add_argument("--paths-file", type=Path, default=None, help="write the report paths here")
    p.add_argument("--kernel-regex", default=None,
                   help="profile only launches whose kernel name matches (default: the target's own)")
    p.add_argument("--max-launches", type=int, default=MAX_LAUNCHES,
                   help=f"user targets: refuse a call that launches more kernels (default {MAX_LAUNCHES})")
    p.add_argument("--no-gate", action="store_true", help="skip the correctness check (not recommended)")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)

    def body() -> int:
        from flashprof.profiling.env import check_writable, require_gpu
        from flashprof.profiling.targets import parse_names, resolve
        from flashprof.profiling.workload import Shape, check_dtype, seed_shape

        # Cheapest and most specific first: KERNEL, dtype, shape, tile, output paths; only
        # then the machine (GPU, then ncu), so a typo is never reported as "no GPU".
        names = parse_names(args.kernel)
        for n in names:
            if is_spec(n):
                resolve(n)  # imports the user's file: a missing file or function is not "no GPU"
        check_regex(args.kernel_regex)
        check_limit(args.max_launches)
        check_dtype(args.dtype)
        batch = args.batch if args.batch is not None else seed_shape(args.seq).batch
        shape = Shape(batch, args.seq, args.heads)
        check_seq(names, shape.seq)
        for d in filter(None, (args.out_dir, args.paths_file and args.paths_file.parent)):
            check_writable(d)
        require_gpu()
        ncu = find_ncu()
        return profile_all(names, shape, args, ncu)

    return run_cli("profile", body)


def profile_all(names: list[str], shape, args, ncu: str) -> int:
    from flashprof.profiling.correctness import require
    from flashprof.profiling.env import (check_writable, git_info, gpu_info, now, smi_clocks, software, write_json_atomic)
    from flashprof.profiling.targets import resolve

    gpu = gpu_info()
    out_dir = args.out_dir or ROOT / "reports" / gpu["slug"]
    check_writable(out_dir)
    check_seq(names, shape.seq, gpu=gpu["slug"])  # this GPU's tuned kernel 7 may have a larger tile
    version = ncu_version(ncu)
    # ncu writes here first; the finished report replaces the old one (moved to history/)
    # only after ncu succeeded, so a failed or interrupted run leaves reports/ as it was.
    # A hidden folder: `analysis summary <dir>` never picks up a half-written report.
    pending = out_dir / ".incomplete"
    paths: list[Path] = []
    t_all = time.perf_counter()
    for i, name in enumerate(names, 1):
        target = resolve(name, gpu=gpu["slug"], seq=shape.seq, dtype=args.dtype)  # kernel 7: this shape's config
        label = f"{i}/{len(names)} {target.stem}"
        t0 = time.perf_counter()
        print(f"[{label}] {target.title}: build + correctness check", file=sys.stderr, flush=True)
        fn = target.callable()
        verdict = None if args.no_gate else require(fn, shape, args.dtype, target.title)
        user_regex = getattr(args, "kernel_regex", None)  # KERNEL_REGEX=, else the target's own
        regex = user_regex or target.kernel_regex
        limit = getattr(args, "max_launches", MAX_LAUNCHES)
        counted = precount(target, fn, shape, args.dtype, user_regex, limit) if target.user else None
        stem = report_stem(target.stem, shape.seq, shape.batch, shape.heads, args.dtype, args.section_set)
        report = out_dir / f"{stem}.ncu-rep"
        fresh = pending / report.name
        try:
            pending.mkdir(parents=True, exist_ok=True)
            fresh.unlink(missing_ok=True)  # left by an interrupted run; ncu will not overwrite it
        except OSError as e:
            raise FlashprofError(f"cannot prepare {fresh}: {e.strerror}") from None
        program = [sys.executable, "-m", "flashprof.profiling.ncu_program", name, "--batch", str(shape.batch),
                   "--seq", str(shape.seq), "--heads", str(shape.heads), "--dtype", args.dtype]
        # A user target: room for one launch over the limit, so ncu's own count can refuse it.
        opts = NcuOptions(output=fresh.with_suffix(""), kernel_regex=regex,
                          section_set=args.section_set, clock_control=args.clock_control,
                          launch_count=limit + 1 if target.user else 1)
        cmd = ncu_command(ncu, opts, program)
        clocks_before = smi_clocks()
        ncu_out, ncu_secs = run_ncu(cmd, target.stem)
        if not fresh.exists():
            raise FlashprofError(f"ncu finished but wrote no report at {fresh}")
        profiled = ncu_kernels(ncu_out)
        if target.user:
            try:
                check_count(profiled, limit, target.user.spec, user_regex)
            except FlashprofError:
                fresh.unlink(missing_ok=True)  # refused: nothing lands in reports/
                raise
        old = retire(report)
        if old:
            print(f"[{label}] previous report kept as {old}", file=sys.stderr)
        os.replace(fresh, report)
        sidecar = {
            "schema": 1,
            "kernel": target.name,
            "title": target.title,
            "target": user_sidecar(target, counted, limit) if target.user else None,
            "config": target.config.to_dict() if target.config else None,
            "config_slug": target.config.slug if target.config else None,
            "dispatch": dispatch_record(target.name, gpu["slug"], shape.seq, args.dtype),
            "shape": shape.to_dict(),
            "dtype": args.dtype,
            "flops": shape.flops,
            "gpu": gpu,
            "clocks": {"nvidia_smi_before": clocks_before, "nvidia_smi_after": smi_clocks(),
                       "clock_control": args.clock_control,
                       "note": "the SM clock during the profiled launch is in the report "
                               "(sm__cycles_elapsed.avg.per_second)"},
            "ncu": {"version": version, "section_set": args.section_set, "kernel_regex": regex,
                    "launch_count": opts.launch_count, "profiled_kernels": profiled,
                    # the command as run, with the report's final path (ncu wrote it to .incomplete/)
                    "args": [str(report.with_suffix("")) if a == str(fresh.with_suffix("")) else a for a in cmd[1:]],
                    "seconds": round(ncu_secs, 2)},
            "correctness": verdict.to_dict() if verdict else None,
            "software": software(),
            "git": git_info(),
            "command": " ".join(shlex.quote(a) for a in sys.argv),
            "created": now(),
        }
        write_json_atomic(report.with_name(stem + ".json"), sidecar)
        paths.append(report)
        print(f"[{label}] wrote {report} (ncu {ncu_secs:.1f}s, total {time.perf_counter() - t0:.1f}s)",
              file=sys.stderr, flush=True)
    if args.paths_file:
        args.paths_file.write_text("\n".join(str(p) for p in paths) + "\n")
    print(f"profiled {len(paths)} target(s) in {time.perf_counter() - t_all:.1f}s", file=sys.stderr)
    for p in paths:
        print(p)
    return 0


def precount(target, fn, shape, dtype: str, regex: str | None, limit: int) -> list[str] | None:
    """Kernels one warmed-up call launches (PyTorch profiler), refused early if none or too
    many; None when the profiler sees no kernels on this machine (ncu's count decides)."""
    import torch

    from flashprof.profiling.launches import profiler_kernels
    from flashprof.profiling.workload import make_inputs

    q, k, v = make_inputs(shape, dtype)
    for _ in range(3):  # the same warm-up as flashprof.profiling.ncu_program: compilation, autotuning
        fn(q, k, v)
    kernels = profiler_kernels(lambda: fn(q, k, v))
    del q, k, v
    torch.cuda.empty_cache()
    if kernels is None:
        print(f"profile: warning: the PyTorch profiler sees no kernels here; ncu will count "
              f"{target.user.spec}'s launches", file=sys.stderr)
        return None
    kept = matching(kernels, regex)
    check_count(kept, limit, target.user.spec, regex)
    return kept


def user_sidecar(target, counted: list[str] | None, limit: int) -> dict:
    info = source_info(target.user_fn.wrapped, target.user)
    info["max_launches"] = limit
    info["profiler_kernels"] = counted
    return info


if __name__ == "__main__":
    sys.exit(main())
