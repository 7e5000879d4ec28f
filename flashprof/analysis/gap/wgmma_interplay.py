"""The cost of FP32 instructions issued beside a running HGMMA, measured by ``ceilings wgmix``
and carried into the issue model (issue 32: the shipped kernel 7's softmax runs beside its
warpgroup MMAs, and its Nsight Compute report has 0.91 warps per issued instruction in
dispatch_stall, on FFMA / FMNMX / MUFU / uniform instructions).

The microbenchmark (kernels/ceilings/wgmma_mix.cuh) keeps two warpgroups' HGMMA.64x128x16
groups on the tensor pipe with 8 x K FFMA, three-register FFMA, FMNMX or MUFU.EX2 issued while
each group runs (``reports/<gpu>/wgmma_mix/wgmma_mix.csv``: rate and, from Nsight Compute,
stall reasons per point). The FFMA kinds lose 4-44 % of the HGMMA rate at K = 8..64 and
Nsight samples their warps as dispatch_stall; MUFU costs nothing until its own pipe is full;
FMNMX is throttled as math_pipe_throttle, not dispatch_stall.

One cost closes the FFMA points: ``Machine.wgmma_fp32_share``, the share of each sub-partition's
FP32 datapaths a running HGMMA takes (scheduler.simulate). ``derive`` picks it on a grid, on
the FFMA points with both operands in shared memory (5 points: the *fit* set), and judges it
on the FFMA points with A from registers and the three-register FFMAs (4 points: *held-out*,
different SASS); FMNMX and MUFU.EX2 are reported beside it as *not addressed* (other pipes).
IMAD, FADD and kernel 7's softmax mix came in a second run, predicted before it (``--predict``).
It is adopted only where it lowers the held-out error by ``ADOPT_GAIN_PP``. The scheduler runs
the benchmark's own loops (``reports/sass/ceilings/wgmma_mix_sm_90a.sass``, the compiler's
control codes included) on the shipped GPU's Machine. No kernel's time is used.
"""
from __future__ import annotations

import dataclasses
import json
import statistics
import sys
from pathlib import Path

from flashprof.analysis.gap import interplay
from flashprof.analysis.gap.constants import SUBPARTITIONS, Machine, machine
from flashprof.analysis.gap.controls import parse
from flashprof.analysis.gap.data import REPO
from flashprof.analysis.gap.ceilings_sass import write_loops
from flashprof.analysis.gap.scheduler import simulate
from flashprof.analysis.stages.wgmma_mix import HGMMA_FLOP, WARPGROUPS, point_of_function
from flashprof.kernels.gpus import GPUS, SHIPPED

SASS_FILE = REPO / "reports" / "sass" / "ceilings" / "wgmma_mix_sm_90a.sass"
# Measured on the shipped GPU's chip: its own run where there is one, else a same-chip GPU's
# (the H100 shares the H200's SM; their HMMA mix points agree within 0.14 % per clock).
TABLES = tuple(REPO / g.reports / "wgmma_mix" / "wgmma_mix.csv" for g in sorted(GPUS, key=lambda g: g.slug != SHIPPED.slug)
               if g.chip == SHIPPED.chip)
RESULT = REPO / SHIPPED.reports / "wgmma_mix" / "wgmma_interplay.json"
GRID = (0.0, 0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95)
ADOPT_GAIN_PP = 1.0
ITERATIONS, SEED = 16, 1
WARPS = WARPGROUPS * SUBPARTITIONS  # one block of two warpgroups per SM


def in_fit(point: str) -> bool:
    return point.startswith("wgmma_mix_ffma_") and not point.endswith("_rs")


def held_out(point: str) -> bool:
    return (point.startswith("wgmma_mix_ffma_") and point.endswith("_rs")) or point.startswith("wgmma_mix_ffma3_")


def _split_file() -> Path:
    """The split-role run beside the first wgmma mix table of the shipped GPU's chip that has one."""
    found = [Path(t).parent / "wgmma_split.raw.jsonl" for t in TABLES]
    return next((p for p in found if p.is_file()), found[0])


