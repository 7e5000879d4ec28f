"""docs/GAP.md is generated from the committed model result and states skill against the
trivial baselines; the what-if records are the ones `flashprof gap --what-if` gives."""
from __future__ import annotations

import math

import pytest

from flashprof.analysis.gap import gap_doc


def test_the_committed_page_is_what_the_committed_data_renders():
    assert gap_doc.PAGE.read_text() == gap_doc.render(*gap_doc.inputs()), \
        "docs/GAP.md is stale: python -m flashprof.analysis.gap.gap_doc"


def test_skill_numbers_worked_from_the_rows():
    recs = gap_doc.inputs()[0]
    for key in gap_doc.SERIES_GPUS:
        rows = [r for r in recs if r["kind"] == "row" and r["gpu_key"] == key and r["binary"] == "series"
                and r.get("seq", 4096) == 4096]
        late = [r for r in rows if r["target"] not in ("ref", "1")]
        assert len(late) == 15  # kernels 2-16
        obs = [r["observed_pct"] for r in late]
        pred = [r["pred_pct_of_fa2"] for r in late]
        sk = gap_doc.skill(rows)
        assert sk["model_mae"] == pytest.approx(sum(abs(p - o) for p, o in zip(pred, obs)) / 15)
        assert sk["all100_mae"] == pytest.approx(sum(abs(100 - o) for o in obs) / 15)
        mean = sum(obs) / 15
        assert sk["mean_mae"] == pytest.approx(sum(abs(mean - o) for o in obs) / 15)
        # Spearman by hand: Pearson of the ranks (no ties in these values)
        rank = lambda xs: [sorted(xs).index(x) + 1 for x in xs]
        rp, ro = rank(pred), rank(obs)
        mp, mo = sum(rp) / 15, sum(ro) / 15
        cov = sum((a - mp) * (b - mo) for a, b in zip(rp, ro))
        rho = cov / math.sqrt(sum((a - mp) ** 2 for a in rp) * sum((b - mo) ** 2 for b in ro))
        if len(set(obs)) == 15 and len(set(pred)) == 15:
            assert sk["model_rho"] == pytest.approx(rho)


def test_spearman_of_a_constant_is_undefined():
    assert math.isnan(gap_doc.spearman([100.0] * 5, [1.0, 2.0, 3.0, 4.0, 5.0]))
    assert gap_doc.spearman([1, 2, 3, 4], [10, 20, 30, 40]) == pytest.approx(1.0)
    assert gap_doc.spearman([1, 2, 3, 4], [40, 30, 20, 10]) == pytest.approx(-1.0)


def test_what_if_records_name_every_change_once():
    wi = gap_doc.inputs()[1]
    assert wi, "reports/gap/whatif.json: flashprof gap --what-if --format json > reports/gap/whatif.json"
    changes = [r["change"] for r in wi]
    assert changes[0] == "baseline" and len(set(changes)) == len(changes)
    base = wi[0]
    for r in wi:
        assert r["speedup_vs_shipped"] == pytest.approx(base["pred_cycles"] / r["pred_cycles"])
