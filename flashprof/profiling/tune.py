"""`make tune`: auto-tuning kernel 7 per GPU (the series' chapter 7 kernel).

1. The space: the seed's (B_r {64,128} x B_c {32,64} x Q/K/V load fragments {0,2} x
   register double buffer x optimised softmax), widened with B_c = 128 and 8 warps at
   B_r = 128; the config's own rules reject invalid combinations (e.g. Q=2 with K=0).
   Eager loads, swizzling and cp.async stay on (each was a win in kernels 2-3).
2. Static pruning, no GPU: every candidate compiled to a cubin (parallel, cached) and
   dropped if it spills, needs too much shared memory, or cannot keep 8 warps per SM;
   each drop is listed with its ptxas numbers in reports/<gpu>/autotune_static.csv.
3. Device sweep over the survivors: each built as a plain shared library (nvcc, a few
   seconds; no torch extension per candidate), checked by the correctness gate, then timed
   like `make bench` (CUDA events, L2 flush, median) at S = 1024, 4096, 16384 with the
   seed's batch sizes. Rows are appended to reports/<gpu>/autotune.csv as they finish, so
   a re-run skips finished configs. With several GPUs, one worker process per GPU.
4. The winner (harmonic mean of TFLOP/s over S) goes to kernels/tuned.json for that GPU;
   kernel 7 uses it there (`make bench`, `make profile KERNEL=7`).
5. Per shape (--bucket MAX_SEQ): the sweep times S <= MAX_SEQ only (default: the bench's S up
   to it) and the winner becomes that GPU's bucket for S <= MAX_SEQ in --dtype; load(7)
   dispatches those shapes to it and keeps the default entry for the rest. --space extended
   adds the template options the seed's space lacks: the persistent grid, 2 CTAs/SM, and
   kernel 7's Hopper form (wgmma, sm_90a: pruned with a reason on any other GPU).
"""
from __future__ import annotations

import csv
import io
import itertools
import json
import os
import re
import statistics
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from flashprof.kernels.common import harmonic_mean, write_atomic, write_csv_atomic
from flashprof.kernels.config import TUNED_FILE, ConfigError, KernelConfig
from flashprof.kernels.gpus import SHIPPED, by_slug, reports_folder

from flashprof.kernels.cli import ArgumentParser, FlashprofError, run_cli, doc_summary
from flashprof.profiling.shared_lib import SharedLibKernel, build_shared_lib  # noqa: F401 (public names)

from flashprof.paths import ROOT  # noqa: E402
TUNE_SEQS = (1024, 4096, 16384)
SM_REGS = 65536
SM_SMEM = 228 * 1024
SMEM_RESERVED_PER_CTA = 1024
MAX_WARPS_PER_SM = 64
MIN_WARPS_PER_SM = 8
STATIC_FIELDS = ["slug", "keep", "reason", "registers", "spill_bytes", "smem_bytes", "ctas_per_sm",
                 "warps_per_sm", "config"]
SWEEP_FIELDS = ["gpu", "slug", "dtype", "seq", "batch", "heads", "median_ms", "tflops", "ref_tflops",
                "pct_of_ref", "max_err", "ref_err", "config"]


def space() -> tuple[list[KernelConfig], list[tuple[dict, str]]]:
    """All candidate configs, and the combinations the config rules reject (with why)."""
    shapes = [(64, 32, 4), (64, 64, 4), (64, 128, 4), (128, 32, 4), (128, 64, 4), (128, 128, 4),
              (128, 32, 8), (128, 64, 8), (128, 128, 8)]
    ok, rejected = [], []
    for (br, bc, w), q, k, v, db, opt in itertools.product(shapes, (0, 2), (0, 2), (0, 2), (0, 1), (0, 1)):
        fields = dict(d_head=128, B_r=br, B_c=bc, n_warps=w, async_copy=True, eager_load_blocks=True,
                      swizzled=True, Q_mma_load_K_fragments=q, K_mma_load_K_fragments=k,
                      V_mma_load_K_fragments=v, mma_double_buffer_loads=bool(db), optimized_softmax=bool(opt))
        try:
            ok.append(KernelConfig(**fields))
        except ConfigError as e:
            rejected.append((fields, str(e).split(": ", 1)[-1]))
    return ok, rejected


