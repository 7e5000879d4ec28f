"""User targets on the CPU: spec parsing, loading a callable from a file or a
module, the layout adapter and its output checks (with stand-in tensors: no torch needed),
the launch limit, and the source record of the sidecar. The end-to-end refusals through
real processes are in test_bad_inputs.py; the GPU-only ones in test_byo_gpu.py."""
from __future__ import annotations

import hashlib
import shutil
import subprocess
import textwrap

import pytest

from flashprof.kernels.cli import FlashprofError
from flashprof.profiling.launches import _short, check_count, check_limit, check_regex, matching, ncu_kernels
from flashprof.profiling.targets import parse_names, resolve
from flashprof.profiling.user_target import adapt, check_output, load, parse_spec, source_info, title_of


# ------------------------------------------------------------------ stand-in tensors
class T:
    """Just enough of a tensor for the adapter: shape, dtype, device, transpose, copy_."""

    def __init__(self, shape, dtype="fp16", device="cuda:0", tag="x"):
        self.shape, self.dtype, self.device, self.tag = tuple(shape), dtype, device, tag
        self.copied_from = None

    def transpose(self, a, b):
        s = list(self.shape)
        s[a], s[b] = s[b], s[a]
        return T(s, self.dtype, self.device, self.tag + f"^T{a}{b}")

    def copy_(self, other):
        self.copied_from = other
        return self


B, S, H, D = 2, 256, 4, 128


def qkv():
    return T((B, S, H, D), tag="q"), T((B, S, H, D), tag="k"), T((B, S, H, D), tag="v")


# ------------------------------------------------------------------ spec parsing
@pytest.mark.parametrize("spec,module,attr,is_file,name", [
    ("examples/triton_attention.py:attention", "examples/triton_attention.py", "attention", True,
     "triton_attention-attention"),
    ("flash_attn:flash_attn_func", "flash_attn", "flash_attn_func", False, "flash_attn-flash_attn_func"),
    ("pkg.sub:Cls.run", "pkg.sub", "Cls.run", False, "pkg_sub-Cls_run"),
    ("my kernels/attn v2.py:fwd", "my kernels/attn v2.py", "fwd", True, "attn_v2-fwd"),
])
def test_parse_spec(spec, module, attr, is_file, name):
    us = parse_spec(spec)
    assert (us.module, us.attr, us.is_file, us.name) == (module, attr, is_file, name)


@pytest.mark.parametrize("spec,words", [
    (":attention", "write path/to/file.py:function or module:function"),
    ("x.py:", "write path/to/file.py:function or module:function"),
    ("x.py:1fn", "'1fn' is not a Python name"),
    ("x.py:fn; rm -rf /", "is not a Python name"),
    ("my mod:fn", "'my mod' is neither a .py file nor a module name"),
])
def test_parse_spec_rejects(spec, words):
    with pytest.raises(FlashprofError) as e:
        parse_spec(spec)
    assert words in str(e.value) and "\n" not in str(e.value)


def test_parse_names_keeps_specs_beside_kernels():
    assert parse_names("6,examples/x.py:attention,ref") == ["6", "examples/x.py:attention", "ref"]
    assert "x.py:f" not in parse_names("all")


# ------------------------------------------------------------------ loading
def write(tmp_path, name, body):
    p = tmp_path / name
    p.write_text(textwrap.dedent(body))
    return p


def test_load_from_file_imports_neighbours(tmp_path):
    write(tmp_path, "helper_byo_t1.py", "SCALE = 3\n")
    f = write(tmp_path, "attn.py", """
        from helper_byo_t1 import SCALE
        def attention(q, k, v, causal=False):
            '''Scaled identity.'''
            return SCALE
        attention.layout = "bhsd"
    """)
    fn, layout = load(f"{f}:attention")
    assert fn(1, 2, 3) == 3 and layout == "bhsd"
    t = resolve(f"{f}:attention")
    assert (t.name, t.stem, t.config, t.kernel_regex) == ("attn-attention", "attn-attention", None, ".*")
    assert t.title == "attn-attention: Scaled identity."


def test_load_module_and_nested_attribute(tmp_path, monkeypatch):
    write(tmp_path, "byo_mod_t2.py", """
        class Kernels:
            @staticmethod
            def fwd(q, k, v):
                return "fwd"
        def star(*args):
            return len(args)
    """)
    monkeypatch.syspath_prepend(str(tmp_path))
    assert load("byo_mod_t2:Kernels.fwd")[0](1, 2, 3) == "fwd"
    assert load("byo_mod_t2:star")[0](1, 2, 3) == 3  # *args accepts (q, k, v)


