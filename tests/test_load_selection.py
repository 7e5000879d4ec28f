"""Which config `flashprof.kernels.api.load` picks: kernel 7 is the entry tuned for the GPU it runs on
when kernels/tuned.json has one, the series' config otherwise; an explicit config wins.
The build is replaced by a recorder (no GPU here); the expected configs are read straight
from tuned.json, not through flashprof.kernels.config."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from flashprof.kernels import api, build
from flashprof.kernels.config import VARIANTS, KernelConfig

TUNED = Path(__file__).resolve().parent.parent / "flashprof" / "kernels" / "tuned.json"


@pytest.fixture
def built(monkeypatch):
    seen: list[KernelConfig] = []
    monkeypatch.setattr(build, "build", lambda cfg: seen.append(cfg) or object())
    monkeypatch.setattr(build, "build_many", lambda cfgs, *a, **k: None)  # load(7) with buckets
    return seen


def _on_gpu(monkeypatch, slug):
    monkeypatch.setattr(build, "local_gpu_slug", lambda: slug)


def test_kernel7_on_h200_is_the_tuned_entry(monkeypatch, built):
    _on_gpu(monkeypatch, "h200")
    raw = json.loads(TUNED.read_text())["h200"]
    k = api.load(7)
    assert k.config.to_dict() == raw["config"]  # the default: shapes without a bucket
    assert k.config.slug == raw["slug"]
    # every config the table can dispatch to is built, the default and each bucket's
    assert {c.slug for c in built} == {raw["slug"], *(KernelConfig.from_dict(b["config"]).slug
                                                      for b in raw.get("buckets", ()))}
    assert k.config != VARIANTS[7]  # the bug: load(7) used to be the RTX 3090 config here
    assert "tuned for h200" in str(k) and raw["slug"] in str(k)


def test_kernel7_without_tuned_entry_is_the_series_config(monkeypatch, built):
    _on_gpu(monkeypatch, "rtx3090")
    k = api.load("7")
    assert k.config == VARIANTS[7]
    assert "tuned.json has no entry for rtx3090" in k.source


def test_kernel7_without_gpu_says_so(monkeypatch, built):
    _on_gpu(monkeypatch, None)
    assert "no GPU to pick a tuned one for" in api.load(7).source


def test_gpu_argument_beats_detection(monkeypatch, built):
    _on_gpu(monkeypatch, "rtx3090")
    assert api.load(7, gpu="h200").config.to_dict() == json.loads(TUNED.read_text())["h200"]["config"]


def test_explicit_config_overrides(monkeypatch, built):
    _on_gpu(monkeypatch, "h200")
    k = api.load(VARIANTS[7])
    assert k.config == VARIANTS[7] and k.source == "explicit config"


@pytest.mark.parametrize("n", range(1, 7))
def test_kernels_1_to_6_ignore_the_gpu(monkeypatch, built, n):
    _on_gpu(monkeypatch, "h200")
    k = api.load(n)
    assert k.config == VARIANTS[n] and k.label == f"kernel{n}"
