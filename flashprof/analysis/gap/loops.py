"""The KV-loop SASS the issue model runs, per target and arch, from committed text files.

* Kernels 1-7: ``reports/sass/loops/<slug>_<arch>.sass`` -- the fp16 function's main loop
  (controls.main_loop), raw encodings included, with a header: function name, total
  instruction count, loop span, registers, shared memory. ``python -m flashprof.analysis.gap.loops``
  regenerates them from the static builds (flashprof.kernels.sass.static, the venv's nvcc wheel).
* FA2: ``reports/sass/fa2/fa2_<arch>.sass`` -- the whole function PyTorch runs (header says
  where it came from); the loop is found here.
Each ``LoopCode`` carries what the model needs besides the body: total instructions,
registers, shared memory per CTA, warps per CTA, tile (B_r, B_c).
"""
from __future__ import annotations

import re
import sys
from dataclasses import dataclass
from pathlib import Path

from flashprof.analysis.gap.controls import Inst, SassError, main_loop, parse, tile_loop
from flashprof.analysis.gap.scheduler import flop_per_warp
from flashprof.analysis.gap.data import REPO

LOOP_DIR = REPO / "reports" / "sass" / "loops"
FA2_DIR = REPO / "reports" / "sass" / "fa2"
SERIES_DIR = REPO / "reports" / "sass" / "series"
# The binaries the series measured (reports/sass/series/CHECK.md): all sm_80 code, also on
# the RTX 3090. Kernels 1-7 one file for both GPUs; 8-16 a per-GPU tile (A100 128x64, RTX
# 3090 128x32); FA2 the official fork's kernel at the tile run_mha_fwd_hdim128 picks.
SERIES_TAG = {"a100_80gb": "A100", "rtx3090": "RTX3090"}
SERIES_FA2 = {"a100_80gb": "fa2_official_sm80", "rtx3090": "fa2_official_sm80_bn32"}
SERIES_KERNELS = tuple(str(k) for k in range(1, 17))
# The kernel-7 configurations the series built besides the measured one (64x64 swizzled).
SERIES_K7_SWEEP = ("7_64_64_swizzling", "7_128_32_swizzling", "7_64_64_no_swizzling")
# FA2 tile per arch (run_mha_fwd_hdim128, see the header of the fa2 files) and its smem:
# Q (B_r x 128) + K and V (B_c x 128 each), fp16 (Flash_fwd_kernel_traits::kSmemSize).
FA2_TILE = {"sm_80": (128, 64, 4), "sm_86": (128, 32, 4), "sm_90": (128, 64, 4)}
_HDR = re.compile(r"^#\s*(\w+):\s*(.*)$")


@dataclass(frozen=True)
class LoopCode:
    target: str
    arch: str
    body: tuple[Inst, ...]
    total_insts: int
    registers: int
    smem_bytes: int
    warps: int
    B_r: int
    B_c: int
    source: str
    # a persistent kernel: instructions of its loop over tiles outside the KV loop (per tile),
    # and the FLOP one warp's copy of them does (the peeled first / last GEMMs); None: not one
    tile_insts: int | None = None
    tile_flop_per_warp: float = 0.0
    # FLOP one warp does in tensor instructions outside the KV loop, once per CTA: a peeled
    # pass (FA2 and the series' kernels 10-16 run their first, masked KV block before the loop)
    # that the loop's trips must not count again; None: the file does not say
    outside_flop_per_warp: float | None = 0.0

    @property
    def flop_per_iter(self) -> float:
        """FLOP one CTA does per KV block: S = Q K^T and O += P V, d = 128."""
        return 4.0 * self.B_r * self.B_c * 128


def _header(text: str) -> dict:
    out = {}
    for line in text.splitlines():
        if not line.startswith("#"):
            break
        if m := _HDR.match(line):
            out[m.group(1)] = m.group(2).strip()
    return out


