"""The order in which the model's schedulers take SM-wide resources (analysis/gap/arbitration_rule.py):
the rotating order shares the LSU port where the fixed one starves the last schedulers, and the
committed judgement follows the rule as written in docs/METHOD.md."""
from __future__ import annotations

import dataclasses
import json
import statistics

import pytest

from flashprof.analysis.gap.arbitration_rule import RESULT, choose


def _lds_body(n: int = 16):
    from flashprof.analysis.gap.controls import Control, Inst

    ctrl = Control(stall=1, yield_flag=0, write_barrier=None, read_barrier=None, wait_mask=0, reuse=0)
    return [Inst(addr=16 * k, predicate="", op="LDS", operands=f"R{k}, [R100+{4 * k:#x}]", low=0, high=0, ctrl=ctrl)
            for k in range(n)]


@pytest.mark.parametrize("order", ["fixed", "rotating"])
def test_the_lsu_port_goes_to_the_schedulers_in_the_order_named(order):
    """Eight warps, two a scheduler, issuing LDS every cycle against an SM-wide port of one a
    clock: the first pass's finish per scheduler. Fixed: scheduler 0 first every cycle, so its
    warps finish well before scheduler 3's. Rotating: all four within a few cycles."""
    from flashprof.analysis.gap.constants import machine
    from flashprof.analysis.gap.scheduler import simulate
    from flashprof.kernels.gpus import SHIPPED

    m = dataclasses.replace(machine(SHIPPED.model_key), sp_arbitration=order, mio_queue_depth=1e9)
    trace = {}
    simulate(_lds_body(), m, 1, 8, 2, trace=trace)
    end = [max(trace[w][0] for w in trace if w % 4 == sp) for sp in range(4)]
    if order == "fixed":
        assert end[3] - end[0] > 20
    else:
        assert max(end) - min(end) <= 4


def test_an_unknown_order_is_refused():
    from flashprof.analysis.gap.constants import machine
    from flashprof.analysis.gap.scheduler import simulate
    from flashprof.kernels.gpus import SHIPPED

    with pytest.raises(ValueError, match="arbitration"):
        simulate(_lds_body(), dataclasses.replace(machine(SHIPPED.model_key), sp_arbitration="random"), 1, 4, 2)


def test_the_committed_choice_follows_the_rule():
    if not RESULT.is_file():
        pytest.skip(f"{RESULT} absent")
    rec = json.loads(RESULT.read_text())
    errs = rec["error_pct"]
    pooled = {c: statistics.fmean(abs(v) for by in errs[c].values() for v in by.values()) for c in errs}
    for c in ("R0", "R1"):
        assert rec["pooled_mae_pct"][c] == pytest.approx(pooled[c])
        assert set(errs[c]) == {"mma_mix", "skeleton", "wgsplit3", "wgsplit5", "xu_probe"}
    assert rec["choice"] == choose(pooled) == ("R1" if pooled["R1"] <= pooled["R0"] + 1.0 else "R0")
    assert choose({"R0": 3.0, "R1": 3.9}) == "R1" and choose({"R0": 3.0, "R1": 4.1}) == "R0"


def test_the_model_runs_the_order_the_rule_chose():
    """constants reads the judged choice (R1 -> "rotating", R0 -> "fixed") for every GPU, and says where from."""
    from flashprof.analysis.gap.constants import machine
    from flashprof.kernels.gpus import GPUS, SHIPPED

    if not RESULT.is_file():
        pytest.skip(f"{RESULT} absent")
    want = {"R0": "fixed", "R1": "rotating"}[json.loads(RESULT.read_text())["choice"]]
    for g in GPUS:
        m = machine(g.model_key)
        assert m.sp_arbitration == want
        assert "arbitration_rule.json" in m.sources["sp_arbitration"]
        assert "sp_arbitration" not in m.fitted
    assert machine(SHIPPED.model_key, arbitration=None).sp_arbitration == "fixed"
