"""The issue model's warp choice against ``ceilings sched`` (issue 32).

Whether the shipped kernel 7's two consumer warpgroups keep one's softmax under the other's
HGMMAs or run both at once depends on which of two ready warps a scheduler issues. The
microbenchmark (kernels/ceilings/sched.cuh) puts two warps on one scheduler, each running
passes of 128 independent FFMAs that end in a clock read, and records when each pass ends
(``reports/<gpu>/sched/sched.raw.jsonl``). Its signature, from the case where both start at
one barrier: the period of a pass with both running, and the offset between the two warps'
pass ends (folded into 0 .. period / 2). Greedy issue (keep the warp that issued last while
it can) makes the warps take turns in whole passes: an offset near half a period. Round robin
interleaves them one instruction at a time: an offset near 0.

``compare`` runs the scheduler on the benchmark's own loop (the committed listing
``reports/sass/ceilings/sched_sm_90a.sass``, control codes included) with both warps on one
sub-partition, under each warp choice of ``scheduler.POLICIES``, timing each warp's clock
read (the CS2R) as the benchmark does, on the shipped GPU's
Machine, and sets each signature beside the measured one. Nothing is fitted.
"""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from flashprof.analysis.gap.constants import machine
from flashprof.analysis.gap.controls import main_loop, parse
from flashprof.analysis.gap.data import REPO
from flashprof.analysis.gap.ceilings_sass import write_loops
from flashprof.analysis.gap.scheduler import POLICIES, simulate
from flashprof.kernels.gpus import GPUS, SHIPPED

SASS_FILE = REPO / "reports" / "sass" / "ceilings" / "sched_sm_90a.sass"
# the shipped GPU's own run where there is one, else a same-chip GPU's (same SM)
RUNS = tuple(REPO / g.reports / "sched" / "sched.raw.jsonl" for g in sorted(GPUS, key=lambda g: g.slug != SHIPPED.slug)
             if g.chip == SHIPPED.chip)
CASE = "sched_together"
FUNCTION = "k_schedILi0E"  # the together case's kernel (mangled name fragment)
PASSES = 16


def measured_run(runs=RUNS) -> tuple[dict[str, tuple[list[float], list[float]]], Path | None]:
    """Per case, the two warps' pass ends (cycles after the barrier): (older warp, younger warp)."""
    for path in runs:
        if Path(path).is_file():
            out = {}
            for line in Path(path).read_text().splitlines():
                r = json.loads(line)
                if r.get("record") == "measurement" and r.get("kind") == "sched":
                    out[r["name"]] = ([float(x) for x in r["cycles"][1:]], [float(x) for x in r["cycles_2n"][1:]])
            return out, Path(path)
    return {}, None


def signature(a: list[float], b: list[float]) -> dict:
    """Period of a pass and offset between the warps' pass ends, over the passes both run
    (the first two and the last two left out)."""
    n = min(len(a), len(b))
    keep = range(2, n - 2)
    period = statistics.median([a[k + 1] - a[k] for k in keep][:-1] + [b[k + 1] - b[k] for k in keep][:-1])
    offs = [(b[k] - a[k]) % period for k in keep]
    offset = statistics.median([min(o, period - o) for o in offs])
    return {"period": period, "offset": offset, "offset_share": offset / period}


def loop_body(path: Path = SASS_FILE) -> list:
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no sched SASS (python -m flashprof.analysis.gap.sched_check --write-sass)")
    fns = parse(path.read_text())
    fn = next(f for f in fns if FUNCTION in f)
    lo, hi = main_loop(fns[fn], "FFMA")
    return fns[fn][lo:hi + 1]


def simulated(policy: str, gpu_key: str = SHIPPED.model_key) -> dict:
    """The model's signature of the together case: two warps on one sub-partition."""
    trace: dict = {}
    body = loop_body()
    clock = next(k for k, i in enumerate(body) if i.base == "CS2R")  # the benchmark's checkpoint
    simulate(body, machine(gpu_key), 1, 2, iterations=PASSES, seed=0, policy=policy,
             subpartitions=1, trace=trace, trace_pc=clock)
    return signature(trace[0], trace[1])


def compare() -> dict:
    runs, path = measured_run()
    if CASE not in runs:
        raise FileNotFoundError(f"no {CASE} record among {[str(r) for r in RUNS]}")
    meas = signature(*runs[CASE])
    model = {p: simulated(p) for p in POLICIES}
    return {"measured": meas, "source": str(path.relative_to(REPO)), "model": model,
            "offset_error_share": {p: abs(v["offset"] - meas["offset"]) / meas["period"] for p, v in model.items()},
            "period_error_pct": {p: 100 * (v["period"] / meas["period"] - 1) for p, v in model.items()}}


def write_sass(path: Path = SASS_FILE) -> Path:
    """The loop of every sched kernel in the ceilings cubin (sm_90a, the venv's nvcc)."""
    return write_loops(path, "ceilings sched kernels (flashprof/kernels/ceilings/sched.cuh), sm_90a: each one's FFMA loop",
                       "python -m flashprof.analysis.gap.sched_check --write-sass", lambda f: "k_sched" in f, "FFMA")


def main(argv: list[str]) -> int:
    if argv[:1] == ["--write-sass"]:
        print(write_sass().relative_to(REPO))
        return 0
    try:
        c = compare()
    except (FileNotFoundError, StopIteration, ValueError) as e:
        print(f"sched_check: {e}", file=sys.stderr)
        return 1
    m = c["measured"]
    print(f"{c['source']}: period {m['period']:.0f} cycles, offset {m['offset']:.0f} ({m['offset_share']:.2f} of a period)")
    for p, v in c["model"].items():
        print(f"  model, {p}: period {v['period']:.1f} ({c['period_error_pct'][p]:+.1f} %), "
              f"offset {v['offset']:.0f} (error {c['offset_error_share'][p]:.2f} of a period)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
