"""Kernel 7's Hopper steps as user targets: each technique of the warp-specialised kernel
(profiling/tune.py's hopper space, 128 x 128 tile) on its own, so each step has its own
Nsight Compute report beside the dispatched kernel 7's.

    make profile TARGET=examples/hopper_steps.py:ws2          # TMA producer warpgroup
    make profile TARGET=examples/hopper_steps.py:ws2_ovl      # + softmax under the next MMAs
    make profile TARGET=examples/hopper_steps.py:ws2_ovl_pp   # + two warpgroups in ping-pong
    make profile TARGET=examples/hopper_steps.py:ws2_ovl_pp_pers   # + a persistent grid

Each is built once (nvcc, a plain shared library under build/hopper_steps) on first call.
"""
from flashprof.kernels.config import KernelConfig
from flashprof.paths import BUILD

_BASE = dict(d_head=128, B_r=128, B_c=128, n_warps=8, async_copy=True, eager_load_blocks=True, swizzled=True,
             optimized_softmax=True, wgmma=True, warp_specialized=True)
STEPS = {"ws2": {}, "ws2_ovl": {"intra_wg_overlap": True},
         "ws2_ovl_pp": {"intra_wg_overlap": True, "pingpong": True},
         "ws2_ovl_pp_pers": {"intra_wg_overlap": True, "pingpong": True, "persistent": True}}
_built: dict = {}


def _kernel(step: str):
    if step not in _built:
        from flashprof.profiling.shared_lib import SharedLibKernel, build_shared_lib

        cfg = KernelConfig(**_BASE, **STEPS[step])
        _built[step] = SharedLibKernel(build_shared_lib(cfg, "sm_90", BUILD / "hopper_steps"), cfg)
    return _built[step]


def ws2(q, k, v):
    """Kernel 7 + a TMA producer warpgroup (2 K/V stages, setmaxnreg)."""
    return _kernel("ws2")(q, k, v)


def ws2_ovl(q, k, v):
    """... + softmax(S_j) overlapped with O += P_{j-1} V_{j-1} in each warpgroup."""
    return _kernel("ws2_ovl")(q, k, v)


def ws2_ovl_pp(q, k, v):
    """... + the two consumer warpgroups' MMAs in ping-pong (named barriers)."""
    return _kernel("ws2_ovl_pp")(q, k, v)


def ws2_ovl_pp_pers(q, k, v):
    """... on a persistent grid: one wave of CTAs, the producer a tile ahead (under the epilogue)."""
    return _kernel("ws2_ovl_pp_pers")(q, k, v)


ws2.title = "K7 step: TMA producer (ws2)"
ws2_ovl.title = "K7 step: + overlap (ws2_ovl)"
ws2_ovl_pp.title = "K7 step: + ping-pong (ws2_ovl_pp)"
ws2_ovl_pp_pers.title = "K7 step: + persistent grid (pers ws2_ovl_pp)"
