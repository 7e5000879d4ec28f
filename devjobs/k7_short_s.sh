#!/usr/bin/env bash
# Issue 25 on the H200 (about 4-6 minutes; run from the repository root with the carried
# wheels in .whl/, run(..., carry=[".whl"])):   bash devjobs/k7_short_s.sh
#
# Kernel 7 loses to FA2 at S <= 1024 (make bench: 94-95 % fp16). This job measures the new
# template options against the current H200 kernel 7, all in one process beside FA2:
#   1. make setup GPU=1 WHEELS=.whl (venv over the system torch, seconds);
#   2. static build (sm_90 cubins, ptxas -v) of every candidate: registers, spills, smem,
#      CTAs/SM -> k7_static.csv;
#   3. each candidate built as a plain shared library (the tuner's way, nvcc in parallel);
#   4. correctness gate of each candidate, fp16 and bf16, at 2x1024x4 and at 2x1024x40
#      (1280 Q tiles of 64 or 640 of 128: persistent CTAs walk several tiles) -> k7_gate.csv;
#   5. timing like make bench (CUDA events per launch, L2 flushed before each, medians of 30:
#      3 interleaved rounds of 10, candidates and FA2 in turn, so clock drift hits all alike)
#      at S = 512, 1024, 2048 first, then 4096, 8192, 16384, fp16 and bf16, the seed's batch
#      per S -> k7_short_s.csv (written after every S, so a cut-off run keeps what it has);
#   6. k7_summary.txt (% of FA2 per candidate and S, the best per S and dtype) and
#      k7_tuned_proposal.json (a kernels/tuned.json "h200" entry: default + per-S buckets
#      where a candidate beats the default; the lead decides, then make bench confirms);
#   7. time permitting, compute-sanitizer memcheck + racecheck of the persistent candidates
#      on the standalone driver with more Q tiles than one wave -> k7_sanitizer.log.
# Output: 7 files under $OUT. Log of everything: k7_short_s.log.
set -uo pipefail
: "${OUT:?OUT must name the results folder}"
mkdir -p "$OUT"
LOG="$OUT/k7_short_s.log"
START=$(date +%s)
echo "k7_short_s $(date -u +%FT%TZ) on $(hostname)" | tee "$LOG"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.draw --format=csv 2>&1 | tee -a "$LOG"
if [ ! -x .venv/bin/python ]; then
    make --no-print-directory setup GPU=1 WHEELS=.whl >>"$LOG" 2>&1 || { echo "setup failed (see log)" | tee -a "$LOG"; exit 1; }
fi
echo "setup done after $(( $(date +%s) - START )) s" | tee -a "$LOG"
export MAX_JOBS=${MAX_JOBS:-4}
timeout 450 .venv/bin/python - "$OUT" "$START" <<'PY' 2>&1 | tee -a "$LOG"
import csv, json, os, statistics, subprocess, sys, time, traceback
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

OUT, START = Path(sys.argv[1]), float(sys.argv[2])
DEADLINE = START + 440          # the shell's timeout is 450 s after setup; stop cleanly before
ROOT = Path.cwd()

import torch  # noqa: E402

from flashprof.kernels.config import KernelConfig  # noqa: E402
from flashprof.profiling.bench import l2_flush_buffer, time_fn  # noqa: E402
from flashprof.profiling.correctness import check  # noqa: E402
from flashprof.profiling.reference import sdpa  # noqa: E402
from flashprof.profiling.shared_lib import SharedLibKernel, build_shared_lib  # noqa: E402
from flashprof.kernels.nvcc import arch_flags  # noqa: E402
from flashprof.profiling.workload import Shape, make_inputs, seed_shape  # noqa: E402

def say(msg):
    print(f"[{time.time() - START:6.1f}s] {msg}", flush=True)

def left():
    return DEADLINE - time.time()

COMMON = dict(d_head=128, async_copy=True, eager_load_blocks=True, swizzled=True, optimized_softmax=True)
def C(br, bc, w, frags, dbuf=False, pers=False, mb=0):
    q, k, v = (int(x) for x in frags)
    return KernelConfig(**COMMON, B_r=br, B_c=bc, n_warps=w, Q_mma_load_K_fragments=q, K_mma_load_K_fragments=k,
                        V_mma_load_K_fragments=v, mma_double_buffer_loads=dbuf, persistent=pers,
                        min_blocks_per_sm=mb)
