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
import re
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


def measurements(path: Path) -> dict[str, dict]:
    """A ceilings raw file's measurement records by name."""
    out = {}
    for line in Path(path).read_text().splitlines():
        r = json.loads(line)
        if r.get("record") == "measurement":
            out[r["name"]] = r
    return out


def split_rates(path: Path | None = None) -> dict[int, dict]:
    """Who pays (``k_wgmma_split``: HGMMAs in one warpgroup, 8 x K FFMAs per group period in the
    other): per K, each side's rate while both run, as a fraction of its rate alone. The FFMA
    warpgroup's work over its own cycles (against its run with the HGMMAs idle); the HGMMA work
    done while the FFMAs ran, over those cycles (the rest of its work runs alone at its
    K = 0 rate after they finish)."""
    recs = measurements(path or _split_file())
    med = statistics.median
    hg_alone = med(recs["wgmma_split_ffma_k0"]["cycles_2n"])
    out = {}
    for name, r in recs.items():
        hit = re.fullmatch(r"wgmma_split_ffma_k(\d+)", name)  # FFMAs beside SS HGMMAs (wgsplit2's kinds aside)
        if not hit or int(hit.group(1)) == 0:
            continue
        k = int(hit.group(1))
        ffma, hg = med(r["cycles"]), med(r["cycles_2n"])
        ffma_alone = med(recs[f"{name}_alone"]["cycles"])
        out[k] = {"ffma_rate": ffma_alone / ffma, "hgmma_rate": (hg_alone - (hg - ffma)) / ffma,
                  "ffma_cycles": ffma, "hgmma_cycles": hg}
    return dict(sorted(out.items()))


def exchange(path: Path | None = None) -> dict:
    """Both sides of the cost, from the split-role run alone (no mix point, no kernel): per K,
    the FFMA warps' cycles lost per HGMMA that ran beside them (their cycles beside the HGMMAs
    less their cycles alone, over the HGMMAs the pipe finished meanwhile) and the tensor-pipe
    cycles lost per FFMA warp instruction a sub-partition issued (the HGMMA rate's loss times
    the FFMA warpgroup's cycles, over the FFMAs one of its warps issued). Both hold across
    K = 16..128 (47-50 and 0.91-0.98 cycles): a running HGMMA.64x128x16 takes the FP32 datapaths
    for about 49 of its 64 cycles, and each FP32 instruction issued while it runs costs it about
    one cycle. ``wgmma_fp32_share`` is the first over the HGMMA's own cycles, ``wgmma_fp32_steal``
    the second (scheduler.simulate)."""
    recs = measurements(path or _split_file())
    med = statistics.median
    hg_alone = med(recs["wgmma_split_ffma_k0"]["cycles_2n"])
    groups = recs["wgmma_split_ffma_k0"].get("n") or SPLIT_GROUPS
    per_hgmma = hg_alone / (groups * HGMMA_PER_GROUP)
    per_k = {}
    for k, v in split_rates(path).items():
        alone = med(recs[f"wgmma_split_ffma_k{k}_alone"]["cycles"])
        ran = v["ffma_cycles"] * v["hgmma_rate"] / per_hgmma      # HGMMAs finished beside the FFMAs
        ffmas = groups * HGMMA_PER_GROUP * k                       # per warp of the FFMA warpgroup
        per_k[k] = {"fp32_cycles_lost_per_hgmma": (v["ffma_cycles"] - alone) / ran,
                    "pipe_cycles_lost_per_fp32": (1.0 - v["hgmma_rate"]) * v["ffma_cycles"] / ffmas}
    block = statistics.fmean(x["fp32_cycles_lost_per_hgmma"] for x in per_k.values())
    steal = statistics.fmean(x["pipe_cycles_lost_per_fp32"] for x in per_k.values())
    return {"per_k": {str(k): v for k, v in per_k.items()}, "hgmma_cycles_alone": per_hgmma,
            "fp32_cycles_lost_per_hgmma": block, "wgmma_fp32_share": block / per_hgmma,
            "wgmma_fp32_steal": steal, "source": str(Path(path or _split_file()).relative_to(REPO))}


