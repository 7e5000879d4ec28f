"""`make bench`: kernels 1-7 and both references over the series' benchmark shapes, in one run.

Method (the seed's): 16 heads, d=128, fresh randn inputs, batch 16 for S <= 4096, 8 for
8192, 4 for 16384; FLOPs = 4*B*H*S^2*d. Each repeat is timed with CUDA events around one
launch, after writing a buffer of twice the L2 size (so K/V/Q start cold in L2, as in the
seed's flushed Nsight Compute durations); warm-up first; the median of the repeats is
reported. Every kernel passes the correctness gate first. % of FA2 compares against the
"ref" target measured in the same run; the harmonic mean over S is of TFLOP/s.

Output: reports/<gpu>/bench.csv (+ bench.json sidecar); an old pair moves to history/.
With a user target (--kernels path/to/file.py:fn, `make bench TARGET=...`) the default
output is reports/<gpu>/bench_<target name>.csv, its sidecar recording the target's source.
"""
from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

from flashprof.kernels.common import harmonic_mean, move_to_history, write_csv_atomic

from flashprof.kernels.cli import ArgumentParser, FlashprofError, run_cli, doc_summary
from flashprof.kernels.gpus import reports_folder
from flashprof.profiling.workload import BENCH_SEQS, Shape, check_dtype, make_inputs, seed_shape

from flashprof.paths import ROOT  # noqa: E402
FIELDS = ["gpu", "target", "title", "config_slug", "dtype", "batch", "seq", "heads", "d_head",
          "reps", "median_ms", "p10_ms", "p90_ms", "tflops", "pct_of_ref"]


