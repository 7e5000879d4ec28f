"""Whose instructions slow the XU pipe (issue 32): ``ceilings wgsplit4``.

``ceilings wgsplit3`` measured that a MUFU.EX2 one in five among FFMAs of the same warp holds
the XU pipe about 0.65 cycles longer per other instruction issued while it works
(``Machine.xu_issue_steal``). The model charged that to any warp's instruction on the
sub-partition, which makes it large for kernels with two or more warps a sub-partition (FA2,
kernels 1-6). ``k_xu_pair`` (flashprof/kernels/ceilings/wgmma_mix.cuh) runs one warp of KIND A
beside a neighbour warp of KIND B on every sub-partition (and optionally HGMMAs in a third
warpgroup): if the neighbour's instructions cost the XU pipe, the EX2 warp slows beside them.

Here: the pair kernels' loops as a committed listing (``--write-sass``), the scheduler's
prediction of every record under both scopes written before the run (``--predict``), and the
run judged (``--judge``: which scope each record agrees with, stored as wgmma_interplay.json's
``xu_scope`` section, which constants reads into ``Machine.xu_steal_scope``; with it the
mbarrier wait's latency, section ``mbar``; ``--backlog``: the HGMMA issue backlog, section
``wgmma_issue``). ``--sidecar FOLDER`` writes a run's sidecar once its files are copied there."""
from __future__ import annotations

import dataclasses
import json
import re
import statistics
import sys
from pathlib import Path

from flashprof.analysis.gap.ceil_run import same_chip_path, sidecar_head
from flashprof.analysis.gap.constants import SUBPARTITIONS, Machine, machine
from flashprof.analysis.gap.data import REPO
from flashprof.analysis.gap.scheduler import simulate
from flashprof.analysis.gap.wgmma_interplay import RESULT, SEED, load, measurements, split_loops
from flashprof.kernels.gpus import SHIPPED

PAIR_SASS = REPO / "reports" / "sass" / "ceilings" / "xu_pair_sm_90a.sass"
RUN = "wgsplit4.raw.jsonl"
PREDICTIONS = RESULT.with_name("xu_pair_predictions.json")
SCOPES = ("subpartition", "warp")
# ceilings wgsplit5: the neighbour's pipe (FADD, FMUL, IMAD beside EX2; FFMA and FMNMX again)
RUN5 = "wgsplit5.raw.jsonl"
PREDICTIONS5 = RESULT.with_name("xu_pair5_predictions.json")
SCOPES5 = ("subpartition", "warp", "fp32", "fma")
RECORDS5 = ("xu_pair_ex2_none", "xu_pair_ex2_fadd", "xu_pair_ex2_fmul", "xu_pair_ex2_imad", "xu_pair_ex2_ffma",
            "xu_pair_ex2_fmnmx")
# wgsplit5 is judged under round robin: in wgsplit4 the greedy choice starved the EX2 warp beside
# FFMA under every scope (40 cycles an EX2 predicted, 16.65 measured), round robin did not
POLICY5 = "round_robin"
_FN = re.compile(r"k_xu_pairILi(\d+)ELi(\d+)ELb([01])E")
_KIND = {0: "none", 1: "ffma", 2: "imad", 3: "ex2", 4: "fmnmx", 7: "fadd", 8: "softmax", 12: "ex2ffma4",
         13: "fmul"}  # WgmixKind numbers
_ISSUE_FN = re.compile(r"k_wgmma_issueILb([01])ELi(\d+)E")
_MARKER = {"ex2": "MUFU", "ex2ffma4": "MUFU", "ffma": "FFMA", "fmnmx": "FMNMX", "softmax": "FMUL", "fadd": "FADD",
           "fmul": "FMUL", "imad": "IMAD"}
_WORK = ("FFMA", "FMUL", "FADD", "FMNMX", "MUFU", "IMAD")
ROUND = 128       # instructions of KIND A per round per warp (16 x kWgmmaPerGroup)
B_PASS = 64       # instructions of KIND B per pass of its loop


def pair_name(function: str) -> tuple[str, str, str, bool] | None:
    """(record name, kind A, kind B, HGMMAs beside) of a ``k_xu_pair<KA, KB, HG>`` function."""
    m = _FN.search(function or "")
    if not m or int(m.group(1)) not in _KIND or int(m.group(2)) not in _KIND:
        return None
    a, b, hg = _KIND[int(m.group(1))], _KIND[int(m.group(2))], m.group(3) == "1"
    return f"xu_pair_{a}_{b}" + ("_hg" if hg else ""), a, b, hg