def fa2_loop(arch: str) -> LoopCode:
    path = FA2_DIR / f"fa2_{arch.replace('_', '')}.sass"
    if not path.is_file():
        raise SassError(f"{path.relative_to(REPO)}: no FA2 SASS for {arch}")
    text = path.read_text()
    insts = next(iter(parse(text).values()))
    lo, hi = main_loop(insts)
    # PyTorch's copy keeps the next-K cp.async block out of line too (30 instructions a pass on
    # sm_90, 8 of them LDGSTS): its H200 report executes them on every pass but the last
    # (tests/test_gap_loop_cover.py)
    body = with_out_of_line(insts, lo, hi)
    regs = int(re.search(r"REG:(\d+)", text).group(1))
    br, bc, w = FA2_TILE[arch]
    return LoopCode("ref", arch, tuple(body), len(insts), regs, (br + 2 * bc) * 128 * 2,
                    w, br, bc, str(path.relative_to(REPO)), outside_flop_per_warp=outside_flop(insts, body))


def outside_flop(insts: list[Inst], body: list[Inst]) -> float:
    """FLOP one warp's tensor instructions do in the function outside the loop body (the
    body's out-of-line blocks count as the body's): a peeled KV pass, run once per CTA."""
    return sum(flop_per_warp(i) for i in insts) - sum(flop_per_warp(i) for i in body)


def series_file(gpu_key: str, target: str) -> str:
    """The stem of the series SASS file measured on ``gpu_key`` for ``target`` (1-16, ref)."""
    if gpu_key not in SERIES_TAG:
        raise SassError(f"{gpu_key}: the series measured only {sorted(SERIES_TAG)}")
    if target == "ref":
        return SERIES_FA2[gpu_key]
    k = int(target)
    if k == 7:
        return "7_64_64_swizzling_sm_80"
    return f"{k}_sm_80" if k < 7 else f"{k}_{SERIES_TAG[gpu_key]}_sm_80"


def series_loop(target: str, stem: str) -> LoopCode:
    """KV loop of one file of reports/sass/series (whole function; header gives registers,
    dynamic shared memory, warps and tile)."""
    path = SERIES_DIR / f"{stem}.sass"
    if not path.is_file():
        raise SassError(f"{path.relative_to(REPO)}: no series SASS (devjobs/series_sass.sh)")
    text = path.read_text()
    h = _header(text)
    insts = next(iter(parse(text).values()))
    lo, hi = main_loop(insts)
    body = with_out_of_line(insts, lo, hi)
    arch = "sm_80" if "sm_80" in stem or "sm80" in stem else "sm_86"
    return LoopCode(target, arch, tuple(body), len(insts), int(h["registers"]),
                    int(h["smem_bytes"]), int(h["warps"]), int(h["B_r"]), int(h["B_c"]),
                    str(path.relative_to(REPO)), outside_flop_per_warp=outside_flop(insts, body))


def with_out_of_line(insts: list[Inst], lo: int, hi: int, limit: int = 64) -> list[Inst]:
    """The loop body ``insts[lo:hi+1]`` with each out-of-line block spliced in where the loop
    branches to it: a predicated ``BRA`` to a target outside the loop whose block (at most
    ``limit`` instructions) ends in an unconditional ``BRA`` back to the instruction after
    that branch. FA2's official kernel keeps its next-K ``cp.async`` block there (taken on
    every iteration but the last), so without it the loop would miss 8 LDGSTS per pass. The
    block's closing branch is kept: it costs an issue slot on every pass."""
    index = {i.addr: k for k, i in enumerate(insts)}
    first, last = insts[lo].addr, insts[hi].addr
    body = []
    for k in range(lo, hi + 1):
        i = insts[k]
        body.append(i)
        t = i.branch_target()
        if not i.predicate or t is None or first <= t <= last or t not in index or k == hi:
            continue
        block = []
        for j in insts[index[t]:index[t] + limit]:
            if j.base == "BRA" and not j.predicate:
                if j.branch_target() == insts[k + 1].addr:
                    body.extend(block)
                    body.append(j)  # the branch back issues too (the loop then continues below)
                break
            if j.base in ("EXIT", "RET", "CALL") or j.branch_target() is not None:
                break
            block.append(j)
    return body