def split_prediction(ex: dict, alone_per_fp32: float) -> dict:
    """The exchange's steady state in the split-role run, HGMMAs running throughout: per FP32
    instruction of one warp, the FFMA warps take their own time alone ``a`` plus the FP32 datapaths'
    share of the HGMMAs that run meanwhile, and each costs the pipe ``steal``:
    T = a + share * (T - steal)  =>  T = (a - share * steal) / (1 - share); the FFMAs keep a / T of
    their rate, the HGMMAs 1 - steal / T of theirs."""
    share, steal = ex["wgmma_fp32_share"], ex["wgmma_fp32_steal"]
    t = (alone_per_fp32 - share * steal) / (1.0 - share)
    return {"ffma_rate": alone_per_fp32 / t, "hgmma_rate": 1.0 - steal / t, "cycles_per_fp32": t}


SPLIT_MORE = "wgsplit.raw.jsonl"                 # the `ceilings wgsplit` run (K = 8, 16, 32, 256)
SPLIT_PREDICTIONS = RESULT.with_name("split_predictions.json")


def judge_split_more(path: Path) -> dict:
    """The committed split predictions against a `ceilings wgsplit` run: per K, predicted from
    that run's FFMA-alone time, against its measured rates (split_rates on that file)."""
    pred = json.loads(SPLIT_PREDICTIONS.read_text())
    recs = measurements(path)
    groups = recs["wgmma_split_ffma_k0"].get("n") or SPLIT_GROUPS
    out = {}
    for k, v in split_rates(path).items():
        alone = statistics.median(recs[f"wgmma_split_ffma_k{k}_alone"]["cycles"]) / (groups * HGMMA_PER_GROUP * k)
        p = split_prediction(pred["exchange"], alone)
        out[str(k)] = {"alone_per_fp32": alone, "measured": {"ffma_rate": v["ffma_rate"], "hgmma_rate": v["hgmma_rate"]},
                       "predicted": {"ffma_rate": p["ffma_rate"], "hgmma_rate": p["hgmma_rate"]},
                       "derived_from": str(k) in pred["derived_from_k"]}
    return {"predictions": str(SPLIT_PREDICTIONS.relative_to(REPO)), "predicted_at": pred["created"],
            "run": str(Path(path).relative_to(REPO)), "per_k": out}


def split_kinds(path: Path) -> dict[str, dict]:
    """A `ceilings wgsplit2` run (RS HGMMAs; FMNMX and kernel 7's softmax mix beside them): per
    record, the second warpgroup's cycles per instruction alone and while the HGMMAs ran (where it
    outlasts them, the instructions left after they finished are charged at its rate alone), and
    the share of their rate alone the HGMMAs kept while both ran."""
    recs = measurements(path)
    med = statistics.median
    out = {}
    for name, r in recs.items():
        hit = re.fullmatch(r"wgmma_split_(\w+?)_k(\d+)(_rs)?", name)
        if not hit or hit.group(2) == "0":
            continue
        kind, k, rs = hit.group(1), int(hit.group(2)), bool(hit.group(3))
        groups = r.get("n") or SPLIT_GROUPS
        n = groups * HGMMA_PER_GROUP * k
        a = med(recs[f"wgmma_split_{kind}_k{k}_alone"]["cycles"]) / n
        base = med(recs["wgmma_split_ffma_k0" + ("_rs" if rs else "")]["cycles_2n"])
        other, hg = med(r["cycles"]), med(r["cycles_2n"])
        if other <= hg:   # the HGMMAs outlast it: all its instructions ran beside them
            beside, kept = other / n, (base - (hg - other)) / other
        else:             # it outlasts the HGMMAs
            beside, kept = hg / (n - (other - hg) / a), base / hg
        out[name] = {"kind": kind, "k": k, "rs": rs, "alone_cycles_per_inst": a,
                     "beside_cycles_per_inst": beside, "hgmma_rate_kept": kept}
    return out


def _kinds_file() -> Path:
    """The `ceilings wgsplit2` run (FMNMX and the softmax mix beside HGMMAs) of the shipped GPU's chip."""
    found = [Path(t).parent / "wgsplit2.raw.jsonl" for t in TABLES]
    return next((p for p in found if p.is_file()), found[0])