def l2_flush_buffer():
    """A device buffer of twice the L2 (at least 64 MiB) that ``time_fn`` writes before
    each launch, so every launch starts with its inputs out of L2."""
    import torch

    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    return torch.empty(max(2 * l2, 64 << 20) // 4, dtype=torch.float32, device="cuda")


def time_fn(fn, args, kwargs, reps: int, warmup: int, flush_buf) -> list[float]:
    """Per-launch times (ms) with an L2 flush before each launch."""
    import torch

    for _ in range(warmup):
        fn(*args, **kwargs)
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        flush_buf.add_(1)  # touches every byte: evicts the inputs from L2
        starts[i].record()
        fn(*args, **kwargs)
        ends[i].record()
    torch.cuda.synchronize()
    return [s.elapsed_time(e) for s, e in zip(starts, ends)]


def pct(a: float, b: float) -> float:
    return 100.0 * a / b if b else float("nan")


def run_bench(names, seqs, dtype, reps, warmup, gate=True, progress=print, gpu_slug=None, rounds: int = 1):
    """Returns a list of row dicts (FIELDS). Pure of file I/O. With ``rounds`` > 1 every S
    and every target is timed once per round, ``rounds`` times over, and each median is over
    all reps x rounds launches: a drift of the GPU's clock during the run (several per cent
    on the H200 between two runs of the same kernel) then reaches every target alike
    instead of whichever was timed at the time."""
    import torch

    from flashprof.profiling.correctness import require
    from flashprof.profiling.targets import resolve
    from flashprof.profiling.user_target import fixed_heads

    flush = l2_flush_buffer()
    targets = [resolve(n, gpu=gpu_slug) for n in names]
    fns = {}   # target name (references, user code) or config slug (our kernels) -> callable
    gated = set()

    def callable_for(t):
        """Built once per config and gated once: kernel 7 may dispatch each S to another config."""
        key = t.config.slug if t.config is not None else t.name
        if key not in fns:
            fns[key] = t.callable()
        if gate and key not in gated:
            gate_seq = 1024 if t.config is None or 1024 % t.config.seq_multiple() == 0 else t.config.seq_multiple()
            heads = fixed_heads(getattr(t, "user_fn", None)) or 4  # a kernel built for one head count
            require(fns[key], Shape(2, gate_seq, heads), dtype, t.title + (f" ({key})" if t.config else ""))
            gated.add(key)
        return fns[key]

    for t in targets:
        callable_for(t)
    # kernel 7: the config kernels/tuned.json dispatches each (seq, dtype) to
    per_seq = {seq: [(resolve(n, gpu=gpu_slug, seq=seq, dtype=dtype) if n.isdigit() else t)
                     for n, t in zip(names, targets)] for seq in seqs}
    per_seq = {seq: [t for t in ts if t.config is None or seq % t.config.seq_multiple() == 0]
               for seq, ts in per_seq.items()}
    times: dict[tuple[int, int], list[float]] = {(seq, i): [] for seq, ts in per_seq.items() for i in range(len(ts))}
    total = len(times) * rounds
    t0 = time.perf_counter()
    done = 0
    for rnd in range(1, rounds + 1):
        for seq in seqs:
            shape = seed_shape(seq)
            q, k, v = make_inputs(shape, dtype)
            out = torch.empty_like(q)
            for i, t in enumerate(per_seq[seq]):
                kwargs = {"out": out} if t.config is not None else {}
                ts = time_fn(callable_for(t), (q, k, v), kwargs, reps, warmup, flush)
                times[seq, i] += ts
                done += 1
                eta = (time.perf_counter() - t0) / done * (total - done)
                med = statistics.median(ts)
                progress(f"[{done}/{total}]{f' round {rnd}/{rounds}' if rounds > 1 else ''} S={seq:<5} "
                         f"{t.name:>5}: {med:8.3f} ms {shape.flops / (med * 1e-3) / 1e12:6.1f} TFLOP/s  (eta {eta:4.0f}s)")
            del q, k, v, out
    rows = []
    for seq in seqs:
        shape = seed_shape(seq)
        ref_ms = None
        for i, t in enumerate(per_seq[seq]):
            ts = sorted(times[seq, i])
            med = statistics.median(ts)
            if t.name == "ref":
                ref_ms = med
            rows.append({
                "gpu": gpu_slug, "target": t.name, "title": t.title,
                "config_slug": t.config.slug if t.config else "",
                "dtype": dtype, "batch": shape.batch, "seq": seq, "heads": shape.heads, "d_head": shape.d_head,
                "reps": len(ts), "median_ms": med, "p10_ms": ts[len(ts) // 10],
                "p90_ms": ts[(9 * len(ts)) // 10], "tflops": shape.flops / (med * 1e-3) / 1e12,
                "pct_of_ref": float("nan"),
            })
        for r in rows:
            if r["seq"] == seq and ref_ms:
                r["pct_of_ref"] = pct(ref_ms, r["median_ms"])
    return rows


def table(rows: list[dict]) -> str:
    """Kernels x S: TFLOP/s (% of FA2), and the harmonic mean over S."""
    seqs = sorted({r["seq"] for r in rows})
    names = list(dict.fromkeys(r["target"] for r in rows))
    by = {(r["target"], r["seq"]): r for r in rows}
    hm = {n: harmonic_mean([by[(n, s)]["tflops"] for s in seqs if (n, s) in by]) for n in names}
    head = f"{'kernel':>7} " + " ".join(f"{'S=' + str(s):>15}" for s in seqs) + f" {'harmonic mean':>17}"
    lines = [head, "-" * len(head)]
    for n in names:
        cells = []
        for s in seqs:
            r = by.get((n, s))
            cells.append(f"{r['tflops']:6.1f} ({r['pct_of_ref']:5.1f}%)" if r else " " * 15)
        ref_hm = hm.get("ref")
        lines.append(f"{n:>7} " + " ".join(f"{c:>15}" for c in cells)
                     + f" {hm[n]:6.1f} ({pct(hm[n], ref_hm) if ref_hm else float('nan'):5.1f}%)")
    lines.append("TFLOP/s (% of FA2 = PyTorch SDPA flash backend, same run); FLOPs = 4*B*H*S^2*d")
    return "\n".join(lines)


def write_csv(rows: list[dict], path: Path) -> None:
    write_csv_atomic(path, FIELDS, rows, float_format="{:.6g}")


def retire_file(path: Path) -> Path | None:
    """Move an existing CSV and its sidecar into history/ with their timestamp."""
    return move_to_history(path)


def main(argv: list[str] | None = None) -> int:
    p = ArgumentParser(prog="flashprof bench", description=doc_summary(__doc__))
    p.add_argument("--kernels", default="all",
                   help="comma list of 1-7, ref, cudnn, path/to/file.py:fn, module:fn (default all)")
    p.add_argument("--seqs", default=",".join(map(str, BENCH_SEQS)), help="sequence lengths, comma list (default: %(default)s)")
    p.add_argument("--dtype", default="fp16", help="fp16 or bf16 (default: %(default)s)")
    p.add_argument("--reps", type=int, default=30, help="timed launches per point; the median is reported (default: %(default)s)")
    p.add_argument("--warmup", type=int, default=5, help="untimed launches first (default: %(default)s)")
    p.add_argument("--rounds", type=int, default=1,
                   help="time every S and target once per round, this many rounds; medians over reps x rounds "
                        "(default: %(default)s)")
    p.add_argument("--out", type=Path, default=None, help="default reports/<gpu>/bench.csv")
    args = p.parse_args(argv)

    def body() -> int:
        from flashprof.profiling.env import (check_writable, git_info, gpu_info, now, smi_clocks, software, write_json_atomic)
        from flashprof.profiling.targets import parse_names, resolve
        from flashprof.profiling.user_target import is_spec

        names = parse_names(args.kernels.split(","))
        users = [resolve(n) for n in names if is_spec(n)]  # a bad file or function before "no GPU"
        if "ref" not in names:
            names.append("ref")
        check_dtype(args.dtype)
        try:
            seqs = [int(s) for s in args.seqs.split(",")]
        except ValueError:
            raise FlashprofError(f"bad --seqs {args.seqs!r}: give comma-separated integers") from None
        for s in seqs:
            seed_shape(s)  # a positive length
        if args.reps < 20:
            raise FlashprofError("--reps must be at least 20 (medians of fewer repeats are noise)")
        if args.rounds < 1:
            raise FlashprofError(f"bad --rounds {args.rounds}: must be at least 1")
        if args.out:
            check_writable(args.out.parent)
        gpu = gpu_info()
        default = f"bench_{'_'.join(t.name for t in users)}.csv" if users else "bench.csv"
        out = args.out or ROOT / reports_folder(gpu["slug"]) / default
        check_writable(out.parent)
        clocks0 = smi_clocks()
        t0 = time.perf_counter()
        rows = run_bench(names, seqs, args.dtype, args.reps, args.warmup, gpu_slug=gpu["slug"],
                         progress=lambda m: print(m, file=sys.stderr, flush=True), rounds=args.rounds)
        old = retire_file(out)
        if old:
            print(f"previous {out.name} kept as {old}", file=sys.stderr)
        write_csv(rows, out)
        from flashprof.kernels.config import dispatch, variant

        from flashprof.profiling.user_target import source_info

        write_json_atomic(out.with_suffix(".json"), {
            "schema": 1, "what": "bench", "gpu": gpu,
            "clocks": {"nvidia_smi_before": clocks0, "nvidia_smi_after": smi_clocks()},
            "method": {"timer": "CUDA events per launch", "l2_flush": "2x L2 bytes written before each launch",
                       "reps": args.reps, "warmup": args.warmup, "rounds": args.rounds,
                       "statistic": "median" + (" over reps x rounds (every S and target once per round)"
                                                if args.rounds > 1 else ""),
                       "flops": "4*B*H*S^2*d", "reference": "ref = torch SDPA FLASH_ATTENTION backend",
                       "harmonic_mean": "over S of TFLOP/s"},
            "configs": {n: variant(n, gpu=gpu["slug"]).to_dict() for n in names if n.isdigit()},
            # kernel 7 per S: the dispatch table and the config each S ran (config_slug column)
            "dispatch": {n: {"table": dispatch(n, gpu["slug"]).to_dict(),
                             "per_seq": {str(s): variant(n, gpu["slug"], s, args.dtype).slug for s in seqs}}
                         for n in names if n == "7"},
            "user_targets": {t.name: source_info(t.user_fn.wrapped, t.user) for t in users},
            "software": software(), "git": git_info(),
            "command": " ".join(sys.argv), "created": now(), "seconds": round(time.perf_counter() - t0, 1),
        })
        print(table(rows))
        print(f"wrote {out}")
        return 0

    return run_cli("bench", body)


if __name__ == "__main__":
    sys.exit(main())
