"""Kernel 7's warp-specialised Hopper form (``KernelConfig.warp_specialized``): its rules, and
its static build for sm_90a with the CUDA wheels (no GPU needed).

The SASS checks read what each option must put into the code, from the disassembly of the
real kernel: a producer that loads with TMA (UTMALDG) and gives registers back
(USETMAXREG), consumers whose KV loop holds only the warpgroup MMAs of one block (d_head/16
+ B_c/16), its two transaction-barrier waits and two releases, and no loads of its own;
ping-pong adds one named-barrier sync and one arrive per block. Running it (the gate,
compute-sanitizer's memcheck/racecheck/synccheck, the timings) is on the GPU:
tests/test_gpu_kernels.py and devjobs/ws_first.sh.
"""
from __future__ import annotations

import re

import pytest

from flashprof.kernels.config import ConfigError, KernelConfig
from flashprof.kernels.sass import static as sass
from flashprof.kernels.sass.text import parse_insns

COMMON = dict(d_head=128, async_copy=True, eager_load_blocks=True, swizzled=True, optimized_softmax=True,
              wgmma=True)


def WS(br=128, bc=128, w=8, **kw) -> KernelConfig:
    return KernelConfig(**COMMON, B_r=br, B_c=bc, n_warps=w, warp_specialized=True, **kw)


# ------------------------------------------------------------------ rules
@pytest.mark.parametrize("br,bc,w,stages", [(128, 128, 8, 2), (128, 64, 8, 4), (64, 64, 4, 3)])
def test_geometry(br, bc, w, stages):
    cfg = WS(br, bc, w, kv_stages=stages)
    # one producer warpgroup beside the n_warps MMA warps; a ring of `stages` K and V tiles
    assert cfg.threads == 32 * w + 128
    assert cfg.smem_bytes == (br + 2 * stages * bc) * 128 * 2 + 1024
    assert cfg.slug.endswith(f"_wgmma_ws{stages}")


def test_slug_tokens_and_round_trip():
    cfg = WS(intra_wg_overlap=True, pingpong=True, kv_stages=3, bc=64)
    assert cfg.slug.endswith("_wgmma_ws3_ovl_pp")
    assert KernelConfig.from_dict(cfg.to_dict()) == cfg
    d = cfg.defines()
    assert (d["FP_WS"], d["FP_KV_STAGES"], d["FP_OVERLAP"], d["FP_PINGPONG"]) == (1, 3, 1, 1)


def test_earlier_configs_keep_their_command_line_and_dict():
    """A config without the option has none of its macros or fields: its cubin, module name
    and every committed sidecar / tuned.json entry stay as they were."""
    plain = KernelConfig(**COMMON, B_r=64, B_c=128, n_warps=4)
    assert not any(k in plain.defines() for k in ("FP_WS", "FP_KV_STAGES", "FP_OVERLAP", "FP_PINGPONG"))
    assert not {"warp_specialized", "kv_stages", "intra_wg_overlap", "pingpong"} & set(plain.to_dict())
    assert plain.threads == 128


@pytest.mark.parametrize("kw,words", [
    (dict(wgmma=False), "needs wgmma"),
    (dict(kv_stages=1), "kv_stages=1 must be 2 to 4"),
    (dict(kv_stages=5, bc=64), "kv_stages=5 must be 2 to 4"),
    (dict(pingpong=True), "pingpong: needs two consumer warpgroups"),
    (dict(br=64, w=4, bc=64, intra_wg_overlap=True, pingpong=True), "pingpong: needs two consumer warpgroups"),
    (dict(kv_stages=4), "shared memory"),  # 128 + 2 x 4 x 128 rows of 256 B: 288 KiB
    (dict(warp_specialized=1), "warp_specialized must be a bool"),
])
def test_invalid(kw, words):
    fields = {**COMMON, "B_r": kw.pop("br", 128), "B_c": kw.pop("bc", 128), "n_warps": kw.pop("w", 8),
              "warp_specialized": True, **kw}
    with pytest.raises(ConfigError, match=words):
        KernelConfig(**fields)


@pytest.mark.parametrize("kw", [dict(kv_stages=3), dict(intra_wg_overlap=True), dict(pingpong=True)])
def test_options_need_warp_specialization(kw):
    with pytest.raises(ConfigError, match="options of warp_specialized"):
        KernelConfig(**COMMON, B_r=128, B_c=128, n_warps=8, **kw)