def alu_factor(path: Path | None = None) -> dict:
    """How much longer an ALU-pipe instruction takes beside running HGMMAs, from the split-role
    run alone: FMNMX (max.f32, 8 chains, the ALU pipe's 2 cycles a warp instruction alone) beside
    SS HGMMAs takes twice its time while the HGMMAs keep their whole rate (K = 16 and 64). The
    factor is the mean of beside / alone over those records (``Machine.wgmma_alu_factor``);
    ``hgmma_rate_kept`` says the pipe side pays nothing."""
    path = Path(path or _kinds_file())
    per = {n: r for n, r in split_kinds(path).items() if r["kind"] == "fmnmx" and not r["rs"]}
    if not per:
        raise FileNotFoundError(f"{path}: no FMNMX split records (ceilings wgsplit2)")
    ratios = {n: r["beside_cycles_per_inst"] / r["alone_cycles_per_inst"] for n, r in per.items()}
    return {"per_record": {n: {"alu_factor": ratios[n], "hgmma_rate_kept": per[n]["hgmma_rate_kept"],
                               "alone_cycles_per_inst": per[n]["alone_cycles_per_inst"],
                               "beside_cycles_per_inst": per[n]["beside_cycles_per_inst"]} for n in sorted(per)},
            "wgmma_alu_factor": statistics.fmean(ratios.values()),
            "hgmma_rate_kept": statistics.fmean(r["hgmma_rate_kept"] for r in per.values()),
            "source": str(path.relative_to(REPO))}


def alu_point(point: str) -> bool:
    """A mix point whose interleaved work runs on the ALU pipe (FMNMX) or mixes it in (softmax)."""
    return point.split("_")[2] in ("fmnmx", "softmax")


def judge_alu(alu: dict, gpu_key: str = SHIPPED.model_key) -> dict:
    """The ALU factor (derived from the split run) on the mix points with ALU work, none of which
    it saw, beside the model as it stands without it (the FP32 exchange kept in both). Adopted
    where it lowers the MAE over the FMNMX points by ``ADOPT_GAIN_PP`` and leaves the softmax
    points no worse."""
    base = machine(gpu_key)
    pts, (meas, _src) = points(), measured()
    names = sorted(p for p in pts if p in meas and alu_point(p))
    models = {"with": dataclasses.replace(base, wgmma_alu_factor=alu["wgmma_alu_factor"]),
              "without": dataclasses.replace(base, wgmma_alu_factor=1.0)}
    errs = {k: {p: 100 * (rate(pts[p], m) / meas[p] - 1) for p in names} for k, m in models.items()}

    def mae(e, kind):
        xs = [abs(v) for p, v in e.items() if p.split("_")[2] == kind]
        return statistics.fmean(xs) if xs else float("nan")

    out = {k: {kind: mae(e, kind) for kind in ("fmnmx", "softmax")} for k, e in errs.items()}
    gain = out["without"]["fmnmx"] - out["with"]["fmnmx"]
    return {"points": errs, "mae_pct": out, "n": len(names),
            "adopted": gain >= ADOPT_GAIN_PP and out["with"]["softmax"] <= out["without"]["softmax"] + 0.1}


SPLIT_SASS = REPO / "reports" / "sass" / "ceilings" / "wgmma_split_sm_90a.sass"
_SPLIT_FN = re.compile(r"k_wgmma_splitILi(\d+)ELb([01])ELb([01])ELi(\d+)E")
_SPLIT_KIND = {1: "ffma", 3: "ex2", 4: "fmnmx", 8: "softmax", 9: "ex2ffma", 10: "ex2fmnmx", 11: "ex2fmul",
               12: "ex2ffma4"}                                 # WgmixKind numbers (wgmma_mix.cuh)
_SPLIT_MARKER = {"ffma": "FFMA", "fmnmx": "FMNMX", "softmax": "FMUL"}  # the rest: MUFU
_SPLIT_WORK = ("FFMA", "FMUL", "FADD", "FMNMX", "MUFU")    # the second warpgroup's instructions


def split_name(function: str) -> tuple[str, str] | None:
    """(record name, "" or "_alone") of a ``k_wgmma_split<K, HG, RS, KIND>`` function, or None."""
    m = _SPLIT_FN.search(function or "")
    if not m or int(m.group(4)) not in _SPLIT_KIND:
        return None
    k, hg, rs, kind = int(m.group(1)), m.group(2) == "1", m.group(3) == "1", _SPLIT_KIND[int(m.group(4))]
    return f"wgmma_split_{kind}_k{k}" + ("_rs" if rs and hg else ""), "" if hg else "_alone"