@pytest.mark.parametrize("body,attr,words", [
    ("def attention(q, k):\n    return q\n", "attention",
     "attention(q, k) cannot be called as attention(q, k, v)"),
    ("def attention(q, k, v, scale):\n    return q\n", "attention",
     "attention(q, k, v, scale) cannot be called as attention(q, k, v)"),
    ("attention = 42\n", "attention", "attention is a int, not a function"),
    ("def attention(q, k, v):\n    return q\n", "attn", "has no attribute 'attn'"),
    ("raise RuntimeError('needs CUDA 13\\nsecond line')\n", "attention",
     "failed: RuntimeError: needs CUDA 13"),
    ("def attention(q, k, v)\n    return q\n", "attention", "failed: SyntaxError: "),
    ("import no_such_module_byo\n", "attention", "failed: ModuleNotFoundError: No module named 'no_such_module_byo'"),
    ("def attention(q, k, v):\n    return q\nattention.layout = 'sbhd'\n", "attention",
     "layout 'sbhd' is not one of bshd, bhsd"),
])
def test_load_refusals(tmp_path, body, attr, words):
    f = tmp_path / f"bad_{abs(hash(body)) % 10**8}.py"
    f.write_text(body)
    with pytest.raises(FlashprofError) as e:
        load(f"{f}:{attr}")
    msg = str(e.value)
    assert msg.startswith(f"target {f}:{attr}: ") and words in msg and "\n" not in msg


def test_load_missing_file_and_module(tmp_path):
    with pytest.raises(FlashprofError, match=r"no such file .*nowhere\.py$"):
        load(f"{tmp_path}/nowhere.py:attention")
    with pytest.raises(FlashprofError, match=r"no module named 'no_such_pkg_byo' \(is it installed"):
        load("no_such_pkg_byo.sub:attention")


# ------------------------------------------------------------------ adapter
def test_adapter_bshd_passes_tensors_through_and_fills_out():
    seen = []

    def fn(q, k, v):
        seen.append((q.tag, k.tag, v.tag))
        return T(q.shape, tag="o")

    run = adapt(fn, "bshd", "x.py:fn")
    q, k, v = qkv()
    assert run(q, k, v).tag == "o" and seen == [("q", "k", "v")]
    out = T((B, S, H, D), tag="out")
    assert run(q, k, v, out=out) is out and out.copied_from.tag == "o"


def test_adapter_bhsd_gives_transposed_views_and_reads_back():
    def fn(q, k, v):
        assert q.shape == (B, H, S, D)
        return T(q.shape, tag="o")

    res = adapt(fn, "bhsd", "x.py:fn")(*qkv())
    assert res.shape == (B, S, H, D) and res.tag == "o^T12"


@pytest.mark.parametrize("layout,ret,words", [
    ("bshd", lambda q: None, "returned NoneType, not a tensor"),
    ("bshd", lambda q: (q, None), "returned tuple, not a tensor"),
    ("bshd", lambda q: T((B, H, S, D)), f"returned shape {(B, H, S, D)}; expected {(B, S, H, D)} (bshd"),
    ("bhsd", lambda q: T((B, S, H, D)), f"returned shape {(B, S, H, D)}; expected {(B, H, S, D)} (bhsd"),
    ("bshd", lambda q: T(q.shape, dtype="fp32"), "returned dtype fp32; expected fp16 (the inputs' dtype)"),
    ("bshd", lambda q: T(q.shape, device="cpu"), "returned a tensor on cpu; expected cuda:0"),
])
def test_adapter_refuses_wrong_outputs(layout, ret, words):
    run = adapt(lambda q, k, v: ret(q), layout, "x.py:fn")
    with pytest.raises(FlashprofError) as e:
        run(*qkv())
    assert str(e.value).startswith("target x.py:fn returned ") and words in str(e.value)


def test_adapter_turns_exceptions_into_one_line():
    def fn(q, k, v):
        raise ValueError("BLOCK_M must divide seq\n  (traceback-ish detail)")

    with pytest.raises(FlashprofError) as e:
        adapt(fn, "bshd", "x.py:fn")(*qkv())
    assert str(e.value) == "target x.py:fn raised ValueError: BLOCK_M must divide seq"


def test_check_output_accepts_the_right_tensor():
    check_output(T((B, S, H, D)), (B, S, H, D), "fp16", "cuda:0", "bshd", "s")  # no exception


def test_title_order(tmp_path):
    us = parse_spec("a.py:f")

    def f(q, k, v):
        """First line.

        More."""

    assert title_of(f, us) == "a-f: First line."
    f.title = "  Mine  "
    assert title_of(f, us) == "Mine"
    assert title_of(lambda q, k, v: q, us) == "a.py:f"


# ------------------------------------------------------------------ launches
NCU_OUT = ('==PROF== Connected to process 77 (/usr/bin/python3)\n'
           '==PROF== Profiling "_attn_fwd" - 0: 0%....50%....100% - 40 passes\n'
           '==PROF== Profiling "elementwise_kernel" - 1: 0%....50%....100% - 40 passes\n'
           '==PROF== Disconnected from process 77\n==PROF== Report: /r/x.ncu-rep\n')


