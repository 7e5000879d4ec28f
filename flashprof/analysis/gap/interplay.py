"""The cost of issuing other instructions beside HMMA, measured by ``ceilings mix`` and
carried into the issue model (issue 31's first candidate mechanism).

The microbenchmark (kernels/ceilings/mix.cuh) runs HMMA.16816.F32 at full rate, 4 warps per
scheduler, with K FFMA, IMAD, MUFU.EX2, FMNMX, integer adds or three-register FFMAs after
every HMMA (K = 0..8), with and without operand reuse; ``reports/<gpu>/mma_mix/mma_mix.csv``
has its measured HMMA rate per point (completed by a same-chip GPU's run: ``SAME_CHIP``).
The scheduler run on the benchmark's own loops (``reports/sass/ceilings/``: the compiler's
control codes included) gives the rate of independent issue slots and pipes. Hardware
is slower: 9 % at one FFMA per HMMA, 27 % at four. Two costs, both in ``Machine``, close that:

* ``hmma_issue_cycles`` -- an HMMA holds its sub-partition's dispatch this many cycles
  (no warp of it issues in between: Nsight Compute's ``dispatch_stall``);
* ``tensor_issue_steal`` -- every other instruction issued while its sub-partition's tensor
  pipe is busy keeps the pipe that many cycles longer (what the HMMA shares with it: the
  register-file operand path is the likely resource; the benchmark cannot tell).

``derive`` picks both on a grid: the pair with the smallest mean error over the FFMA points
with operand reuse (6 points: the *fit* set), then reports the error over every other point
(different SASS, different pipes: the *held-out* set) beside the model without either cost.
A third, the register-file read cap (``GRID_RF``, ``in_rf_fit``), is chosen on its own fit
set and adopted only where it lowers the held-out error by ``ADOPT_GAIN_PP``. It writes ``reports/<gpu>/mma_mix/interplay.json``,
which ``constants.machine`` reads for that GPU. No kernel's time and no published number is
used: only the microbenchmark's rates.
"""
from __future__ import annotations

import dataclasses
import json
import re
import statistics
import sys
from pathlib import Path

from flashprof.analysis.gap.constants import SUBPARTITIONS, Machine, machine
from flashprof.analysis.gap.controls import main_loop, parse
from flashprof.analysis.gap.data import REPO
from flashprof.analysis.gap.loops import listing_lines
from flashprof.analysis.gap.scheduler import rf_reads, simulate, source_reads
from flashprof.kernels.gpus import GPUS, SHIPPED

SASS_FILE = REPO / "reports" / "sass" / "ceilings" / "mma_mix_sm_90a.sass"
MEASURED = REPO / SHIPPED.reports / "mma_mix" / "mma_mix.csv"
# The same microbenchmark on the other GPUs of the shipped GPU's chip (same SM: per-clock rates
# agree), read for the points the shipped GPU's own run lacks; ``cross_check`` records how
# close the shared points are.
SAME_CHIP = tuple(REPO / g.reports / "mma_mix" / "mma_mix.csv" for g in GPUS
                  if g.chip == SHIPPED.chip and g.slug != SHIPPED.slug)
RESULT = REPO / SHIPPED.reports / "mma_mix" / "interplay.json"
WARPS_PER_SCHEDULER = 4  # kernels/ceilings/common.cuh kWarpsPerScheduler: the mix runs' occupancy
KINDS = {0: "none", 1: "ffma", 2: "imad", 3: "ex2", 4: "fmnmx", 5: "iadd", 6: "ffma3"}  # mix.cuh MixKind
_NAME = re.compile(r"k_mma_mixILi(\d)ELi(\d)ELb([01])E")
GRID_HOLD = (1.0, 2.0, 3.0, 4.0)
GRID_STEAL = (0.0, 0.3, 0.4, 0.5, 0.6, 0.7)
# A register-file read cap (scheduler.rf_reads, Machine.rf_reads_per_clk / rf_read_depth): the
# points without operand reuse all run at 1.60-1.74 warp-register reads per cycle per
# sub-partition while bound by nothing else. Tried on top of the chosen costs: the pair is
# chosen on the integer adds without reuse (the most reads per instruction: the RF fit set),
# judged on every point in neither fit set, and adopted only if it lowers their MAE by
# ADOPT_GAIN_PP or more (two more constants must earn their keep).
GRID_RF = tuple((cap, depth) for cap in (1.6, 1.65, 1.7, 1.75, 1.8) for depth in (0.0, 4.0, 8.0, 16.0))
ADOPT_GAIN_PP = 1.0


