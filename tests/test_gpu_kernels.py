"""GPU tests: every variant against float32 attention by FlashAttention-2's rule, a
deliberately broken variant that must fail the same check, input validation, and
compute-sanitizer (memcheck, racecheck) on the standalone driver.

They need a CUDA GPU and torch; on CPU-only machines (CI) they are skipped with the reason.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from flashprof.kernels.config import KERNEL_IDS, KernelConfig, variant
from flashprof.kernels.nvcc import arch_flags

torch = pytest.importorskip("torch", reason="torch not installed: kernel tests need torch with CUDA (gpu extra)")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU visible: kernel correctness/sanitizer tests run on a GPU machine "
                "(make test on the device)", allow_module_level=True)

from flashprof.kernels.api import InputError, load  # noqa: E402
from flashprof.profiling.correctness import check  # noqa: E402
from flashprof.profiling.workload import Shape  # noqa: E402

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parent.parent
SHAPES = [Shape(1, 512, 2), Shape(2, 1024, 3), Shape(3, 2048, 2), Shape(1, 4096, 4)]


@pytest.fixture(scope="module")
def kernels():
    from flashprof.kernels.build import build_many

    cfgs = [variant(n) for n in KERNEL_IDS]
    build_many(cfgs)
    return {n: load(cfg) for n, cfg in zip(KERNEL_IDS, cfgs)}  # the series' configs, 7 included


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("n", KERNEL_IDS)
def test_variant_matches_fp32_reference(kernels, n, dtype):
    for shape in SHAPES:
        v = check(kernels[n], shape, dtype)  # fresh random inputs, output poisoned with NaN
        assert v.ok, f"kernel {n} {dtype} {shape}: {v.reason}"
        assert v.unwritten == 0
        assert v.max_err < 0.05


@pytest.mark.parametrize("fault", ["skip_rescale", "drop_last_block"])
def test_broken_variant_fails_the_gate(fault):
    cfg = KernelConfig(**{**variant(6).to_dict(), "fault": fault})
    broken = load(cfg)
    v = check(broken, Shape(2, 1024, 2), "fp16")
    assert not v.ok, f"the gate accepted a kernel with fault {fault}: {v}"


def test_tuned_kernel7_is_correct():
    from flashprof.kernels.config import gpu_slug

    slug = gpu_slug(torch.cuda.get_device_name())
    k = load(7)  # the default entry point picks this GPU's tuned config when there is one
    assert k.config == variant(7, gpu=slug), str(k)
    for dtype in ("fp16", "bf16"):
        v = check(k, Shape(2, 2048, 3), dtype)
        assert v.ok, v.reason


def test_input_errors(kernels):
    k6 = kernels[6]
    q = torch.randn(1, 256, 2, 128, device="cuda", dtype=torch.float16)
    with pytest.raises(InputError, match="dtype"):
        k6(q.float(), q.float(), q.float())
    with pytest.raises(InputError, match="CUDA"):
        k6(q.cpu(), q.cpu(), q.cpu())
    with pytest.raises(InputError, match="contiguous"):
        qt = q.transpose(1, 2).contiguous().transpose(1, 2)
        k6(qt, qt, qt)
    with pytest.raises(InputError, match="head dim"):
        x = torch.randn(1, 256, 2, 64, device="cuda", dtype=torch.float16)
        k6(x, x, x)
    with pytest.raises(InputError, match="multiple of 64"):
        x = torch.randn(1, 100, 2, 128, device="cuda", dtype=torch.float16)
        k6(x, x, x)
    with pytest.raises(InputError, match="differs"):
        k6(q, q[:, :128].contiguous(), q)


def test_cpp_layer_refuses_bad_seq(kernels):
    """The binding checks again when the Python checks are bypassed. Run in a child
    process so that a crash fails this test instead of the whole session."""
    import sys

    code = ("import torch; from flashprof.kernels.api import load; m = load(6).module\n"
            "x = torch.randn(1, 96, 2, 128, device='cuda', dtype=torch.float16)\n"
            "print('REFUSED', m.fwd(x, x, x, torch.empty_like(x)))\n")
    r = subprocess.run([sys.executable, "-X", "faulthandler", "-c", code], capture_output=True, text=True,
                       cwd=ROOT, timeout=300)
    assert r.returncode == 0 and "REFUSED" in r.stdout and "multiple" in r.stdout, r.stdout + r.stderr[-3000:]


def _sanitizer() -> str:
    exe = shutil.which("compute-sanitizer") or "/usr/local/cuda/bin/compute-sanitizer"
    if not os.path.exists(exe):
        pytest.skip("compute-sanitizer not installed")
    return exe


@pytest.fixture(scope="module")
def drivers(tmp_path_factory):
    """Standalone driver binaries (no torch) for every variant, built with nvcc."""
    out = tmp_path_factory.mktemp("drivers")
    major, minor = torch.cuda.get_device_capability()
    procs = {}
    for n in KERNEL_IDS:
        exe = out / f"driver{n}"
        cmd = ["nvcc", "-O3", "-std=c++17", "-lineinfo", f"-arch=sm_{major}{minor}", *variant(n).nvcc_flags(),
               str(ROOT / "flashprof/kernels/csrc/driver.cu"), str(ROOT / "flashprof/kernels/csrc/flash_fwd.cu"), "-o", str(exe)]
        procs[n] = (exe, subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
    exes = {}
    for n, (exe, p) in procs.items():
        log, _ = p.communicate()
        assert p.returncode == 0, log
        exes[n] = exe
    return exes


@pytest.mark.parametrize("tool", ["memcheck", "racecheck"])
@pytest.mark.parametrize("n", KERNEL_IDS)
def test_compute_sanitizer_clean(drivers, n, tool):
    exe = _sanitizer()
    r = subprocess.run([exe, "--tool", tool, "--error-exitcode", "9", str(drivers[n]), "1", "128", "2", "fp16"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "ERROR SUMMARY: 0 errors" in r.stdout or "RACECHECK SUMMARY: 0 hazards" in r.stdout, r.stdout[-2000:]


# Every config this GPU's kernel 7 can dispatch to (kernels/tuned.json: default + per-S
# buckets), besides the series' seed config above.
def _dispatch_configs() -> list[KernelConfig]:
    from flashprof.kernels.config import dispatch, gpu_slug

    return dispatch(7, gpu_slug(torch.cuda.get_device_name())).configs()


DISPATCH = _dispatch_configs()
# Enough Q tiles that a persistent CTA walks several (>= 3 waves of 132 SMs x 2 CTAs).
MANY_TILES = Shape(2, 1024, 40)


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("cfg", DISPATCH, ids=[c.slug for c in DISPATCH])
def test_every_kernel7_dispatch_config_is_correct(cfg, dtype):
    k = load(cfg)
    for shape in [s for s in SHAPES if s.seq % cfg.seq_multiple() == 0] + [MANY_TILES]:
        v = check(k, shape, dtype)
        assert v.ok and v.unwritten == 0, f"{cfg.slug} {dtype} {shape}: {v.reason}"


def test_load7_dispatches_per_shape():
    from flashprof.kernels.config import gpu_slug

    slug = gpu_slug(torch.cuda.get_device_name())
    k = load(7)
    for seq in (512, 1024, 2048, 4096):
        for dtype in ("fp16", "bf16"):
            want = variant(7, gpu=slug, seq=seq, dtype=dtype)
            got = k.choice(seq, dtype) if hasattr(k, "choice") else k.config
            assert got == want, str(k)
            v = check(k, Shape(1, seq, 2), dtype)
            assert v.ok, f"{str(k)} at S={seq} {dtype}: {v.reason}"


def _hopper_steps() -> list[KernelConfig]:
    """The warp-specialised kernel 7's steps (profiling/tune.py's hopper space) on an sm_90 GPU."""
    if torch.cuda.get_device_capability() != (9, 0):
        return []
    from flashprof.profiling.tune import hopper_space

    return [c for c in hopper_space()[0] if c.warp_specialized]


HOPPER_STEPS = _hopper_steps()
# The sanitizers run on each technique at the 128 x 128 tile, and on the one-warpgroup form.
SANITIZED_STEPS = [c for c in HOPPER_STEPS if c.kv_stages == 2 and (c.B_c == 128 or c.n_warps == 4)]
SANITIZED = list(dict.fromkeys(DISPATCH + SANITIZED_STEPS))


@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
@pytest.mark.parametrize("cfg", HOPPER_STEPS, ids=[c.slug for c in HOPPER_STEPS])
def test_every_hopper_step_is_correct(tmp_path_factory, cfg, dtype):
    """Every config `make tune --space hopper` can pick passes the gate (as a shared library,
    the tuner's own build), including more Q tiles than SMs and a single KV block."""
    from flashprof.profiling.shared_lib import SharedLibKernel, build_shared_lib

    lib_dir = tmp_path_factory.getbasetemp() / "hopper_libs"
    lib_dir.mkdir(exist_ok=True)
    k = SharedLibKernel(build_shared_lib(cfg, "sm_90", lib_dir), cfg)
    for shape in [s for s in SHAPES if s.seq % cfg.seq_multiple() == 0] + [MANY_TILES, Shape(2, cfg.seq_multiple(), 3)]:
        v = check(k, shape, dtype)
        assert v.ok and v.unwritten == 0, f"{cfg.slug} {dtype} {shape}: {v.reason}"


@pytest.mark.parametrize("tool", ["memcheck", "racecheck", "synccheck"])
@pytest.mark.parametrize("cfg", SANITIZED, ids=[c.slug for c in SANITIZED])
def test_compute_sanitizer_clean_kernel7_dispatch(tmp_path, cfg, tool):
    exe = _sanitizer()
    major, minor = torch.cuda.get_device_capability()
    drv = tmp_path / "driver"
    target = cfg.target_arch(f"sm_{major}{minor}")  # wgmma configs: sm_90a
    if target is None:
        pytest.skip(f"{cfg.slug} cannot run on sm_{major}{minor}")
    cmd = ["nvcc", "-O3", "-std=c++17", "-lineinfo", *arch_flags(target), *cfg.nvcc_flags(),
           str(ROOT / "flashprof/kernels/csrc/driver.cu"), str(ROOT / "flashprof/kernels/csrc/flash_fwd.cu"), "-o", str(drv)]
    b = subprocess.run(cmd, capture_output=True, text=True)
    assert b.returncode == 0, b.stdout + b.stderr
    # persistent configs: more Q tiles than one wave, so CTAs reuse both Q buffers
    heads = 2 if not cfg.persistent else 300 * cfg.B_r // 512
    r = subprocess.run([exe, "--tool", tool, "--error-exitcode", "9", str(drv), "1", "512", str(heads), "fp16"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "ERROR SUMMARY: 0 errors" in r.stdout or "RACECHECK SUMMARY: 0 hazards" in r.stdout, r.stdout[-2000:]