def test_ncu_kernels_from_output():
    assert ncu_kernels(NCU_OUT) == ["_attn_fwd", "elementwise_kernel"]
    assert ncu_kernels("==WARNING== No kernels were profiled.\n") == []


def test_check_count():
    check_count(["a"], 1, "x.py:f")
    with pytest.raises(FlashprofError) as e:
        check_count([], 8, "x.py:f")
    assert str(e.value) == "target x.py:f launched no CUDA kernel in one call: nothing to profile"
    with pytest.raises(FlashprofError, match="launched no kernel matching KERNEL_REGEX=gemm in one call"):
        check_count([], 8, "x.py:f", "gemm")
    names = ["void at::native::copy_kernel<4>(int)", "gemm_a", "gemm_b", "copy_kernel", "softmax"]
    with pytest.raises(FlashprofError) as e:
        check_count(names, 4, "x.py:f")
    assert str(e.value) == ("target x.py:f launched 5 kernels in one call (copy_kernel, gemm_a, gemm_b, ...), "
                            "more than MAX_LAUNCHES=4: raise MAX_LAUNCHES or pick some with KERNEL_REGEX=")


def test_short_names_and_matching():
    full = "void at::native::(anonymous namespace)::cunn_SoftMaxForward<8, c10::Half, float>(c10::Half*, int)"
    assert _short(full) == "cunn_SoftMaxForward"
    assert _short("_attn_fwd") == "_attn_fwd"
    assert matching([full, "_attn_fwd"], "^_attn") == ["_attn_fwd"]
    assert matching([full, "_attn_fwd"], None) == [full, "_attn_fwd"]


@pytest.mark.parametrize("fn,arg,words", [
    (check_regex, "(", "bad KERNEL_REGEX '('"), (check_regex, " ", "KERNEL_REGEX is empty"),
    (check_limit, 0, "bad MAX_LAUNCHES 0"), (check_limit, -3, "bad MAX_LAUNCHES -3"),
])
def test_bad_regex_and_limit(fn, arg, words):
    with pytest.raises(FlashprofError, match=words.replace("(", r"\(")):
        fn(arg)


# ------------------------------------------------------------------ source record
def test_source_info_outside_git(tmp_path):
    f = write(tmp_path, "k.py", "def attention(q, k, v):\n    return q\n")
    fn, _ = load(f"{f}:attention")
    info = source_info(fn, parse_spec(f"{f}:attention"))
    assert info["sha256"] == hashlib.sha256(f.read_bytes()).hexdigest()
    assert info["file"] == str(f.resolve()) and info["layout"] == "bshd" and info["name"] == "k-attention"
    if subprocess.run(["git", "-C", str(tmp_path), "rev-parse"], capture_output=True).returncode != 0:
        assert info["git"] is None


@pytest.mark.skipif(not shutil.which("git"), reason="git is not installed")
def test_source_info_git_state(tmp_path):
    repo = tmp_path / "repo"
    (repo / "src").mkdir(parents=True)
    f = write(repo / "src", "k.py", "def attention(q, k, v):\n    return q\n")
    git = ["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run(git + ["init", "-q"], check=True)
    us = parse_spec(f"{f}:attention")
    fn, _ = load(us)
    untracked = source_info(fn, us)["git"]
    assert untracked["tracked"] is False and untracked["revision"] is None
    subprocess.run(git + ["add", "src/k.py"], check=True)
    subprocess.run(git + ["commit", "-qm", "k"], check=True)
    head = subprocess.run(git + ["rev-parse", "HEAD"], capture_output=True, text=True, check=True).stdout.strip()
    clean = source_info(fn, us)["git"]
    assert clean == {"repository": str(repo.resolve()), "revision": head, "tracked": True,
                     "file_modified": False, "path_in_repo": "src/k.py"}
    f.write_text(f.read_text() + "# edited\n")
    assert source_info(fn, us)["git"]["file_modified"] is True


# ------------------------------------------------------------------ fixed head count
def test_a_declared_head_count_reaches_the_bench_gate_through_the_adapter(tmp_path):
    from flashprof.profiling.user_target import fixed_heads

    f = tmp_path / "fixed.py"
    f.write_text(textwrap.dedent("""
        def k16(q, k, v):
            return q
        k16.heads = 16
        def free(q, k, v):
            return q
        def odd(q, k, v):
            return q
        odd.heads = True
    """))
    got = {n: fixed_heads(resolve(f"{f}:{n}").user_fn) for n in ("k16", "free", "odd")}
    assert got == {"k16": 16, "free": None, "odd": None}  # a bool is no head count
