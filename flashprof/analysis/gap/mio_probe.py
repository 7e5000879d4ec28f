"""The MIO queue depth (issue 31): ``ceilings mio2`` measured against the issue model's own rule.

``Machine.mio_queue_depth`` (8 shared-memory requests a sub-partition may hold before its warps
see mio_throttle) was an assumption; the model's MIO throttle at LDSM in FA2 and kernels 3-6 is
several times what their reports sample. ``ceilings mio2`` (flashprof/kernels/ceilings/mio.cuh,
k_mio_many) has P = 1 or 2 warps on each of the four schedulers issue N independent ldmatrix.x4
at once; the span each warp takes to issue them has a knee where its scheduler's queue fills.

The model's prediction of every record is the scheduler itself (scheduler.simulate) on the
burst as compiled -- the first clock read, the N LDSM, the second clock read, from the committed
listing (``reports/sass/ceilings/mio2_sm_90a.sass``) -- with the warps starting together: the
slowest warp's cycles from its first clock read to its second. ``predict`` writes them for the
committed depth and for each depth of ``DEPTHS`` before the run; ``judge`` then takes the depth
whose predictions have the least mean absolute error over the P = 1 records (the fit set) and
reports the P = 2 records as held out (the same queue, twice the warps behind it). Only the
microbenchmark's spans enter: no kernel time.

    python -m flashprof.analysis.gap.mio_probe --write-sass CUBIN   # the bursts' listing
    python -m flashprof.analysis.gap.mio_probe --predict            # before the run
    python -m flashprof.analysis.gap.mio_probe --judge FOLDER       # after: FOLDER/mio2.raw.jsonl
"""
from __future__ import annotations

import dataclasses
import datetime
import json
import re
import statistics
import subprocess
import sys
from pathlib import Path

from flashprof.analysis.gap.ceil_run import sidecar_head
from flashprof.analysis.gap.constants import SUBPARTITIONS, machine
from flashprof.analysis.gap.controls import parse
from flashprof.analysis.gap.data import REPO
from flashprof.analysis.gap.loops import listing_lines
from flashprof.analysis.gap.scheduler import simulate
from flashprof.kernels.gpus import SHIPPED

SASS_FILE = REPO / "reports" / "sass" / "ceilings" / "mio2_sm_90a.sass"
PREDICTIONS = REPO / SHIPPED.reports / "mio" / "mio2_predictions.json"
DEPTHS = (2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 16, 20, 24, 32)
_NAME = re.compile(r"k_mio_manyILi(\d+)ELi(\d)E")
WHAT = ("ceilings mio2 (flashprof/kernels/ceilings/mio.cuh, k_mio_many): P warps on each of the four schedulers "
        "issue N independent conflict-free ldmatrix.x4 at once; per burst the slowest warp's span from its clock "
        "read before the first to its read after the N-th (cycles) and the SM-wide span (cycles_max), 8 warm bursts")


WHAT3 = ("ceilings mio3 (flashprof/kernels/ceilings/mio.cuh, k_chain_beside): warps 4-7 time a chain of 64 dependent "
         "SHFL / LDS / FFMA while warps 0-3 on the same schedulers flood the data path with ldmatrix.x4 or idle; cycles "
         "a chain step (median of the four chain warps), 8 warm launches")


def record_name(n: int, p: int) -> str:
    return f"mio_many_n{n}_p{p}"


def is_clock(i) -> bool:
    return i.base == "CS2R" and "SR_CLOCK" in i.operands.upper()


def burst(insts: list) -> list:
    """The first clock read, the LDSMs and the second clock read (one straight-line burst)."""
    ld = [k for k, i in enumerate(insts) if i.base == "LDSM"]
    lo = max(k for k in range(ld[0]) if is_clock(insts[k]))
    hi = min(k for k in range(ld[-1] + 1, len(insts)) if is_clock(insts[k]))
    return insts[lo:hi + 1]