def in_rf_fit(point: tuple[str, int, bool]) -> bool:
    kind, _k, reuse = point
    return kind == "iadd" and not reuse
ITERATIONS, SEED = 4, 1


def point_of(function: str) -> tuple[str, int, bool] | None:
    """(kind, K, operand reuse) of a ``k_mma_mix<KIND, K, REUSE>`` function name."""
    m = _NAME.search(function)
    return (KINDS[int(m.group(1))], int(m.group(2)), m.group(3) == "1") if m else None


def write_sass(path: Path = SASS_FILE) -> Path:
    """The main loop of every mix kernel in the ceilings cubin (sm_90a, the venv's nvcc)."""
    from flashprof.kernels import ceilings
    from flashprof.kernels.sass.static import dump_sass
    from flashprof.kernels.toolchain import find_toolchain

    cubin = ceilings.build("sm_90", cubin=True)
    per_fn = parse(dump_sass(cubin))
    lines = ["# ceilings mix kernels (flashprof/kernels/ceilings/mix.cuh), sm_90a: each one's main loop",
             f"# from: python -m flashprof.analysis.gap.interplay --write-sass (nvcc {find_toolchain('nvcc').nvcc_version})"]
    for fn in sorted(f for f in per_fn if point_of(f)):
        insts = per_fn[fn]
        lo, hi = main_loop(insts, "HMMA")
        lines.append(f"Function : {fn}")
        lines += listing_lines(insts[lo:hi + 1])
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n")
    return path


def points(path: Path = SASS_FILE) -> dict[tuple[str, int, bool], list]:
    """Loop body per (kind, K, reuse) from the committed listing."""
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no mix SASS (python -m flashprof.analysis.gap.interplay --write-sass)")
    return {point_of(fn): body for fn, body in parse(path.read_text()).items() if point_of(fn)}


def _table(path: Path) -> dict[tuple[str, int, bool], float]:
    import pandas as pd

    df = pd.read_csv(path)
    return {(r.kind, int(r.k), bool(r.reuse)): float(r.hmma_per_clk_sm) for r in df.itertuples()}


def measured(path: Path = MEASURED, same_chip=SAME_CHIP) -> dict[tuple[str, int, bool], float]:
    """Measured HMMA.16816 per SM clock per point (the mma_mix table), completed by the
    same-chip tables for points it lacks."""
    out = _table(path)
    for other in same_chip:
        if Path(other).is_file():
            for p, v in _table(Path(other)).items():
                out.setdefault(p, v)
    return out


def provenance(path: Path = MEASURED, same_chip=SAME_CHIP) -> dict:
    """Which table each point came from, and the shared points' largest difference (%)."""
    own = _table(path)
    out = {"points_from": {str(path.relative_to(REPO)): len(own)}, "cross_check": {}}
    for other in same_chip:
        if Path(other).is_file():
            t = _table(Path(other))
            shared = [p for p in t if p in own]
            out["points_from"][str(Path(other).relative_to(REPO))] = sum(1 for p in t if p not in own)
            out["cross_check"][str(Path(other).relative_to(REPO))] = {
                "shared_points": len(shared),
                "max_abs_diff_pct": max((abs(100 * (t[p] / own[p] - 1)) for p in shared), default=None)}
    return out


