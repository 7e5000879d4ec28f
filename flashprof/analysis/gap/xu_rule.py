"""Which XU-steal rule the issue model takes (issues 31/32), judged on every XU record of the SM.

Three measurements disagree with one per-instruction steal: ``ceilings wgsplit3`` (a lone warp,
EX2 among FFMAs: 0.65 XU cycles per instruction issued beside a busy XU), ``ceilings wgsplit5``
(a neighbour warp's FP32 at full rate doubles an EX2's time; ALU and IMAD do not) and the XU
probe (flashprof/kernels/ceilings/xu_probe.cu: the softmax's own mix, 1-3 FP32 per EX2 at 2-4
warps a sub-partition, runs at the XU pipe's own 8 cycles). The rule, written in docs/METHOD.md
before any candidate was scored on these records (commit 4d43c2b):

* C0 -- the steal as committed before: ``xu_issue_steal`` (the wgsplit3 value), scope "fp32";
* C1 -- no steal;
* C2 -- the same steal charged only to an FP32-pipe instruction issued while the XU is busy and
  within one FP32 issue interval of the sub-partition's previous FP32-pipe instruction (scope
  "fp32_full", scheduler.XU_STEAL_PIPES);

adopt the one with the least mean absolute error pooled over every record (wgsplit3's EX2 mixes
run alone, wgsplit5's neighbour records under round robin as judged there, the XU probe's nine
under greedy); ties within 1 percentage point go to the simpler (C1, then C0, then C2). No
kernel's time enters the choice. The result is wgmma_interplay.json's ``xu_rule`` section, which
constants reads over ``xu_scope``.

    python -m flashprof.analysis.gap.xu_rule [--write]
"""
from __future__ import annotations

import dataclasses

from flashprof.analysis.gap.ceil_run import same_chip_path
from flashprof.analysis.gap.constants import machine
from flashprof.analysis.gap.data import REPO
from flashprof.analysis.gap import rules
from flashprof.analysis.gap.rules import score
from flashprof.kernels.gpus import SHIPPED

CANDIDATES = ("C1", "C0", "C2")  # simplest first: the order ties go in
SCOPE = {"C0": "fp32", "C1": "fp32", "C2": "fp32_full"}
RULE = "docs/METHOD.md (commit 4d43c2b): least MAE pooled over every XU record; ties within 1 pp to the simpler"


def candidates(m0=None) -> dict:
    """The three Machines, built from the shipped GPU's with the wgsplit3 steal (the ``mufu``
    section of wgmma_interplay.json), whatever scope that Machine carries now."""
    from flashprof.analysis.gap.wgmma_interplay import load

    m0 = m0 or machine(SHIPPED.model_key)
    steal = float(((load() or {}).get("mufu") or {}).get("xu_issue_steal", m0.xu_issue_steal))
    return {"C0": dataclasses.replace(m0, xu_issue_steal=steal, xu_steal_scope="fp32"),
            "C1": dataclasses.replace(m0, xu_issue_steal=0.0, xu_steal_scope="fp32"),
            "C2": dataclasses.replace(m0, xu_issue_steal=steal, xu_steal_scope="fp32_full")}


def wgsplit3_errors(m) -> dict[str, float]:
    """wgsplit3's records run alone (no HGMMA; a lone warp a sub-partition): % error of the
    scheduler's cycles per instruction (as wgmma_interplay.mufu_candidate scores them)."""
    from flashprof.analysis.gap.wgmma_interplay import alone_errors

    return alone_errors(m)


def wgsplit5_errors(m, policy: str | None = None) -> dict[str, float]:
    """wgsplit5's records with a neighbour (round robin, as xu_pair.judge5 scores them; ``policy``:
    another warp choice, the warp-choice rule's)."""
    from flashprof.analysis.gap import xu_pair as xp

    meas = xp.measured(xp.run_file(xp.RUN5))
    loops = xp.pair_loops()
    return {n: 100 * (xp.simulate_pair(m, n, loops, policy=policy or xp.POLICY5)["a_cycles_per_inst"]
                      / meas[n]["a_cycles_per_inst"] - 1)
            for n in xp.RECORDS5 if n != "xu_pair_ex2_none" and n in meas and n in loops}


def xu_probe_errors(m) -> dict[str, float]:
    """The XU probe's nine records: yield_probe.predict's cycles (greedy) on the committed cubin
    against the raw run."""
    from flashprof.analysis.gap import yield_probe as yp

    meas = yp.measured(same_chip_path("yield/xu.raw.jsonl"))
    pred = yp.predict(REPO / SHIPPED.reports / "yield", yp.PROBES_XU, m=m)
    return {n: 100 * (v / meas[n]["cycles_per_inst_sp"] - 1) for n, v in pred.items()}


SETS = {"wgsplit3": wgsplit3_errors, "wgsplit5": wgsplit5_errors, "xu_probe": xu_probe_errors}


def judge(m0=None) -> dict:
    errs, mae, pooled = score(candidates(m0), SETS)
    best = min(pooled.values())
    choice = next(c for c in CANDIDATES if pooled[c] <= best + 1.0)
    cm = candidates(m0)[choice]
    return {"rule": RULE, "candidates": {"C0": "steal, scope fp32 (as committed before)", "C1": "no steal",
                                         "C2": "steal on FP32 at full rate only (scope fp32_full)"},
            "records": {s: sorted(next(iter(errs.values()))[s]) for s in SETS},
            "error_pct": errs, "mae_pct": mae, "pooled_mae_pct": pooled, "choice": choice,
            "xu_steal_scope": cm.xu_steal_scope, "xu_issue_steal": cm.xu_issue_steal,
            "runs": {"wgsplit3": "wgsplit3.raw.jsonl (wgmma_mix)", "wgsplit5": "wgsplit5.raw.jsonl (wgmma_mix)",
                     "xu_probe": str(same_chip_path("yield/xu.raw.jsonl").relative_to(REPO))}}


def main(argv=None) -> int:
    from flashprof.analysis.gap.wgmma_interplay import RESULT

    return rules.main(argv, judge, CANDIDATES, lambda rec: f"choice: {rec['choice']} (xu_steal_scope "
                      f"{rec['xu_steal_scope']}, xu_issue_steal {rec['xu_issue_steal']:g})", RESULT, "xu_rule", fmt="5.1f")

if __name__ == "__main__":
    raise SystemExit(main())