def write_sass(cubin: Path, path: Path = SASS_FILE) -> Path:
    from flashprof.kernels.sass.static import dump_sass
    from flashprof.kernels.toolchain import find_toolchain

    per_fn = parse(dump_sass(cubin))
    lines = ["# ceilings mio2 bursts (flashprof/kernels/ceilings/mio.cuh, k_mio_many<N, P>), sm_90a: clock, N LDSM, clock",
             f"# from: python -m flashprof.analysis.gap.mio_probe --write-sass (nvcc {find_toolchain('nvcc').nvcc_version})"]
    for fn in sorted(f for f in per_fn if _NAME.search(f)):
        lines.append(f"Function : {fn}")
        lines += listing_lines(burst(per_fn[fn]))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def bursts(path: Path = SASS_FILE) -> dict[tuple[int, int], list]:
    """(N, P) -> the burst's instructions, from the committed listing."""
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no mio2 SASS (python -m flashprof.analysis.gap.mio_probe --write-sass CUBIN)")
    out = {}
    for fn, body in parse(path.read_text()).items():
        if m := _NAME.search(fn):
            out[(int(m.group(1)), int(m.group(2)))] = body
    return out


# The __syncthreads before each burst's first clock read, as ptxas compiled it (every k_mio_many
# instance: BAR.SYNC.DEFER_BLOCKING 0x0, stall 1, no barrier set or waited on).
_BAR_SASS = ("Function : bar\n/*0000*/ BAR.SYNC.DEFER_BLOCKING 0x0 ; /* 0x0000000000007b1d */\n"
             "/* 0x000fe20000010000 */\n")


def barrier():
    return parse(_BAR_SASS)["bar"][0]


def span(body: list, m, p: int, with_barrier: bool = False) -> float:
    """The model's slowest warp: cycles from its first clock read to its second, 4 P warps
    starting together on one SM (one CTA, no jitter). The simulation runs the burst twice;
    ``with_barrier`` puts the kernel's __syncthreads before it, so that no warp starts its second
    burst while another is in its first (the predictions written before the run lacked it)."""
    body = ([barrier()] if with_barrier else []) + list(body)
    k0 = 1 if with_barrier else 0
    first, last = {}, {}
    simulate(body, m, 1, SUBPARTITIONS * p, 2, trace=first, trace_pc=k0)
    simulate(body, m, 1, SUBPARTITIONS * p, 2, trace=last, trace_pc=len(body) - 1)
    return max(last[w][0] - first[w][0] for w in first)


def after_run(folder: Path, depths=DEPTHS, m=None) -> dict:
    """Predictions made after the run with the barrier in the harness (``span``'s
    ``with_barrier``): the MAE over the one- and the two-warp records per depth. Not the rule's
    input (the depth is chosen on the predictions written before the run); it shows whether the
    two-warp misfit was the harness."""
    m = m or machine(SHIPPED.model_key)
    meas = measured(folder / "mio2.raw.jsonl")
    bs = bursts()
    out = {}
    for d in depths:
        md = dataclasses.replace(m, mio_queue_depth=float(d))
        pr = {record_name(n, p): span(b, md, p, with_barrier=True) for (n, p), b in sorted(bs.items())}
        out[str(d)] = {f"p{k}_mae_pct": statistics.fmean(abs(100 * (pr[n] / v["span"] - 1)) for n, v in meas.items()
                                                         if v["p"] == k and n in pr) for k in (1, 2)}
        out[str(d)]["spans"] = pr
    return out


def predict(depths=DEPTHS, m=None) -> dict:
    m = m or machine(SHIPPED.model_key)
    bs = bursts()
    out = {"committed": {record_name(n, p): span(b, m, p) for (n, p), b in sorted(bs.items())}}
    for d in depths:
        md = dataclasses.replace(m, mio_queue_depth=float(d))
        out[str(d)] = {record_name(n, p): span(b, md, p) for (n, p), b in sorted(bs.items())}
    return out