def kernel_loop(target: str, arch: str, slug: str) -> LoopCode:
    path = LOOP_DIR / f"{slug}_{arch}.sass"
    if not path.is_file():
        raise SassError(f"{path.relative_to(REPO)}: no loop SASS (python -m flashprof.analysis.gap.loops)")
    text = path.read_text()
    h = _header(text)
    body = next(iter(parse(text).values()))
    return LoopCode(target, arch, tuple(body), int(h["total_instructions"]), int(h["registers"]),
                    int(h["smem_bytes"]), int(h["warps"]), int(h["B_r"]), int(h["B_c"]),
                    str(path.relative_to(REPO)),
                    int(h["tile_instructions"]) if "tile_instructions" in h else None,
                    float(h.get("tile_flop_per_warp", 0.0)),
                    float(h["outside_flop_per_warp"]) if "outside_flop_per_warp" in h else None)


def listing_lines(insts) -> list[str]:
    """Instructions as cuobjdump prints them (address, text, both encoding words): what
    controls.parse reads back, control codes included."""
    lines = []
    for i in insts:
        text = f"{i.predicate} {i.op} {i.operands}".strip()
        lines.append(f"/*{i.addr:04x}*/ {text} ; /* 0x{i.low:016x} */")
        lines.append(f"/* 0x{i.high:016x} */")
    return lines


def write_kernel_loops(jobs) -> list[Path]:
    """Build (flashprof.kernels.sass.static) and write the loop files of (KernelConfig, arch) pairs."""
    from flashprof.kernels.sass.static import build_many, dump_sass, ptxas_report, log_path, pick_function

    LOOP_DIR.mkdir(parents=True, exist_ok=True)
    out = []
    # a wgmma config compiles as sm_90a only (KernelConfig.target_arch); its file keeps the arch asked
    built = build_many([(cfg, cfg.target_arch(arch)) for cfg, arch in jobs])
    for (cfg, arch) in jobs:
        cubin = built[(cfg, cfg.target_arch(arch))]
        per_fn = parse(dump_sass(cubin))
        fn = pick_function(per_fn, "fp16")
        insts = per_fn[fn]
        lo, hi = main_loop(insts, "HGMMA" if cfg.wgmma else "HMMA")
        stats = ptxas_report(log_path(cubin))[fn]
        tile = tile_loop(insts, lo, hi) if cfg.persistent else None
        smem = cfg.smem_bytes
        lines = [f"# kernel config {cfg.slug}, {cfg.target_arch(arch)}, fp16: main KV loop of {fn}",
                 "# from: python -m flashprof.analysis.gap.loops (flashprof.kernels.sass.static static build, cuobjdump -sass)",
                 f"# total_instructions: {len(insts)}", f"# loop_span: {insts[lo].addr:#06x}-{insts[hi].addr:#06x}",
                 f"# registers: {stats.registers}", f"# smem_bytes: {smem}", f"# warps: {cfg.n_warps}",
                 f"# B_r: {cfg.B_r}", f"# B_c: {cfg.B_c}"]
        if not tile:
            lines.append(f"# outside_flop_per_warp: {outside_flop(insts, insts[lo:hi + 1]):.0f}")
        if tile:
            outside = insts[tile[0]:lo] + insts[hi + 1:tile[1] + 1]
            lines += [f"# tile_loop_span: {insts[tile[0]].addr:#06x}-{insts[tile[1]].addr:#06x}",
                      f"# tile_instructions: {len(outside)}",
                      f"# tile_flop_per_warp: {sum(flop_per_warp(i) for i in outside):.0f}"]
        lines.append(f"Function : {fn}")
        lines += listing_lines(insts[lo:hi + 1])
        path = LOOP_DIR / f"{cfg.slug}_{arch}.sass"
        path.write_text("\n".join(lines) + "\n")
        out.append(path)
    return out


def main(argv=None) -> int:
    from flashprof.kernels.config import variant, load_tuned

    jobs = [(variant(k), a) for a in ("sm_80", "sm_86", "sm_90") for k in range(1, 8)]
    jobs += [(cfg, "sm_90") for cfg in load_tuned().values()]
    for p in write_kernel_loops(jobs):
        print(p.relative_to(REPO))
    return 0


if __name__ == "__main__":
    sys.exit(main())
