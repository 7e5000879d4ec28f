"""The series' kernels (sonnyli/flash_attention_from_scratch) as flashprof user targets: the
configurations its README measured on the A100 and the RTX 3090 (devjobs/series/configs.tsv),
each built from the series' own source for the GPU at hand (``launch.cu``; mma.sync path, no
sm_XYa features) and run like the series' host code runs it.

    make profile TARGET=devjobs/series/series_targets.py:k16_A100
    make bench TARGET=devjobs/series/series_targets.py:k7,devjobs/series/series_targets.py:k16_A100

SERIES_SRC names a checkout (or ``git archive``) of the companion repository at the commit
in devjobs/series_sass.sh's provenance (58b7e33); default ``.series/`` in the repository
root, which .git/info/exclude keeps out of commits. Each config is built once into
build/series/<listing>_<arch>.so with the series' own nvcc flags (its setup.py), the
architecture swapped for this GPU's; ``build_all`` builds them in parallel.
"""
from __future__ import annotations

import ctypes
import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
CONFIGS = HERE / "configs.tsv"
BUILD_DIR = REPO / "build" / "series"
# The series' setup.py flags that shape code (devjobs/series_sass.sh lists the same).
FLAGS = ["-std=c++20", "--use_fast_math", "--generate-line-info", "--expt-relaxed-constexpr", "-O3",
         "-U__CUDA_NO_HALF_OPERATORS__", "-U__CUDA_NO_HALF_CONVERSIONS__", "-U__CUDA_NO_HALF2_OPERATORS__",
         "-U__CUDA_NO_BFLOAT16_CONVERSIONS__"]
SHARED = ["-shared", "-Xcompiler", "-fPIC", "-Xptxas", "-v"]


def source_root() -> Path:
    return Path(os.environ.get("SERIES_SRC", REPO / ".series")).resolve()


def listings(measured_only: bool = True) -> dict[str, dict]:
    """listing -> {kernel, measured_on, src_dir, config} from configs.tsv (measured ones by default)."""
    out = {}
    for line in CONFIGS.read_text().splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        listing, kernel, measured, src_dir, cfg = line.split("\t")
        if measured_only and measured == "-":
            continue
        out[listing] = {"kernel": int(kernel), "measured_on": measured, "src_dir": src_dir, "config": cfg}
    return out


def fn_name(listing: str) -> str:
    """k1 .. k6, k7 (the 64x64 swizzled listing both GPUs ran), k8_A100, k8_RTX3090, ..."""
    if listing == "7_64_64_swizzling":
        return "k7"
    return f"k{listing}"


def arch_of_device() -> str:
    import torch

    major, minor = torch.cuda.get_device_capability()
    return f"sm_{major}{minor}"


def nvcc() -> str:
    from flashprof.kernels.nvcc import nvcc_path

    return nvcc_path()


def build(listing: str, arch: str | None = None) -> Path:
    """nvcc -> build/series/<listing>_<arch>.so (reused when present); ptxas -v beside it."""
    from flashprof.kernels.nvcc import link_flags

    info = listings(measured_only=False)[listing]
    arch = arch or arch_of_device()
    out = BUILD_DIR / f"{listing}_{arch}.so"
    if out.exists():
        return out
    inc = source_root() / info["src_dir"] / "include"
    if not (inc / "forward_kernel.cuh").is_file():
        raise FileNotFoundError(f"{inc}/forward_kernel.cuh missing: set SERIES_SRC to a checkout of the series")
    BUILD_DIR.mkdir(parents=True, exist_ok=True)
    cfg_h = BUILD_DIR / f"{listing}.cfg.h"
    cfg_h.write_text(f"#define SERIES_CFG {info['config']}\n")
    nv = nvcc()
    return _compile([nv, *FLAGS, f"-gencode=arch=compute_{arch[3:]},code={arch}", *SHARED, *link_flags(nv),
                     "-include", str(cfg_h), "-I", str(HERE / "torch_stub"), "-I", str(inc), str(HERE / "launch.cu")],
                    out, f"series {listing} ({arch})")


def _compile(cmd: list[str], out: Path, label: str) -> Path:
    """nvcc ``cmd`` -o a temporary file, renamed to ``out`` once it built; the command and its
    output (ptxas -v) beside it as <out stem>.ptxas; RuntimeError with nvcc's first line if not."""
    tmp = out.with_name(f".{out.stem}.{os.getpid()}.tmp.so")
    proc = subprocess.run([*cmd, "-o", str(tmp)], capture_output=True, text=True)
    out.with_suffix(".ptxas").write_text(" ".join([*cmd, "-o", str(tmp)]) + "\n" + proc.stdout + proc.stderr)
    if proc.returncode != 0 or not tmp.exists():
        raise RuntimeError(f"{label}: nvcc failed: {(proc.stderr or proc.stdout).strip().splitlines()[:1]}")
    os.replace(tmp, out)
    return out