def write_sass(path: Path = PAIR_SASS) -> Path:
    """Each warpgroup's loop of every pair kernel in the ceilings cubin (sm_90a, the venv's nvcc):
    ``<record>@a`` (around KIND A's instruction: its loop holds twice the B loop's), ``@b`` (the
    loop that reads the stop flag: LDS, wider than the HGMMA loop's) and ``@hgmma``."""
    from flashprof.analysis.gap.ceilings_sass import write_listing

    def loops_of(fn: str) -> list[tuple[str, str]]:
        named = pair_name(fn)
        if named is None:
            return []
        rec, a, b, hg = named
        out = [(f"{rec}@a", _MARKER[a])]
        if b != "none":
            out.append((f"{rec}@b", "LDS"))
        if hg:
            out.append((f"{rec}@hgmma", "HGMMA"))
        return out

    def loops(fn: str) -> list[tuple[str, str]]:
        hit = _ISSUE_FN.search(fn or "")
        if hit:
            return [(f"wgmma_issue_{'adv' if hit.group(1) == '1' else 'fixed'}_wg{hit.group(2)}@rep", "HGMMA")]
        return loops_of(fn)

    return write_listing(path, "ceilings XU pair kernels (flashprof/kernels/ceilings/wgmma_mix.cuh k_xu_pair), "
                               "sm_90a: each warpgroup's loop; k_wgmma_issue: its loop over reps",
                         "python -m flashprof.analysis.gap.xu_pair --write-sass", loops)


def pair_loops(path: Path = PAIR_SASS) -> dict[str, dict[str, list]]:
    """record name -> role (a, b, hgmma; rep for the issue spans) -> loop body."""
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no pair SASS (python -m flashprof.analysis.gap.xu_pair --write-sass)")
    return split_loops(path)


def _work(body) -> int:
    return sum(1 for i in body if i.base in _WORK)


def simulate_pair(m: Machine, name: str, loops: dict, rounds: int = 4, policy: str = "greedy") -> dict:
    """The record ``name`` on the scheduler (one block, seed 1): ``rounds`` rounds of KIND A per
    warp of warpgroup 1, the neighbour's loop run long enough to outlast them (``policy``: the
    scheduler's warp choice). Returns KIND A's cycles per instruction (the record's
    ``cycles / work``) and, with a neighbour, whether every neighbour warp was still running when
    A's warps finished (the simulated run covers the record's situation)."""
    roles = loops[name]
    a = roles["a"]
    n = rounds * ROUND
    its_a = max(1, round(n / _work(a)))
    n = its_a * _work(a)
    bodies, its, a_role = [a], [its_a], 0
    if "b" in roles:
        # the neighbour issues at most one instruction a cycle; A, starved by it, may take up
        # to ~40 cycles an instruction (EX2: 8 alone)
        bodies.append(roles["b"])
        its.append(max(1, round(n * 40 / _work(roles["b"]))))
    if "hgmma" in roles:
        bodies.insert(0, roles["hgmma"])
        its.insert(0, max(1, round(n * 40 / 8 / 64)))
        a_role = 1
    r = simulate(None, m, 1, SUBPARTITIONS * len(bodies), iterations=its, seed=SEED, roles=bodies, policy=policy)
    ws = range(SUBPARTITIONS * a_role, SUBPARTITIONS * (a_role + 1))
    end = max(r["finish_by_warp"][w] for w in ws)
    out = {"a_cycles_per_inst": end / n}
    if "b" in roles:
        out["b_warps_finished_after_a"] = all(r["finish_by_warp"][w + SUBPARTITIONS] >= end for w in ws)
    return out


def predict(names=None, scopes=SCOPES) -> dict:
    """Every pair record under each scope of the XU steal (the shipped GPU's Machine otherwise),
    with the scheduler's warp choice (greedy, measured on GH100 by ``ceilings sched``) and, for
    the sensitivity to it, round robin (``<scope>/round_robin``)."""
    m0 = machine(SHIPPED.model_key)
    loops = pair_loops()
    out = {}
    for name in sorted(names or (n for n in loops if n.startswith("xu_pair_"))):
        out[name] = {(s if pol == "greedy" else f"{s}/{pol}"):
                     simulate_pair(dataclasses.replace(m0, xu_steal_scope=s), name, loops, policy=pol)["a_cycles_per_inst"]
                     for pol in ("greedy", "round_robin") for s in scopes}
    return {"xu_issue_steal": m0.xu_issue_steal, "wgmma_xu_factor": m0.wgmma_xu_factor, "records": out}


