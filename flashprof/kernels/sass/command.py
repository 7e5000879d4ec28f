"""``flashprof sass`` (also ``python -m flashprof.kernels.sass``): the static report of a kernel, the diff of two, and the
committed data tables (reports/sass/*.csv). Errors are one line (kernels/cli.py).

    flashprof sass 6 [--arch sm_90] [--dtype fp16|bf16] [--format table|json]
    flashprof sass diff 5 6 [--arch sm_90]
    flashprof sass data [--check]
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Sequence

from flashprof.kernels.cli import ArgumentParser, FlashprofError, run_cli
from flashprof.kernels.config import ConfigError, variant
from flashprof.kernels.sass.static import DATA_DIR, DTYPES, REPO, check_arch, static_report, write_data


class StaleData(FlashprofError):
    exit_code = 1


def _kernel_arg(s: str) -> int:
    try:
        variant(s)
    except ConfigError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return int(s)


def _default_gpu(kernel: int, arch: str, gpu: str | None) -> str | None:
    """``--arch sm_90a`` (Hopper's own instructions) asks for kernel 7 as tuned for a Hopper GPU."""
    if gpu is not None or kernel != 7 or arch != "sm_90a":
        return gpu
    from flashprof.kernels import gpus
    from flashprof.kernels.config import load_dispatch
    tuned = load_dispatch()
    return next((g.slug for g in gpus.GPUS if g.arch == "sm_90" and g.slug in tuned), None)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--arch", default="sm_90", help="target, e.g. sm_80, sm_86, sm_90, sm_90a")
    p.add_argument("--dtype", default="fp16", choices=DTYPES, help="the instantiation to read (default: %(default)s)")


def _table(rep: dict) -> str:
    lines = [f"kernel {rep['kernel']} ({rep['slug']})  {rep['arch']}  {rep['dtype']}",
             f"  function     {rep['function']}",
             f"  registers    {rep['registers']}",
             f"  spills       {rep['spill_store_bytes']} B stored, "
             f"{rep['spill_load_bytes']} B loaded; stack frame {rep['stack_bytes']} B",
             f"  smem         {rep['smem_bytes']} B ({rep['dynamic_smem_bytes']} dynamic "
             f"+ {rep['static_smem_bytes']} static)",
             f"  instructions {rep['instructions']}",
             f"  main loop    {rep['loop_start']}-{rep['loop_end']}, "
             f"{rep['loop_instructions']} instructions",
             "  tensor ops   " + (", ".join(f"{op} {c}" for op, c in rep["loop_tensor_opcodes"].items())
                                  or "none") + f" per loop pass (one KV block, B_c = {rep['B_c']})",
             f"  opcodes:     {'kernel':>6s} {'loop':>6s}"]
    lines += [f"    {op:<10s} {c:6d} {rep['loop_opcodes'].get(op, 0):6d}"
              for op, c in rep["opcodes"].items()]
    return "\n".join(lines)


def _diff_text(a: dict, b: dict) -> str:
    ops = set(a["opcodes"]) | set(b["opcodes"])
    rows = [(op, a["opcodes"].get(op, 0), b["opcodes"].get(op, 0)) for op in ops]
    rows = [r for r in rows if r[1] != r[2]]
    rows.sort(key=lambda r: (-abs(r[2] - r[1]), r[0]))
    ka, kb = a["kernel"], b["kernel"]
    out = [f"kernel {ka} -> {kb}  {a['arch']}  {a['dtype']}",
           f"  registers {a['registers']} -> {b['registers']}, spill bytes "
           f"{a['spill_bytes']} -> {b['spill_bytes']}, instructions "
           f"{a['instructions']} -> {b['instructions']}",
           f"  {'opcode':<10s} {'k' + str(ka):>7s} {'k' + str(kb):>7s} {'delta':>7s}"]
    out += [f"  {op:<10s} {x:7d} {y:7d} {y - x:+7d}" for op, x, y in rows]
    if not rows:
        out.append("  (identical opcode histograms)")
    return "\n".join(out)


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    return run_cli("sass", lambda: _main(argv))


def _main(argv: list[str]) -> int:
    if argv and argv[0] == "diff":
        p = ArgumentParser(prog="flashprof sass diff",
                           description="opcode deltas from kernel A to kernel B")
        p.add_argument("a", type=_kernel_arg)
        p.add_argument("b", type=_kernel_arg)
        _common(p)
        args = p.parse_args(argv[1:])
        check_arch(args.arch)
        ra = static_report(args.a, args.arch, args.dtype)
        rb = static_report(args.b, args.arch, args.dtype)
        print(_diff_text(ra, rb))
    elif argv and argv[0] == "data":
        p = ArgumentParser(prog="flashprof sass data",
                           description=f"write {DATA_DIR.relative_to(REPO)}/*.csv")
        p.add_argument("--check", action="store_true",
                       help="compare with the committed files instead of writing")
        args = p.parse_args(argv[1:])
        touched = write_data(check=args.check)
        if args.check:
            if touched:
                raise StaleData("stale static data: " + ", ".join(map(str, touched))
                                + " (run `make sass-data`)")
            print("static data up to date")
        else:
            print("\n".join(f"wrote {t.relative_to(REPO)}" for t in touched))
    else:
        p = ArgumentParser(prog="flashprof sass",
                           description="registers, spills, smem and SASS opcodes of a kernel; "
                                       "sub-commands: 'flashprof sass diff A B' (opcode deltas), "
                                       "'flashprof sass data [--check]' (the committed reports/sass/*.csv)")
        p.add_argument("kernel", type=_kernel_arg, help="kernel number, 1-7")
        _common(p)
        p.add_argument("--gpu", help="kernel 7: the config tuned for this GPU (a slug, e.g. h200; "
                       "default: the GPU tuned.json has for --arch sm_90a, else the series' config)")
        p.add_argument("--format", default="table", choices=("table", "json"), help="output form (default: %(default)s)")
        args = p.parse_args(argv)
        rep = static_report(args.kernel, args.arch, args.dtype, gpu=_default_gpu(args.kernel, args.arch, args.gpu))
        print(json.dumps(rep, indent=2) if args.format == "json" else _table(rep))
    return 0
