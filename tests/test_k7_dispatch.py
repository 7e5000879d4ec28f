"""Kernel 7's new template options (persistent grid, min CTAs per SM) and its per-shape
dispatch (kernels/tuned.json buckets): validation, names, macros, the bucket rule, what
load(7) builds and says. No GPU: the build is replaced by a recorder, tuned.json by a
temporary file."""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from flashprof.kernels import api, build, config
from flashprof.kernels.config import VARIANTS, Bucket, ConfigError, Dispatch, KernelConfig

CSRC = Path(__file__).resolve().parent.parent / "flashprof" / "kernels" / "csrc"
K7 = dict(d_head=128, B_r=128, B_c=128, n_warps=8, async_copy=True, eager_load_blocks=True, swizzled=True,
          K_mma_load_K_fragments=2, mma_double_buffer_loads=True, optimized_softmax=True)
SHORT = KernelConfig(**{**K7, "B_c": 64, "V_mma_load_K_fragments": 0}, persistent=True)
LONG = KernelConfig(**K7)
BF16 = KernelConfig(**K7, persistent=True)


# ------------------------------------------------------------------ template options
def test_persistent_doubles_the_q_buffer_and_names_itself():
    p = KernelConfig(**K7, persistent=True)
    assert p.q_buffers == 2 and LONG.q_buffers == 1
    assert p.smem_bytes == (2 * 128 + 2 * 128) * 128 * 2 == LONG.smem_bytes + 128 * 128 * 2
    assert p.slug == LONG.slug + "_pers" and p.module_name != LONG.module_name
    assert p.defines()["FP_PERSISTENT"] == 1 and LONG.defines()["FP_PERSISTENT"] == 0


def test_persistent_grid_is_one_wave_or_the_tiles():
    p = KernelConfig(**K7, persistent=True)
    assert p.n_tiles(16, 512, 16) == 4 * 16 * 16
    assert p.grid(16, 512, 16, wave=132) == (132, 1, 1)
    assert p.grid(1, 256, 1, wave=132) == (2, 1, 1)
    with pytest.raises(ConfigError, match="wave"):
        p.grid(16, 512, 16)
    assert LONG.grid(16, 512, 16) == (4, 16, 16)


def test_persistent_needs_eager_loads():
    with pytest.raises(ConfigError, match="persistent needs eager_load_blocks"):
        KernelConfig(**{**K7, "eager_load_blocks": False}, persistent=True)
    with pytest.raises(ConfigError, match="persistent must be a bool"):
        KernelConfig(**K7, persistent=1)


@pytest.mark.parametrize("mb, ok", [(0, True), (1, True), (2, True), (3, False), (-1, False), (5, False)])
def test_min_blocks_per_sm_range_for_8_warps(mb, ok):
    fields = {**K7, "B_c": 64}
    if ok:
        c = KernelConfig(**fields, min_blocks_per_sm=mb)
        assert c.defines()["FP_MIN_BLOCKS"] == mb
        assert c.slug.endswith(f"_mb{mb}") == bool(mb)
    else:
        with pytest.raises(ConfigError, match="min_blocks_per_sm"):
            KernelConfig(**fields, min_blocks_per_sm=mb)


def test_min_blocks_must_fit_shared_memory():
    # 3 CTAs of 4 warps: registers allow it, but 3 x (96 KiB + 1 KiB) > 228 KiB
    with pytest.raises(ConfigError, match="do not fit"):
        KernelConfig(**{**K7, "B_r": 64, "n_warps": 4}, min_blocks_per_sm=3)
    KernelConfig(**{**K7, "B_r": 64, "B_c": 64, "n_warps": 4}, min_blocks_per_sm=3)


def test_min_blocks_rejects_bool_and_float():
    for bad in (True, 2.0):
        with pytest.raises(ConfigError, match="min_blocks_per_sm"):
            KernelConfig(**K7, min_blocks_per_sm=bad)


def test_kernels_1_to_6_keep_their_names_and_defaults():
    for n in range(1, 8):
        c = VARIANTS[n]
        assert not c.persistent and c.min_blocks_per_sm == 0
        assert "pers" not in c.slug and "_mb" not in c.slug


def test_old_tuned_entries_without_the_new_fields_still_load():
    d = LONG.to_dict()
    assert "persistent" not in d and "min_blocks_per_sm" not in d  # unset: written as before
    assert KernelConfig.from_dict(d) == LONG
    p = KernelConfig(**K7, persistent=True, min_blocks_per_sm=1)
    assert p.to_dict()["persistent"] is True and p.to_dict()["min_blocks_per_sm"] == 1
    assert KernelConfig.from_dict(p.to_dict()) == p


