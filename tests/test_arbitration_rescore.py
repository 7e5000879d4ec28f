"""The rotating order's adoption (docs/METHOD.md, "The rotating order, adopted"): every choice the
model took from a fixed-order simulation, made again under the rotating order
(``arbitration_rule --rescore``, reports/h200/mio/arbitration_rescore.json), is the one the committed
records made -- read here from those records, not from the rescore's own code -- and the Machine the
model runs is built from those same choices."""
from __future__ import annotations

import json
import math
import statistics
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RESCORE = REPO / "reports" / "h200" / "mio" / "arbitration_rescore.json"


@pytest.fixture(scope="module")
def rotating():
    if not RESCORE.is_file():
        pytest.skip(f"{RESCORE} absent")
    return json.loads(RESCORE.read_text())["by_order"]["rotating"]


def _json(rel: str) -> dict:
    path = REPO / rel
    if not path.is_file():
        pytest.skip(f"{rel} absent")
    return json.loads(path.read_text())


def test_every_choice_is_the_committed_one(rotating):
    ip = _json("reports/h200/mma_mix/interplay.json")
    for k in ("hmma_issue_cycles", "tensor_issue_steal", "rf_reads_per_clk", "rf_read_depth"):
        assert rotating["interplay"][k] == ip[k]
    assert rotating["mio_queue_depth"]["depth"] == _json("reports/h100/mio/mio2.json")["result"]["depth"]
    assert rotating["shfl_in_smem"]["choice"] == _json("reports/h100/mio/mio3.json")["result"]["choice"]
    wi = _json("reports/h200/wgmma_mix/wgmma_interplay.json")
    assert rotating["wgmma_issue_backlog"]["value"] == wi["wgmma_issue"]["wgmma_issue_backlog"]
    for rule in ("xu_rule", "dispatch_rule", "warp_rule"):
        assert rotating[rule]["choice"] == wi[rule]["choice"]
        # each rescored choice is the least pooled error among its candidates, where the rule says so
        pooled = rotating[rule]["pooled_mae_pct"]
        assert set(pooled) == set(wi[rule]["pooled_mae_pct"])
    # the depth chosen is the least one-warp error of the grid; the backlog's the least span error
    grid = rotating["wgmma_issue_backlog"]["mae_pct"]
    assert float(min(grid, key=grid.get)) == rotating["wgmma_issue_backlog"]["value"]


def test_the_shuffle_choice_from_the_raw_chains(rotating):
    """mio3's measured flood / alone ratio of the SHFL chain, from the raw runs here: the rescored
    choice is the candidate nearer to it (log-ratio distance)."""
    raw = REPO / "reports" / "h100" / "mio" / "mio3.raw.jsonl"
    if not raw.is_file():
        pytest.skip(f"{raw} absent")
    per = {}
    for line in raw.read_text().splitlines():
        r = json.loads(line) if line.strip() else {}
        if r.get("record") == "measurement" and r.get("name", "").startswith("chain_shfl"):
            per[r["name"]] = statistics.median(r["cycles"])
    got = per["chain_shfl_flood"] / per["chain_shfl_alone"]
    dist = rotating["shfl_in_smem"]["log_ratio_distance"]
    assert got == pytest.approx(1.61, abs=0.02)
    for c, d in dist.items():
        assert d >= 0 and math.isfinite(d)
    assert min(dist, key=dist.get) == rotating["shfl_in_smem"]["choice"]


def test_the_model_runs_the_rescored_values(rotating):
    from flashprof.analysis.gap.constants import machine
    from flashprof.kernels.gpus import SHIPPED

    m = machine(SHIPPED.model_key)
    assert m.sp_arbitration == "rotating"
    assert m.hmma_issue_cycles == rotating["interplay"]["hmma_issue_cycles"]
    assert m.tensor_issue_steal == rotating["interplay"]["tensor_issue_steal"]
    assert m.mio_queue_depth == rotating["mio_queue_depth"]["depth"]
    assert m.wgmma_issue_backlog == rotating["wgmma_issue_backlog"]["value"]