def measured(path: Path) -> dict[str, dict]:
    """Per record: KIND A's cycles per instruction (median over the timed launches) and the
    neighbour's instructions a cycle (one warp)."""
    out = {}
    for name, r in measurements(path).items():
        if not name.startswith("xu_pair_") or r.get("check") != "ok":
            continue
        row = {"a_cycles_per_inst": statistics.median(r["cycles"]) / r["work"]}
        if r.get("cycles_max") and statistics.median(r["cycles_max"]) > 0 and statistics.median(r["cycles_2n"]) > 0:
            row["b_inst_per_cycle"] = statistics.median(r["cycles_2n"]) / statistics.median(r["cycles_max"])
        out[name] = row
    return out


MBAR = "mbar_try_wait_done"
BACKLOG_GRID = (None, 0.0, 32.0, 64.0, 96.0, 128.0, 192.0, 256.0, 384.0, 512.0, 768.0, 1024.0)


def backlog_candidate(path: Path | None = None, m: Machine | None = None) -> dict:
    """``Machine.wgmma_issue_backlog`` from the run's issue spans alone: on the grid (None: no
    limit), the value whose simulated issue spans (issue_model) have the least mean absolute
    error against the four measured ones; adopted where that error is below the unlimited
    model's. Judged elsewhere (kernel 7's stall mix, issue_report), never chosen on it."""
    path = path or run_file()
    m = m or machine(SHIPPED.model_key)
    meas = issue_spans(path)
    loops = pair_loops()
    grid = {}
    for b in BACKLOG_GRID:
        sim = issue_model(dataclasses.replace(m, wgmma_issue_backlog=b), loops)
        grid["none" if b is None else f"{b:g}"] = {
            "spans": {n: sim[n]["issue_span"] for n in meas if n in sim},
            "mae_pct": statistics.fmean(100 * abs(sim[n]["issue_span"] / meas[n]["issue_span"] - 1) for n in meas if n in sim)}
    best = min(grid, key=lambda k: grid[k]["mae_pct"])
    return {"what": " ".join(backlog_candidate.__doc__.split()), "run": str(path.relative_to(REPO)),
            "measured": meas, "grid": grid, "wgmma_issue_backlog": None if best == "none" else float(best),
            "adopted": best != "none" and grid[best]["mae_pct"] < grid["none"]["mae_pct"]}


def issue_spans(path: Path) -> dict[str, dict]:
    """Per ``wgmma_issue_*`` record: the median cycles from before the first HGMMA of a group of
    8 to after its commit (issue span) and to the end of its wait (group)."""
    out = {}
    for name, r in measurements(path).items():
        if name.startswith("wgmma_issue_") and r.get("check") == "ok" and r.get("cycles"):
            out[name] = {"issue_span": statistics.median(r["cycles"]), "group": statistics.median(r["cycles_2n"])}
    return out


def issue_model(m: Machine, loops: dict) -> dict[str, dict]:
    """The same spans on the scheduler: each record's loop over reps (``@rep``), one warpgroup
    per warpgroup the record issues from, seed 1; the span from the clock read before the first
    HGMMA to the one after the commit, and to the one after the wait, averaged over the passes
    after the first."""
    out = {}
    for rec, roles in loops.items():
        if not rec.startswith("wgmma_issue_"):
            continue
        body = roles["rep"]
        clocks = [k for k, i in enumerate(body) if i.base == "CS2R" and "CLOCK" in i.operands]
        first = next(k for k, i in enumerate(body) if i.base == "HGMMA")
        before = max((k for k in clocks if k < first), default=None)
        after = [k for k in clocks if k > first]
        if before is None or len(after) < 2:
            continue
        wgs = int(rec.rsplit("_wg", 1)[1])
        at = {}
        for k in (before, after[0], after[1]):
            tr: dict = {}
            simulate(list(body), m, 1, SUBPARTITIONS * wgs, 8, seed=SEED, trace=tr, trace_pc=k)
            at[k] = tr[0]
        span = [b - a for a, b in zip(at[before][1:], at[after[0]][1:])]
        group = [b - a for a, b in zip(at[before][1:], at[after[1]][1:])]
        out[rec] = {"issue_span": statistics.fmean(span), "group": statistics.fmean(group)}
    return out