def write_split_sass(path: Path = SPLIT_SASS) -> Path:
    """Both loops of every split-role kernel in the ceilings cubin (sm_90a, the venv's nvcc): the
    HGMMA warpgroup's (``<record>@hgmma``) and the other's (``<record>@other``), each as
    controls.main_loop finds it around its own instruction."""
    from flashprof.analysis.gap.ceilings_sass import write_listing

    def loops_of(fn: str) -> list[tuple[str, str]]:
        named = split_name(fn)
        if named is None or named[0] in SPLIT_SKIP:
            return []
        rec, alone = named
        parts = [] if alone else [("hgmma", "HGMMA")]
        if not rec.endswith(("_k0", "_k0_rs")):
            parts.append(("other", _SPLIT_MARKER.get(rec.split("_")[2], "MUFU")))
        return [(f"{rec}{alone}@{role}", marker) for role, marker in parts]

    return write_listing(path, "ceilings split-role wgmma kernels (flashprof/kernels/ceilings/wgmma_mix.cuh "
                               "k_wgmma_split), sm_90a: each warpgroup's loop",
                         "python -m flashprof.analysis.gap.wgmma_interplay --write-split-sass", loops_of)


def split_loops(path: Path = SPLIT_SASS) -> dict[str, dict[str, list]]:
    """record name (``..._alone`` for the second warpgroup timed alone) -> role -> loop body."""
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no split SASS (python -m flashprof.analysis.gap.wgmma_interplay --write-split-sass)")
    out: dict[str, dict[str, list]] = {}
    for fn, body in parse(path.read_text()).items():
        rec, role = fn.split("@")
        out.setdefault(rec, {})[role] = body
    return out


def _work(body, role: str) -> int:
    return sum(1 for i in body if (i.base == "HGMMA" if role == "hgmma" else i.base in _SPLIT_WORK))


def simulate_split(m: Machine, name: str, loops: dict, groups: int = 64) -> dict:
    """The split-role run ``name`` on the scheduler (two roles, one block, seed 1), ``groups``
    HGMMA groups of 8 and 8 x K instructions per group period, as the benchmark has them: each
    side's cycles, the second warpgroup's alone and the HGMMAs' alone, read as ``split_kinds``
    reads the GPU's (cycles per instruction alone and beside, HGMMA rate kept)."""
    hit = re.fullmatch(r"wgmma_split_(\w+?)_k(\d+)(_rs)?", name)
    k, rs = int(hit.group(2)), bool(hit.group(3))
    both, alone = loops[name], loops[f"{name.replace('_rs', '')}_alone"]["other"]
    hg0 = loops["wgmma_split_ffma_k0" + ("_rs" if rs else "")]["hgmma"]
    n = groups * HGMMA_PER_GROUP * k
    passes = lambda body, role, work: max(1, round(work / _work(body, role)))
    end = lambda r, ws: max(r["finish_by_warp"][w] for w in ws)
    r = simulate(None, m, 1, WARPS, iterations=[passes(both["hgmma"], "hgmma", groups * HGMMA_PER_GROUP),
                                                passes(both["other"], "other", n)], seed=SEED,
                 roles=[both["hgmma"], both["other"]])
    hg, other = end(r, range(4)), end(r, range(4, 8))
    a = end(simulate(list(alone), m, 1, SUBPARTITIONS, iterations=passes(alone, "other", n), seed=SEED),
            range(4)) / n
    base = end(simulate(list(hg0), m, 1, SUBPARTITIONS, iterations=passes(hg0, "hgmma", groups * HGMMA_PER_GROUP),
                        seed=SEED), range(4))
    if other <= hg:
        beside, kept = other / n, (base - (hg - other)) / other
    else:
        beside, kept = hg / (n - (other - hg) / a), base / hg
    return {"alone_cycles_per_inst": a, "beside_cycles_per_inst": beside, "hgmma_rate_kept": kept}


MUFU_SHARE = {"ex2": 1.0, "ex2ffma": 0.5, "ex2fmnmx": 0.5, "ex2fmul": 0.5, "ex2ffma4": 0.2, "softmax": 0.2}