def build_all(arch: str | None = None, jobs: int = 16) -> dict[str, Path]:
    """Every measured listing, built in parallel."""
    names = list(listings())
    with ThreadPoolExecutor(jobs) as ex:
        return dict(zip(names, ex.map(lambda n: build(n, arch), names)))


class _Built:
    """One built shared library that runs one kernel: ``<prefix>_config(int[4])`` gives B_r, B_c,
    n_warps, d_head; ``<prefix>_fwd(ptrs..., batch, seq, heads, stream)`` launches it."""

    heads: int | None = None

    def __init__(self, label: str, path: Path, prefix: str, n_ptrs: int):
        self.label = label
        self.lib = ctypes.CDLL(str(path))
        self.fwd = getattr(self.lib, f"{prefix}_fwd")
        self.fwd.restype = ctypes.c_int
        self.fwd.argtypes = [ctypes.c_void_p] * n_ptrs + [ctypes.c_int] * 3 + [ctypes.c_void_p]
        dims = (ctypes.c_int * 4)()
        getattr(self.lib, f"{prefix}_config")(dims)
        self.B_r, self.B_c, self.n_warps, self.d_head = list(dims)

    def shape(self, q, k, v) -> tuple[int, int, int]:
        """(B, S, H) of fp16 (B, S, H, d) contiguous q, k, v this kernel runs; ValueError otherwise."""
        import torch

        if q.dtype != torch.float16 or q.shape[-1] != self.d_head:
            raise ValueError(f"{self.label}: fp16 with d = {self.d_head} only (got {q.dtype}, d = {q.shape[-1]})")
        if q.shape != k.shape or q.shape != v.shape or not all(t.is_contiguous() for t in (q, k, v)):
            raise ValueError(f"{self.label}: q, k, v of one contiguous (B, S, H, d) shape")
        b, s, h, _ = q.shape
        if self.heads is not None and h != self.heads:
            raise ValueError(f"{self.label}: built for H = {self.heads} heads only (its N_HEADS), got {h}")
        if s % self.B_r or s % self.B_c:
            raise ValueError(f"{self.label}: S = {s} is not a multiple of its {self.B_r} x {self.B_c} tile")
        return b, s, h

    def launch(self, *ptrs_and_dims) -> None:
        import torch

        err = self.fwd(*ptrs_and_dims, torch.cuda.current_stream().cuda_stream)
        if err:
            raise RuntimeError(f"{self.label}: launch failed with cudaError {err}")


class SeriesKernel(_Built):
    """fn(q, k, v) -> o over one built listing (fp16, (B, S, H, d) contiguous)."""

    def __init__(self, listing: str):
        super().__init__(f"series {listing}", build(listing), "series", 4)
        self.listing = listing
        self.heads = fixed_heads(listing)

    def __call__(self, q, k, v):
        import torch

        b, s, h = self.shape(q, k, v)
        o = torch.empty_like(q)
        self.launch(q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), b, s, h)
        return o


def fixed_heads(listing: str) -> int | None:
    """Kernel 16 ("static GMEM stride") compiles the head count into its global-memory stride
    (common.h: #define N_HEADS 16): it runs only at that many heads."""
    common = source_root() / listings(measured_only=False)[listing]["src_dir"] / "include" / "common.h"
    try:
        m = re.search(r"#define\s+N_HEADS\s+(\d+)", common.read_text())
    except OSError:
        return None
    return int(m.group(1)) if m else None


# The FA2 reference the series measured, from the author's fork (devjobs/series_fa2_sass.sh,
# reports/sass/series/fa2_provenance.json), built the same way for the GPU at hand:
# launch_fa2.cu around the fork's headers, its setup.py flags for the flash_attn_2 extension.
FA2_FLAGS = ["-O3", "-std=c++17", "-U__CUDA_NO_HALF_OPERATORS__", "-U__CUDA_NO_HALF_CONVERSIONS__",
             "-U__CUDA_NO_HALF2_OPERATORS__", "-U__CUDA_NO_BFLOAT16_CONVERSIONS__", "--expt-relaxed-constexpr",
             "--expt-extended-lambda", "--use_fast_math", "-lineinfo", "-DFLASHATTENTION_DISABLE_BACKWARD",
             "-DFLASHATTENTION_DISABLE_DROPOUT", "-DFLASHATTENTION_DISABLE_ALIBI", "-DFLASHATTENTION_DISABLE_SOFTCAP",
             "-DFLASHATTENTION_DISABLE_UNEVEN_K", "-DFLASHATTENTION_DISABLE_LOCAL"]