def write_predictions(path: Path = PREDICTIONS) -> Path:
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    m = machine(SHIPPED.model_key)
    rec = {"what": "the issue model's slowest-warp span per ceilings mio2 record, for the committed "
                   "mio_queue_depth and each depth tried, written before the run (analysis/gap/mio_probe.py)",
           "created": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"), "commit": head,
           "committed_depth": m.mio_queue_depth, "sass": str(SASS_FILE.relative_to(REPO)), "by_depth": predict(m=m)}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(rec, indent=1, sort_keys=True) + "\n")
    return path


def measured(raw: Path) -> dict[str, dict]:
    """Per record: the median over the warm bursts of the slowest warp's span and of the SM-wide span."""
    out = {}
    for line in raw.read_text().splitlines():
        r = json.loads(line) if line.strip() else {}
        if r.get("record") == "measurement" and r.get("kind") == "mio2":
            out[r["name"]] = {"n": r["n"], "p": r["warps_per_scheduler"], "span": statistics.median(r["cycles"]),
                              "sm_span": statistics.median(r["cycles_max"]), "check": r.get("check")}
    return out


def judge(folder: Path, preds: dict | None = None) -> dict:
    """The depth whose predictions fit the P = 1 records best, and its error on the P = 2 ones."""
    meas = measured(folder / "mio2.raw.jsonl")
    preds = preds or json.loads(PREDICTIONS.read_text())["by_depth"]
    err = lambda pr, keep: statistics.fmean(abs(100 * (pr[n] / v["span"] - 1)) for n, v in meas.items()
                                            if keep(v) and n in pr)
    fit, held = (lambda v: v["p"] == 1), (lambda v: v["p"] == 2)
    table = {d: {"fit_mae_pct": err(pr, fit), "held_out_mae_pct": err(pr, held)} for d, pr in preds.items()}
    best = min((d for d in table if d != "committed"), key=lambda d: (table[d]["fit_mae_pct"], int(d)))
    return {"by_depth": table, "depth": int(best), "fit_set": "P = 1 (one warp a scheduler)", "held_out": "P = 2",
            "per_record": {n: {**v, "predicted_committed": preds["committed"].get(n), "predicted_chosen": preds[best].get(n)}
                           for n, v in sorted(meas.items())}}


def write_sidecar(folder: Path, command: str = "bash devjobs/mio2.sh") -> Path:
    rec = sidecar_head(folder, "mio2", WHAT, command)
    pred = json.loads(PREDICTIONS.read_text())
    rec["predicted_before"] = {"file": str(PREDICTIONS.relative_to(REPO)), "created": pred.get("created"),
                               "commit": pred.get("commit")}
    runs = sorted(folder.glob("mio2.run*.raw.jsonl"))
    if len(runs) > 1:
        a, b = measured(runs[0]), measured(runs[1])
        rec["runs_max_difference_pct"] = max(100 * abs(b[n]["span"] / a[n]["span"] - 1) for n in a if n in b)
    rec["result"] = judge(folder, pred["by_depth"])
    rec["after_run"] = {"what": "the same spans predicted after the run with the kernel's __syncthreads before each "
                                "burst (mio_probe.span with_barrier); not the rule's input",
                        "by_depth": after_run(folder)}
    out = folder / "mio2.json"
    out.write_text(json.dumps(rec, indent=1, sort_keys=True) + "\n")
    return out


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--write-sass" in argv:
        print(write_sass(Path(argv[argv.index("--write-sass") + 1])).relative_to(REPO))
    if "--predict" in argv:
        path = write_predictions()
        by = json.loads(path.read_text())["by_depth"]
        for n in by["committed"]:
            print(f"{n:20s} " + "  ".join(f"D{d} {by[d][n]:6.1f}" for d in ("2", "4", "8", "16", "32")))
    if "--write-sass3" in argv:
        print(write_sass3(Path(argv[argv.index("--write-sass3") + 1])).relative_to(REPO))
    if "--predict3" in argv:
        for c, v in json.loads(write_predictions3().read_text())["by_candidate"].items():
            print(c, {k: round(x, 2) for k, x in v.items()})
    if "--judge3" in argv:
        folder = Path(argv[argv.index("--judge3") + 1]).resolve()
        rec = {**sidecar_head(folder, "mio3", WHAT3, "bash devjobs/mio2.sh mio3"), "result": judge3(folder)}
        (folder / "mio3.json").write_text(json.dumps(rec, indent=1, sort_keys=True) + "\n")
        print(json.dumps(rec["result"]["measured_flood_over_alone"]), rec["result"]["choice"])
    if "--judge" in argv:
        path = write_sidecar(Path(argv[argv.index("--judge") + 1]).resolve())
        res = json.loads(path.read_text())["result"]
        for d, v in res["by_depth"].items():
            print(f"depth {d:>9s}: fit {v['fit_mae_pct']:6.2f} %  held out {v['held_out_mae_pct']:6.2f} %")
        print(f"depth {res['depth']}")
    return 0