def test_cuda_side_knows_the_new_macros():
    cuh = (CSRC / "config.cuh").read_text()
    for macro in ("FP_PERSISTENT", "FP_MIN_BLOCKS"):
        assert macro in cuh
    binding = (CSRC / "torch_binding.cpp").read_text()
    for field in ("persistent", "min_blocks_per_sm"):  # build() compares these with the config
        assert f'd["{field}"]' in binding
    # the grid kernel keeps its name (ncu's regex) and the persistent one contains it
    src = (CSRC / "flash_fwd.cuh").read_text()
    assert re.search(r"^flash_fwd_kernel\(", src, re.M) and re.search(r"^flash_fwd_persistent_kernel\(", src, re.M)


# ------------------------------------------------------------------ dispatch rule
TABLE = Dispatch(LONG, (Bucket(1024, "fp16", SHORT), Bucket(2048, "any", BF16), Bucket(512, "bf16", SHORT)))


@pytest.mark.parametrize("seq, dtype, want", [
    (512, "fp16", SHORT), (1024, "fp16", SHORT), (2048, "fp16", BF16), (4096, "fp16", LONG),
    (512, "bf16", SHORT), (1024, "bf16", BF16), (2048, "bf16", BF16), (16384, "bf16", LONG),
])
def test_bucket_rule(seq, dtype, want):
    assert TABLE.pick(seq, dtype) == want


def test_buckets_sorted_smallest_first_exact_dtype_before_any():
    t = Dispatch(LONG, (Bucket(1024, "any", BF16), Bucket(1024, "fp16", SHORT)))
    assert [b.dtype for b in t.buckets] == ["fp16", "any"]
    assert t.pick(1024, "fp16") == SHORT and t.pick(1024, "bf16") == BF16


def test_bucket_skipped_when_its_tile_does_not_divide_seq():
    t = Dispatch(VARIANTS[7], (Bucket(1024, "any", LONG),))  # LONG needs multiples of 128
    assert t.pick(64, "fp16") == VARIANTS[7] and t.pick(256, "fp16") == LONG
    assert t.why(64, "fp16").startswith("default")


def test_no_shape_means_the_default():
    assert TABLE.pick() == LONG and TABLE.pick(None, "bf16") == LONG


def test_duplicate_and_bad_buckets_refused():
    with pytest.raises(ConfigError, match="two kernel-7 buckets"):
        Dispatch(LONG, (Bucket(1024, "fp16", SHORT), Bucket(1024, "fp16", BF16)))
    with pytest.raises(ConfigError, match="dtype"):
        Bucket(1024, "fp32", SHORT)
    with pytest.raises(ConfigError, match="max_seq"):
        Bucket(0, "fp16", SHORT)


def test_configs_lists_each_once_default_first():
    assert TABLE.configs() == [LONG, SHORT, BF16]
    text = TABLE.describe()
    assert text.index("S<=512 bf16") < text.index("S<=1024 fp16") < text.index("otherwise")


# ------------------------------------------------------------------ tuned.json + load(7)
@pytest.fixture
def tuned(tmp_path, monkeypatch):
    path = tmp_path / "tuned.json"
    entry = {"config": LONG.to_dict(), "slug": LONG.slug,
             "buckets": [{"max_seq": 1024, "dtype": "fp16", "config": SHORT.to_dict()},
                         {"max_seq": 1024, "dtype": "bf16", "config": BF16.to_dict()}]}
    path.write_text(json.dumps({"h200": entry}))
    monkeypatch.setattr(config, "TUNED_FILE", path)
    return path


@pytest.fixture
def built(monkeypatch):
    seen: list[KernelConfig] = []
    monkeypatch.setattr(build, "build", lambda cfg: seen.append(cfg) or object())
    monkeypatch.setattr(build, "build_many", lambda cfgs, **kw: {c.slug: 0.0 for c in cfgs})
    monkeypatch.setattr(build, "local_gpu_slug", lambda: "h200")
    return seen


def test_variant_by_shape_from_tuned_json(tuned):
    assert config.variant(7, "h200") == LONG
    assert config.variant(7, "h200", seq=512, dtype="fp16") == SHORT
    assert config.variant(7, "h200", seq=512, dtype="bf16") == BF16
    assert config.variant(7, "h200", seq=4096, dtype="bf16") == LONG
    assert config.variant(6, "h200", seq=512) == VARIANTS[6]
    assert "bucket S<=1024 bf16" in config.variant_origin(7, "h200", 512, "bf16")
    assert config.load_tuned() == {"h200": LONG}
    assert [label for _, label, _ in config.tuned_configs()] == ["default", "S<=1024 bf16", "S<=1024 fp16"]


def test_load7_builds_every_dispatch_target_and_says_the_table(tuned, built):
    k = api.load(7)
    assert isinstance(k, api.DispatchKernel)
    assert {c.slug for c in built} == {LONG.slug, SHORT.slug, BF16.slug}
    assert k.choice(512, "fp16") == SHORT and k.choice(8192, "fp16") == LONG
    assert k.config == LONG
    s = str(k)
    assert s.startswith("kernel7: ") and "S<=1024 fp16: " + SHORT.slug in s and "otherwise: " + LONG.slug in s
    assert "per S bucket" in s


