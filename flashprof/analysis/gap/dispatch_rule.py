"""Which compute-side dispatch rule the issue model takes (issues 31/32), judged on every HMMA-mix
record of the SM.

FA2's compute skeleton (flashprof/kernels/ceilings/mix_probe.cu: 96 HMMA and 32 MUFU.EX2 a pass,
registers only; and the same without the EX2) runs 4-7 % slower on the H200's SM than the model,
and its per-PC samples put the missing time on two instructions: a dispatch stall on HMMA itself
(0.19 warps per issued instruction, the model none) and an MIO throttle on MUFU (0.25, the model
0.04). The rule, written in docs/METHOD.md before any candidate was built or scored (commit
75b4d5e):

* H0 -- the model as committed;
* H1 -- an HMMA issued on a sub-partition whose previous HMMA came from another warp waits one
  more cycle at dispatch (``Machine.hmma_switch_dispatch`` = 1, counted as dispatch stall);
* H2 -- a MUFU takes a slot of the MIO queue (``mio_queue_depth``) from issue until the XU pipe
  starts it (``Machine.mufu_in_mio``; a warp held by a full queue counts as MIO throttle);
* H3 -- both;

scored on the 74 mma_mix points (as interplay.py scores them) and the six skeleton records
(yield_probe.predict on the committed cubins, against the raw runs), pooled mean absolute error;
the least is adopted if it beats H0 by more than 1 percentage point, else H0 stays; ties within
1 pp go to the simpler (H0, H1, H2, H3). No kernel's time enters the choice. The result is
wgmma_interplay.json's ``dispatch_rule`` section, which constants reads.

    python -m flashprof.analysis.gap.dispatch_rule [--write]
"""
from __future__ import annotations

import dataclasses

from flashprof.analysis.gap.ceil_run import same_chip_path
from flashprof.analysis.gap.constants import machine
from flashprof.analysis.gap.data import REPO
from flashprof.analysis.gap import rules
from flashprof.analysis.gap.rules import score
from flashprof.kernels.gpus import SHIPPED

CANDIDATES = ("H0", "H1", "H2", "H3")  # simplest first: the order ties go in
MARGIN_PP = 1.0
RULE = ("docs/METHOD.md (commit 75b4d5e): least MAE pooled over the 74 mma_mix points and the six skeleton "
        "records; adopted only if more than 1 pp better than H0; ties within 1 pp to the simpler")
DESCRIBE = {"H0": "as committed", "H1": "an HMMA after another warp's HMMA waits one more cycle at dispatch",
            "H2": "a MUFU holds an MIO queue slot from issue until the XU pipe starts it", "H3": "H1 and H2"}


def candidates(m0=None) -> dict:
    """The four Machines, built from the shipped GPU's with both candidate costs off first."""
    m0 = dataclasses.replace(m0 or machine(SHIPPED.model_key), hmma_switch_dispatch=0.0, mufu_in_mio=False)
    return {"H0": m0, "H1": dataclasses.replace(m0, hmma_switch_dispatch=1.0),
            "H2": dataclasses.replace(m0, mufu_in_mio=True),
            "H3": dataclasses.replace(m0, hmma_switch_dispatch=1.0, mufu_in_mio=True)}


def mma_mix_errors(m) -> dict[str, float]:
    """The mma_mix points (4 warps a scheduler): % error of the simulated HMMA rate."""
    from flashprof.analysis.gap import interplay as ip

    errs = ip.errors(m, ip.points(), ip.measured())
    return {f"{k}{n}{'' if r else '_noreuse'}": v for (k, n, r), v in errs.items()}


def skeleton_errors(m) -> dict[str, float]:
    """FA2's compute skeleton with and without the EX2 at 1, 2 and 4 warps a sub-partition:
    yield_probe.predict's cycles per HMMA on the committed cubins against the raw runs."""
    from flashprof.analysis.gap import yield_probe as yp

    out = {}
    for mode, probes in (("mix", yp.PROBES_MIX), ("mix2", yp.PROBES_MIX2)):
        meas = yp.measured(same_chip_path(f"yield/{mode}.raw.jsonl"))
        pred = yp.predict(REPO / SHIPPED.reports / "yield", probes, m=m)
        out.update({n: 100 * (v / meas[n]["cycles_per_inst_sp"] - 1) for n, v in pred.items() if n in meas})
    return out


SETS = {"mma_mix": mma_mix_errors, "skeleton": skeleton_errors}


def choose(pooled: dict[str, float]) -> str:
    """The rule: the least pooled MAE, adopted only if more than MARGIN_PP better than H0; among
    candidates within MARGIN_PP of the least, the simplest."""
    best = min(pooled.values())
    if pooled["H0"] - best <= MARGIN_PP:
        return "H0"
    return next(c for c in CANDIDATES if pooled[c] <= best + MARGIN_PP)


def judge(m0=None) -> dict:
    ms = candidates(m0)
    errs, mae, pooled = score(ms, SETS)
    choice = choose(pooled)
    return {"rule": RULE, "candidates": DESCRIBE, "records": {s: len(next(iter(errs.values()))[s]) for s in SETS},
            "error_pct": errs, "mae_pct": mae, "pooled_mae_pct": pooled, "choice": choice,
            "hmma_switch_dispatch": ms[choice].hmma_switch_dispatch, "mufu_in_mio": ms[choice].mufu_in_mio,
            "runs": {"mma_mix": "reports/h200/mma_mix/mma_mix.csv (+ same-chip tables, interplay.measured)",
                     "skeleton": [str(same_chip_path(f"yield/{x}.raw.jsonl").relative_to(REPO)) for x in ("mix", "mix2")]}}


def main(argv=None) -> int:
    from flashprof.analysis.gap.wgmma_interplay import RESULT

    return rules.main(argv, judge, CANDIDATES, lambda rec: f"choice: {rec['choice']} ({DESCRIBE[rec['choice']]})",
                      RESULT, "dispatch_rule")

if __name__ == "__main__":
    raise SystemExit(main())