# ---- ceilings mio3: a dependent chain beside an ldmatrix flood on the same schedulers ----------
SASS3_FILE = REPO / "reports" / "sass" / "ceilings" / "mio3_sm_90a.sass"
PREDICTIONS3 = REPO / SHIPPED.reports / "mio" / "mio3_predictions.json"
CHAIN = 64            # mio.cuh kChain
FLOOD_PASSES = 40     # mio.cuh kFloodIters
CHAIN_KINDS = {0: "SHFL", 1: "LDS", 2: "FFMA"}
_NAME3 = re.compile(r"k_chain_besideILi(\d)ELb([01])E")
RULE3 = ("written in docs/METHOD.md before the run: S1 (SHFL takes the MIO queue and one data-path wavefront, "
         "Machine.shfl_in_smem) replaces S0 (the LSU port alone) if the measured SHFL chain's flood / alone ratio "
         "is nearer S1's predicted ratio than S0's (in log ratio); the LDS and FFMA chains are checks, not judged")


def _timed_chain(insts: list, kind: str) -> list:
    clk = [k for k, i in enumerate(insts) if is_clock(i) or (i.base == "S2UR" and "SR_CLOCK" in i.operands.upper())]
    for a, b in zip(clk, clk[1:]):
        if sum(1 for i in insts[a:b + 1] if i.base == kind) >= CHAIN:
            return insts[a:b + 1]
    raise ValueError(f"no chain of {CHAIN} {kind} between two clock reads")


def _flood_loop(insts: list) -> list:
    ld = [k for k, i in enumerate(insts) if i.base == "LDSM"]
    hi = next(k for k in range(ld[-1], len(insts)) if insts[k].base == "BRA")
    return insts[ld[0]:hi + 1]


def write_sass3(cubin: Path, path: Path = SASS3_FILE) -> Path:
    """Per k_chain_beside instance: its timed chain (clock to clock); per flood instance also the
    flood warps' loop (as a second function, ``<name>.flood``)."""
    from flashprof.kernels.sass.static import dump_sass
    from flashprof.kernels.toolchain import find_toolchain

    per_fn = parse(dump_sass(cubin))
    lines = ["# ceilings mio3 (flashprof/kernels/ceilings/mio.cuh, k_chain_beside<KIND, FLOOD>), sm_90a: the timed chain "
             "(clock to clock) and, for the flood kernels, the flood warps' loop",
             f"# from: python -m flashprof.analysis.gap.mio_probe --write-sass3 (nvcc {find_toolchain('nvcc').nvcc_version})"]
    for fn in sorted(f for f in per_fn if _NAME3.search(f)):
        m = _NAME3.search(fn)
        lines.append(f"Function : {fn}")
        lines += listing_lines(_timed_chain(per_fn[fn], CHAIN_KINDS[int(m.group(1))]))
        if m.group(2) == "1":
            lines.append(f"Function : {fn}.flood")
            lines += listing_lines(_flood_loop(per_fn[fn]))
    path.write_text("\n".join(lines) + "\n")
    return path