def extended_space() -> tuple[list[KernelConfig], list[tuple[dict, str]]]:
    """The seed space plus, for each of its candidates, the persistent grid and (8 warps,
    B_c <= 64) __launch_bounds__ with 2 CTAs per SM; the config rules reject the rest."""
    base, rejected = space()
    ok = list(base)
    for c in base:
        for extra in ({"persistent": True}, {"min_blocks_per_sm": 2}):
            fields = {**c.to_dict(), **extra}
            if "min_blocks_per_sm" in extra and (c.n_warps != 8 or c.B_c > 64):
                continue
            try:
                ok.append(KernelConfig.from_dict(fields))
            except ConfigError as e:
                rejected.append((fields, str(e).split(": ", 1)[-1]))
    # Kernel 7's Hopper form: one warpgroup per 64 query rows, with or without a minimum of
    # resident CTAs (fewer registers, more CTAs per SM).
    for (br, bc, w), mb in itertools.product([(64, 64, 4), (64, 128, 4), (128, 64, 8), (128, 128, 8)], (0, 2, 3)):
        fields = dict(d_head=128, B_r=br, B_c=bc, n_warps=w, async_copy=True, eager_load_blocks=True,
                      swizzled=True, optimized_softmax=True, wgmma=True, min_blocks_per_sm=mb)
        try:
            ok.append(KernelConfig(**fields))
        except ConfigError as e:
            rejected.append((fields, str(e).split(": ", 1)[-1]))
    return list(dict.fromkeys(ok)), rejected


def hopper_space() -> tuple[list[KernelConfig], list[tuple[dict, str]]]:
    """Kernel 7's Hopper techniques (sm_90a), one option at a time on top of the wgmma
    kernel, as FlashAttention-3 adds them: a TMA producer warpgroup with setmaxnreg and a
    ring of K/V stages (warp_specialized), softmax overlapped with the next block's MMAs
    (intra_wg_overlap), and two consumer warpgroups in ping-pong (pingpong); for the tiles
    128x128 and 128x64 (2 consumer warpgroups) and 64x64 (1, two CTAs per SM). The plain
    wgmma tiles of the extended space come too (one CTA per SM: its 128x128 at 2 CTAs/SM
    does not assemble), as the step each technique is added to; then the persistent grid on
    each overlapped step."""
    ok, rejected = [], []
    wgmma_only = [c for c in extended_space()[0] if c.wgmma and not c.min_blocks_per_sm]
    steps = ({}, {"intra_wg_overlap": True}, {"intra_wg_overlap": True, "pingpong": True})
    tiles = [(128, 128, 8, 0, (2, 3)), (128, 64, 8, 0, (2, 3, 4)), (64, 64, 4, 2, (2, 3))]
    for (br, bc, w, mb, stage_list), step in itertools.product(tiles, steps):
        for st in stage_list:
            fields = dict(d_head=128, B_r=br, B_c=bc, n_warps=w, async_copy=True, eager_load_blocks=True,
                          swizzled=True, optimized_softmax=True, wgmma=True, min_blocks_per_sm=mb,
                          warp_specialized=True, kv_stages=st, **step)
            try:
                ok.append(KernelConfig(**fields))
            except ConfigError as e:
                rejected.append((fields, str(e).split(": ", 1)[-1]))
    # The persistent grid on the overlapped steps (one wave of CTAs; the producer loads the
    # next tile's Q and first K/V blocks under this tile's last window and epilogue): two Q
    # buffers, so 3 K/V stages of 128 x 128 no longer fit.
    for c in list(ok):
        if c.intra_wg_overlap:
            fields = {**c.to_dict(), "persistent": True}
            try:
                ok.append(KernelConfig.from_dict(fields))
            except ConfigError as e:
                rejected.append((fields, str(e).split(": ", 1)[-1]))
    return list(dict.fromkeys(wgmma_only + ok)), rejected