def split_rates(path: Path | None = None) -> dict[int, dict]:
    """Who pays (``k_wgmma_split``: HGMMAs in one warpgroup, 8 x K FFMAs per group period in the
    other): per K, each side's rate while both run, as a fraction of its rate alone. The FFMA
    warpgroup's work over its own cycles (against its run with the HGMMAs idle); the HGMMA work
    done while the FFMAs ran, over those cycles (the rest of its work runs alone at its
    K = 0 rate after they finish)."""
    recs = {}
    for line in Path(path or _split_file()).read_text().splitlines():
        r = json.loads(line)
        if r.get("record") == "measurement":
            recs[r["name"]] = r
    med = statistics.median
    hg_alone = med(recs["wgmma_split_ffma_k0"]["cycles_2n"])
    out = {}
    for name, r in recs.items():
        k = int(name.split("_k")[1].split("_")[0])
        if k == 0 or name.endswith("_alone"):
            continue
        ffma, hg = med(r["cycles"]), med(r["cycles_2n"])
        ffma_alone = med(recs[f"{name}_alone"]["cycles"])
        out[k] = {"ffma_rate": ffma_alone / ffma, "hgmma_rate": (hg_alone - (hg - ffma)) / ffma,
                  "ffma_cycles": ffma, "hgmma_cycles": hg}
    return dict(sorted(out.items()))


def second_run(point: str) -> bool:
    """A point of the kinds measured only after the share was adopted (predicted first)."""
    return point.split("_")[2] in SECOND_RUN


def predicted_vs_measured(meas: dict, path: Path | None = None) -> dict | None:
    """The committed predictions (``--predict``, written before the run) against the run."""
    try:
        rec = json.loads(Path(path or PREDICTIONS).read_text())
    except (OSError, ValueError):
        return None
    pts = {n: {**v, "measured": meas[n], "error_pct": 100 * (v["predicted"] / meas[n] - 1),
               "error_without_share_pct": 100 * (v["predicted_without_share"] / meas[n] - 1)}
           for n, v in rec["points"].items() if n in meas}
    mae = lambda key: statistics.fmean(abs(p[key]) for p in pts.values()) if pts else float("nan")
    return {"predicted_at": rec["created"], "wgmma_fp32_share": rec["wgmma_fp32_share"], "points": pts,
            "mae_pct": mae("error_pct"), "mae_without_share_pct": mae("error_without_share_pct")}


def write_sass(path: Path = SASS_FILE) -> Path:
    """The main loop of every wgmma mix kernel in the ceilings cubin (sm_90a, the venv's nvcc)."""
    return write_loops(path, "ceilings wgmma mix kernels (flashprof/kernels/ceilings/wgmma_mix.cuh), sm_90a: each one's main loop",
                       "python -m flashprof.analysis.gap.wgmma_interplay --write-sass", point_of_function, "HGMMA")


def points(path: Path = SASS_FILE) -> dict[str, list]:
    """Loop body per record name (``wgmma_mix_<kind>_k<K>[_rs]``) from the committed listing."""
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no wgmma mix SASS (python -m flashprof.analysis.gap.wgmma_interplay --write-sass)")
    return {point_of_function(fn): body for fn, body in parse(path.read_text()).items() if point_of_function(fn)}


def measured(tables=TABLES) -> tuple[dict[str, float], str | None]:
    """Measured FLOP/clk/SM per point, from the first table of the shipped GPU's chip that exists."""
    import pandas as pd

    for t in tables:
        if Path(t).is_file():
            df = pd.read_csv(t)
            return {r.name: float(r.flop_per_clk_sm) for r in df.itertuples()}, str(Path(t).relative_to(REPO))
    return {}, None


def rate(body, m: Machine) -> float:
    """Simulated HGMMA FLOP per SM clock of one mix loop (one block of two warpgroups): the
    work of ITERATIONS passes over the cycles until the last warp has issued them and the
    tensor pipe has finished their HGMMAs, as the benchmark times it (the scheduler's
    steady-state window counts issued instructions, which run up to a group ahead of the pipe
    here: over a short window, faster than the pipe)."""
    r = simulate(list(body), m, 1, WARPS, iterations=ITERATIONS, seed=SEED)
    cycles = max(r["simulated_cycles"], r["tensor_busy_until"])
    return ITERATIONS * sum(1 for i in body if i.base == "HGMMA") * HGMMA_FLOP * WARPGROUPS / cycles


def errors(m: Machine, pts: dict, meas: dict) -> dict[str, float]:
    """Per point: 100 x (simulated / measured - 1)."""
    return {p: 100 * (rate(body, m) / meas[p] - 1) for p, body in sorted(pts.items()) if p in meas}


def _mae(errs: dict, keep) -> float:
    xs = [abs(v) for p, v in errs.items() if keep(p)]
    return statistics.fmean(xs) if xs else float("nan")


