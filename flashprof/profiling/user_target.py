"""Bring your own kernel: a user's attention callable as a profiling target.

A target spec is ``path/to/file.py:fn`` (a file, imported under a private module name with
its folder first on sys.path) or ``package.module:fn`` (an importable module); ``fn`` may be
a dotted attribute (``module:Class.method``). The callable is ``fn(q, k, v) -> o`` on the
suite's tensors: (batch, seq, heads, d) contiguous, the output the same shape and dtype.
A function that works in (batch, heads, seq, d) sets ``fn.layout = "bhsd"``; it then gets
zero-copy transposed views of the same memory (as PyTorch SDPA does in the references) and
its output is read back through the inverse view, so the adapter itself launches nothing.
A kernel built for one head count only (a compile-time stride, as the series' kernel 16 has)
sets ``fn.heads = N``: ``make bench`` then gates it at N heads instead of its small gate shape.

Loading (file, function, signature, layout) needs no GPU, so those mistakes are reported
before "no GPU"; wrong outputs, exceptions and launch counts are checked on the GPU.
"""
from __future__ import annotations

import hashlib
import importlib
import importlib.util
import inspect
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from flashprof.kernels.cli import FlashprofError

LAYOUTS = ("bshd", "bhsd")
#: Default limit on the kernels one call may launch inside the NVTX range (MAX_LAUNCHES=).
MAX_LAUNCHES = 8


def is_spec(value: str) -> bool:
    """A KERNEL value naming user code rather than kernels 1-7 or a reference."""
    return ":" in value


@dataclass(frozen=True)
class UserSpec:
    spec: str            # as given: "examples/x.py:attention" or "pkg.mod:fn"
    module: str          # the file path or the module name
    attr: str            # "fn" or "Class.method"
    is_file: bool

    @property
    def name(self) -> str:
        """Report stem and the sidecar's "kernel": '<file stem or module>-<fn>', safe characters only."""
        base = Path(self.module).stem if self.is_file else self.module
        return re.sub(r"[^A-Za-z0-9_-]", "_", f"{base}-{self.attr}")


def parse_spec(spec: str) -> UserSpec:
    module, sep, attr = spec.rpartition(":")
    if not sep or not module.strip() or not attr.strip():
        raise FlashprofError(f"bad target {spec!r}: write path/to/file.py:function or module:function")
    if not all(p.isidentifier() for p in attr.split(".")):
        raise FlashprofError(f"bad target {spec!r}: {attr!r} is not a Python name")
    is_file = module.endswith(".py") or "/" in module
    if not is_file and not all(p.isidentifier() for p in module.split(".")):
        raise FlashprofError(f"bad target {spec!r}: {module!r} is neither a .py file nor a module name")
    return UserSpec(spec, module, attr, is_file)


def _one_line(e: BaseException) -> str:
    text = str(e).strip().splitlines()
    msg = text[0] if text else ""
    return f"{type(e).__name__}: {msg[:200]}" if msg else type(e).__name__


def _import(us: UserSpec):
    if not us.is_file:
        try:
            return importlib.import_module(us.module)
        except ModuleNotFoundError as e:
            if e.name and us.module.startswith(e.name):
                raise FlashprofError(f"target {us.spec}: no module named {e.name!r} "
                                     "(is it installed in this Python?)") from None
            raise FlashprofError(f"target {us.spec}: importing {us.module} failed: {_one_line(e)}") from None
        except Exception as e:  # the user's module code raised while importing
            raise FlashprofError(f"target {us.spec}: importing {us.module} failed: {_one_line(e)}") from None
    path = Path(us.module).expanduser().resolve()
    if not path.is_file():
        raise FlashprofError(f"target {us.spec}: no such file {us.module}")
    mod_name = "flashprof_user_" + hashlib.sha1(str(path).encode()).hexdigest()[:10]
    if mod_name in sys.modules:
        return sys.modules[mod_name]
    loader_spec = importlib.util.spec_from_file_location(mod_name, path)
    if loader_spec is None or loader_spec.loader is None:
        raise FlashprofError(f"target {us.spec}: cannot load {us.module} as Python source")
    module = importlib.util.module_from_spec(loader_spec)
    if str(path.parent) not in sys.path:  # last, so a neighbour never shadows the suite's packages
        sys.path.append(str(path.parent))
    sys.modules[mod_name] = module  # Triton and dataclasses look their module up by name
    try:
        loader_spec.loader.exec_module(module)
    except Exception as e:  # SyntaxError, a missing import, the file's own code raising
        sys.modules.pop(mod_name, None)
        raise FlashprofError(f"target {us.spec}: importing {us.module} failed: {_one_line(e)}") from None
    return module


