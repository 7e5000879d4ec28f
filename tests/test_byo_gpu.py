"""GPU tests of user targets: the examples pass the correctness gate, and the
bad targets that only a GPU can reveal (wrong output shape or dtype, a call that raises,
wrong values, launching nothing, launching more than MAX_LAUNCHES) are refused with one
line, a non-zero exit and nothing written, before Nsight Compute runs (a stand-in ncu
fails the test if it is reached). Skipped with the reason on machines without CUDA.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

torch = pytest.importorskip("torch", reason="torch not installed: user-target GPU tests need torch with CUDA")
if not torch.cuda.is_available():
    pytest.skip("no CUDA GPU visible: user-target GPU tests run on a GPU machine", allow_module_level=True)

from flashprof.profiling.correctness import check  # noqa: E402
from flashprof.profiling.launches import profiler_kernels  # noqa: E402
from flashprof.profiling.targets import resolve  # noqa: E402
from flashprof.profiling.workload import Shape, make_inputs  # noqa: E402

pytestmark = pytest.mark.gpu
ROOT = Path(__file__).resolve().parent.parent
SHAPE_ARGS = ["--seq", "256", "--batch", "2", "--heads", "4"]

# Each body defines attention(q, k, v); `ref` is the plain-math attention in the inputs' dtype.
HEADER = "import torch\nfrom flashprof.profiling.reference import math_attention as ref\n"
BAD = {
    "wrong_shape": ("def attention(q, k, v):\n    return ref(q, k, v).transpose(1, 2).contiguous()\n",
                    "returned shape (2, 4, 256, 128); expected (2, 256, 4, 128) (bshd"),
    "wrong_dtype": ("def attention(q, k, v):\n    return ref(q, k, v).float()\n",
                    "returned dtype torch.float32; expected torch.float16 (the inputs' dtype)"),
    "raises": ("def attention(q, k, v):\n    raise ValueError('head dim 128 not supported')\n",
               "raised ValueError: head dim 128 not supported"),
    "wrong_values": ("def attention(q, k, v):\n    return ref(q, k, v) + 0.01\n",
                     "fails the correctness check at 2x256x4x128 fp16: max error"),
    # A memoising function: computes once per input, then returns its cache without a launch.
    "launches_nothing": ("_cache = {}\ndef attention(q, k, v):\n"
                         "    key = (q.data_ptr(), k.data_ptr(), v.data_ptr())\n"
                         "    if key not in _cache:\n        _cache[key] = ref(q, k, v)\n    return _cache[key]\n",
                         "launched no CUDA kernel in one call: nothing to profile"),
    "too_many": ("def attention(q, k, v):\n    o = ref(q, k, v)\n    for _ in range(12):\n"
                 "        o.add_(0)\n    return o\n",
                 "more than MAX_LAUNCHES=8: raise MAX_LAUNCHES or pick some with KERNEL_REGEX="),
}


@pytest.fixture(scope="module")
def bad_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("byo_gpu")
    for name, (body, _) in BAD.items():
        (d / f"{name}.py").write_text(HEADER + body)
    ncu = d / "ncu"  # reached only if a refusal failed to happen first
    ncu.write_text(textwrap.dedent("""\
        #!/bin/sh
        if [ "$1" = "--version" ]; then echo "Version 2025.3.1.0"; exit 0; fi
        echo "==ERROR== the stand-in ncu was reached"; exit 1
    """))
    ncu.chmod(0o755)
    return d


@pytest.mark.parametrize("name", list(BAD))
def test_bad_target_refused_before_ncu(bad_dir, tmp_path, name):
    out = tmp_path / "reports"
    env = dict(os.environ, FLASHPROF_NCU=str(bad_dir / "ncu"), PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-m", "flashprof.profiling.profile", f"{bad_dir / name}.py:attention", *SHAPE_ARGS,
                        "--out-dir", str(out)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    lines = [ln for ln in p.stderr.splitlines() if not ln.startswith("[")]  # progress lines start with "["
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert len(lines) == 1 and lines[0].startswith("profile: error: ") and BAD[name][1] in lines[0], p.stderr
    assert "stand-in ncu was reached" not in p.stderr
    assert [f for f in out.rglob("*") if f.is_file()] == []


@pytest.mark.parametrize("example", ["torch_attention", "triton_attention"])
@pytest.mark.parametrize("dtype", ["fp16", "bf16"])
def test_examples_pass_the_gate(example, dtype):
    if example.startswith("triton"):
        pytest.importorskip("triton", reason="triton not installed")
    fn = resolve(f"examples/{example}.py:attention").callable()
    for shape in (Shape(2, 256, 4), Shape(1, 1024, 3), Shape(2, 4096, 2)):
        v = check(fn, shape, dtype)
        assert v.ok, f"{example} {dtype} {shape}: {v.reason}"


def test_triton_example_launches_one_kernel():
    pytest.importorskip("triton", reason="triton not installed")
    fn = resolve("examples/triton_attention.py:attention").callable()
    q, k, v = make_inputs(Shape(2, 1024, 4), "fp16", seed=0)
    fn(q, k, v)  # compile outside the count
    names = profiler_kernels(lambda: fn(q, k, v))
    assert names is not None, "the PyTorch profiler sees no kernels on this machine"
    assert len(names) == 1 and "_attn_fwd" in names[0], names