SPACES = {"seed": space, "extended": extended_space, "hopper": hopper_space}


def bucket_seqs(max_seq: int) -> tuple[int, ...]:
    """The bench's sequence lengths a bucket for S <= max_seq is tuned on."""
    from flashprof.profiling.workload import BENCH_SEQS

    seqs = tuple(s for s in BENCH_SEQS if s <= max_seq)
    if not seqs:
        raise FlashprofError(f"bad --bucket {max_seq}: no benchmark S ({', '.join(map(str, BENCH_SEQS))}) "
                             "is that short; give --seqs")
    return seqs


def occupancy(registers: int, threads: int, smem: int) -> int:
    """Resident CTAs per SM from registers (allocated per warp in 256-register units),
    shared memory and the warp limit."""
    warps = threads // 32
    regs_per_warp = ((max(registers, 1) * 32 + 255) // 256) * 256
    by_regs = SM_REGS // (regs_per_warp * warps)
    by_smem = SM_SMEM // (smem + SMEM_RESERVED_PER_CTA)
    by_warps = MAX_WARPS_PER_SM // warps
    return max(0, min(by_regs, by_smem, by_warps, 32))


def static_prune(cfgs: list[KernelConfig], arch: str, dtype: str = "fp16", progress=print) -> list[dict]:
    from flashprof.kernels.sass.static import build_many, log_path, pick_function, ptxas_report

    t0 = time.perf_counter()
    built = build_many([(c, arch) for c in cfgs if c.target_arch(arch) is not None])
    progress(f"static build of {len(built)} candidates for {arch}: {time.perf_counter() - t0:.1f}s")
    rows = []
    for c in cfgs:
        if c.target_arch(arch) is None:  # a wgmma config on a GPU that is not Hopper
            rows.append({"slug": c.slug, "keep": False, "reason": f"cannot run on {arch}: wgmma is sm_90a only",
                         "registers": "", "spill_bytes": "", "smem_bytes": c.smem_bytes, "ctas_per_sm": "",
                         "warps_per_sm": "", "config": json.dumps(c.to_dict(), sort_keys=True)})
            continue
        stats = ptxas_report(log_path(built[(c, arch)]))
        st = stats[pick_function(stats.keys(), dtype)]
        spill = st.spill_store_bytes + st.spill_load_bytes + st.stack_bytes
        ctas = occupancy(st.registers, c.threads, c.smem_bytes)
        warps = ctas * c.n_warps
        reason = ""
        if spill:
            reason = f"spills: {st.spill_store_bytes} B stored, {st.spill_load_bytes} B loaded, stack {st.stack_bytes} B"
        elif c.smem_bytes > 227 * 1024:
            reason = f"needs {c.smem_bytes} B shared memory (> 227 KiB)"
        elif warps < MIN_WARPS_PER_SM:
            reason = f"occupancy: {ctas} CTA(s) x {c.n_warps} warps = {warps} warps/SM < {MIN_WARPS_PER_SM} ({st.registers} regs)"
        rows.append({"slug": c.slug, "keep": not reason, "reason": reason, "registers": st.registers,
                     "spill_bytes": spill, "smem_bytes": c.smem_bytes, "ctas_per_sm": ctas,
                     "warps_per_sm": warps, "config": json.dumps(c.to_dict(), sort_keys=True)})
    return rows


def finished(csv_path: Path, dtype: str, seqs) -> set[str]:
    if not csv_path.exists():
        return set()
    seen: dict[str, set[int]] = {}
    with csv_path.open() as f:
        for r in csv.DictReader(f):
            if r["dtype"] == dtype:
                seen.setdefault(r["slug"], set()).add(int(r["seq"]))
    return {s for s, got in seen.items() if set(seqs) <= got}


def append_rows(csv_path: Path, rows: list[dict]) -> None:
    """One write per config (O_APPEND): safe with one worker process per GPU."""
    new = not csv_path.exists()
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=SWEEP_FIELDS)
    if new:
        w.writeheader()
    for r in rows:
        w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})
    with csv_path.open("a") as f:
        f.write(buf.getvalue())
        f.flush()