def load(spec: str | UserSpec):
    """The user's callable, checked for everything that needs no GPU."""
    us = spec if isinstance(spec, UserSpec) else parse_spec(spec)
    obj = _import(us)
    owner = us.module
    for part in us.attr.split("."):
        if not hasattr(obj, part):
            raise FlashprofError(f"target {us.spec}: {owner} has no attribute {part!r}")
        obj, owner = getattr(obj, part), part
    fn = obj
    if not callable(fn):
        raise FlashprofError(f"target {us.spec}: {us.attr} is a {type(fn).__name__}, not a function")
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):
        sig = None  # a builtin or extension function: its arity shows when it is called
    if sig is not None:
        try:
            sig.bind(object(), object(), object())
        except TypeError:
            raise FlashprofError(f"target {us.spec}: {us.attr}{sig} cannot be called as "
                                 f"{us.attr}(q, k, v)") from None
    layout = layout_of(fn, us.spec)
    return fn, layout


def layout_of(fn, spec: str) -> str:
    layout = getattr(fn, "layout", "bshd")
    if layout not in LAYOUTS:
        raise FlashprofError(f"target {spec}: layout {layout!r} is not one of {', '.join(LAYOUTS)}")
    return layout


def title_of(fn, us: UserSpec) -> str:
    title = getattr(fn, "title", None)
    if isinstance(title, str) and title.strip():
        return title.strip()
    doc = inspect.getdoc(fn) or ""
    first = doc.strip().splitlines()[0].strip() if doc.strip() else ""
    return f"{us.name}: {first}" if first else us.spec


def check_output(res, q_shape: tuple, dtype, device, layout: str, spec: str) -> None:
    """Raise the one-line error for an output that is not (B, S, H, D) of the inputs' dtype."""
    if not all(hasattr(res, a) for a in ("shape", "dtype", "device")):
        raise FlashprofError(f"target {spec} returned {type(res).__name__}, not a tensor")
    b, s, h, d = q_shape
    want = (b, s, h, d) if layout == "bshd" else (b, h, s, d)
    if tuple(res.shape) != want:
        raise FlashprofError(f"target {spec} returned shape {tuple(res.shape)}; expected {want} "
                             f"({layout}, the layout of its inputs)")
    if res.dtype != dtype:
        raise FlashprofError(f"target {spec} returned dtype {res.dtype}; expected {dtype} (the inputs' dtype)")
    if res.device != device:
        raise FlashprofError(f"target {spec} returned a tensor on {res.device}; expected {device}")


def adapt(fn, layout: str, spec: str):
    """fn(q, k, v) -> o  as the suite's  run(q, k, v, out=None) -> o  on (B, S, H, D) tensors."""

    def run(q, k, v, out=None):
        args = (q, k, v) if layout == "bshd" else tuple(x.transpose(1, 2) for x in (q, k, v))
        try:
            res = fn(*args)
        except Exception as e:  # the user's code: any failure becomes one line
            raise FlashprofError(f"target {spec} raised {_one_line(e)}") from None
        check_output(res, tuple(q.shape), q.dtype, q.device, layout, spec)
        res = res if layout == "bshd" else res.transpose(1, 2)
        if out is not None:
            out.copy_(res)
            return out
        return res

    run.__name__ = f"user_{getattr(fn, '__name__', 'fn')}"
    run.wrapped, run.layout = fn, layout
    return run


def source_info(fn, us: UserSpec) -> dict:
    """Where the code came from: file, sha256 of its bytes, and git state if it is in a repository."""
    path = Path(us.module).expanduser().resolve() if us.is_file else None
    if path is None:
        try:
            found = inspect.getsourcefile(inspect.unwrap(fn))
        except TypeError:
            found = getattr(sys.modules.get(us.module), "__file__", None)
        path = Path(found).resolve() if found else None
    info = {"spec": us.spec, "name": us.name, "attr": us.attr, "layout": layout_of(fn, us.spec),
            "file": str(path) if path else None, "sha256": None, "git": None}
    if path and path.is_file():
        info["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
        info["git"] = git_state(path)
    return info


def git_state(path: Path) -> dict | None:
    def git(*args: str) -> str | None:
        try:
            p = subprocess.run(["git", "-C", str(path.parent), *args], capture_output=True, text=True, timeout=20)
        except (OSError, subprocess.SubprocessError):
            return None
        return p.stdout.strip() if p.returncode == 0 else None

    top = git("rev-parse", "--show-toplevel")
    if not top:
        return None
    tracked = git("ls-files", "--error-unmatch", str(path)) is not None
    status = git("status", "--porcelain", "--", str(path))
    return {"repository": top, "revision": git("rev-parse", "HEAD"), "tracked": tracked,
            "file_modified": bool(status) if tracked else None,
            "path_in_repo": str(path.relative_to(Path(top).resolve())) if tracked else None}


def fixed_heads(fn) -> int | None:
    """The head count a user function declares it is limited to (``fn.heads``), or None
    (also for ``fn`` None: not a user target)."""
    h = getattr(getattr(fn, "wrapped", fn), "heads", None) if fn is not None else None
    return h if isinstance(h, int) and not isinstance(h, bool) and h > 0 else None
