"""Kernel 7's Hopper form (``KernelConfig.wgmma``): its rules, its arch, and its static build.

The SASS checks compile the real kernel for sm_90a with the CUDA wheels (no GPU needed) and
count, from the disassembly, the warpgroup MMAs of the KV loop against what the config asks
for: d_head/16 k-steps of S = Q K^T and B_c/16 of O += P V per KV block, with no mma.sync or
ldmatrix left in the loop. Running it (the gate, the sanitizers, the timings) is on the GPU:
tests/test_gpu_kernels.py and devjobs/k7_short_s.sh.
"""
from __future__ import annotations


import pytest

from flashprof.kernels.config import ConfigError, KernelConfig
from flashprof.kernels.sass import static as sass

COMMON = dict(d_head=128, async_copy=True, eager_load_blocks=True, swizzled=True, optimized_softmax=True)


def W(br=128, bc=128, w=8, **kw) -> KernelConfig:
    return KernelConfig(**COMMON, B_r=br, B_c=bc, n_warps=w, wgmma=True, **kw)


# ------------------------------------------------------------------ rules
@pytest.mark.parametrize("br,bc,w", [(128, 128, 8), (128, 64, 8), (64, 128, 4), (64, 64, 4)])
def test_valid_shapes(br, bc, w):
    cfg = W(br, bc, w)
    assert cfg.slug.endswith("_wgmma")
    # 64 query rows per warpgroup, one 1024-byte alignment slack on top of the tiles
    assert cfg.B_r == 64 * (cfg.n_warps // 4)
    assert cfg.smem_bytes == (br + 2 * bc) * 128 * 2 + 1024


@pytest.mark.parametrize("kw,words", [
    (dict(br=64, w=8), "multiple of 16\\*n_warps"),
    (dict(br=256, w=8), "64 rows per warpgroup"),
    (dict(bc=32), "B_c must be 64 or 128"),
    (dict(K_mma_load_K_fragments=2), "fragment staging"),
    (dict(mma_double_buffer_loads=True), "fragment staging"),
    (dict(persistent=True), "the persistent form is the warp-specialised kernel's"),
])
def test_invalid(kw, words):
    with pytest.raises(ConfigError, match=words):
        W(**kw)


def test_needs_the_eager_async_pipeline():
    with pytest.raises(ConfigError, match="eager"):
        KernelConfig(d_head=128, B_r=128, B_c=128, n_warps=8, swizzled=True, wgmma=True)


def test_wgmma_must_be_bool():
    with pytest.raises(ConfigError, match="wgmma must be a bool"):
        KernelConfig(**COMMON, B_r=128, B_c=128, n_warps=8, wgmma=1)


def test_dict_round_trip_and_old_configs():
    cfg = W()
    d = cfg.to_dict()
    assert d["wgmma"] is True and KernelConfig.from_dict(d) == cfg
    # configs written before the field existed read as the mma.sync kernel, and write alike
    plain = KernelConfig(**COMMON, B_r=128, B_c=128, n_warps=8)
    assert "wgmma" not in plain.to_dict() and not plain.wgmma
    assert plain.defines()["FP_WGMMA"] == 0 and cfg.defines()["FP_WGMMA"] == 1


def test_target_arch():
    assert W().target_arch("sm_90") == "sm_90a"
    assert W().target_arch("sm_90a") == "sm_90a"
    for arch in ("sm_80", "sm_86", "sm_89", "sm_100"):
        assert W().target_arch(arch) is None
    plain = KernelConfig(**COMMON, B_r=128, B_c=128, n_warps=8)
    assert plain.target_arch("sm_80") == "sm_80" and plain.target_arch("sm_90") == "sm_90"


def test_shared_lib_refuses_a_gpu_it_cannot_run_on(tmp_path):
    from flashprof.kernels.cli import FlashprofError
    from flashprof.profiling.shared_lib import build_shared_lib

    with pytest.raises(FlashprofError, match="sm_90a"):
        build_shared_lib(W(), "sm_86", tmp_path)
    assert not list(tmp_path.iterdir())


def test_static_build_refuses_ampere():
    with pytest.raises(ConfigError, match="sm_90a"):
        sass.compile_cubin(W(), "sm_80")


# ------------------------------------------------------------- static build
@pytest.mark.parametrize("br,bc,w", [(128, 128, 8), (64, 64, 4)])
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_sass_of_the_kv_loop(toolchain, br, bc, w, dtype):
    cfg = W(br, bc, w)
    cubin = sass.compile_cubin(cfg, "sm_90")
    assert "/sm_90a/" in str(cubin)
    loop = sass.loop_info(cubin, dtype)["opcodes"]
    # per KV block: d_head/16 k-steps of S = Q K^T, B_c/16 of O += P V, each one m64nNk16
    assert loop["HGMMA"] == 128 // 16 + bc // 16, loop
    assert "HMMA" not in loop and "LDSM" not in loop, loop
    # the shapes and types, from the full listing of this function
    text = sass.dump_sass(cubin)
    ty = " " if dtype == "fp16" else ".BF16 "  # cuobjdump writes fp16 inputs without a suffix
    assert f"HGMMA.64x{bc}x16.F32{ty}" in text and f"HGMMA.64x128x16.F32{ty}" in text
    stats = sass.ptxas_report(sass.log_path(cubin))
    st = stats[sass.pick_function(stats, dtype)]
    assert st.spill_store_bytes == st.spill_load_bytes == st.stack_bytes == 0
    assert "flash_fwd_wgmma_kernel" in sass.pick_function(stats, dtype)


# ------------------------------------------------ what `flashprof profile` asks ncu for
@pytest.mark.parametrize("cfg", [
    W(64, 128, 4),
    W(128, 128, 8, warp_specialized=True, intra_wg_overlap=True, pingpong=True),
    W(128, 128, 8, warp_specialized=True, intra_wg_overlap=True, persistent=True),
    KernelConfig(**COMMON, B_r=128, B_c=128, n_warps=8, persistent=True),
    KernelConfig(**COMMON, B_r=128, B_c=128, n_warps=8),
], ids=["wgmma", "wgmma_ws", "wgmma_ws_persistent", "persistent", "grid"])
def test_kernel7_regex_matches_every_kernel_function_it_can_dispatch_to(toolchain, cfg):
    """ncu's --kernel-name regex:<kernel 7's regex> must match the function the launcher runs
    for each form of kernel 7 (the names come from the cubin, not from the code here)."""
    import re as _re

    from flashprof.profiling.targets import KERNEL7_REGEX, OUR_KERNEL_REGEX, resolve

    cubin = sass.compile_cubin(cfg, "sm_90")
    stats = sass.ptxas_report(sass.log_path(cubin))
    for dtype in ("fp16", "bf16"):
        mangled = sass.pick_function(stats, dtype)
        base = _re.match(r"_ZN9flashprof(\d+)", mangled)
        name = mangled[base.end():base.end() + int(base.group(1))]  # the Itanium-mangled base name
        assert _re.search(KERNEL7_REGEX, name), name
    assert resolve("7").kernel_regex == KERNEL7_REGEX and resolve("6").kernel_regex == OUR_KERNEL_REGEX


def test_sass_command_shows_the_tuned_hopper_kernel7(toolchain, capsys):
    """`flashprof sass 7 --arch sm_90a` is the kernel the H200 dispatches (tuned.json), with its
    tensor instructions per KV block counted from the listing here."""
    from flashprof.kernels.config import load_dispatch
    from flashprof.kernels.sass.command import main
    cfg = load_dispatch()["h200"].default
    assert main(["7", "--arch", "sm_90a", "--format", "json"]) == 0
    import json
    rep = json.loads(capsys.readouterr().out)
    assert rep["slug"] == cfg.slug and rep["arch"] == "sm_90a"
    text = sass.dump_sass(sass.compile_cubin(cfg, "sm_90a"))
    fn = rep["function"]
    body = text.split(f"Function : {fn}")[1].split("Function : ")[0]
    assert sum(1 for line in body.splitlines() if " HGMMA." in line) == rep["opcodes"]["HGMMA"]
    if cfg.wgmma:
        assert rep["loop_tensor_opcodes"] == {"HGMMA": cfg.d_head // 16 + cfg.B_c // 16}
    assert main(["7", "--arch", "sm_90a"]) == 0
    assert "tensor ops   HGMMA" in capsys.readouterr().out