def sweep(cfgs: list[KernelConfig], seqs, dtype: str, reps: int, warmup: int, csv_path: Path, gpu_slug: str,
          lib_dir: Path, progress=print, rounds: int = 1) -> None:
    """Gate and time every candidate at every S. With ``rounds`` > 1 the whole set (FA2
    first, then each candidate) is timed that many times over, so a drift of the GPU's clock
    during the sweep reaches every candidate alike; each median is over reps x rounds
    launches. A candidate's rows are appended once its last round is done."""
    import torch

    from flashprof.profiling.bench import l2_flush_buffer, time_fn
    from flashprof.profiling.correctness import check
    from flashprof.profiling.reference import sdpa
    from flashprof.profiling.workload import Shape, make_inputs, seed_shape

    major, minor = torch.cuda.get_device_capability()
    arch = f"sm_{major}{minor}"
    lib_dir.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 4) as pool:
        libs = dict(zip(cfgs, pool.map(lambda c: build_shared_lib(c, arch, lib_dir), cfgs)))
    progress(f"built {len(cfgs)} shared libraries in {time.perf_counter() - t0:.1f}s")

    flush = l2_flush_buffer()
    inputs = {s: make_inputs(seed_shape(s), dtype, seed=s) for s in seqs}
    outs = {s: torch.empty_like(inputs[s][0]) for s in seqs}
    ref = sdpa("ref")
    ref_ms: dict[int, list[float]] = {s: [] for s in seqs}
    fns = {cfg: SharedLibKernel(libs[cfg], cfg) for cfg in cfgs}
    verdicts = {cfg: check(fns[cfg], Shape(2, 1024, 4), dtype) for cfg in cfgs}
    times: dict[tuple[KernelConfig, int], list[float]] = {(c, s): [] for c in cfgs for s in seqs}
    t_sweep = time.perf_counter()
    for r in range(1, rounds + 1):
        for s in seqs:
            ref_ms[s] += time_fn(ref, inputs[s], {}, reps, warmup, flush)
        for i, cfg in enumerate(cfgs, 1):
            verdict = verdicts[cfg]
            if verdict.ok:
                for s in seqs:
                    times[cfg, s] += time_fn(fns[cfg], inputs[s], {"out": outs[s]}, reps, warmup, flush)
            if r < rounds:
                continue
            rows = []
            for s in seqs:
                shape = seed_shape(s)
                ms = statistics.median(times[cfg, s]) if verdict.ok else float("nan")
                tf = shape.flops / (ms * 1e-3) / 1e12 if ms == ms else float("nan")
                ref_tf = shape.flops / (statistics.median(ref_ms[s]) * 1e-3) / 1e12
                rows.append({"gpu": gpu_slug, "slug": cfg.slug, "dtype": dtype, "seq": s, "batch": shape.batch,
                             "heads": shape.heads, "median_ms": ms, "tflops": tf, "ref_tflops": ref_tf,
                             "pct_of_ref": 100 * tf / ref_tf, "max_err": verdict.max_err,
                             "ref_err": verdict.ref_err, "config": json.dumps(cfg.to_dict(), sort_keys=True)})
            append_rows(csv_path, rows)
            el = time.perf_counter() - t_sweep
            eta = el / i * (len(cfgs) - i)
            status = "FAILED gate" if not verdict.ok else " ".join(f"{row['tflops']:5.0f}" for row in rows)
            progress(f"[{i:3d}/{len(cfgs)}] {cfg.slug:<52} {status} TFLOP/s  elapsed {el:4.0f}s eta {eta:4.0f}s")
        if r < rounds:
            progress(f"round {r}/{rounds} done ({time.perf_counter() - t_sweep:.0f}s)")