def mufu_mix(path: Path, m: Machine | None = None, loops: dict | None = None) -> dict:
    """A `ceilings wgsplit3` run (MUFU.EX2 in mixed streams, the second warpgroup alone, one warp a
    sub-partition): per record the cycles per instruction, the cycles per MUFU.EX2 that gives if
    the XU pipe were the limit (cycles per instruction / share of EX2 in the stream), and the
    scheduler's cycles per instruction on the same loop (the Machine's MUFU rate: 8 cycles)."""
    m = m or machine(SHIPPED.model_key)
    loops = loops or split_loops()
    recs = measurements(path)
    med = statistics.median
    out = {}
    for name, r in sorted(recs.items()):
        hit = re.fullmatch(r"wgmma_split_(\w+?)_k(\d+)_alone", name)
        if not hit or hit.group(1) not in MUFU_SHARE:
            continue
        kind, k = hit.group(1), int(hit.group(2))
        n = (r.get("n") or SPLIT_GROUPS) * HGMMA_PER_GROUP * k
        cpi = med(r["cycles"]) / n
        row = {"kind": kind, "k": k, "cycles_per_inst": cpi, "cycles_per_ex2": cpi / MUFU_SHARE[kind]}
        if name in loops:
            body = loops[name]["other"]
            its = max(1, round(n / 8 / _work(body, "other")))
            sim = simulate(list(body), m, 1, SUBPARTITIONS, iterations=its, seed=SEED)
            row["model_cycles_per_inst"] = max(sim["finish_by_warp"].values()) / (its * _work(body, "other"))
        out[name] = row
    return out


MUFU_RUN = "wgsplit3.raw.jsonl"
MUFU_CANDIDATE = RESULT.with_name("mufu_candidate.json")
XU_GRID = tuple(round(0.05 * i, 2) for i in range(0, 21))


def _mufu_folder() -> Path:
    return next((Path(t).parent for t in TABLES if (Path(t).parent / MUFU_RUN).is_file()), Path(TABLES[0]).parent)


def alone_errors(m: Machine, rows: dict | None = None, loops: dict | None = None) -> dict[str, float]:
    """wgsplit3's records run alone (no HGMMA; one warp a sub-partition), or ``rows`` of them: %
    error of the scheduler's cycles per instruction against the measured ones."""
    loops = loops or split_loops()
    if rows is None:
        rows = mufu_mix(_mufu_folder() / MUFU_RUN, m, loops)
    out = {}
    for name, r in rows.items():
        body = loops[name]["other"]
        n = SPLIT_GROUPS * HGMMA_PER_GROUP * r["k"]
        its = max(1, round(n / 8 / _work(body, "other")))
        sim = simulate(list(body), m, 1, SUBPARTITIONS, iterations=its, seed=SEED)
        out[name] = 100 * (max(sim["finish_by_warp"].values()) / (its * _work(body, "other")) / r["cycles_per_inst"] - 1)
    return out