# listing -> kBlockN: 64 is what ran on the A100 (sm_80), 32 on the RTX 3090 (sm_86)
FA2_LISTINGS = {"fa2_official": 64, "fa2_official_bn32": 32}


def fa2_root() -> Path:
    """FA2_SRC: a folder with csrc/flash_attn/src (sonnyli/flash-attention @ 84623a9) and
    cutlass/include (NVIDIA/cutlass @ e9627ce); default build/fa2src, unpacked on first use
    from .fa2src/fa2src.tar.xz (kept out of commits by .git/info/exclude)."""
    root = Path(os.environ.get("FA2_SRC", REPO / "build" / "fa2src")).resolve()
    packed = REPO / ".fa2src" / "fa2src.tar.xz"
    if not (root / "csrc" / "flash_attn" / "src" / "flash.h").is_file() and packed.is_file():
        root.mkdir(parents=True, exist_ok=True)
        subprocess.run(["tar", "xJf", str(packed), "-C", str(root)], check=True)
    if not (root / "csrc" / "flash_attn" / "src" / "flash.h").is_file():
        raise FileNotFoundError(f"{root}/csrc/flash_attn/src/flash.h missing: set FA2_SRC to the fork and CUTLASS")
    return root


def build_fa2(listing: str, arch: str | None = None) -> Path:
    """nvcc -> build/series/<listing>_<arch>.so (reused when present); ptxas -v beside it."""
    from flashprof.kernels.nvcc import link_flags

    arch = arch or arch_of_device()
    out = BUILD_DIR / f"{listing}_{arch}.so"
    if out.exists():
        return out
    root = fa2_root()
    src = root / "csrc" / "flash_attn"
    BUILD_DIR.mkdir(parents=True, exist_ok=True)
    nv = nvcc()
    return _compile([nv, *FA2_FLAGS, f"-DFA2_BLOCK_N={FA2_LISTINGS[listing]}", f"-gencode=arch=compute_{arch[3:]},code={arch}",
                     *SHARED, *link_flags(nv), "-I", str(HERE / "fa2" / "torch_stub"), "-I", str(src), "-I", str(src / "src"),
                     "-I", str(root / "cutlass" / "include"), str(HERE / "fa2" / "launch_fa2.cu")],
                    out, f"{listing} ({arch})")


class Fa2Official(_Built):
    """fn(q, k, v) -> o over the fork's FA2 kernel (fp16, (B, S, H, 128) contiguous)."""

    def __init__(self, listing: str):
        super().__init__(listing, build_fa2(listing), "fa2", 5)
        self.listing = listing

    def __call__(self, q, k, v):
        import torch

        b, s, h = self.shape(q, k, v)
        o = torch.empty_like(q)
        lse = torch.empty((b, h, s), dtype=torch.float32, device=q.device)
        self.launch(q.data_ptr(), k.data_ptr(), v.data_ptr(), o.data_ptr(), lse.data_ptr(), b, s, h)
        return o


_loaded: dict[str, object] = {}


def _make(listing: str, info: dict):
    def fn(q, k, v):
        if listing not in _loaded:
            _loaded[listing] = SeriesKernel(listing)
        return _loaded[listing](q, k, v)

    tile = info["config"].split(",")
    fn.__name__ = fn_name(listing)
    fn.__doc__ = (f"The series' kernel {info['kernel']} (listing {listing}, measured on {info['measured_on']}), "
                  f"{tile[2].strip()} x {tile[3].strip()} tile, {tile[4].strip()} warps.")
    fn.heads = fixed_heads(listing)
    fn.title = f"series K{info['kernel']}" + (f" ({listing.split('_', 1)[1]} config)" if "_" in listing and info["kernel"] >= 8 else "")
    return fn


for _listing, _info in listings().items():
    globals()[fn_name(_listing)] = _make(_listing, _info)


def _make_fa2(listing: str, block_n: int):
    def fn(q, k, v):
        if listing not in _loaded:
            _loaded[listing] = Fa2Official(listing)
        return _loaded[listing](q, k, v)

    fn.__name__ = listing
    fn.__doc__ = (f"FA2 as the series measured it (sonnyli/flash-attention @ 84623a9, --use_fast_math), "
                  f"128 x {block_n} tile, 4 warps: the tile run_mha_fwd_hdim128 picks on "
                  f"{'the A100 (sm_80)' if block_n == 64 else 'the RTX 3090 (sm_86)'}.")
    fn.title = f"FA2 official (128x{block_n})"
    return fn


for _listing, _bn in FA2_LISTINGS.items():
    globals()[_listing] = _make_fa2(_listing, _bn)
