"""SASS instructions with their scheduling control codes, decoded from the raw encodings.

Input: the text of ``cuobjdump -sass`` (or ``nvdisasm -hex``-style) output, where every
instruction line carries ``/*ADDR*/ TEXT ; /* 0xLOW64 */`` and the next line
``/* 0xHIGH64 */``. Output: ``Inst`` records (address, opcode with modifiers, operands,
predicate, and the control fields), per function.

Bit layout (Volta, Turing, Ampere, Hopper: 128-bit instructions). The scheduling
control information sits in the top 23 bits of the 128-bit word, bits 105..127, i.e.
bits 41..63 of the high 64-bit word. From least to most significant:

    bits  0-3   stall count: cycles the scheduler waits before this warp issues again
    bit   4     yield flag
    bits  5-7   write dependency barrier (scoreboard 0-5 set at completion; 7 = none)
    bits  8-10  read dependency barrier (released once the sources are read; 7 = none)
    bits 11-16  wait mask: the barriers (bit i = scoreboard i) that must be clear first
    bits 17-20  operand reuse cache flags

Sources for the layout: Jia, Maggioni, Smith, Scarpazza, "Dissecting the NVIDIA Turing
T4 GPU via Microbenchmarking" (2019), section 2.1 "Control information" (Volta/Turing
128-bit encoding, same field order and widths); CuAssembler's documentation of the
control code ("CuControlCode": stall 4 bits, yield 1, write barrier 3, read barrier 3,
wait mask 6, reuse 4, starting at bit 105). The check in tests/test_gap_controls.py is
internal: on real sm_80/sm_86/sm_90 SASS every variable-latency load's write barrier is
waited on by the first instruction that reads its destination register.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

NO_BARRIER = 7
_RE_FUNC = re.compile(r"^\s*Function\s*:\s*(\S+)")
_RE_INSN = re.compile(r"^\s*/\*([0-9a-fA-F]{4,})\*/\s*(.*?)\s*;\s*/\*\s*0x([0-9a-fA-F]{16})\s*\*/")
_RE_HI = re.compile(r"^\s*/\*\s*0x([0-9a-fA-F]{16})\s*\*/\s*$")
_RE_REG = re.compile(r"(?<![\w.])(R\d+|RZ)(?![\w])")
_RE_HEX = re.compile(r"0x([0-9a-fA-F]+)")


class SassError(ValueError):
    """Text that is not disassembly with raw encodings."""


@dataclass(frozen=True)
class Control:
    stall: int
    yield_flag: int
    write_barrier: int | None  # scoreboard index 0-5, None when the field is 7
    read_barrier: int | None
    wait_mask: int             # 6 bits
    reuse: int                 # 4 bits

    @property
    def waits_on(self) -> tuple[int, ...]:
        return tuple(i for i in range(6) if self.wait_mask >> i & 1)

    def text(self) -> str:
        """CuAssembler-like notation: wait mask, read barrier, write barrier, yield, stall."""
        w = "".join(str(i) if self.wait_mask >> i & 1 else "-" for i in range(6))
        r = "-" if self.read_barrier is None else str(self.read_barrier)
        wb = "-" if self.write_barrier is None else str(self.write_barrier)
        return f"B{w}:R{r}:W{wb}:{'Y' if self.yield_flag else '-'}:S{self.stall:02d}"


def decode_control(high: int) -> Control:
    """Control fields of one instruction from the high 64 bits of its encoding."""
    c = (high >> 41) & ((1 << 23) - 1)
    wb, rb = (c >> 5) & 7, (c >> 8) & 7
    return Control(stall=c & 0xF, yield_flag=(c >> 4) & 1,
                   write_barrier=None if wb == NO_BARRIER else wb,
                   read_barrier=None if rb == NO_BARRIER else rb,
                   wait_mask=(c >> 11) & 0x3F, reuse=(c >> 17) & 0xF)


@dataclass(frozen=True)
class Inst:
    addr: int
    predicate: str          # "" or "@P0", "@!P1"...
    op: str                 # full opcode with modifiers, e.g. "HMMA.16816.F32"
    operands: str
    low: int
    high: int
    ctrl: Control = field(compare=False)

    @property
    def base(self) -> str:
        return self.op.split(".", 1)[0]

    def dests(self) -> tuple[str, ...]:
        """Register written (first operand) for instructions that write one."""
        if self.base in _NO_DEST or not self.operands:
            return ()
        first = self.operands.split(",", 1)[0].strip()
        return (first,) if _RE_REG.fullmatch(first) and first != "RZ" else ()

    def sources(self) -> tuple[str, ...]:
        """Registers read (every register operand except the destination)."""
        regs = _RE_REG.findall(self.operands)
        if self.dests():
            regs = regs[1:]
        return tuple(r for r in regs if r != "RZ")

    def branch_target(self) -> int | None:
        if self.base != "BRA":
            return None
        hits = _RE_HEX.findall(self.operands)
        return int(hits[-1], 16) if hits else None


_NO_DEST = {"STS", "STG", "ST", "STL", "STSM", "BAR", "BRA", "EXIT", "DEPBAR", "LDGDEPBAR",
            "NOP", "BSSY", "BSYNC", "WARPSYNC", "RED", "MEMBAR", "LDGSTS", "RET", "CALL", "YIELD",
            "ISETP", "FSETP", "HSETP2", "PLOP3", "UISETP", "UPLOP3", "ERRBAR", "CCTL"}


def parse(text: str) -> dict[str, list[Inst]]:
    """{function name: instructions in address order} of disassembly with encodings.
    Raises SassError when no instruction with a complete 128-bit encoding is found."""
    out: dict[str, list[Inst]] = {}
    cur: list[Inst] | None = None
    pending = None
    for line in text.splitlines():
        if m := _RE_FUNC.match(line):
            cur = out.setdefault(m.group(1), [])
            pending = None
        elif m := _RE_INSN.match(line):
            pending = m
        elif pending is not None and (h := _RE_HI.match(line)):
            if cur is None:
                cur = out.setdefault("", [])
            cur.append(_make(pending, int(h.group(1), 16)))
            pending = None
    if not any(out.values()):
        raise SassError("no SASS instruction with a 128-bit encoding found "
                        "(expected cuobjdump -sass output: '/*ADDR*/ OP ... ; /* 0x... */' lines)")
    return {k: v for k, v in out.items() if v}


def _make(m: re.Match, high: int) -> Inst:
    text = m.group(2).strip()
    pred = ""
    if text.startswith("@"):
        pred, text = text.split(None, 1)
    op, _, operands = text.partition(" ")
    return Inst(addr=int(m.group(1), 16), predicate=pred, op=op, operands=operands.strip(),
                low=int(m.group(3), 16), high=high, ctrl=decode_control(high))


def parse_file(path: str | Path) -> dict[str, list[Inst]]:
    return parse(Path(path).read_text())


def main_loop(insts: list[Inst], marker: str = "HMMA") -> tuple[int, int]:
    """(first, last) index of the KV loop: the backward branch whose [target, branch]
    range holds the most ``marker`` instructions (ties: the wider range). A range holding an
    EXIT is no loop: the retry paths of barrier waits (mbarrier, setmaxnreg) sit after the
    exits and branch back across the whole kernel (the warp-specialised kernel 7). A range
    storing to global memory (STG: the O epilogue) is a persistent kernel's loop over tiles,
    passed over while a loop without a store holds the marker."""
    index = {i.addr: k for k, i in enumerate(insts)}
    best, span = None, None
    for k, i in enumerate(insts):
        t = i.branch_target()
        if t is None or t >= i.addr or t not in index:
            continue
        lo = index[t]
        if any(j.base == "EXIT" for j in insts[lo:k + 1]):
            continue
        n = sum(1 for j in insts[lo:k + 1] if j.base == marker)
        key = (int(not any(j.base == "STG" for j in insts[lo:k + 1])), n, k - lo)
        if n and (best is None or key > best):
            best, span = key, (lo, k)
    if span is None:
        raise SassError(f"no backward branch encloses a {marker} instruction")
    return span


def tile_loop(insts: list[Inst], lo: int, hi: int) -> tuple[int, int] | None:
    """The smallest backward-branch range that strictly encloses the KV loop [lo, hi] and holds
    no EXIT: a persistent kernel's loop over tiles (its per-tile prologue and epilogue are the
    instructions of that range outside the KV loop), or None."""
    index = {i.addr: k for k, i in enumerate(insts)}
    best = None
    for k, i in enumerate(insts):
        t = i.branch_target()
        if t is None or t >= i.addr or t not in index:
            continue
        a = index[t]
        if a > lo or k < hi or (a, k) == (lo, hi) or any(j.base == "EXIT" for j in insts[a:k + 1]):
            continue
        if best is None or k - a < best[1] - best[0]:
            best = (a, k)
    return best


def first_consumer_waits(insts: list[Inst]) -> list[tuple[Inst, Inst, bool]]:
    """For every instruction with a write barrier, the next instruction (straight-line,
    within 64 instructions, stopping at a branch or a rewrite of the register) that reads
    one of its destination registers, and whether that reader or an instruction between
    them waits on the producer's barrier. The compiler's dependency tracking says it must."""
    out = []
    for k, p in enumerate(insts):
        wb = p.ctrl.write_barrier
        d = set(dest_registers(p))
        if wb is None or not d:
            continue
        covered = False
        for q in insts[k + 1:k + 65]:
            if wb in q.ctrl.waits_on:
                covered = True
            reads = set(source_registers(q))
            if d & reads:
                out.append((p, q, covered))
                break
            if d & set(dest_registers(q)) or q.base in ("BRA", "EXIT"):
                break
    return out


_WIDTH = {".64": 2, ".128": 4, ".X2": 2, ".X4": 4, ".U64": 2}


def dest_registers(i: Inst) -> tuple[str, ...]:
    """Every 32-bit register the instruction writes: LDSM.x4 / LDS.128 write four,
    .64 / .x2 two (from the opcode's width modifier), HMMA.16816.F32 four."""
    d = i.dests()
    if not d:
        return ()
    n = 1
    for mod, w in _WIDTH.items():
        if mod in i.op.upper():
            n = max(n, w)
    if i.base == "HMMA":
        n = 4 if i.op.endswith("F32") else 2
    base = int(d[0][1:])
    return tuple(f"R{base + j}" for j in range(n))


def source_registers(i: Inst) -> tuple[str, ...]:
    """Every 32-bit register the instruction reads; HMMA.16816 reads A as four registers,
    B as two and C as four (F32) or two (F16) -- the mma.sync fragment sizes."""
    srcs = i.sources()
    if i.base != "HMMA" or len(srcs) < 2:
        return srcs
    widths = (4, 2, 4 if i.op.endswith("F32") else 2)
    out = []
    for r, w in zip(srcs, widths):
        out += [f"R{int(r[1:]) + j}" for j in range(w)]
    return tuple(out)