def mufu_candidate(gpu_key: str = SHIPPED.model_key) -> dict:
    """Two costs of the XU pipe (MUFU) from `ceilings wgsplit3` alone, each chosen on its own
    records and judged on what it never saw. ``xu_issue_steal`` (each other instruction issued
    beside a busy XU pipe holds it that much longer): on the grid, on the two records with one EX2
    in five among FFMAs. ``wgmma_xu_factor`` (a MUFU beside a running HGMMA holds the XU pipe that
    many times as long): EX2 beside SS HGMMAs over EX2 alone (K = 16). Judged: the wgsplit3
    records with an EX2 every other instruction alone; kernel 7's softmax mix alone (wgsplit2 and
    wgsplit3); EX2 + FFMA, EX2 + FMNMX and the softmax mix beside HGMMAs (the two-role scheduler);
    the EX2 and softmax mix points; the shipped kernel 7's loop (cycles a pass and stall mix,
    seeds 1-4, 32 passes timed over the last 16)."""
    from flashprof.analysis.gap.issue_report import GPUS as ARCH
    from flashprof.analysis.gap.issue_report import H200, model_stalls, passes, with_tma_writes
    from flashprof.analysis.gap.loops import kernel_loop

    m0 = machine(gpu_key)
    loops = split_loops()
    folder = _mufu_folder()
    meas = mufu_mix(folder / MUFU_RUN, m0, loops)
    soft2 = mufu_mix(folder / "wgsplit2.raw.jsonl", m0, loops) if (folder / "wgsplit2.raw.jsonl").is_file() else {}
    fit = [n for n, r in meas.items() if r["kind"] == "ex2ffma4"]

    def alone_err(m, rows):
        return alone_errors(m, rows, loops)

    grid = {x: statistics.fmean(abs(v) for v in alone_err(dataclasses.replace(m0, xu_issue_steal=x),
                                                          {n: meas[n] for n in fit}).values()) for x in XU_GRID}
    steal = min(grid, key=lambda x: (grid[x], x))
    kinds3 = split_kinds(folder / MUFU_RUN)
    factor = kinds3["wgmma_split_ex2_k16"]["beside_cycles_per_inst"] / kinds3["wgmma_split_ex2_k16"]["alone_cycles_per_inst"]
    held = {n: r for n, r in meas.items() if n not in fit and r["kind"] != "ex2"}
    held.update({n: r for n, r in soft2.items() if r["kind"] == "softmax"})
    beside_meas = {n: v for n, v in kinds3.items() if n != "wgmma_split_ex2_k16"}
    beside_meas.update({n: v for n, v in split_kinds(folder / "wgsplit2.raw.jsonl").items() if v["kind"] == "softmax"})
    pts, (mix, _src) = points(), measured()
    mix_names = sorted(p for p in pts if p in mix and p.split("_")[2] in ("ex2", "softmax"))
    code = kernel_loop("7", ARCH[H200], json.loads((REPO / SHIPPED.reports / "kernel7.json").read_text())["config_slug"])
    bg = dict(with_tma_writes(code, ())).get("background_wavefronts", 0.0)
    n_pass, warm = passes(code, 1)

    def k7(m):
        runs = [simulate(list(code.body), m, 1, code.warps, n_pass, 1.0, s, background_wavefronts=bg, warmup=warm)
                for s in (1, 2, 3, 4)]
        st = [model_stalls(r["warps_per_issue"]) for r in runs]
        return {"cycles_per_pass": statistics.fmean(r["cycles_per_iter"] for r in runs),
                "stalls": {g: statistics.fmean(x[g] for x in st) for g in st[0]}}

    variants = {"without": m0, "steal": dataclasses.replace(m0, xu_issue_steal=steal),
                "factor": dataclasses.replace(m0, wgmma_xu_factor=factor),
                "both": dataclasses.replace(m0, xu_issue_steal=steal, wgmma_xu_factor=factor)}
    judged = {}
    for label, m in variants.items():
        a = alone_err(m, held)
        b = {}
        for n, v in beside_meas.items():
            got = simulate_split(m, n, loops)
            b[n] = {f: 100 * (got[f] / v[f] - 1) for f in ("beside_cycles_per_inst", "hgmma_rate_kept")}
        mx = {p: 100 * (rate(pts[p], m) / mix[p] - 1) for p in mix_names}
        judged[label] = {"alone_pct": a, "alone_mae_pct": statistics.fmean(abs(v) for v in a.values()),
                         "beside_pct": b,
                         "beside_mae_pct": statistics.fmean(abs(x["beside_cycles_per_inst"]) for x in b.values()),
                         "kept_mae_pct": statistics.fmean(abs(x["hgmma_rate_kept"]) for x in b.values()),
                         "mix_pct": mx, "mix_mae_pct": statistics.fmean(abs(v) for v in mx.values()),
                         "kernel7": k7(m)}
    return {"what": " ".join(mufu_candidate.__doc__.split()),
            "run": str((folder / MUFU_RUN).relative_to(REPO)), "measured": meas, "fit_steal": fit,
            "grid_mae_pct": {str(k): v for k, v in grid.items()}, "xu_issue_steal": steal,
            "wgmma_xu_factor": factor, "judged": judged}


def mufu_summary(rec: dict) -> dict:
    """The two XU costs as the Machine reads them (wgmma_interplay.json's ``mufu``): adopted where
    both together lower every held-out error of mufu_candidate."""
    j0, j1 = rec["judged"]["without"], rec["judged"]["both"]
    keys = ("alone_mae_pct", "beside_mae_pct", "kept_mae_pct", "mix_mae_pct")
    return {"xu_issue_steal": rec["xu_issue_steal"], "wgmma_xu_factor": rec["wgmma_xu_factor"],
            "source": rec["run"], "detail": str(MUFU_CANDIDATE.relative_to(REPO)),
            "mae_pct": {"without": {k: j0[k] for k in keys}, "with": {k: j1[k] for k in keys}},
            "adopted": all(j1[k] < j0[k] for k in keys)}


SPLIT_RAWS = ("wgmma_split.raw.jsonl", "wgsplit.raw.jsonl", "wgsplit2.raw.jsonl")
SPLIT_SKIP = {"wgmma_split_ffma_k256": "its FFMA warps alone slow to 1.151 cycles per FFMA (K = 256: likely the "
                                       "instruction cache, which the scheduler does not model)"}


