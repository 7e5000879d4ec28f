"""The ceilings microbenchmarks (CUDA sources in this folder) and their build.

Input: a target arch. Output: the benchmark binary, or a cubin of it for the static SASS
check, compiled by the nvcc that kernels/toolchain.py finds and cached under
build/ceilings/ by a hash of the sources, flags and compiler version. Also: the SASS of a
cubin as (mnemonic, operands) per function, and the dependent-chain test the latency
benchmarks must pass. No GPU needed for any of this.
"""
from __future__ import annotations

import hashlib
import re
from pathlib import Path

from flashprof.kernels.sass import static as sass
from flashprof.paths import BUILD
from flashprof.kernels.nvcc import build_file, link_flags, nvcc_path
from flashprof.kernels.toolchain import find_toolchain

SRC_DIR = Path(__file__).resolve().parent
ENTRY = SRC_DIR / "ceilings.cu"
PEAKS_FILE = SRC_DIR / "peaks.json"
BUILD_DIR = BUILD / "ceilings"
NVCC_FLAGS = ("-O3", "-std=c++17", "-lineinfo")
# Scaling rows are judged against the peak of the throughput row of the same instruction.
SCALING_PEAKS = {"hmma_16816_f32": "mma_f16_f32", "ldsm_x4": "ldsm_x4"}
_REG = re.compile(r"\bR(\d+)\b")


def scaling_peak_name(name: str) -> str:
    return SCALING_PEAKS.get(name, name)


def target(arch: str) -> str:
    """What nvcc compiles for: sm_90 becomes sm_90a, whose wgmma the benchmarks use (an
    sm_90a cubin runs on every sm_90 GPU, H100 and H200)."""
    return "sm_90a" if arch == "sm_90" else arch


def _sources() -> list[Path]:
    """This folder's CUDA files and the kernels' headers they include (kernels/csrc)."""
    own = [p for p in SRC_DIR.iterdir() if p.suffix in (".cu", ".cuh")]
    return sorted(own) + sorted(sass.CSRC.glob("*.cuh"))


def _cache_key(arch: str, mode: str) -> str:
    h = hashlib.sha256()
    for p in _sources():
        h.update(p.parent.name.encode() + b"/" + p.name.encode() + b"\0" + p.read_bytes() + b"\0")
    h.update(" ".join([*NVCC_FLAGS, target(arch), mode]).encode())
    h.update(find_toolchain("nvcc").nvcc_version.encode())
    return h.hexdigest()[:16]


def nvcc_command(arch: str, out: Path, *, cubin: bool = False) -> list[str]:
    """The nvcc command line for the binary (or, with ``cubin``, its device code only)."""
    sass.check_arch(arch)
    nvcc = nvcc_path()
    cmd = [nvcc, *NVCC_FLAGS, f"-arch={target(arch)}"]
    cmd += ["-cubin", "-Xptxas", "-v"] if cubin else link_flags(nvcc)
    return [*cmd, "-o", str(out), str(ENTRY)]


def build(arch: str, *, cubin: bool = False, force: bool = False) -> Path:
    """Compile (or reuse) the binary or cubin for ``arch``; the nvcc log lies beside it."""
    mode = "cubin" if cubin else "exe"
    out = BUILD_DIR / f"{arch}-{mode}-{_cache_key(arch, mode)}" / ("ceilings.cubin" if cubin else "ceilings")
    if out.exists() and not force:
        return out
    _, log = build_file(lambda tmp: nvcc_command(arch, tmp, cubin=cubin), out,
                        f"the ceilings benchmarks ({arch})")
    out.with_name(out.name + ".log").write_text(log)
    return out


def listing(cubin: Path) -> dict[str, list[tuple[str, str]]]:
    """(full mnemonic, operands) of every instruction, per function, predicates dropped:
    ``HMMA.16816.F32.BF16`` stays whole, unlike flashprof.kernels.sass.static's base-opcode histograms."""
    out: dict[str, list[tuple[str, str]]] = {}
    cur = None
    for line in sass.dump_sass(cubin).splitlines():
        if m := sass.RE_FUNC.match(line):
            cur = out.setdefault(m.group(1), [])
        elif cur is not None and (m := sass.RE_INSN.match(line)):
            toks = m.group(2).split()
            if toks and toks[0].startswith("@"):
                toks = toks[1:]
            if toks:
                cur.append((toks[0], " ".join(toks[1:])))
    return out


def function(listings: dict[str, list], *parts: str) -> list[tuple[str, str]]:
    """The one function whose mangled name contains every part."""
    hits = [f for f in listings if all(p in f for p in parts)]
    if len(hits) != 1:
        raise KeyError(f"{len(hits)} functions match {parts}: {hits}")
    return listings[hits[0]]


def longest_chain(insns: list[tuple[str, str]], mnemonic: str) -> int:
    """Length of the longest run of ``mnemonic`` instructions (others in between are
    skipped, e.g. a loop counter) in which each one reads the register the one before it
    wrote (its first operand): a dependent chain. Independent instructions give 1."""
    best = run = 0
    prev_dest: str | None = None
    for mn, ops in insns:
        if mn != mnemonic:
            continue
        regs = _REG.findall(ops)
        if not regs:
            run, prev_dest = 0, None
            continue
        run = run + 1 if prev_dest is not None and prev_dest in regs[1:] else 1
        prev_dest = regs[0]
        best = max(best, run)
    return best
