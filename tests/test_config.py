"""The config record: kernels 1-7 as the series defines them, and the rules it enforces."""
from __future__ import annotations

import pytest

from flashprof.kernels.config import VARIANTS, ConfigError, KernelConfig, variant

# The series' table: eager, swizzle, Q/K/V load frags, double buffer, optimized softmax.
TABLE = {
    1: (False, False, (0, 0, 0), False, False),
    2: (False, True, (0, 0, 0), False, False),
    3: (True, True, (0, 0, 0), False, False),
    4: (True, True, (2, 2, 2), False, False),
    5: (True, True, (2, 2, 2), True, False),
    6: (True, True, (2, 2, 2), True, True),
    7: (True, True, (0, 2, 0), True, True),  # the seed's RTX 3090 winner
}

EXPECTED_DEFINES = {
    "FP_D_HEAD", "FP_B_R", "FP_B_C", "FP_N_WARPS", "FP_ASYNC_COPY", "FP_EAGER",
    "FP_SWIZZLED", "FP_Q_FRAGS", "FP_K_FRAGS", "FP_V_FRAGS", "FP_DBUF", "FP_OPT_SOFTMAX",
    "FP_FAULT", "FP_PERSISTENT", "FP_MIN_BLOCKS", "FP_WGMMA",
}


def test_seven_variants():
    assert sorted(VARIANTS) == list(range(1, 8))


@pytest.mark.parametrize("n", sorted(TABLE))
def test_variant_matches_table(n):
    cfg = variant(n)
    eager, swz, frags, dbuf, opt = TABLE[n]
    assert (cfg.d_head, cfg.B_r, cfg.B_c, cfg.n_warps, cfg.async_copy) == (128, 64, 64, 4, True)
    assert cfg.eager_load_blocks is eager
    assert cfg.swizzled is swz
    assert (cfg.Q_mma_load_K_fragments, cfg.K_mma_load_K_fragments,
            cfg.V_mma_load_K_fragments) == frags
    assert cfg.mma_double_buffer_loads is dbuf
    assert cfg.optimized_softmax is opt
    assert cfg.fault == "none"
    cfg.validate()  # valid as built


@pytest.mark.parametrize("n", sorted(TABLE))
def test_geometry(n):
    cfg = variant(n)
    assert cfg.threads == 128
    assert cfg.smem_bytes == (64 + 2 * 64) * 128 * 2 == 48 * 1024
    assert cfg.grid(batch=16, seq=4096, heads=16) == (64, 16, 16)


BASE = dict(d_head=128, B_r=64, B_c=64, n_warps=4, async_copy=True)


@pytest.mark.parametrize("overrides, why", [
    (dict(Q_mma_load_K_fragments=2, K_mma_load_K_fragments=0), "Q frags 2 with K 0"),
    (dict(Q_mma_load_K_fragments=3, K_mma_load_K_fragments=3), "3 is not a power of two"),
    (dict(V_mma_load_K_fragments=3), "3 is not a power of two"),
    (dict(K_mma_load_K_fragments=1), "1 is neither 0 nor >= 2"),
    (dict(K_mma_load_K_fragments=16), "more than the 8 k-steps of d=128"),
    (dict(B_c=32, V_mma_load_K_fragments=4), "more than the 2 k-steps of B_c=32"),
    (dict(n_warps=3), "3 warps"),
    (dict(n_warps=8), "B_r=64 is not a multiple of 16*8"),
    (dict(B_r=96), "B_r=96 is not a multiple of 16*4=64"),
    (dict(async_copy=False, eager_load_blocks=True), "eager without async"),
    (dict(d_head=64), "only d=128"),
    (dict(fault="bogus"), "unknown fault"),
])
def test_invalid_combinations_raise(overrides, why):
    with pytest.raises(ConfigError):
        KernelConfig(**{**BASE, **overrides})


def test_config_error_reaches_the_user_as_one_line(capsys):
    from flashprof.kernels.cli import run_cli

    assert run_cli("prog", lambda: variant(9)) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == ["prog: error: unknown kernel 9: valid kernels are 1-7 and 7mma"]
    with pytest.raises(ValueError):  # callers that validate with `except ValueError` still catch it
        variant(9)


def test_valid_alternatives_build():
    # The tuner's space contains these; they must not be rejected.
    KernelConfig(**{**BASE, "B_r": 128, "B_c": 32}, eager_load_blocks=True, swizzled=True,
                 Q_mma_load_K_fragments=2, K_mma_load_K_fragments=2, V_mma_load_K_fragments=2)
    KernelConfig(**{**BASE, "n_warps": 8, "B_r": 128})


def test_names_unique():
    cfgs = list(VARIANTS.values())
    assert len({c.slug for c in cfgs}) == 7
    assert len({c.module_name for c in cfgs}) == 7
    for c in cfgs:
        assert c.module_name.isidentifier()
        assert all(ch.isalnum() or ch in "_-" for ch in c.slug)


def test_defines():
    for cfg in VARIANTS.values():
        d = cfg.defines()
        assert set(d) == EXPECTED_DEFINES
        assert all(isinstance(v, int) for v in d.values())
        assert cfg.nvcc_flags() == [f"-D{k}={v}" for k, v in d.items()]
    assert variant(6).defines()["FP_OPT_SOFTMAX"] == 1
    assert variant(5).defines()["FP_OPT_SOFTMAX"] == 0


def test_round_trip():
    for cfg in VARIANTS.values():
        assert KernelConfig.from_dict(cfg.to_dict()) == cfg
    with pytest.raises(ConfigError):
        KernelConfig.from_dict({**variant(1).to_dict(), "nope": 1})


@pytest.mark.parametrize("bad", ["x", 0, 8, -1, "", None, "7.5"])
def test_unknown_variant_raises(bad):
    with pytest.raises(ConfigError):
        variant(bad)


def test_variant_accepts_strings():
    assert variant("3") == VARIANTS[3]


def test_reference_targets_are_the_ones_profiling_can_run():
    from flashprof.kernels.config import REFERENCE_IDS
    from flashprof.profiling.reference import REFERENCES

    assert set(REFERENCE_IDS) == set(REFERENCES)