def split_simulated(m: Machine | None = None, loops: dict | None = None, names=None) -> dict:
    """Every split-role record of the shipped GPU's chip (the three runs), measured (split_kinds)
    beside the scheduler's run of the same loops (simulate_split), and the mean absolute error
    per kind of each of the three figures."""
    m = m or machine(SHIPPED.model_key)
    loops = loops or split_loops()
    folder = next((Path(t).parent for t in TABLES if (Path(t).parent / SPLIT_RAWS[0]).is_file()), Path(TABLES[0]).parent)
    meas = {}
    for raw in SPLIT_RAWS:
        if (folder / raw).is_file():
            meas.update(split_kinds(folder / raw))
    rows = {}
    for name in sorted(names or meas):
        if name in SPLIT_SKIP or name not in loops:
            continue
        rows[name] = {"measured": meas[name], "model": simulate_split(m, name, loops)}
    err = {}
    for name, r in rows.items():
        kind = name.split("_")[2] + ("_rs" if name.endswith("_rs") else "")
        for f in ("alone_cycles_per_inst", "beside_cycles_per_inst", "hgmma_rate_kept"):
            err.setdefault(kind, {}).setdefault(f, []).append(100 * abs(r["model"][f] / r["measured"][f] - 1))
    mae = {kind: {f: statistics.fmean(v) for f, v in fs.items()} for kind, fs in err.items()}
    return {"rows": rows, "mae_pct": mae, "skipped": SPLIT_SKIP, "loops": str(SPLIT_SASS.relative_to(REPO)),
            "runs": [str((folder / raw).relative_to(REPO)) for raw in SPLIT_RAWS if (folder / raw).is_file()]}


SPLIT_GROUPS = 512     # groups per run in k_wgmma_split (bench_wgmma_split)
HGMMA_PER_GROUP = 8    # kWgmmaPerGroup


def fp32_point(point: str) -> bool:
    """A mix point whose interleaved work runs on the FP32 datapaths (FFMA, FADD, IMAD, the
    softmax mix): the points either side of the exchange acts on."""
    return point.split("_")[2] in ("ffma", "ffma3", "fadd", "imad", "softmax")


def judge_exchange(ex: dict, gpu_key: str = SHIPPED.model_key) -> dict:
    """The exchange (derived from the split run) on every FP32 mix point, none of which it saw,
    beside the model with no interplay and with the share chosen on five of them."""
    base = machine(gpu_key, wgmma_interplay=None)
    pts, (meas, _src) = points(), measured()
    names = sorted(p for p in pts if p in meas and fp32_point(p))
    chosen = load() or {}
    models = {"exchange": dataclasses.replace(base, wgmma_fp32_share=ex["wgmma_fp32_share"],
                                              wgmma_fp32_steal=ex["wgmma_fp32_steal"]),
              "none": base}
    if chosen.get("wgmma_fp32_share") is not None:
        models["share"] = dataclasses.replace(base, wgmma_fp32_share=chosen["wgmma_fp32_share"])
    errs = {k: {p: 100 * (rate(pts[p], m) / meas[p] - 1) for p in names} for k, m in models.items()}
    mae = {k: statistics.fmean(abs(v) for v in e.values()) for k, e in errs.items()}
    return {"points": errs, "mae_pct": mae, "n": len(names),
            "adopted": mae["none"] - mae["exchange"] >= ADOPT_GAIN_PP}


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


