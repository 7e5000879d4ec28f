"""One target key: the sidecar's ``target_key`` first, then an older sidecar's fields, the
file-stem guess only for a report without a sidecar."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from flashprof.analysis.report import parse
from flashprof.analysis.report.target_key import kernel_key, sidecar_key, stem_key
from flashprof.kernels import config

ROOT = Path(__file__).resolve().parents[1]
from report_corpus import PUBLIC  # ../shared/public-reports beside the checkout, wherever it is
SHIPPED = sorted((ROOT / "reports").rglob("*.ncu-rep")) + sorted((ROOT / "tests" / "data").rglob("*.ncu-rep"))
FOREIGN = sorted(PUBLIC.glob("*.ncu-rep")) if PUBLIC.is_dir() else []
GEMM = ROOT / "tests" / "data" / "gemm_foreign.ncu-rep"


def old_rule(path: Path) -> str:
    """How a report's target was told before sidecars carried target_key: the sidecar's
    ``kernel`` if it has one, else the stem: kernel<N>... -> N, ref/cudnn[_...] -> itself."""
    stem = path.name[: -len(".ncu-rep")]
    side = path.with_name(stem + ".json")
    kernel = json.loads(side.read_text()).get("kernel") if side.is_file() else None
    if kernel not in (None, ""):
        return str(kernel)
    m = re.match(r"kernel_?(\d+)", stem)
    if m:
        return m.group(1)
    for a in ("ref", "cudnn"):
        if stem == a or stem.startswith(a + "_"):
            return a
    return stem


def test_corpus_is_there():
    assert len(SHIPPED) >= 15 and any(p.with_suffix(".json").is_file() for p in SHIPPED)


@pytest.mark.parametrize("path", SHIPPED + FOREIGN, ids=lambda p: p.name)
def test_every_report_keeps_its_key(path):
    assert parse.report_target(path) == old_rule(path)


def test_foreign_reports_have_no_sidecar_and_keep_their_stem():
    if not FOREIGN:
        pytest.skip(f"no {PUBLIC}")
    for p in FOREIGN:
        assert not p.with_suffix(".json").exists()
        assert parse.report_target(p) == p.name[: -len(".ncu-rep")]


def test_shipped_sidecars_name_the_series():
    keys = {parse.report_target(ROOT / "reports" / "h200" / f"{s}.ncu-rep")
            for s in ("kernel1", "kernel7", "ref", "cudnn")}
    assert keys == {"1", "7", "ref", "cudnn"}


@pytest.mark.filterwarnings("ignore:kernel6. no")  # the copied report lacks most sections
def test_target_key_wins_over_kernel_and_stem(tmp_path):
    rep = tmp_path / "kernel6.ncu-rep"
    shutil.copy(GEMM, rep)
    rep.with_suffix(".json").write_text(json.dumps({"schema": 1, "target_key": "5", "kernel": "6"}))
    assert parse.report_target(rep) == "5"
    frame = parse.load_frame([rep], cache=False)
    assert set(frame["variant"]) == {"5"}
    assert {kernel_key(r, v) for r, v in zip(frame["report"], frame["variant"])} == {"5"}


def test_no_sidecar_falls_back_to_the_stem(tmp_path):
    rep = tmp_path / "kernel3_s1024_b16_h16_fp16_full.ncu-rep"
    shutil.copy(GEMM, rep)
    assert parse.report_target(rep) == "3"
    rep.with_suffix(".json").write_text(json.dumps({"schema": 1, "target_key": "mine"}))
    assert parse.report_target(rep) == "mine"


def test_old_sidecar_fields():
    assert sidecar_key({"kernel": 4}) == "4"
    assert sidecar_key({"kernel": None, "target": {"name": "my_attn-attention"}}) == "my_attn-attention"
    for n, cfg in config.VARIANTS.items():
        assert sidecar_key({"config_slug": cfg.slug}) == str(n)
    assert sidecar_key({"config_slug": "d64_br1_bc1_w1"}) is None  # no series config
    assert sidecar_key({"kernel": "", "target": None}) is None
    assert sidecar_key({}) is None and sidecar_key(None) is None


def test_stem_guess():
    assert stem_key("kernel6_s1024_b16_h16_fp16_full") == "6"
    assert stem_key("reports/h200/ref_s1024_b16_h16_fp16_full") == "ref"
    assert stem_key("cudnn") == "cudnn" and stem_key("referee") == "referee"
    assert kernel_key("kernel2", float("nan")) == "2" and kernel_key("kernel2", "7") == "7"
