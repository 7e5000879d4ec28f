"""Reading what the compiler printed, without running anything: ``ptxas -v`` logs
(registers, spills, stack, static shared memory per function) and ``cuobjdump --dump-sass``
text (instructions per function, the opcode histogram, the main loop: the backward branch
whose range holds the most HMMA). Pure functions of text; kernels/sass/static.py runs the tools.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Sequence

from flashprof.kernels.config import ConfigError
from flashprof.kernels.nvcc import BuildError

DTYPES = ("fp16", "bf16")
# How each dtype's element type appears in an Itanium-mangled template argument list.
_DTYPE_MANGLE = {"fp16": "6__half", "bf16": "13__nv_bfloat16"}


# ------------------------------------------------------------------ ptxas log
@dataclass(frozen=True)
class FunctionStats:
    function: str
    arch: str
    registers: int = 0
    spill_store_bytes: int = 0
    spill_load_bytes: int = 0
    stack_bytes: int = 0
    static_smem_bytes: int = 0


_RE_ENTRY = re.compile(r"Compiling entry function '([^']+)' for '(\w+)'")
_RE_PROPS = re.compile(r"Function properties for (\S+)")
_RE_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, "
                       r"(\d+) bytes spill loads")
_RE_USED = re.compile(r"Used (\d+) registers")
_RE_SMEM = re.compile(r"(\d+) bytes smem")


def ptxas_report(log: str | Path) -> dict[str, FunctionStats]:
    """Per kernel (entry) function of a ``ptxas -v`` log: registers, spills, stack, smem."""
    text = log.read_text() if isinstance(log, Path) else log
    raw: dict[str, dict] = {}
    entry = props = None
    for line in text.splitlines():
        if m := _RE_ENTRY.search(line):
            entry = m.group(1)
            raw.setdefault(entry, {"function": entry, "arch": m.group(2)})
        elif m := _RE_PROPS.search(line):
            props = m.group(1)
        elif (m := _RE_FRAME.search(line)) and props in raw:
            stack, st, ld = map(int, m.groups())
            raw[props].update(stack_bytes=stack, spill_store_bytes=st, spill_load_bytes=ld)
        elif (m := _RE_USED.search(line)) and entry in raw:
            raw[entry]["registers"] = int(m.group(1))
            if s := _RE_SMEM.search(line):
                raw[entry]["static_smem_bytes"] = int(s.group(1))
    return {k: FunctionStats(**v) for k, v in raw.items()}


def pick_function(names: Iterable[str], dtype: str) -> str:
    """The kernel instantiation for ``dtype`` among a cubin's functions."""
    if dtype not in _DTYPE_MANGLE:
        raise ConfigError(f"bad dtype {dtype!r}: expected one of {', '.join(DTYPES)}")
    names = list(names)
    hits = [n for n in names if _DTYPE_MANGLE[dtype] in n]
    if len(hits) > 1:  # helper kernels: prefer the attention kernel itself
        hits = [n for n in hits if "flash" in n.lower() or "fwd" in n.lower()] or hits
    if len(hits) != 1:
        raise BuildError(f"expected one {dtype} kernel function, found {hits or 'none'} "
                         f"among {names}")
    return hits[0]


# ----------------------------------------------------------------------- SASS
# "/*0a30*/  @!P0 HMMA.16816.F32 R4, R8, R12, R4 ;" -> (0x0a30, "HMMA", "R4, R8, R12, R4")
RE_INSN = re.compile(r"^\s*/\*([0-9a-fA-F]{4,})\*/\s+(.*?)\s*;")
RE_FUNC = re.compile(r"^\s*Function\s*:\s*(\S+)")
_RE_HEX = re.compile(r"0x([0-9a-fA-F]+)")


@dataclass(frozen=True)
class Insn:
    addr: int      # byte offset of the instruction in its function
    opcode: str    # base opcode, predicate and modifiers stripped ("HMMA")
    operands: str  # the rest of the instruction text ("R4, R8, R12, R4")


def parse_insns(text: str) -> dict[str, list[Insn]]:
    """Instructions, in address order, per function of ``cuobjdump --dump-sass`` text."""
    out: dict[str, list[Insn]] = {}
    cur: list[Insn] | None = None
    for line in text.splitlines():
        if m := RE_FUNC.match(line):
            cur = out.setdefault(m.group(1), [])
        elif cur is not None and (m := RE_INSN.match(line)):
            toks = m.group(2).lstrip("{ ").split(None, 1)
            if toks and toks[0].startswith("@"):
                toks = toks[1].split(None, 1) if len(toks) > 1 else []
            if toks:
                cur.append(Insn(int(m.group(1), 16), toks[0].split(".")[0],
                                toks[1] if len(toks) > 1 else ""))
    return out


def parse_sass(text: str) -> dict[str, Counter]:
    """Opcode histogram per function of ``cuobjdump --dump-sass`` text."""
    return {fn: Counter(i.opcode for i in insns) for fn, insns in parse_insns(text).items()}


def branch_target(insn: Insn) -> int | None:
    """Target address of a direct ``BRA`` (the last hex literal of its operands), else None."""
    if insn.opcode != "BRA":
        return None
    hits = _RE_HEX.findall(insn.operands)
    return int(hits[-1], 16) if hits else None


#: Tensor-core MMA opcodes that mark the KV loop: mma.sync (HMMA) and Hopper's wgmma (HGMMA).
MMA_OPCODES = ("HMMA", "HGMMA")


def find_main_loop(insns: Sequence[Insn], marker: str | tuple[str, ...] = MMA_OPCODES) -> tuple[int, int] | None:
    """(first, last) address of the main loop: the backward branch whose range
    [target, branch] holds the most ``marker`` instructions (the KV-block loop holds the
    tensor-core work: HMMA for mma.sync, HGMMA for wgmma). Ties go to the wider range, i.e. an outer loop over an inner one that
    holds the same HMMA. None if no backward branch encloses a marker instruction. A branch
    to itself (the ``BRA`` trap after EXIT) is not a loop, nor is a range that holds an EXIT:
    ptxas places the retry paths of barrier waits (mbarrier try_wait, setmaxnreg) after the
    function's exits, and their branches back would otherwise span the whole kernel. A KV
    loop stores nothing to global memory: a range that does (STG, the O epilogue) is a
    persistent kernel's loop over tiles, passed over while a loop without one holds markers."""
    addrs = [i.addr for i in insns]
    markers = (marker,) if isinstance(marker, str) else marker
    marks = [i.addr for i in insns if i.opcode in markers]
    exits = [i.addr for i in insns if i.opcode == "EXIT"]
    stores = [i.addr for i in insns if i.opcode == "STG"]
    best: tuple[int, int, int, int] | None = None  # (no store, markers, width, -first) -> largest wins
    span = None
    for i in insns:
        t = branch_target(i)
        if t is None or t >= i.addr or t < addrs[0]:
            continue
        if any(t <= a <= i.addr for a in exits):
            continue
        n = sum(t <= a <= i.addr for a in marks)
        key = (int(not any(t <= a <= i.addr for a in stores)), n, i.addr - t, -t)
        if n and (best is None or key > best):
            best, span = key, (t, i.addr)
    return span


def loop_opcode_counts(insns: Sequence[Insn], marker: str | tuple[str, ...] = MMA_OPCODES
                       ) -> tuple[Counter, tuple[int, int] | None]:
    """(opcode histogram of the main loop body, its address range); empty without a loop."""
    span = find_main_loop(insns, marker)
    if span is None:
        return Counter(), None
    return Counter(i.opcode for i in insns if span[0] <= i.addr <= span[1]), span