def rate(body, m: Machine, warps_per_scheduler: int = WARPS_PER_SCHEDULER) -> float:
    """Simulated HMMA.16816 per SM clock of one mix loop: one block of 4 warps per scheduler
    (the throughput points; ``ceilings mix1``'s latency points run 1, analysis/gap/mix_w1.py)."""
    warps = warps_per_scheduler * SUBPARTITIONS
    r = simulate(list(body), m, 1, warps, iterations=ITERATIONS, seed=SEED)
    return sum(1 for i in body if i.base == "HMMA") * warps / r["cycles_per_iter"]


def reads_per_hmma(body) -> float:
    """Warp-register reads (scheduler.rf_reads) per HMMA of one mix loop."""
    return sum(rf_reads(list(body))) / sum(1 for i in body if i.base == "HMMA")


def same_bank_reads(body) -> float:
    """Extra register-file reads per HMMA that a two-bank register file (bank = register
    number mod 2) would serialise: per non-HMMA instruction, its distinct source registers not
    served by the reuse cache (``scheduler.source_reads``), those beyond one per bank. Not a
    modelled cost (no microbenchmark has measured it): a candidate the series reports point at."""
    body = list(body)
    extra = 0
    for i, regs in zip(body, source_reads(body)):
        if i.base != "HMMA":
            read = {int(r[1:]) for _slot, r, hit in regs if not hit}
            extra += max(0, max(sum(1 for r in read if r % 2 == b) for b in (0, 1)) - 1)
    return extra / max(1, sum(1 for i in body if i.base == "HMMA"))


def with_costs(m: Machine, hold: float, steal: float) -> Machine:
    return dataclasses.replace(m, hmma_issue_cycles=hold, tensor_issue_steal=steal)


def in_fit(point: tuple[str, int, bool]) -> bool:
    kind, _k, reuse = point
    return kind == "ffma" and reuse


def errors(m: Machine, pts: dict, meas: dict) -> dict[tuple[str, int, bool], float]:
    """Per point: 100 x (simulated / measured - 1)."""
    return {p: 100 * (rate(body, m) / meas[p] - 1) for p, body in sorted(pts.items()) if p in meas}


def _mean_abs(errs: dict, keep) -> float:
    xs = [abs(v) for p, v in errs.items() if keep(p)]
    return statistics.fmean(xs) if xs else float("nan")