def derive(gpu_key: str = SHIPPED.model_key, grid=GRID) -> dict:
    """The grid search (module docstring) and its record."""
    base = machine(gpu_key, wgmma_interplay=None)  # nothing read from a previous derivation
    pts = points()
    meas, source = measured()
    if not meas:
        raise FileNotFoundError(f"no wgmma mix table among {[str(t) for t in TABLES]}")
    other = lambda p: not in_fit(p) and not held_out(p) and not second_run(p)
    rows, per = [], {}
    for share in grid:
        e = errors(dataclasses.replace(base, wgmma_fp32_share=share), pts, meas)
        per[share] = e
        rows.append({"wgmma_fp32_share": share, "fit_mae_pct": _mae(e, in_fit), "held_out_mae_pct": _mae(e, held_out),
                     "not_addressed_mae_pct": _mae(e, other)})
    best = min(rows, key=lambda g: g["fit_mae_pct"])
    without = next(g for g in rows if g["wgmma_fp32_share"] == 0.0)
    adopt = without["held_out_mae_pct"] - best["held_out_mae_pct"] >= ADOPT_GAIN_PP
    chosen = per[best["wgmma_fp32_share"]]
    return {
        "second_run": predicted_vs_measured(meas),
        "what": "FP32 datapath share of a running HGMMA, from the ceilings wgmix microbenchmark "
                "(analysis/gap/wgmma_interplay.py)",
        "gpu_key": gpu_key, "measured": source, "sass": str(SASS_FILE.relative_to(REPO)),
        "fit_set": "FFMA, A and B from shared memory, K = 8..64 (5 points)",
        "held_out_set": "FFMA with A from registers (K = 16, 32) and three-register FFMA (K = 16, 32)",
        "not_addressed": "FMNMX (ALU pipe) and MUFU.EX2 (XU pipe) points and K = 0: the share acts on FP32 only",
        "second_run_set": "IMAD, FADD and kernel 7's softmax mix (FFMA, FMUL, FADD, FMNMX, MUFU.EX2 in turn), "
                          "predicted by the adopted share before they were measured (predictions.json)",
        "grid": rows, "chosen": best, "without": without, "adopt_gain_pp": ADOPT_GAIN_PP, "adopted": adopt,
        "simulation": {"iterations": ITERATIONS, "seed": SEED, "warps": WARPS},
        "points": [{"point": p, "set": "fit" if in_fit(p) else "held-out" if held_out(p)
                    else "second run" if second_run(p) else "not addressed",
                    "measured": meas[p], "error_pct": chosen[p], "error_without_pct": per[0.0][p]} for p in chosen],
        **({"wgmma_fp32_share": best["wgmma_fp32_share"]} if adopt else {}),
    }


PREDICTIONS = RESULT.with_name("predictions.json")
SECOND_RUN = ("imad", "fadd", "softmax")  # kinds added after the share was adopted


def predict(names: list[str], created: str, commit: str) -> dict:
    """The adopted share's prediction (and the model's without it) of points not yet measured:
    written and committed before the run that measures them."""
    pts = points()
    m = machine(SHIPPED.model_key)
    bare = dataclasses.replace(m, wgmma_fp32_share=0.0)
    return {"what": "predicted HGMMA FLOP/clk/SM of wgmma mix points before they were measured "
                    "(analysis/gap/wgmma_interplay.py predict)",
            "created": created, "commit": commit, "wgmma_fp32_share": m.wgmma_fp32_share,
            "points": {n: {"predicted": rate(pts[n], m), "predicted_without_share": rate(pts[n], bare)} for n in names}}


def load(path: Path = RESULT) -> dict | None:
    """The committed derivation, or None."""
    return interplay.load(path)


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--write-sass" in argv:
        print(write_sass().relative_to(REPO))
    if "--predict" in argv:  # before a run: the points of the SECOND_RUN kinds the table lacks
        import datetime
        import subprocess

        have, _ = measured()
        names = sorted(p for p in points() if p not in have and p.split("_")[2] in SECOND_RUN)
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
        rec = predict(names, datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"), head)
        PREDICTIONS.write_text(json.dumps(rec, indent=1, sort_keys=True) + "\n")
        print(f"{PREDICTIONS.relative_to(REPO)}: {len(names)} points predicted")
        return 0
    rec = derive()
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(rec, indent=1, sort_keys=True) + "\n")
    c, w = rec["chosen"], rec["without"]
    print(f"{RESULT.relative_to(REPO)}: wgmma_fp32_share {c['wgmma_fp32_share']} ({'adopted' if rec['adopted'] else 'not adopted'}); "
          f"fit MAE {c['fit_mae_pct']:.2f} % (without {w['fit_mae_pct']:.2f}), held-out MAE {c['held_out_mae_pct']:.2f} % "
          f"(without {w['held_out_mae_pct']:.2f}), not addressed {c['not_addressed_mae_pct']:.2f} % (without {w['not_addressed_mae_pct']:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