def W(br, bc, w, mb=0):  # kernel 7's Hopper form: warpgroup MMAs, 64 query rows per warpgroup (sm_90a)
    return KernelConfig(**COMMON, B_r=br, B_c=bc, n_warps=w, min_blocks_per_sm=mb, wgmma=True)

# (name, why) -> config. "base" is kernel 7 on the H200 today (kernels/tuned.json).
CANDIDATES = [
    ("base",      "H200 kernel 7 today (128x128, 8 warps, 1 CTA/SM at 255 regs): the control", C(128, 128, 8, "020", True)),
    ("pers",      "base + persistent grid: next tile's Q/K_0 in flight during the last KV block and the epilogue", C(128, 128, 8, "020", True, True)),
    ("pers_nodb", "persistent, K fragments not double-buffered (fewer live registers)", C(128, 128, 8, "020", False, True)),
    ("pers_f002", "persistent on the 4096 winner of the sweep (K whole, V 2 at a time)", C(128, 128, 8, "002", False, True)),
    ("pers_f000", "persistent, K and V whole", C(128, 128, 8, "000", True, True)),
    ("f002",      "grid control for pers_f002 (best single config at S=4096 in autotune.csv)", C(128, 128, 8, "002")),
    ("bc64_pers", "128x64 tile, 8 warps, persistent: 247 regs (no spill), 96 KiB smem", C(128, 64, 8, "000", True, True)),
    ("bc64_pers_f020", "128x64, persistent, K 2 at a time", C(128, 64, 8, "020", True, True)),
    ("bc64",      "grid control for bc64_pers (88.3 % at S=1024 in the sweep)", C(128, 64, 8, "000", True)),
    ("w4_pers",   "64x64, 4 warps, 2 CTAs/SM (248 regs) and persistent: FA2's 8 warps/SM as 2 CTAs", C(64, 64, 4, "020", False, True)),
    ("w4",        "grid control for w4_pers (89.7 % at S=1024 in the sweep, best 2-CTA/SM grid config)", C(64, 64, 4, "020")),
    # FA2's own shape of work: 128 query rows on 4 warps (32 rows, two MMA row tiles, per warp:
    # each K/V fragment read from shared memory feeds two MMAs), 2 CTAs/SM; Q streamed from
    # shared memory (Q and K two k-steps at a time) keeps it at 255 registers (static build:
    # 20 B spilled at B_c=32, 136 B at B_c=64; Q resident spills 180-650 B).
    ("w4r32_bc32",      "128x32 on 4 warps (32 rows/warp), Q/K 2 k-steps at a time, 2 CTAs/SM", C(128, 32, 4, "220")),
    ("w4r32_bc32_dbuf", "same, fragments double-buffered", C(128, 32, 4, "220", True)),
    ("w4r32_bc64",      "128x64 on 4 warps: FA2's tile and warps, 2 CTAs/SM", C(128, 64, 4, "220")),
    ("w4r32_bc64_v2",   "128x64 on 4 warps, V 2 k-steps at a time too", C(128, 64, 4, "222")),
    # Hopper's warpgroup MMAs (wgmma.mma_async, sm_90a) for both products, same pipeline:
    ("wg128x128", "wgmma, 128x128, 2 warpgroups, 1 CTA/SM (224 regs)", W(128, 128, 8)),
    ("wg128x64",  "wgmma, 128x64, 2 warpgroups (164 regs, 1 CTA/SM by regs)", W(128, 64, 8)),
    ("wg64x128",  "wgmma, 64x128, 1 warpgroup, 2 CTAs/SM (252 regs)", W(64, 128, 4)),
    ("wg64x64",   "wgmma, 64x64, 1 warpgroup (168 regs: 3 CTAs/SM)", W(64, 64, 4)),
    ("wg64x64_mb3", "wgmma, 64x64, 1 warpgroup, __launch_bounds__ min 3 CTAs/SM", W(64, 64, 4, 3)),
    ("wg64x128_mb2", "wgmma, 64x128, 1 warpgroup, min 2 CTAs/SM", W(64, 128, 4, 2)),
]
# K7_ONLY=name,name,... times only those (the lead's follow-up runs); K7_SEQS=512,1024 the S list.
if os.environ.get("K7_ONLY"):
    keep = os.environ["K7_ONLY"].split(",")
    CANDIDATES = [c for c in CANDIDATES if c[0] in keep]