def test_the_hopper_tuning_space_is_valid_and_holds_each_step():
    from flashprof.profiling.tune import hopper_space

    ok, rejected = hopper_space()
    slugs = {c.slug for c in ok}
    base = "d128_br128_bc128_w8_async_eager_swz_f000_optsm_wgmma"
    assert {base, base + "_ws2", base + "_ws2_ovl", base + "_ws2_ovl_pp"} <= slugs
    # the persistent grid on every overlapped candidate that fits
    pers = "d128_br128_bc128_w8_async_eager_swz_f000_optsm_pers_wgmma"
    assert {pers + "_ws2_ovl", pers + "_ws2_ovl_pp"} <= slugs
    assert all(c.intra_wg_overlap and c.warp_specialized for c in ok if c.persistent)
    def fits(c):  # two Q tiles + the K/V ring, 256 B a row, 1 KiB alignment; SM: 228 KiB, 1 KiB per CTA
        smem = (2 * c.B_r + 2 * c.kv_stages * c.B_c) * 128 * 2 + 1024
        return smem <= 227 * 1024 and max(c.min_blocks_per_sm, 1) * (smem + 1024) <= 228 * 1024
    want = {KernelConfig.from_dict({**c.to_dict(), "persistent": True}).slug
            for c in ok if c.intra_wg_overlap and not c.persistent and fits(c)}
    assert {c.slug for c in ok if c.persistent} == want and len(want) == 9
    # rejected: the 1-warpgroup ping-pongs, and persistent forms whose second Q buffer does not fit
    for fields, why in rejected:
        if fields.get("persistent"):
            assert "shared memory" in why, why
        else:
            assert "pingpong" in why, why


# ------------------------------------------------------------- static build
def _function(cubin, dtype: str) -> list:
    stats = sass.ptxas_report(sass.log_path(cubin))
    fn = sass.pick_function(stats, dtype)
    return fn, stats[fn], parse_insns(sass.dump_sass(cubin))[fn]


STEPS = {"ws": {}, "ovl": dict(intra_wg_overlap=True), "pp": dict(intra_wg_overlap=True, pingpong=True)}


@pytest.mark.parametrize("step", list(STEPS))
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_sass_of_each_step(toolchain, step, dtype):
    cfg = WS(**STEPS[step])
    cubin = sass.compile_cubin(cfg, "sm_90")
    assert "/sm_90a/" in str(cubin)
    fn, st, insns = _function(cubin, dtype)
    assert "flash_fwd_wgmma_ws_kernel" in fn
    assert st.spill_store_bytes == st.spill_load_bytes == st.stack_bytes == 0
    # registers at launch: what 384 threads may hold in one SM's 64 K (setmaxnreg moves them)
    assert st.registers * cfg.threads <= 65536
    ops = [i.opcode for i in insns]
    text = sass.dump_sass(cubin)
    # the producer: Q once (2 panels) and K, V per block (2 panels each), by TMA
    assert ops.count("UTMALDG") == 2 + 2 + 2, ops.count("UTMALDG")
    # cuobjdump writes the counts in hex: 24 = 0x18 for the producer, 240 = 0xf0 for the consumers
    assert re.search(r"USETMAXREG\.DEALLOC\S*\s+0x18\b", text), "no setmaxnreg.dec 24"
    assert re.search(r"USETMAXREG\.TRY_ALLOC\S*\s+UP\d,\s*0xf0\b", text), "no setmaxnreg.inc 240"
    assert "LDGSTS" not in ops and "HMMA" not in ops and "LDSM" not in ops
    loop = sass.loop_info(cubin, dtype)["opcodes"]
    assert loop["HGMMA"] == 128 // 16 + cfg.B_c // 16, loop
    # two waits (K_j, V_j) and two releases per block, nothing loaded by the consumers
    assert loop["SYNCS"] == 4 and not {"LDS", "LDG", "UTMALDG", "LDGSTS"} & set(loop), loop
    assert loop.get("BAR", 0) == (2 if cfg.pingpong else 0), loop
    assert loop["WARPGROUP"] == 4, loop  # an arrive (fence) and a wait per committed group


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_sass_of_the_persistent_form(toolchain, dtype):
    """persistent=True with warp_specialized is its own kernel function: one loop over the
    tiles around the same KV loop (the tile loop holds the O stores and no exit), the same
    six TMA loads, and a second proxy fence (the consumers' release of a Q buffer)."""
    from flashprof.kernels.sass.text import branch_target

    fences = {}
    for pers in (False, True):
        cfg = WS(intra_wg_overlap=True, persistent=pers)
        cubin = sass.compile_cubin(cfg, "sm_90")
        fn, st, insns = _function(cubin, dtype)
        assert ("flash_fwd_wgmma_ws_persistent_kernel" in fn) == pers, fn
        assert st.spill_store_bytes == st.spill_load_bytes == st.stack_bytes == 0
        ops = [i.opcode for i in insns]
        assert ops.count("UTMALDG") == 6
        fences[pers] = ops.count("FENCE")
        info = sass.loop_info(cubin, dtype)
        lo, hi, loop = info["start"], info["end"], info["opcodes"]
        assert loop["HGMMA"] == 128 // 16 + cfg.B_c // 16 and "STG" not in loop, loop
        exits = [i.addr for i in insns if i.opcode == "EXIT"]
        stores = [i.addr for i in insns if i.opcode == "STG"]
        outer = [(branch_target(i), i.addr) for i in insns
                 if branch_target(i) is not None and branch_target(i) < lo and i.addr > hi
                 and not any(branch_target(i) <= a <= i.addr for a in exits)]
        if pers:
            assert outer and all(any(t <= a <= b for a in stores) for t, b in outer), outer
        else:
            assert outer == [], outer
    assert fences[True] == fences[False] + 1, fences
