"""The warp-choice rule (issue 31; docs/METHOD.md, written before its candidates were scored).

Which ready warp a scheduler issues: W0 greedy (the model as built: the last warp while it can,
else the first ready one in warp order), W1 round robin, W2 greedy then the least recently
issued warp (``scheduler.POLICIES``, ``Machine.warp_choice``). Scored on every committed GH100
probe record with two or more warps a sub-partition whose prediction needs no kernel: the
mma_mix points, FA2's compute skeleton, wgsplit5's neighbour pairs (under the candidate's warp
choice), the XU probe, the yield / yield2 probes and the stall-count probe. The choice: W1 or W2
only if its pooled mean absolute error is more than ``MARGIN_PP`` below W0's and it keeps the
``ceilings sched`` timeline's period within ``SCHED_PCT``; between W1 and W2, the lower.

    python -m flashprof.analysis.gap.warp_rule [--write]

``--write`` stores the record as the ``warp_rule`` section of wgmma_interplay.json; it changes no
Machine default: a chosen candidate enters the frozen result only with a regeneration.
"""
from __future__ import annotations

import dataclasses

from flashprof.analysis.gap.ceil_run import same_chip_path
from flashprof.analysis.gap.constants import machine
from flashprof.analysis.gap.data import REPO
from flashprof.analysis.gap import rules
from flashprof.analysis.gap.rules import score
from flashprof.kernels.gpus import SHIPPED

CANDIDATES = ("W0", "W1", "W2")
CHOICE = {"W0": "greedy", "W1": "round_robin", "W2": "greedy_lri"}
DESCRIBE = {"W0": "greedy, else the first ready warp in warp order (as built)", "W1": "round robin",
            "W2": "greedy, else the ready warp that issued least recently"}
MARGIN_PP = 1.0
SCHED_PCT = 5.0
RULE = ("least pooled MAE over every GH100 probe record with >= 2 warps a sub-partition; W1 or W2 only if "
        f"more than {MARGIN_PP} pp below W0 and the ceilings sched period within {SCHED_PCT} %")


def candidates(m0=None) -> dict:
    m0 = m0 or machine(SHIPPED.model_key)
    return {c: dataclasses.replace(m0, warp_choice=p) for c, p in CHOICE.items()}


def _shared(errs: dict[str, float]) -> dict[str, float]:
    """The records with two or more warps a sub-partition (names end in _w<warps>)."""
    return {n: v for n, v in errs.items() if not n.endswith("_w1")}


def _probe(mode: str):
    def errors(m) -> dict[str, float]:
        from flashprof.analysis.gap import yield_probe as yp

        meas = yp.measured(same_chip_path(f"yield/{mode}.raw.jsonl"))
        pred = yp.predict(REPO / SHIPPED.reports / "yield", yp.MODES[mode], m=m)
        return _shared({n: 100 * (v / meas[n]["cycles_per_inst_sp"] - 1) for n, v in pred.items() if n in meas})

    errors.__name__ = f"{mode}_errors"
    return errors


def wgsplit5_errors(m) -> dict[str, float]:
    """wgsplit5's records with a neighbour, under the candidate's own warp choice."""
    from flashprof.analysis.gap.xu_rule import wgsplit5_errors as f

    return f(m, policy=m.warp_choice)


def mma_mix_errors(m) -> dict[str, float]:
    from flashprof.analysis.gap.dispatch_rule import mma_mix_errors as f

    return f(m)


def skeleton_errors(m) -> dict[str, float]:
    from flashprof.analysis.gap.dispatch_rule import skeleton_errors as f

    return _shared(f(m))


SETS = {"mma_mix": mma_mix_errors, "skeleton": skeleton_errors, "wgsplit5": wgsplit5_errors,
        "xu_probe": _probe("xu"), "yield": _probe("yield"), "yield2": _probe("yield2"), "stall": _probe("stall")}


def sched_period_error_pct(m) -> float:
    """The ceilings sched timeline (two warps, one scheduler): the model's period against the run's."""
    from flashprof.analysis.gap import sched_check as sc

    runs, _path = sc.measured_run()
    meas = sc.signature(*runs[sc.CASE])
    return 100 * (sc.simulated(m.warp_choice)["period"] / meas["period"] - 1)


def choose(pooled: dict[str, float], sched: dict[str, float]) -> str:
    ok = [c for c in ("W1", "W2") if pooled[c] < pooled["W0"] - MARGIN_PP and abs(sched[c]) <= SCHED_PCT]
    return min(ok, key=lambda c: pooled[c]) if ok else "W0"


def judge(m0=None) -> dict:
    ms = candidates(m0)
    errs, mae, pooled = score(ms, SETS)
    sched = {c: sched_period_error_pct(m) for c, m in ms.items()}
    choice = choose(pooled, sched)
    return {"rule": RULE, "candidates": DESCRIBE, "records": {s: len(e) for s, e in errs["W0"].items()},
            "error_pct": errs, "mae_pct": mae, "pooled_mae_pct": pooled, "sched_period_error_pct": sched,
            "choice": choice, "warp_choice": CHOICE[choice]}


def main(argv=None) -> int:
    from flashprof.analysis.gap.wgmma_interplay import RESULT

    return rules.main(argv, judge, CANDIDATES, lambda rec: f"choice: {rec['choice']} ({DESCRIBE[rec['choice']]})",
                      RESULT, "warp_rule", extra=lambda rec, c: f"  (sched period {rec['sched_period_error_pct'][c]:+.1f} %)")

if __name__ == "__main__":
    raise SystemExit(main())