names = [n for n, _, _ in CANDIDATES]
cfgs = {n: c for n, _, c in CANDIDATES}
why = {n: w for n, w, _ in CANDIDATES}
major, minor = torch.cuda.get_device_capability()
arch = f"sm_{major}{minor}"
say(f"{torch.cuda.get_device_name()} {arch}, torch {torch.__version__}, {len(CANDIDATES)} candidates")
for n in names:
    say(f"  {n:15s} {cfgs[n].slug:62s} {why[n]}")

# ---- 2. static build: registers, spills, CTAs/SM
try:
    from flashprof.profiling.tune import static_prune
    rows = static_prune([cfgs[n] for n in names], arch, "fp16", progress=say)
    with open(OUT / "k7_static.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=["name", *rows[0].keys()])
        w.writeheader()
        for n, r in zip(names, rows):
            w.writerow({"name": n, **r})
            say(f"  static {n:15s} regs={r['registers']} spill={r['spill_bytes']}B smem={r['smem_bytes']} "
                f"ctas/SM={r['ctas_per_sm']} {r['reason']}")
except Exception as e:  # the measurement matters more than the table
    say(f"static build failed: {e!r}")

# ---- 3. shared libraries
lib_dir = ROOT / "build" / "k7_short_s"
lib_dir.mkdir(parents=True, exist_ok=True)
t0 = time.time()
def _build(n):
    try:
        return n, build_shared_lib(cfgs[n], arch, lib_dir), None
    except Exception as e:  # noqa: BLE001
        return n, None, str(e)
with ThreadPoolExecutor(max_workers=min(16, os.cpu_count() or 4)) as pool:
    built = list(pool.map(_build, names))
fns = {}
for n, path, err in built:
    if err:
        say(f"BUILD FAILED {n}: {err}")
    else:
        fns[n] = SharedLibKernel(path, cfgs[n])
say(f"built {len(fns)}/{len(names)} shared libraries in {time.time() - t0:.1f}s")

# ---- 4. correctness gate
ok = {("fp16"): set(), ("bf16"): set()}
with open(OUT / "k7_gate.csv", "w", newline="") as f:
    w = csv.writer(f)
    w.writerow(["name", "slug", "dtype", "shape", "ok", "max_err", "ref_err", "unwritten", "reason"])
    for n in names:
        if n not in fns:
            continue
        for dt in ("fp16", "bf16"):
            good = True
            for shape in (Shape(2, 1024, 4), Shape(2, 1024, 40)):
                try:
                    v = check(fns[n], shape, dt)
                    w.writerow([n, cfgs[n].slug, dt, f"{shape.batch}x{shape.seq}x{shape.heads}", v.ok,
                                f"{v.max_err:.3g}", f"{v.ref_err:.3g}", v.unwritten, v.reason])
                    good &= v.ok
                except Exception as e:  # noqa: BLE001
                    w.writerow([n, cfgs[n].slug, dt, f"{shape.batch}x{shape.seq}x{shape.heads}", False, "", "", "", repr(e)])
                    good = False
            if good:
                ok[dt].add(n)
            else:
                say(f"GATE FAILED {n} {dt}")
                try:  # where the errors are: per 16-row slice of a tile and per 8-column group
                    sh = Shape(1, 256, 1)
                    q_, k_, v_ = make_inputs(sh, dt, seed=1)
                    o_ = torch.empty_like(q_)
                    fns[n](q_, k_, v_, out=o_)
                    torch.cuda.synchronize()
                    r_ = torch.softmax((q_.float().transpose(1, 2) @ k_.float().transpose(1, 2).transpose(-1, -2))
                                       / 128 ** 0.5, -1) @ v_.float().transpose(1, 2)
                    e_ = (o_.float().transpose(1, 2) - r_).abs()[0, 0]  # [seq, d]
                    br = cfgs[n].B_r
                    rows16 = [f"{e_.view(-1, br, 128)[:, i:i + 16].max().item():.2g}" for i in range(0, br, 16)]
                    cols8 = [f"{e_[:, c:c + 8].max().item():.2g}" for c in range(0, 128, 8)]
                    say(f"  {n} {dt} 1x256x1: max err {e_.max().item():.3g}, ref |o| {r_.abs().max().item():.3g}")
                    say(f"  per 16-row slice of the tile: {rows16}")
                    say(f"  per 8-column group: {cols8}")
                    say(f"  out[0,:8] {o_[0, 0, 0, :8].float().tolist()} ref {r_[0, 0, 0, :8].tolist()}")
                except Exception as e:  # noqa: BLE001
                    say(f"  diagnostics failed: {e!r}")
say(f"gate passed: fp16 {len(ok['fp16'])}, bf16 {len(ok['bf16'])} of {len(fns)}")

# ---- 5. timing
FIELDS = ["dtype", "seq", "batch", "heads", "name", "slug", "reps", "median_ms", "p10_ms", "p90_ms", "tflops",
          "ref_ms", "pct_of_ref"]
rows = []
def write_rows():
    with open(OUT / "k7_short_s.csv", "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        for r in rows:
            w.writerow({k: (f"{v:.6g}" if isinstance(v, float) else v) for k, v in r.items()})

flush = l2_flush_buffer()
ref = sdpa("ref")
ROUNDS, PER_ROUND, WARMUP = 3, 10, 3
GROUPS = ((512, 1024, 2048), (4096, 8192, 16384))
if os.environ.get("K7_SEQS"):
    GROUPS = (tuple(int(x) for x in os.environ["K7_SEQS"].split(",")),)
for group in GROUPS:
    for dt in ("fp16", "bf16"):
        for seq in group:
            if left() < 60 and seq >= 4096:
                say(f"skipping S={seq} {dt}: {left():.0f}s left")
                continue
            shape = seed_shape(seq)
            q, k, v = make_inputs(shape, dt, seed=seq)
            out = torch.empty_like(q)
            order = ["ref"] + [n for n in names if n in ok[dt] and seq % cfgs[n].seq_multiple() == 0]
            times = {n: [] for n in order}
            for r in range(ROUNDS):
                rot = order[r % len(order):] + order[:r % len(order)]
                for n in rot:
                    fn, kw = (ref, {}) if n == "ref" else (fns[n], {"out": out})
                    times[n] += time_fn(fn, (q, k, v), kw, PER_ROUND, WARMUP if r == 0 else 1, flush)
            ref_ms = statistics.median(times["ref"])
            line = []
            for n in order:
                ts = sorted(times[n])
                med = statistics.median(ts)
                rows.append({"dtype": dt, "seq": seq, "batch": shape.batch, "heads": shape.heads, "name": n,
                             "slug": "torch SDPA flash" if n == "ref" else cfgs[n].slug, "reps": len(ts),
                             "median_ms": med, "p10_ms": ts[len(ts) // 10], "p90_ms": ts[(9 * len(ts)) // 10],
                             "tflops": shape.flops / (med * 1e-3) / 1e12, "ref_ms": ref_ms,
                             "pct_of_ref": 100.0 * ref_ms / med})
                line.append(f"{n}={100.0 * ref_ms / med:.1f}")
            write_rows()
            say(f"S={seq:<5} {dt}: FA2 {ref_ms:.4f} ms | " + " ".join(line[1:]))
            del q, k, v, out

# ---- 6. summary + proposal
pct = {(r["dtype"], r["seq"], r["name"]): r["pct_of_ref"] for r in rows if r["name"] != "ref"}
seqs = sorted({r["seq"] for r in rows})
lines = ["% of FA2 (same process, medians of 30, L2 flushed), per candidate and S", ""]
for dt in ("fp16", "bf16"):
    lines.append(f"{dt:6s} {'candidate':15s} " + " ".join(f"{s:>7d}" for s in seqs))
    for n in names:
        if any((dt, s, n) in pct for s in seqs):
            lines.append(f"{'':6s} {n:15s} " + " ".join(f"{pct[(dt, s, n)]:7.1f}" if (dt, s, n) in pct else "      -"
                                                       for s in seqs))
    best = {s: max((pct[(dt, s, n)], n) for n in names if (dt, s, n) in pct) for s in seqs
            if any((dt, s, n) in pct for n in names)}
    lines.append(f"{'':6s} {'best':15s} " + " ".join(f"{best[s][1][:7]:>7s}" if s in best else "      -" for s in seqs))
    lines.append("")
proposal = {"note": "candidate tuned.json entry for h200 from devjobs/k7_short_s.sh; default = the best "
                    "harmonic % over S >= 4096 of both dtypes, buckets where another candidate beats it"}
long_s = [s for s in seqs if s >= 4096]
def score(n, ss, dts=("fp16", "bf16")):
    vals = [pct[(dt, s, n)] for dt in dts for s in ss if (dt, s, n) in pct]
    return len(vals) / sum(1 / x for x in vals) if vals and len(vals) == len(dts) * len(ss) else 0.0
if rows:
    default = max(names, key=lambda n: score(n, long_s or seqs))
    proposal["default"] = {"name": default, "config": cfgs[default].to_dict(), "hm_pct_long": score(default, long_s or seqs)}
    buckets = []
    for dt in ("fp16", "bf16"):
        for s in (512, 1024, 2048):
            if s not in seqs:
                continue
            # one config for S <= s: the best harmonic % over the bucket's S, if it beats the default there
            ss = [x for x in (512, 1024, 2048) if x <= s and x in seqs]
            cand = max(names, key=lambda n: score(n, ss, (dt,)))
            if score(cand, ss, (dt,)) > score(default, ss, (dt,)):
                buckets.append({"max_seq": s, "dtype": dt, "name": cand, "config": cfgs[cand].to_dict(),
                                "hm_pct": round(score(cand, ss, (dt,)), 2),
                                "default_hm_pct": round(score(default, ss, (dt,)), 2)})
    proposal["buckets"] = buckets
    lines.append(f"proposed default: {default} ({cfgs[default].slug}), harmonic % over S>=4096 both dtypes "
                 f"{score(default, long_s or seqs):.1f}")
    for b in buckets:
        lines.append(f"proposed bucket S<={b['max_seq']} {b['dtype']}: {b['name']} {b['hm_pct']:.1f} % "
                     f"(default {b['default_hm_pct']:.1f} %)")
    lines.append("(buckets nest: load(7) takes the smallest max_seq that holds S; keep the ones that help)")
(OUT / "k7_summary.txt").write_text("\n".join(lines) + "\n")
(OUT / "k7_tuned_proposal.json").write_text(json.dumps(proposal, indent=2) + "\n")
print("\n".join(lines), flush=True)

# ---- 7. compute-sanitizer on the persistent candidates (driver: more Q tiles than a wave)
san = OUT / "k7_sanitizer.log"
exe = next((p for p in ("/usr/local/cuda/bin/compute-sanitizer",) if os.path.exists(p)), None)
nvcc = next((p for p in ("/usr/local/cuda/bin/nvcc",) if os.path.exists(p)), "nvcc")
with open(san, "w") as log:
    if exe is None:
        log.write("compute-sanitizer not found\n")
    san_names = [n for n in names if (cfgs[n].persistent or cfgs[n].wgmma) and n in ok["fp16"]]
    if "K7_SANITIZE" in os.environ:  # the lead's follow-up runs: those names only ("" for none)
        san_names = [n for n in os.environ["K7_SANITIZE"].split(",") if n in ok["fp16"]]
    for n in san_names if exe else []:
        if left() < 45:
            log.write(f"{n}: skipped ({left():.0f}s left)\n")
            continue
        cfg = cfgs[n]
        drv = lib_dir / f"driver_{n}"
        b = subprocess.run([nvcc, "-O3", "-std=c++17", "-lineinfo", *arch_flags(cfg.target_arch(arch)), *cfg.nvcc_flags(),
                            "kernels/csrc/driver.cu", "kernels/csrc/flash_fwd.cu", "-o", str(drv)],
                           capture_output=True, text=True)
        if b.returncode:
            log.write(f"{n}: driver build failed\n{b.stderr[-2000:]}\n")
            continue
        heads = 300 * cfg.B_r // 512  # ~300 Q tiles at S=512: more than one wave of CTAs
        for tool in ("memcheck", "racecheck"):
            if left() < 30:
                log.write(f"{n} {tool}: skipped ({left():.0f}s left)\n")
                continue
            t1 = time.time()
            try:
                r = subprocess.run([exe, "--tool", tool, "--error-exitcode", "9", str(drv), "1", "512", str(heads), "fp16"],
                                   capture_output=True, text=True, timeout=max(10, left() - 20))
                tail = [l for l in r.stdout.splitlines() if "SUMMARY" in l or "max_abs_err" in l]
                log.write(f"{n} {tool} (1x512x{heads}): exit {r.returncode}, {time.time() - t1:.0f}s: {' | '.join(tail)}\n")
                if r.returncode:
                    log.write(r.stdout[-3000:] + r.stderr[-1000:] + "\n")
            except subprocess.TimeoutExpired:
                log.write(f"{n} {tool}: timed out after {time.time() - t1:.0f}s\n")
            log.flush()
say(f"sanitizer: {san.read_text().strip()}")
say("done")
PY
rc=${PIPESTATUS[0]}
echo "python exit $rc, total $(( $(date +%s) - START )) s" | tee -a "$LOG"
ls -la "$OUT" >>"$LOG"
exit "$rc"