def test_load7_with_a_shape_is_one_kernel(tuned, built):
    k = api.load(7, seq=1024, dtype="bf16")
    assert isinstance(k, api.Kernel) and k.config == BF16
    assert "bucket S<=1024 bf16" in str(k)


def test_load7_without_buckets_stays_a_plain_kernel(tmp_path, monkeypatch, built):
    path = tmp_path / "tuned.json"
    path.write_text(json.dumps({"h200": {"config": LONG.to_dict()}}))
    monkeypatch.setattr(config, "TUNED_FILE", path)
    k = api.load(7)
    assert isinstance(k, api.Kernel) and k.config == LONG


def test_malformed_bucket_is_a_config_error(tmp_path, monkeypatch):
    path = tmp_path / "tuned.json"
    path.write_text(json.dumps({"h200": {"config": LONG.to_dict(), "buckets": [{"dtype": "fp16"}]}}))
    monkeypatch.setattr(config, "TUNED_FILE", path)
    with pytest.raises(ConfigError, match="entry 'h200'"):
        config.variant(7, "h200")


class _FakeTensor:
    def __init__(self, seq, dtype="torch.float16"):
        self.shape = (2, seq, 4, 128)
        self.dtype = dtype


def test_dispatch_kernel_calls_the_kernel_for_the_shape(tuned, built, monkeypatch):
    k = api.load(7)
    calls = []
    for slug, kern in k.kernels.items():
        monkeypatch.setattr(kern, "__call__", None, raising=False)
    k.kernels = {slug: (lambda q, kk, v, out=None, s=slug: calls.append(s)) for slug in k.kernels}
    k(_FakeTensor(512), None, None)
    k(_FakeTensor(512, "torch.bfloat16"), None, None)
    k(_FakeTensor(4096), None, None)
    assert calls == [SHORT.slug, BF16.slug, LONG.slug]


# ------------------------------------------------------------------ the tuner per bucket
def test_tuner_bucket_winner_lands_in_tuned_json_and_dispatches(tmp_path, monkeypatch):
    from flashprof.profiling import tune

    path = tmp_path / "tuned.json"
    tune.save_winner("h200", 330.0, LONG.to_dict(), {1024: 94.0, "hm_pct": 98.0}, "fp16", (1024, 4096), path=path)
    tune.save_bucket_winner("h200", 1024, 300.0, SHORT.to_dict(), {512: 101.0, 1024: 100.5, "hm_pct": 100.7},
                            "fp16", (512, 1024), path=path)
    tune.save_bucket_winner("h200", 1024, 301.0, BF16.to_dict(), {512: 100.2, "hm_pct": 100.2}, "bf16", (512, 1024),
                            path=path)
    # re-tuning a bucket replaces it; re-tuning the default keeps the buckets
    tune.save_bucket_winner("h200", 1024, 302.0, BF16.to_dict(), {512: 100.9, "hm_pct": 100.9}, "fp16", (512, 1024),
                            path=path)
    tune.save_winner("h200", 331.0, LONG.to_dict(), {1024: 94.0, "hm_pct": 98.1}, "fp16", (1024, 4096), path=path)
    entry = json.loads(path.read_text())["h200"]
    assert [(b["max_seq"], b["dtype"], b["slug"]) for b in entry["buckets"]] == [
        (1024, "bf16", BF16.slug), (1024, "fp16", BF16.slug)]
    monkeypatch.setattr(config, "TUNED_FILE", path)
    assert config.variant(7, "h200", 512, "fp16") == BF16 and config.variant(7, "h200", 2048, "fp16") == LONG


def test_tuner_bucket_needs_a_default_entry(tmp_path):
    from flashprof.profiling import tune
    from flashprof.kernels.cli import FlashprofError

    with pytest.raises(FlashprofError, match="no default entry"):
        tune.save_bucket_winner("h200", 1024, 1.0, SHORT.to_dict(), {"hm_pct": 1.0}, "fp16", (512,),
                                path=tmp_path / "tuned.json")


def test_bucket_seqs_and_extended_space():
    from flashprof.profiling import tune
    from flashprof.kernels.cli import FlashprofError

    assert tune.bucket_seqs(1024) == (512, 1024) and tune.bucket_seqs(2048) == (512, 1024, 2048)
    with pytest.raises(FlashprofError, match="bucket"):
        tune.bucket_seqs(256)
    seed, _ = tune.space()
    ext, _ = tune.extended_space()
    assert set(seed) < set(ext)
    assert any(c.persistent for c in ext) and any(c.min_blocks_per_sm == 2 for c in ext)
    assert all(c.n_warps == 8 and c.B_c <= 64 for c in ext if c.min_blocks_per_sm and not c.wgmma)
    wg = [c for c in ext if c.wgmma]
    assert {(c.B_r, c.B_c, c.n_warps) for c in wg} == {(64, 64, 4), (64, 128, 4), (128, 64, 8), (128, 128, 8)}
    assert all(c.B_r == 16 * c.n_warps and c.target_arch("sm_80") is None for c in wg)
    assert all(c.eager_load_blocks for c in ext if c.persistent)