def rank(csv_path: Path, dtype: str, seqs) -> list[tuple[float, str, dict, dict]]:
    """[(harmonic-mean TFLOP/s, slug, config dict, per-S pct)] best first, complete configs only."""
    by: dict[str, dict] = {}
    with csv_path.open() as f:
        for r in csv.DictReader(f):
            if r["dtype"] != dtype or int(r["seq"]) not in seqs:
                continue
            e = by.setdefault(r["slug"], {"config": json.loads(r["config"]), "tf": {}, "pct": {}, "ref": {}})
            e["tf"][int(r["seq"])] = float(r["tflops"])
            e["pct"][int(r["seq"])] = float(r["pct_of_ref"])
            e["ref"][int(r["seq"])] = float(r["ref_tflops"])
    out = []
    for slug, e in by.items():
        if set(seqs) <= set(e["tf"]):
            hm = harmonic_mean([e["tf"][s] for s in seqs])
            if hm == hm:
                out.append((hm, slug, e["config"], {**e["pct"], "hm_pct": 100 * hm / harmonic_mean([e["ref"][s] for s in seqs])}))
    return sorted(out, key=lambda t: -t[0])


def save_winner(gpu_slug: str, hm: float, cfg: dict, pct: dict, dtype: str, seqs, path: Path = TUNED_FILE,
                runner_up: tuple | None = None, source: Path | None = None) -> None:
    """The winner as ``gpu_slug``'s default entry, ``runner_up`` (a ``rank`` row) beside it.
    The winner it replaces moves to ``previous_default`` with what described it (its rule,
    numbers, source), the one before that to the front of ``earlier_defaults``; everything
    else the entry held (per-S buckets, kernel 7's ``mma_sync``
    form, earlier sweeps' records) stays."""
    data = json.loads(path.read_text()) if path.exists() else {}
    old = data.get(gpu_slug, {})
    described = ("slug", "config", "dtype", "dtypes", "seqs", "harmonic_mean_tflops", "hm_pct_of_ref",
                 "pct_of_ref", "rule", "source", "created")
    keep = {k: v for k, v in old.items()
            if k not in described + ("runner_up", "previous_default", "earlier_defaults") and v}
    source = Path(source).resolve() if source is not None else None  # --csv may be relative to the cwd
    src = str(source.relative_to(ROOT)) if source is not None and source.is_relative_to(ROOT) else \
        str(source) if source is not None else f"{reports_folder(gpu_slug)}/autotune.csv"
    entry = {"config": cfg, "slug": KernelConfig.from_dict(cfg).slug, "dtype": dtype,
             "seqs": list(seqs), "harmonic_mean_tflops": round(hm, 2),
             "pct_of_ref": {str(k): round(v, 2) for k, v in pct.items()},
             "source": src, "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), **keep}
    earlier = list(old.get("earlier_defaults", []))
    if old.get("slug") and old["slug"] != entry["slug"]:
        entry["previous_default"] = {k: old[k] for k in described if k in old}
        if old.get("previous_default"):
            earlier.insert(0, old["previous_default"])
    elif old.get("previous_default"):
        entry["previous_default"] = old["previous_default"]
    if earlier:
        entry["earlier_defaults"] = earlier  # newest first: every default ever replaced
    if runner_up is not None:
        r_hm, r_slug, r_cfg, r_pct = runner_up
        entry["runner_up"] = {"slug": r_slug, "config": r_cfg, "harmonic_mean_tflops": round(r_hm, 2),
                              "pct_of_ref": {str(k): round(v, 2) for k, v in r_pct.items()}}
    data[gpu_slug] = entry
    write_atomic(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


def save_bucket_winner(gpu_slug: str, max_seq: int, hm: float, cfg: dict, pct: dict, dtype: str, seqs,
                       path: Path | None = None) -> None:
    """The winner for S <= max_seq in ``dtype`` into tuned.json's bucket list of ``gpu_slug``
    (replacing that bucket); the GPU's default entry must exist already (`make tune`)."""
    path = path or TUNED_FILE
    data = json.loads(path.read_text()) if path.exists() else {}
    if gpu_slug not in data:
        raise FlashprofError(f"{path.name} has no default entry for {gpu_slug}: run the whole-S tune first "
                             "(make tune), then the buckets")
    buckets = [b for b in data[gpu_slug].get("buckets", [])
               if (b.get("max_seq"), b.get("dtype")) != (max_seq, dtype)]
    buckets.append({"max_seq": max_seq, "dtype": dtype, "config": cfg, "slug": KernelConfig.from_dict(cfg).slug,
                    "seqs": list(seqs), "harmonic_mean_tflops": round(hm, 2),
                    "pct_of_ref": {str(k): round(v, 2) for k, v in pct.items()},
                    "source": f"{reports_folder(gpu_slug)}/autotune.csv",
                    "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})
    data[gpu_slug]["buckets"] = sorted(buckets, key=lambda b: (b["max_seq"], b["dtype"]))
    write_atomic(path, json.dumps(data, indent=2, sort_keys=True) + "\n")


def write_static(rows: list[dict], path: Path) -> None:
    write_csv_atomic(path, STATIC_FIELDS, rows)


def main(argv: list[str] | None = None) -> int:
    p = ArgumentParser(prog="flashprof tune", description=doc_summary(__doc__))
    p.add_argument("--static-only", action="store_true", help="prune without a GPU and stop")
    p.add_argument("--arch", default=None, help=f"static build arch (default: the GPU's, else {SHIPPED.arch})")
    p.add_argument("--gpu", default=None, help=f"GPU slug for --static-only output (default {SHIPPED.slug})")
    p.add_argument("--dtype", default="fp16", help="fp16 or bf16 (default: %(default)s)")
    p.add_argument("--seqs", default=None, help=f"default {','.join(map(str, TUNE_SEQS))}, "
                   "or with --bucket the bench's S up to it")
    p.add_argument("--bucket", type=int, default=None, metavar="MAX_SEQ",
                   help="tune kernel 7 for S <= MAX_SEQ in --dtype only: the winner becomes that bucket")
    p.add_argument("--space", choices=sorted(SPACES), default="seed",
                   help="seed: the series' space; extended: + persistent grid, 2 CTAs/SM, wgmma; "
                        "hopper: wgmma + TMA producer warpgroup, overlap, ping-pong (sm_90a)")
    p.add_argument("--reps", type=int, default=20, help="timed launches per candidate and S (default: %(default)s)")
    p.add_argument("--rounds", type=int, default=1,
                   help="time the whole set this many times over, interleaved (clock drift reaches all alike); "
                        "medians over reps x rounds (default: %(default)s)")
    p.add_argument("--warmup", type=int, default=3, help="untimed launches first (default: %(default)s)")
    p.add_argument("--top", type=int, default=10, help="candidates shown in the final table (default: %(default)s)")
    p.add_argument("--workers", type=int, default=None,
                   help="worker processes for the sweep, spread round-robin over the visible GPUs "
                        "(default: one per GPU; more than the GPU count only exercises the merge)")
    p.add_argument("--limit", type=int, default=None, help="sweep only the first N surviving candidates")
    p.add_argument("--csv", default=None, help="sweep CSV (default reports/<gpu>/autotune.csv)")
    p.add_argument("--no-save", action="store_true", help="do not write the winner to kernels/tuned.json")
    p.add_argument("--only", default=None, metavar="REGEX",
                   help="sweep only the surviving candidates whose slug matches REGEX")
    args = p.parse_args(argv)

    def body() -> int:
        from flashprof.profiling.env import check_writable
        from flashprof.profiling.workload import check_dtype, seed_shape

        check_dtype(args.dtype)
        if args.bucket is not None and args.bucket <= 0:
            raise FlashprofError(f"bad --bucket {args.bucket}: must be a positive sequence length")
        if args.seqs is None:
            seqs = bucket_seqs(args.bucket) if args.bucket else TUNE_SEQS
        else:
            try:
                seqs = tuple(int(s) for s in args.seqs.split(","))
            except ValueError:
                raise FlashprofError(f"bad --seqs {args.seqs!r}: give comma-separated integers") from None
        if args.bucket and any(s > args.bucket for s in seqs):
            raise FlashprofError(f"--seqs {','.join(map(str, seqs))} go beyond --bucket {args.bucket}")
        for s in seqs:
            seed_shape(s)  # a positive length
        say = lambda m: print(m, file=sys.stderr, flush=True)  # noqa: E731
        if args.static_only:
            gpu_slug = args.gpu or SHIPPED.slug
            arch = args.arch or (by_slug(gpu_slug) or SHIPPED).arch
        else:
            from flashprof.profiling.env import gpu_info

            gpu = gpu_info()
            gpu_slug = gpu["slug"]
            arch = args.arch or "sm_" + gpu["compute_capability"].replace(".", "")
        out_dir = ROOT / reports_folder(gpu_slug)
        check_writable(out_dir)
        cfgs, rejected = SPACES[args.space]()
        say(f"space: {len(cfgs) + len(rejected)} combinations, {len(rejected)} rejected by config rules, "
            f"{len(cfgs)} candidates")
        # the series' spaces share one pruning table; another space keeps its own beside it
        static_csv = out_dir / ("autotune_static.csv" if args.space in ("seed", "extended")
                                else f"autotune_static_{args.space}.csv")
        try:
            static = static_prune(cfgs, arch, args.dtype, progress=say)
        except Exception as e:  # no toolchain on this machine: reuse the committed pruning
            if args.static_only or not static_csv.exists():
                raise FlashprofError(f"static pruning failed: {e}") from None
            say(f"static build unavailable ({str(e).splitlines()[0]}); using {static_csv}")
            with static_csv.open() as f:
                kept = {r["slug"] for r in csv.DictReader(f) if r["keep"] == "True"}
            static = [{"slug": c.slug, "keep": c.slug in kept, "reason": "" if c.slug in kept else "pruned statically"}
                      for c in cfgs]
        static += [{"slug": "", "keep": False, "reason": f"config rule: {why}", "registers": "", "spill_bytes": "",
                    "smem_bytes": "", "ctas_per_sm": "", "warps_per_sm": "",
                    "config": json.dumps(f, sort_keys=True)} for f, why in rejected]
        # Worker processes share the parent's pruning; only the parent writes its CSV.
        if static and "registers" in static[0] and not os.environ.get("FLASHPROF_TUNE_WORKER"):
            write_static(static, static_csv)
        keep = [c for c, r in zip(cfgs, static) if r["keep"]]
        if args.only:
            try:
                pick = re.compile(args.only)
            except re.error as e:
                raise FlashprofError(f"bad --only {args.only!r}: {e}") from None
            keep = [c for c in keep if pick.search(c.slug)]
            if not keep:
                raise FlashprofError(f"--only {args.only!r} matches no candidate that survived pruning")
        for r in static:
            if not r["keep"]:
                say(f"  dropped {r['slug'] or r['config']}: {r['reason']}")
        say(f"static pruning kept {len(keep)} of {len(cfgs)} (see {static_csv})")
        if args.static_only:
            return 0
        if args.rounds < 1:
            raise FlashprofError(f"bad --rounds {args.rounds}: must be at least 1")
        if args.workers is not None and args.workers < 1:
            raise FlashprofError(f"bad --workers {args.workers}: must be at least 1")
        if args.limit is not None:
            if args.limit < 1:
                raise FlashprofError(f"bad --limit {args.limit}: must be at least 1")
            keep = keep[: args.limit]
        csv_path = Path(args.csv) if args.csv else out_dir / "autotune.csv"
        done = finished(csv_path, args.dtype, seqs)
        todo = [c for c in keep if c.slug not in done]
        only = os.environ.get("FLASHPROF_TUNE_SLUGS")  # set for per-GPU worker processes
        if only:
            todo = [c for c in todo if c.slug in set(only.split(","))]
        say(f"sweep: {len(todo)} to time, {len(keep) - len(todo)} already in {csv_path.name}")
        t0 = time.perf_counter()
        if todo:
            run_workers(todo, seqs, args, csv_path, gpu_slug, say)
        ranked = rank(csv_path, args.dtype, seqs)
        if not ranked:
            raise FlashprofError("no configuration finished the sweep")
        hm, slug, cfg, pct = ranked[0]
        if not args.no_save and args.bucket:
            save_bucket_winner(gpu_slug, args.bucket, hm, cfg, pct, args.dtype, seqs)
        elif not args.no_save:
            save_winner(gpu_slug, hm, cfg, pct, args.dtype, seqs, runner_up=ranked[1] if len(ranked) > 1 else None,
                        source=csv_path)
        print(f"{'rank':>4} {'harmonic TFLOP/s':>16} {'% of FA2':>8}  config")
        for i, (h, s, _, pc) in enumerate(ranked[: args.top], 1):
            print(f"{i:>4} {h:16.1f} {pc['hm_pct']:8.1f}  {s}")
        where = f" S<={args.bucket} {args.dtype}" if args.bucket else ""
        print(f"winner for {gpu_slug}{where}: {slug} ({hm:.1f} TFLOP/s, {pct['hm_pct']:.1f}% of FA2) -> {'not saved (--no-save)' if args.no_save else TUNED_FILE.name}; "
              f"sweep {time.perf_counter() - t0:.0f}s")
        return 0

    return run_cli("tune", body)


def run_workers(todo, seqs, args, csv_path, gpu_slug, say) -> None:
    """Sweep ``todo`` in this process (one GPU, or inside a worker), or start worker
    processes: worker i gets every n-th candidate and GPU i mod (visible GPUs)."""
    import torch

    n_gpu = torch.cuda.device_count()
    n_workers = getattr(args, "workers", None) or n_gpu
    lib_dir = ROOT / "build" / "tune"
    if n_workers <= 1 or os.environ.get("FLASHPROF_TUNE_WORKER"):
        sweep(todo, seqs, args.dtype, args.reps, args.warmup, csv_path, gpu_slug, lib_dir, progress=say,
              rounds=getattr(args, "rounds", 1))
        return
    # Rows of all workers go to one CSV, whose header is written here first so that no
    # two workers both think it is new.
    append_rows(csv_path, [])
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    devices = visible.split(",") if visible else [str(g) for g in range(max(n_gpu, 1))]
    procs = []
    for w in range(n_workers):
        share = todo[w::n_workers]
        if not share:
            continue
        gpu = devices[w % len(devices)]
        env = {**os.environ, "CUDA_VISIBLE_DEVICES": gpu, "FLASHPROF_TUNE_WORKER": "1",
               "FLASHPROF_TUNE_SLUGS": ",".join(c.slug for c in share)}
        cmd = [sys.executable, "-P", "-m", "flashprof.profiling.tune", "--dtype", args.dtype,
               "--seqs", ",".join(map(str, seqs)), "--reps", str(args.reps), "--warmup", str(args.warmup),
               "--rounds", str(getattr(args, "rounds", 1)),
               "--csv", str(csv_path), "--no-save", "--space", getattr(args, "space", "seed")]
        procs.append((w, gpu, len(share), subprocess.Popen(cmd, env=env)))
        say(f"worker {w}: GPU {gpu}, {len(share)} candidates")
    failed = []
    for w, gpu, n, pr in procs:
        rc = pr.wait()
        say(f"worker {w} (GPU {gpu}, {n} candidates) exited with status {rc}")
        if rc:
            failed.append(f"worker {w} on GPU {gpu} (status {rc})")
    if failed:
        raise FlashprofError("tuning workers failed: " + ", ".join(failed) + f"; finished rows are in {csv_path}")


if __name__ == "__main__":
    sys.exit(main())