def mbar_latency(path: Path) -> float | None:
    """Cycles per completed-phase mbarrier wait of the run's chain (cycles(2n) - cycles(n)) / n,
    medians over the timed launches; None when the run has no such record or it failed."""
    r = measurements(path).get(MBAR)
    if not r or r.get("check") != "ok" or not r.get("cycles_2n") or not r.get("n"):
        return None
    return (statistics.median(r["cycles_2n"]) - statistics.median(r["cycles"])) / r["n"]


def run_file(run: str = RUN) -> Path | None:
    """A wgsplit4 / wgsplit5 run of the shipped GPU's chip (its own, else a same-chip GPU's)."""
    return same_chip_path(f"wgmma_mix/{run}")


def judge(path: Path | None = None, predictions: Path = PREDICTIONS, scopes=SCOPES, policy: str = "greedy") -> dict:
    """The committed predictions against the run: per scope the error of every record and their
    mean absolute error; the scope whose error is lower on the records with a neighbour warp (the
    ones the scopes tell apart) is the one the Machine takes. wgsplit4: both scopes, the greedy
    warp choice; wgsplit5 (``judge5``): four scopes, round robin."""
    path = path or run_file()
    if path is None:
        raise FileNotFoundError(f"no {RUN} of the {SHIPPED.chip} chip")
    meas = measured(path)
    pred = json.loads(predictions.read_text())
    key = lambda s: s if policy == "greedy" else f"{s}/{policy}"
    err = {s: {n: 100 * (p[key(s)] / meas[n]["a_cycles_per_inst"] - 1) for n, p in pred["records"].items() if n in meas}
           for s in scopes}
    told = [n for n in err[scopes[0]] if "_none" not in n]
    mae = {s: statistics.fmean(abs(err[s][n]) for n in told) for s in scopes}
    scope = min(scopes, key=lambda s: mae[s])
    return {"what": " ".join(judge.__doc__.split()), "run": str(path.relative_to(REPO)),
            "predictions": str(predictions.relative_to(REPO)), "predicted_at": pred.get("created"),
            "policy": policy, "measured": meas, "error_pct": err, "neighbour_records": told, "mae_pct": mae,
            "xu_steal_scope": scope}


def judge5(path: Path | None = None) -> dict:
    """wgsplit5 against its predictions (four scopes, round robin)."""
    path = path or run_file(RUN5)
    if path is None:
        raise FileNotFoundError(f"no {RUN5} of the {SHIPPED.chip} chip")
    return judge(path, PREDICTIONS5, SCOPES5, POLICY5)


_WHAT = {"wgsplit4": "ceilings wgsplit4 (flashprof/kernels/ceilings/wgmma_mix.cuh bench_xu_pairs): one warp of KIND A "
                    "beside a neighbour warp of KIND B on every sub-partition (k_xu_pair, with and without HGMMAs), a "
                    "chain of completed-phase mbarrier waits (k_lat_mbar) and the issue span of a group of 8 HGMMAs "
                    "(k_wgmma_issue); clock64 cycles",
         "wgsplit5": "ceilings wgsplit5 (flashprof/kernels/ceilings/wgmma_mix.cuh bench_xu_pairs5): one warp of EX2 "
                    "beside a neighbour warp of FADD, FMUL, IMAD, FFMA or FMNMX on every sub-partition (k_xu_pair), and "
                    "the chain of completed-phase mbarrier waits (k_lat_mbar) with its count fixed; clock64 cycles"}