def chain_cycles(chain: list, flood: list | None, m) -> float:
    """The model's cycles a chain step: warps 4-7 (one a scheduler) run the chain once, warps 0-3
    the flood's loop FLOOD_PASSES times (or nothing: the chain alone, 4 warps); the median of the
    chain warps' finish / CHAIN."""
    if flood is None:
        return simulate(list(chain), m, 1, SUBPARTITIONS, 2)["cycles_per_iter"] / CHAIN
    r = simulate(None, m, 1, 2 * SUBPARTITIONS, [FLOOD_PASSES, 1], roles=[list(flood), list(chain)])
    fin = sorted(v for w, v in r["finish_by_warp"].items() if w >= SUBPARTITIONS)
    return statistics.median(fin) / CHAIN


def predict3(m=None) -> dict:
    m = m or machine(SHIPPED.model_key)
    fns = parse(SASS3_FILE.read_text())
    out = {}
    for cand, flag in (("S0", False), ("S1", True)):
        mc = dataclasses.replace(m, shfl_in_smem=flag)
        for kind, name in CHAIN_KINDS.items():
            alone = next(b for f, b in fns.items() if f"k_chain_besideILi{kind}ELb0E" in f and not f.endswith(".flood"))
            chain = next(b for f, b in fns.items() if f"k_chain_besideILi{kind}ELb1E" in f and not f.endswith(".flood"))
            flood = next(b for f, b in fns.items() if f"k_chain_besideILi{kind}ELb1E" in f and f.endswith(".flood"))
            out.setdefault(cand, {})[f"chain_{name.lower()}_alone"] = chain_cycles(alone, None, mc)
            out[cand][f"chain_{name.lower()}_flood"] = chain_cycles(chain, flood, mc)
    return out


def write_predictions3(path: Path = PREDICTIONS3) -> Path:
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    rec = {"what": "the issue model's cycles per chain step of every ceilings mio3 record under S0 and S1, written "
                   "before the run (analysis/gap/mio_probe.py predict3)", "rule": RULE3,
           "created": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"), "commit": head,
           "sass": str(SASS3_FILE.relative_to(REPO)), "by_candidate": predict3()}
    path.write_text(json.dumps(rec, indent=1, sort_keys=True) + "\n")
    return path


def measured3(raw: Path) -> dict[str, float]:
    """Per record: the median over the timed launches of the chain warps' median cycles a step."""
    out = {}
    for line in raw.read_text().splitlines():
        r = json.loads(line) if line.strip() else {}
        if r.get("record") == "measurement" and r.get("kind") == "mio3":
            out[r["name"]] = statistics.median(r["cycles"])
    return out


def judge3(folder: Path) -> dict:
    import math

    meas = measured3(folder / "mio3.raw.jsonl")
    pred = json.loads(PREDICTIONS3.read_text())
    by = pred["by_candidate"]
    ratio = lambda d, k: d[f"chain_{k}_flood"] / d[f"chain_{k}_alone"]
    got = ratio(meas, "shfl")
    dist = {c: abs(math.log(got / ratio(by[c], "shfl"))) for c in by}
    return {"rule": RULE3, "measured": meas, "measured_flood_over_alone": {k: ratio(meas, k) for k in ("shfl", "lds", "ffma")},
            "predicted_flood_over_alone": {c: {k: ratio(by[c], k) for k in ("shfl", "lds", "ffma")} for c in by},
            "log_ratio_distance": dist, "choice": min(dist, key=dist.get),
            "predicted_before": {"file": str(PREDICTIONS3.relative_to(REPO)), "created": pred["created"]}}


if __name__ == "__main__":
    raise SystemExit(main())
