"""flashprof.analysis.stages.bench_tables: headline arithmetic, SASS deltas and the autotune tables."""
from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from flashprof.analysis.stages import bench_tables as B

ROOT = Path(__file__).resolve().parents[1]
SWEEP = ROOT / "reports" / "h200" / "autotune.csv"
STATIC = ROOT / "reports" / "h200" / "autotune_static.csv"
TUNED = ROOT / "flashprof" / "kernels" / "tuned.json"


def test_bench_headline_is_the_harmonic_mean_ratio():
    bench = pd.DataFrame({"target": ["1", "1", "ref", "ref"], "seq": [512, 4096, 512, 4096],
                          "tflops": [100.0, 300.0, 200.0, 200.0]})
    h = B.bench_headline(bench).set_index("target")
    assert h.loc["1", "hm_tflops"] == pytest.approx(150.0)  # 2 / (1/100 + 1/300)
    assert h.loc["1", "pct_of_ref_hm"] == pytest.approx(75.0)
    assert h.loc["1", "pct_at_seq"] == pytest.approx(150.0)
    assert h.loc["ref", "pct_of_ref_hm"] == pytest.approx(100.0)


def test_sass_deltas_consecutive_pairs():
    o = pd.DataFrame({"kernel": ["5", "5", "6", "6"], "arch": ["sm_90"] * 4, "dtype": ["fp16"] * 4,
                      "opcode": ["FMUL", "FFMA", "FMUL", "FFMA"], "count": [194, 2, 132, 34]})
    d = B.sass_deltas(o).set_index("opcode")
    assert d.loc["FMUL", "delta"] == -62 and d.loc["FFMA", "delta"] == 32
    assert set(zip(d["a"], d["b"])) == {("5", "6")}


def test_batch_note():
    b = pd.DataFrame({"seq": [512, 4096, 8192, 16384], "batch": [16, 16, 8, 4]})
    assert B.batch_note(b) == "B16 for S\u22644096, B8 at S=8192, B4 at S=16384"


def _cfg(br, bc, w, opt):
    return json.dumps({"B_r": br, "B_c": bc, "n_warps": w, "Q_mma_load_K_fragments": 0, "K_mma_load_K_fragments": 2,
                       "V_mma_load_K_fragments": 0, "mma_double_buffer_loads": True, "optimized_softmax": opt})


def test_autotune_table_ranks_by_harmonic_mean_and_flags():
    rows = []
    for slug, cfg, tf in (("a", _cfg(128, 128, 8, True), (300, 330)), ("b", _cfg(64, 64, 4, True), (250, 400)),
                          ("c", _cfg(64, 32, 4, False), (200, 200))):
        for s, t in zip((1024, 4096), tf):
            rows.append({"slug": slug, "seq": s, "tflops": t, "ref_tflops": 300.0, "config": cfg})
    t = B.autotune_table(pd.DataFrame(rows)).set_index("slug")
    assert t.loc["b", "hm_tflops"] == pytest.approx(2 / (1 / 250 + 1 / 400))
    assert list(t.sort_values("rank").index) == ["a", "b", "c"]  # 314.3 > 307.7 > 200
    assert t.loc["a", "winner"] and not t.loc["b", "winner"]
    assert t.loc["b", "seed_3090"] and not t.loc["a", "seed_3090"]
    assert t.loc["c", "pct_of_ref_hm"] == pytest.approx(200 / 3)
    assert t.loc["a", "tile"] == "128\u00d7128\u00d78w"


def test_parameter_importance_finds_the_only_parameter_that_matters():
    t = pd.DataFrame({"tile": ["x", "x", "y", "y"], "optimized_softmax": [True, False, True, False],
                      "hm_tflops": [300.0, 300.0, 200.0, 200.0]})
    imp = B.parameter_importance(t, params=("tile", "optimized_softmax")).set_index("param")
    assert imp.loc["tile", "eta2"] == pytest.approx(1.0)
    assert imp.loc["optimized_softmax", "eta2"] == pytest.approx(0.0)


@pytest.mark.skipif(not SWEEP.is_file(), reason="no shipped sweep")
def test_shipped_sweep_winner_matches_tuned_json_and_tile_matters_most():
    t = B.autotune_table(pd.read_csv(SWEEP))
    tuned = json.loads(TUNED.read_text())["h200"]["previous_sweep_winner"]  # the default now comes from the kernel-7 runs
    win = t[t["winner"]].iloc[0]
    assert win["slug"] == tuned["slug"]
    assert win["hm_tflops"] == pytest.approx(tuned["harmonic_mean_tflops"], abs=0.01)
    assert win["pct_of_ref_hm"] == pytest.approx(tuned["pct_of_ref"]["hm_pct"], abs=0.01)
    assert t["seed_3090"].sum() == 1
    assert B.parameter_importance(t)["param"].iloc[0] == B.TILE


@pytest.mark.skipif(not STATIC.is_file(), reason="no shipped static sweep")
def test_static_prune_counts_sum_to_candidates():
    s = pd.read_csv(STATIC)
    c = B.static_prune_counts(s)
    assert c["count"].sum() == len(s)
    assert c.loc[c["kept"], "count"].sum() == s["keep"].astype(str).str.lower().eq("true").sum()
    assert not math.isnan(c["count"].iloc[0])