def write_sidecar(folder: Path, mode: str = "wgsplit4", command: str | None = None) -> Path:
    """The sidecar of a wgsplit4 / wgsplit5 run copied into ``folder`` (<mode>.raw.jsonl, the
    runs, <mode>_clocks.txt): what ran, where, when it was committed here, the clocks, how far
    the two runs agree, the predictions it is judged against, and the per-record figures."""
    raw = folder / f"{mode}.raw.jsonl"
    runs = sorted(folder.glob(f"{mode}.run*.raw.jsonl"))
    spread = None
    if len(runs) > 1:
        a, b = measured(runs[0]), measured(runs[1])
        common = [n for n in a if n in b]
        spread = max((100 * abs(b[n]["a_cycles_per_inst"] / a[n]["a_cycles_per_inst"] - 1) for n in common), default=None)
    preds = PREDICTIONS5 if mode == "wgsplit5" else PREDICTIONS
    pred = json.loads(preds.read_text()) if preds.is_file() else {}
    rec = sidecar_head(folder, mode, _WHAT[mode], command or f"bash devjobs/ceil_modes.sh {mode}")
    rec.update(runs_max_difference_pct=spread,
               predicted_before={"file": str(preds.relative_to(REPO)), "created": pred.get("created")},
               per_record=measured(raw), issue_spans=issue_spans(raw), mbar_wait_latency=mbar_latency(raw))
    out = folder / f"{mode}.json"
    out.write_text(json.dumps(rec, indent=1, sort_keys=True) + "\n")
    return out


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--write-sass" in argv:
        print(write_sass().relative_to(REPO))
    if "--sidecar" in argv:  # --sidecar FOLDER: after copying a run (wgsplit4, wgsplit5 or both) into FOLDER
        folder = Path(argv[argv.index("--sidecar") + 1]).resolve()
        for mode in _WHAT:
            if (folder / f"{mode}.raw.jsonl").is_file():
                print(write_sidecar(folder, mode).relative_to(REPO))
    if "--predict" in argv or "--predict5" in argv:  # before the run: wgsplit4's, or wgsplit5's
        import datetime
        import subprocess

        five = "--predict5" in argv
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
        rec = {"what": f"KIND A's cycles per instruction in each `ceilings {'wgsplit5' if five else 'wgsplit4'}` record, "
                       f"predicted by the scheduler under {'each' if five else 'both'} scope{'' if five else 's'} of the "
                       "XU steal before the run (analysis/gap/xu_pair.py)",
               "created": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"), "commit": head,
               **(predict(RECORDS5, SCOPES5) if five else predict())}
        if five:
            rec["judged_by"] = f"the least mean absolute error over the records with a neighbour, policy {POLICY5}"
        (PREDICTIONS5 if five else PREDICTIONS).write_text(json.dumps(rec, indent=1, sort_keys=True) + "\n")
        for n, v in rec["records"].items():
            print(f"{n:32s} " + "  ".join(f"{s} {x:6.2f}" for s, x in v.items()))
    if "--judge" in argv:  # wgsplit5's scope where it has run (wgsplit4's kept beside it), else wgsplit4's
        rec4 = judge()
        rec = judge5() if run_file(RUN5) else rec4
        stored = load() or {}
        keep = ("run", "predictions", "predicted_at", "policy", "mae_pct", "xu_steal_scope")
        stored["xu_scope"] = {k: rec[k] for k in keep}
        stored["xu_scope"]["detail"] = rec["error_pct"]
        if rec is not rec4:
            stored["xu_scope_wgsplit4"] = {**{k: rec4[k] for k in keep}, "detail": rec4["error_pct"]}
        for run in (rec["run"], rec4["run"]):
            lat = mbar_latency(REPO / run)
            if lat is not None:
                stored["mbar"] = {"mbar_wait_latency": lat, "run": run, "record": MBAR}
                print(f"mbar_wait_latency: {lat:.1f} cycles ({run})")
                break
        RESULT.write_text(json.dumps(stored, indent=1, sort_keys=True) + "\n")
        scopes = list(rec["error_pct"])
        for n, v in sorted(rec["measured"].items()):
            print(f"{n:32s} measured {v['a_cycles_per_inst']:6.2f}  " +
                  "  ".join(f"{s} {rec['error_pct'][s].get(n, float('nan')):+6.1f} %" for s in scopes))
        print(f"xu_steal_scope: {rec['xu_steal_scope']} (MAE " +
              ", ".join(f"{s} {x:.1f} %" for s, x in rec["mae_pct"].items()) + ")")
    if "--backlog" in argv:
        rec = backlog_candidate()
        stored = load() or {}
        stored["wgmma_issue"] = rec
        RESULT.write_text(json.dumps(stored, indent=1, sort_keys=True) + "\n")
        for n, v in sorted(rec["measured"].items()):
            print(f"{n:24s} measured issue span {v['issue_span']:7.1f}, group {v['group']:7.1f}")
        for k, g in rec["grid"].items():
            print(f"  backlog {k:>6s}: MAE {g['mae_pct']:6.1f} %  " + "  ".join(f"{x:6.0f}" for x in g["spans"].values()))
        print(f"wgmma_issue_backlog: {rec['wgmma_issue_backlog']} ({'adopted' if rec['adopted'] else 'not adopted'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