def _store(section: str, value: dict) -> None:
    """Put one section into the committed record (the grid search's, which must exist)."""
    rec = load()
    if rec is None:
        raise SystemExit(f"{RESULT.relative_to(REPO)}: missing; run python -m flashprof.analysis.gap.wgmma_interplay first")
    rec[section] = value
    RESULT.write_text(json.dumps(rec, indent=1, sort_keys=True) + "\n")


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
    if "--predict-split" in argv:  # before `ceilings wgsplit` runs: the exchange's rates at any K
        import datetime
        import subprocess

        ex = (load() or {}).get("exchange")
        if not ex:
            raise SystemExit("no exchange in the record: run --exchange first")
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
        rec = {"what": "the exchange's predicted split-role rates (split_prediction) for `ceilings wgsplit`, "
                       "written before that run; a = the FFMA warps' cycles per FFMA alone, from the same run",
               "created": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"), "commit": head,
               "exchange": {k: ex[k] for k in ("wgmma_fp32_share", "wgmma_fp32_steal")},
               "derived_from_k": sorted(ex["per_k"], key=int),
               "at": {f"a={a}": split_prediction(ex, a) for a in (1.0, 1.03, 1.06, 1.1, 1.16, 1.3)}}
        SPLIT_PREDICTIONS.write_text(json.dumps(rec, indent=1, sort_keys=True) + "\n")
        print(f"{SPLIT_PREDICTIONS.relative_to(REPO)} written")
        return 0
    if "--write-split-sass" in argv:
        print(write_split_sass().relative_to(REPO))
        return 0
    if "--split-sim" in argv:  # the scheduler on the split-role runs' own loops, with and without the ALU factor
        m = machine(SHIPPED.model_key)
        sim = split_simulated(m)
        if m.wgmma_alu_factor != 1.0:
            sim["mae_pct_without_alu_factor"] = split_simulated(dataclasses.replace(m, wgmma_alu_factor=1.0),
                                                                names=[n for n in sim["rows"] if "fmnmx" in n or "softmax" in n])["mae_pct"]
        _store("split_sim", sim)
        for kind, v in sorted(sim["mae_pct"].items()):
            print(f"{kind:12s} " + ", ".join(f"{f.split('_cycles')[0].replace('hgmma_rate_kept', 'kept')} {x:5.1f} %" for f, x in v.items()))
        return 0
    if "--mufu" in argv:  # ceilings wgsplit3: MUFU.EX2 in mixed streams, two XU costs judged
        rec = mufu_candidate()
        MUFU_CANDIDATE.write_text(json.dumps(rec, indent=1, sort_keys=True) + "\n")
        _store("mufu", mufu_summary(rec))
        print(f"{MUFU_CANDIDATE.relative_to(REPO)}: xu_issue_steal {rec['xu_issue_steal']}, wgmma_xu_factor "
              f"{rec['wgmma_xu_factor']:.3f}")
        for label, j in rec["judged"].items():
            k = j["kernel7"]
            print(f"  {label:8s} alone {j['alone_mae_pct']:5.1f} %, beside {j['beside_mae_pct']:5.1f} %, kept "
                  f"{j['kept_mae_pct']:5.1f} %, mix {j['mix_mae_pct']:5.1f} %; kernel 7 {k['cycles_per_pass']:.0f} cycles, "
                  + ", ".join(f"{g} {v:.2f}" for g, v in sorted(k["stalls"].items(), key=lambda kv: -kv[1])[:3]))
        return 0
    if "--alu" in argv:  # the ALU pipe beside HGMMAs, from the split run's FMNMX records
        alu = alu_factor()
        alu.update(judge_alu(alu))
        _store("alu", alu)
        m = alu["mae_pct"]
        print(f"{RESULT.relative_to(REPO)}: wgmma_alu_factor {alu['wgmma_alu_factor']:.3f} "
              f"({'adopted' if alu['adopted'] else 'not adopted'}); FMNMX mix points MAE {m['with']['fmnmx']:.1f} % "
              f"(without {m['without']['fmnmx']:.1f}), softmax {m['with']['softmax']:.1f} % (without {m['without']['softmax']:.1f})")
        return 0
    if "--exchange" in argv:  # both sides of the cost, from the split run; kept beside the share's grid
        ex = exchange()
        ex.update(judge_exchange(ex))
        _store("exchange", ex)
        print(f"{RESULT.relative_to(REPO)}: exchange share {ex['wgmma_fp32_share']:.3f}, steal {ex['wgmma_fp32_steal']:.3f} "
              f"({'adopted' if ex['adopted'] else 'not adopted'}); MAE over {ex['n']} FP32 mix points: "
              + ", ".join(f"{k} {v:.1f} %" for k, v in ex["mae_pct"].items()))
        return 0
    rec = derive()
    old = load()
    for kept in ("exchange", "alu", "split_sim", "mufu"):
        if old and kept in old:
            rec[kept] = old[kept]
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(rec, indent=1, sort_keys=True) + "\n")
    c, w = rec["chosen"], rec["without"]
    print(f"{RESULT.relative_to(REPO)}: wgmma_fp32_share {c['wgmma_fp32_share']} ({'adopted' if rec['adopted'] else 'not adopted'}); "
          f"fit MAE {c['fit_mae_pct']:.2f} % (without {w['fit_mae_pct']:.2f}), held-out MAE {c['held_out_mae_pct']:.2f} % "
          f"(without {w['held_out_mae_pct']:.2f}), not addressed {c['not_addressed_mae_pct']:.2f} % (without {w['not_addressed_mae_pct']:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
