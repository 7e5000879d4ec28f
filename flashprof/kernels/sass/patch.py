"""Flip the yield bit (or clear the operand-reuse flags) of chosen instructions in a cubin,
nothing else (issue 31's yield probe).

A cubin is an ELF file; each kernel's code is the section ``.text.<function>``, 16 bytes an
instruction (Volta and later), the low 64-bit word first, both little-endian. The scheduling
control code sits in bits 41..63 of the high word; its bit 4 -- bit 45 of the high word, bit 5
of the instruction's byte 13 -- is the yield flag (Jia et al., "Dissecting the NVIDIA Turing
T4 GPU via Microbenchmarking", 2019, sec. 2.1; the layout analysis/gap/controls.py decodes).
ptxas sets it to 1 on instructions the warp may issue back to back and clears it on long
stalls; the series' kernels carry 74-149 cleared bits per KV pass, FA2 none. Bits 17-20 of
the control code (bits 58-61 of the high word, bits 2-5 of byte 15) are the operand-reuse
flags: clearing them makes the instruction read every operand from the register file.

Usage (the cubin's listing from cuobjdump picks the instructions by opcode):
    python -m flashprof.kernels.sass.patch IN.cubin OUT.cubin --function yield_ffma \
        --opcodes FFMA --yield 0            (or --no-reuse instead of --yield)
Prints one line: how many instructions changed. Pure bytes in, bytes out (``set_yield``).
"""
from __future__ import annotations

import struct
import sys
from pathlib import Path
from typing import Iterable

YIELD_BYTE, YIELD_BIT = 13, 5  # bit 45 of the high 64-bit word = bit 109 of the instruction
REUSE_BYTE, REUSE_MASK = 15, 0b00111100  # bits 58-61 of the high word = bits 122-125
STALL_BYTE, STALL_MASK = 13, 0b00011110  # bits 41-44 of the high word = bits 105-108


class PatchError(ValueError):
    """Not a 64-bit little-endian ELF, or no such function / address in it."""


def elf_sections(cubin: bytes) -> dict[str, tuple[int, int]]:
    """{section name: (file offset, size)} from a 64-bit little-endian ELF's section headers."""
    if cubin[:4] != b"\x7fELF" or cubin[4] != 2 or cubin[5] != 1:
        raise PatchError("not a 64-bit little-endian ELF (a cubin)")
    shoff, = struct.unpack_from("<Q", cubin, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)
    # Elf64_Shdr: sh_name, sh_type, sh_flags, sh_addr, sh_offset, sh_size, ...
    headers = [struct.unpack_from("<IIQQQQ", cubin, shoff + k * shentsize) for k in range(shnum)]
    strtab = headers[shstrndx][4]
    return {cubin[strtab + h[0]:cubin.index(b"\0", strtab + h[0])].decode(): (h[4], h[5]) for h in headers}


def text_section(cubin: bytes, function: str) -> tuple[int, int]:
    """(file offset, size) of ``.text.<function>``."""
    found = elf_sections(cubin).get(f".text.{function}")
    if found is None:
        raise PatchError(f"no section .text.{function} in the cubin")
    return found


def yield_flag(cubin: bytes, function: str, addr: int) -> int:
    offset, size = text_section(cubin, function)
    if addr % 16 or not 0 <= addr < size:
        raise PatchError(f"{addr:#x}: not an instruction of {function} ({size} bytes)")
    return cubin[offset + addr + YIELD_BYTE] >> YIELD_BIT & 1


def _set_bits(cubin: bytes, function: str, addrs: Iterable[int], byte: int, mask: int,
              value: int) -> tuple[bytes, int]:
    offset, size = text_section(cubin, function)
    out = bytearray(cubin)
    changed = 0
    for a in addrs:
        if a % 16 or not 0 <= a < size:
            raise PatchError(f"{a:#x}: not an instruction of {function} ({size} bytes)")
        k = offset + a + byte
        new = (out[k] & ~mask) | (value & mask)
        changed += new != out[k]
        out[k] = new
    return bytes(out), changed


def set_yield(cubin: bytes, function: str, addrs: Iterable[int], flag: int) -> tuple[bytes, int]:
    """The cubin with the yield bit of the instructions at ``addrs`` (byte offsets in the
    function, as cuobjdump prints them) set to ``flag``; and how many changed."""
    return _set_bits(cubin, function, addrs, YIELD_BYTE, 1 << YIELD_BIT, (flag & 1) << YIELD_BIT)


def set_stall(cubin: bytes, function: str, addrs: Iterable[int], stall: int) -> tuple[bytes, int]:
    """The cubin with the stall count (control bits 0-3: bits 41-44 of the high word, bits 1-4 of
    byte 13) of the instructions at ``addrs`` set to ``stall``; raising it only delays the warp."""
    if not 0 <= stall <= 15:
        raise PatchError(f"stall count {stall}: 0-15")
    return _set_bits(cubin, function, addrs, STALL_BYTE, STALL_MASK, stall << 1)


def clear_reuse(cubin: bytes, function: str, addrs: Iterable[int]) -> tuple[bytes, int]:
    """The cubin with the operand-reuse flags of the instructions at ``addrs`` cleared."""
    return _set_bits(cubin, function, addrs, REUSE_BYTE, REUSE_MASK, 0)


def main(argv=None) -> int:
    import argparse

    from flashprof.kernels.sass.static import dump_sass
    from flashprof.kernels.sass.text import parse_insns

    ap = argparse.ArgumentParser(prog="python -m flashprof.kernels.sass.patch", description=__doc__.split("\n")[0])
    ap.add_argument("cubin", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument("--function", required=True)
    ap.add_argument("--opcodes", required=True, help="comma-separated base opcodes, e.g. FFMA,FMUL")
    what = ap.add_mutually_exclusive_group(required=True)
    what.add_argument("--yield", dest="flag", type=int, choices=(0, 1))
    what.add_argument("--no-reuse", action="store_true")
    ap.add_argument("--stall", type=int, help="also set the stall count of the same instructions")
    a = ap.parse_args(argv)
    try:
        insns = parse_insns(dump_sass(a.cubin)).get(a.function)
        if insns is None:
            raise PatchError(f"no function {a.function} in {a.cubin}")
        ops = set(a.opcodes.split(","))
        addrs = [i.addr for i in insns if i.opcode in ops]
        data = a.cubin.read_bytes()
        if a.stall is not None:
            data, _ = set_stall(data, a.function, addrs, a.stall)
        data, n = (clear_reuse(data, a.function, addrs) if a.no_reuse else
                   set_yield(data, a.function, addrs, a.flag))
    except (OSError, PatchError) as e:
        print(f"patch: {e}", file=sys.stderr)
        return 2
    a.out.write_bytes(data)
    what = ("reuse flags cleared" if a.no_reuse else f"yield {a.flag}") + \
        ("" if a.stall is None else f", stall {a.stall}")
    print(f"{a.out}: {what} on {n} instruction(s) of {a.function} ({a.opcodes})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