def derive(gpu_key: str = SHIPPED.model_key, grid_hold=GRID_HOLD, grid_steal=GRID_STEAL, **overrides) -> dict:
    """The grid search (module docstring) and its record. ``overrides``: Machine fields set on the
    base before the search (arbitration_rule.rescore: ``sp_arbitration``)."""
    # nothing read from a previous derivation (interplay=None): the costs start at none
    base = dataclasses.replace(machine(gpu_key, ceilings=REPO / SHIPPED.reports / "ceilings.json", interplay=None),
                               **overrides)
    pts, meas = points(), measured()
    held = lambda p: not in_fit(p) and p[0] != "none"
    grid = []
    for hold in grid_hold:
        for steal in grid_steal:
            e = errors(with_costs(base, hold, steal), pts, meas)
            grid.append({"hmma_issue_cycles": hold, "tensor_issue_steal": steal,
                         "fit_mae_pct": _mean_abs(e, in_fit), "held_out_mae_pct": _mean_abs(e, held)})
    best = min(grid, key=lambda g: g["fit_mae_pct"])
    chosen = errors(with_costs(base, best["hmma_issue_cycles"], best["tensor_issue_steal"]), pts, meas)
    without = errors(base, pts, meas)
    held2 = lambda p: held(p) and not in_rf_fit(p)
    rf_grid = []
    for cap, depth in GRID_RF:
        e = errors(dataclasses.replace(with_costs(base, best["hmma_issue_cycles"], best["tensor_issue_steal"]),
                                       rf_reads_per_clk=cap, rf_read_depth=depth), pts, meas)
        rf_grid.append({"rf_reads_per_clk": cap, "rf_read_depth": depth, "fit_mae_pct": _mean_abs(e, in_rf_fit),
                        "held_out_mae_pct": _mean_abs(e, held2),
                        "by_kind": {f"{k}{'' if r else '_noreuse'}": _mean_abs(e, lambda p, k=k, r=r: held(p) and p[0] == k
                                                                              and p[2] == r)
                                    for k in sorted({p[0] for p in e if held(p)}) for r in (True, False)}})
    rf_best = min(rf_grid, key=lambda g: g["fit_mae_pct"])
    rf_off = {"fit_mae_pct": _mean_abs(chosen, in_rf_fit), "held_out_mae_pct": _mean_abs(chosen, held2)}
    adopt = rf_off["held_out_mae_pct"] - rf_best["held_out_mae_pct"] >= ADOPT_GAIN_PP
    row = lambda p: {"kind": p[0], "k": p[1], "reuse": p[2], "set": "fit" if in_fit(p) else "held-out",
                     "measured": meas[p], "error_pct": chosen[p], "error_without_pct": without[p],
                     "rf_reads_per_hmma": reads_per_hmma(pts[p]),
                     "rf_reads_per_clk_sp": reads_per_hmma(pts[p]) * meas[p] / SUBPARTITIONS}
    return {
        "what": "issue interplay beside HMMA.16816.F32, from the ceilings mix microbenchmark "
                "(analysis/gap/interplay.py)",
        "gpu_key": gpu_key, "measured": str(MEASURED.relative_to(REPO)), "sass": str(SASS_FILE.relative_to(REPO)),
        "measured_provenance": provenance(),
        "hmma_issue_cycles": best["hmma_issue_cycles"], "tensor_issue_steal": best["tensor_issue_steal"],
        "fit_set": "FFMA with operand reuse, K = 1..8 (6 points)",
        "fit_mae_pct": best["fit_mae_pct"], "held_out_mae_pct": best["held_out_mae_pct"],
        "without_fit_mae_pct": _mean_abs(without, in_fit), "without_held_out_mae_pct": _mean_abs(without, held),
        "k0_error_pct": {str(p[2]): chosen[p] for p in chosen if p[0] == "none"},
        # per interleaved kind (ALU-pipe FMNMX and the integer adds measured after the choice was made)
        "held_out_by_kind": {kind: {"mae_pct": _mean_abs(chosen, lambda p, k=kind: held(p) and p[0] == k),
                                    "without_mae_pct": _mean_abs(without, lambda p, k=kind: held(p) and p[0] == k)}
                             for kind in sorted({p[0] for p in chosen if held(p)})},
        "simulation": {"iterations": ITERATIONS, "seed": SEED, "warps_per_scheduler": WARPS_PER_SCHEDULER},
        "grid": grid, "points": [row(p) for p in chosen],
        "rf_read_cap": {"fit_set": "integer adds without operand reuse, K = 1..8 (6 points)",
                        "held_out": "every point in neither fit set", "without": rf_off, "chosen": rf_best,
                        "grid": rf_grid, "adopt_gain_pp": ADOPT_GAIN_PP, "adopted": adopt,
                        "noreuse_reads_per_clk_sp": sorted(round(reads_per_hmma(pts[p]) * meas[p] / SUBPARTITIONS, 3)
                                                           for p in chosen if not p[2])},
        **({"rf_reads_per_clk": rf_best["rf_reads_per_clk"], "rf_read_depth": rf_best["rf_read_depth"]} if adopt else {}),
    }


def load(path: Path = RESULT) -> dict | None:
    """The committed derivation, or None."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--write-sass" in argv:
        print(write_sass().relative_to(REPO))
    rec = derive()
    RESULT.write_text(json.dumps(rec, indent=1, sort_keys=True) + "\n")
    print(f"{RESULT.relative_to(REPO)}: hmma_issue_cycles {rec['hmma_issue_cycles']}, tensor_issue_steal "
          f"{rec['tensor_issue_steal']}; fit MAE {rec['fit_mae_pct']:.2f} % (without {rec['without_fit_mae_pct']:.2f}), "
          f"held-out MAE {rec['held_out_mae_pct']:.2f} % (without {rec['without_held_out_mae_pct']:.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
