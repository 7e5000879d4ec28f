"""The XU-steal rule (analysis/gap/xu_rule.py, docs/METHOD.md): the committed judgement follows
the rule as written, its XU-probe scores are what the raw spans and the scheduler give now, and
the model reads the chosen rule."""
from __future__ import annotations

import json
import statistics

import pytest

from conftest import stored_rule


def test_the_choice_is_the_least_pooled_error_with_ties_to_the_simpler():
    rule = stored_rule("xu_rule")
    errs = rule["error_pct"]
    pooled = {c: statistics.fmean(abs(v) for by in errs[c].values() for v in by.values()) for c in errs}
    for c in pooled:
        assert rule["pooled_mae_pct"][c] == pytest.approx(pooled[c])
        assert set(errs[c]) == {"wgsplit3", "wgsplit5", "xu_probe"} and all(errs[c].values())
    best = min(pooled.values())
    expected = next(c for c in ("C1", "C0", "C2") if pooled[c] <= best + 1.0)
    assert rule["choice"] == expected
    assert rule["xu_steal_scope"] == {"C0": "fp32", "C1": "fp32", "C2": "fp32_full"}[expected]
    assert (rule["xu_issue_steal"] == 0) == (expected == "C1")


def test_the_xu_probe_scores_are_the_raw_runs_against_the_scheduler_now():
    """Recomputed here: the probe's cycles per EX2 from the raw spans (slowest warp, median over
    launches), the scheduler's on the committed SASS, under each candidate."""
    from flashprof.analysis.gap import xu_rule
    from flashprof.analysis.gap.ceil_run import same_chip_path
    from flashprof.analysis.gap.data import REPO
    from flashprof.analysis.gap.scheduler import simulate
    from flashprof.analysis.gap.yield_probe import loop_of
    from flashprof.kernels.gpus import SHIPPED

    rule = stored_rule("xu_rule")
    raw = same_chip_path("yield/xu.raw.jsonl")
    recs = {r["name"]: r for r in map(json.loads, raw.read_text().splitlines()) if r.get("record") == "measurement"}
    sass = (REPO / SHIPPED.reports / "yield" / "xu.sass").read_text()
    for c, m in xu_rule.candidates().items():
        for name, want in rule["error_pct"][c]["xu_probe"].items():
            r = recs[name]
            meas = statistics.median(max(s) for s in r["spans"]) / (r["work"] * r["warps_per_scheduler"])
            body = loop_of(sass, r["kernel"], "MUFU")
            w = r["warps_per_scheduler"]
            pred = simulate(list(body), m, 1, 4 * w, 8, seed=1)["cycles_per_iter"] / (128 * w)
            assert 100 * (pred / meas - 1) == pytest.approx(want, abs=1e-6)


def test_the_model_reads_the_chosen_rule():
    from flashprof.analysis.gap.constants import machine
    from flashprof.kernels.gpus import SHIPPED

    rule = stored_rule("xu_rule")
    m = machine(SHIPPED.model_key)
    assert m.xu_steal_scope == rule["xu_steal_scope"]
    assert m.xu_issue_steal == pytest.approx(rule["xu_issue_steal"])
    assert "xu_rule" in m.sources["xu_steal_scope"]
