"""In-order issue simulation of one SM running the KV loop of resident CTAs.

Input: the loop body (``controls.Inst`` list, straight-line: forward branches fall
through, the back edge repeats the body), a ``constants.Machine``, CTAs per SM and warps
per CTA. Output: steady-state SM cycles per loop iteration (all resident CTAs advance one
KV block) and where the sub-partitions' issue slots went.

Rules, per SM sub-partition (warp w lives on sub-partition w mod 4), one warp instruction
issued per cycle. Warp choice: greedy -- the warp that issued last keeps issuing while it can,
else the first ready one in warp order (Huerta et al., "Analyzing Modern NVIDIA GPU Cores",
arXiv 2503.20481, sec. 5.1.2, on Turing and Ampere; on GH100, ``ceilings sched``: two warps of
one scheduler take turns in whole runs of ready instructions, and this rule reproduces their
timeline, analysis/gap/sched_check.py); ``policy="round_robin"`` (the next ready warp after
the last one) is kept for the sensitivity to that rule, and ``policy="greedy_lri"`` (greedy, else
the ready warp that issued least recently) is a candidate. A warp's next instruction may issue when
* its previous instruction's stall count has elapsed (the compiler's fixed-latency
  scheduling, read from the control code);
* every dependency barrier in its wait mask is clear (variable-latency producers: set on
  issue, cleared at their modelled completion); ``DEPBAR.LE SBk, n`` waits until at most n
  LDGDEPBAR groups are in flight;
* its pipe is free: tensor (HMMA every ``hmma_interval``), FP32 (one or two 16-lane
  datapaths, IMAD on the first only; on GA10x integer ALU work shares the second),
  ALU, XU/MUFU, and the SM-wide LSU/MIO port (``lsu_per_clk_sm``);
* for shared-memory instructions, fewer than ``mio_queue_depth`` of its sub-partition's
  shared-memory requests wait for the data path;
* ``BAR.SYNC``: all warps of its CTA have arrived (+ ``Machine.bar_latency``: 128 or 256 threads);
  a named barrier between two warpgroups (``BAR.SYNC id, n`` with an id other than 0, and its
  partner ``BAR.ARV``, the ping-pong of the warp-specialised kernel 7): the warpgroup's own
  four warps have arrived and the other warpgroup has arrived for this turn (``_named_ready``);
  ``BAR.ARV`` itself never waits;
* ``WARPGROUP.DEPBAR.LE gsb0, n``: at most n of its committed HGMMA groups are unfinished.
Warpgroup MMA (HGMMA, sm_90a) is asynchronous: issuing one costs an issue slot and nothing
waits for the tensor pipe. The warpgroup's instruction starts once its four warps have
issued it, the four sub-partitions' tensor pipes are free and the warpgroup's previous
HGMMA is ``Machine.wgmma_chain`` cycles old; it holds all four pipes ``Machine.wgmma_cycles``
(the measured SS or RS rate). A group (closed by the HGMMA marked ``gsb0``) is finished
``Machine.wgmma_drain`` cycles after its last HGMMA leaves the pipe (the measured latency of
a group of one, SS or RS). While it runs, its shared-memory operands (A for SS, B always) take
their bytes / 128 wavefronts out of the shared-memory data path, spread evenly over it: the
other shared-memory instructions get the rest. While an HGMMA runs it also takes
``Machine.wgmma_fp32_share`` of every sub-partition's FP32 datapaths (FP32 and IMAD instructions
then hold theirs fp32_interval / (1 - share) cycles; a warp held back so counts as
"dispatch", Nsight Compute's dispatch_stall, where the wgmma mix benchmark puts that cost)
for its own ``wgmma_cycles``; each FP32 or IMAD instruction a sub-partition issues while one
runs holds the tensor pipe ``Machine.wgmma_fp32_steal`` cycles longer (every HGMMA on it or
queued behind it, and the groups they close, end that much later; the four sub-partitions'
thefts overlap: each keeps a running total and the pipe is as late as the largest). An
integer / compare instruction (the ALU pipe) issued while one runs holds its pipe
``Machine.wgmma_alu_factor`` times as long, the HGMMA losing nothing; a warp held only by that
extra counts as "dispatch". Each other instruction (not MUFU, not one the model issues free) a
sub-partition issues while its XU pipe is busy holds that pipe ``Machine.xu_issue_steal`` cycles
longer (0: none; ``Machine.xu_steal_scope`` "warp": only the instructions of the warp whose MUFU
holds it; "fp32" / "fma": that warp's, and the other warps' FP32-pipe (and IMAD) ones); a MUFU issued while an HGMMA runs holds it ``Machine.wgmma_xu_factor`` times
as long (1: none). A warp held only by either extra counts as "dispatch". A transaction-barrier
wait (SYNCS.PHASECHK.TRYWAIT) finds its phase complete (no producer is simulated: the TMA data
is taken as there) and sets its predicate ``Machine.mbar_wait_latency`` cycles after issue.
Shared memory serves one 128-byte wavefront per SM clock (LDSM.x4 / LDS.128 / STS.128 =
4 wavefronts, times a bank-conflict factor given per kernel; LDGSTS.128 4 times
``Machine.ldgsts_smem_share``, the share of its written bytes that take that path); completion = end of its
wavefronts + ``smem_latency`` (LDSM on a GPU with a measured ``ldsm_latency``: a
conflict-free x4 completes ``ldsm_latency`` after its start). LDGSTS completes after ``l2_latency``, and where the
GPU has a measured L2 bandwidth (``l2_bytes_per_clk_sm``) its bytes first queue on the SM's
share of it (one server per SM, bytes / rate cycles each); LDL/STL after
``l1_latency``; MUFU after ``mufu_latency``.
Besides the cycles, every resident warp's state each cycle is counted (issued, the first
rule that blocks it, or "not selected"), per issued instruction: the model's counterpart
of Nsight Compute's smsp__average_warps_issue_stalled_<reason>_per_issue_active.
Not modelled: taken forward branches inside the loop, instruction cache, register-bank
conflicts, DRAM bandwidth, L2 hit rate (every LDGSTS hits), an HGMMA slowed by the
shared-memory traffic of others, the wgmma fence's (WARPGROUP.ARRIVE) wait for registers.
"""
from __future__ import annotations

import dataclasses
import random
import re
from collections import Counter
from dataclasses import dataclass

from flashprof.analysis.gap.constants import SUBPARTITIONS, Machine
from flashprof.analysis.gap.controls import Inst

FP32_OPS = {"FADD", "FMUL", "FFMA", "FADD32I", "FMUL32I", "FFMA32I", "FSWZADD", "HADD2",
            "HMUL2", "HFMA2"}
IMAD_OPS = {"IMAD", "IMUL", "IMADSP", "IDP", "IDP4A", "IMAD32I", "IMUL32I"}
XU_OPS = {"MUFU", "I2F", "F2I", "F2F", "FRND", "I2I", "FLO", "POPC", "BREV"}
SMEM_OPS = {"LDS", "STS", "LDSM", "STSM", "LDGSTS", "ATOMS"}
LOCAL_OPS = {"LDL", "STL", "LDG", "STG", "LD", "ST", "SHFL", "S2R", "LDC", "RED", "ATOMG"}
FREE_OPS = {"BRA", "NOP", "BSSY", "BSYNC", "WARPSYNC", "DEPBAR", "LDGDEPBAR", "EXIT", "YIELD"}
ALU_OPS = {"FMNMX", "FSETP", "FSEL", "FCHK", "FSET", "ISETP", "IADD3", "IADD", "IABS", "IMNMX",
           "VIADD", "LOP3", "LOP", "SHF", "SHL", "SHR", "LEA", "SEL", "MOV", "PRMT", "F2FP",
           "PLOP3", "P2R", "R2P", "BMSK", "SGXT", "HSETP2", "HMNMX2", "CS2R", "IADD32I", "LOP32I", "MOV32I"}


# Instructions that cost the tensor pipe nothing when issued beside a running HMMA
# (tensor_issue_steal): the tensor instructions themselves and those the model issues free.
_NO_STEAL = ("tensor", "none", "wgmma", "wgmma_ctl")
# Machine.xu_steal_scope -> the other warps' pipes whose issue holds a busy XU (None: every pipe)
XU_STEAL_PIPES = {"subpartition": None, "warp": (), "fp32": ("fp32",), "fma": ("fp32", "imad"),
                  "fp32_full": ("fp32",)}
# "fp32_full" (a candidate, docs/METHOD.md's rule for judging it): only an FP32-pipe instruction,
# of any warp, issued while the XU is busy and within one FP32 issue interval (fp32_interval /
# fp32_halves) of the sub-partition's previous FP32-pipe instruction -- FP32 at full rate -- holds it.
JITTER = 4.0  # cycles; an assumption (see simulate), not a fitted value


def wavefronts(i: Inst) -> int:
    """128-byte shared-memory wavefronts of one conflict-free warp access: LDSM.16.M88.n
    moves n 8x8 fp16 matrices (n x 128 B); LDS/STS .128 / .64 move 512 / 256 B; LDGSTS
    .128 writes 512 B."""
    mods = i.op.upper().split(".")[1:]
    if i.base in ("LDSM", "STSM") and mods and mods[-1] in ("1", "2", "4"):
        return int(mods[-1])
    if "128" in mods:
        return 4
    if "64" in mods:
        return 2
    return 1


_HGMMA_SHAPE = re.compile(r"^HGMMA\.64x(\d+)x(\d+)", re.I)


def hgmma_shape(i: Inst) -> tuple[int, int, bool, bool]:
    """(N, K, A from registers, closes a group) of an ``HGMMA.64xNxK`` instruction:
    ``HGMMA.64x128x16.F32 R88, R24, gdesc[UR16].tnspB, R88, gsb0`` is N 128, K 16, RS, commit."""
    m = _HGMMA_SHAPE.match(i.op)
    if not m:
        raise ValueError(f"not a warpgroup MMA shape: {i.op}")
    ops = [o.strip() for o in i.operands.split(",")]
    rs = len(ops) > 1 and ops[1].startswith("R")
    return int(m.group(1)), int(m.group(2)), rs, "gsb0" in i.operands


def flop_per_warp(i: Inst) -> float:
    """FLOP one warp's instruction does: HMMA.16816 2 x 16 x 8 x 16; an HGMMA 64xNxK, a
    quarter of its warpgroup's 2 x 64 x N x K."""
    if i.base == "HMMA":
        return 2.0 * 16 * 8 * 16
    if i.base == "HGMMA":
        n, k, _rs, _c = hgmma_shape(i)
        return 2.0 * 64 * n * k / 4
    return 0.0


# Register-file reads (issue 31): warp-register reads of one instruction's source operands.
# An HMMA.<m><n><k> reads A (m*k/64 registers: 16816 -> 4), B (n*k/64: 2) and C (4 for F32
# accumulate, 2 for F16); any other register operand counts 1 (64-bit pairs are not told
# apart: an under-count). The operand reuse cache is taken as one entry per (operand slot,
# register bank = register number mod 2): a read flagged .reuse stores its register there, a
# later read of that register in that slot and bank is served from it, a read of it without
# the flag releases it. The register-bank reading is an assumption; ptxas's own flags (kept on
# an HMMA across interleaved FFMAs that read the same slot) fit it, a slot-only cache they do not.
_OPERAND_REG = re.compile(r"\b(R\d+|RZ)(\.reuse)?\b")


def _operand_widths(i: Inst) -> dict[int, int]:
    if i.base != "HMMA":
        return {}
    shape = re.search(r"\.(16|8)(8|16)(8|16|4)\b", i.op)
    mm, nn, kk = (16, 8, 16) if not shape else (int(shape.group(1)), int(shape.group(2)), int(shape.group(3)))
    return {1: max(1, mm * kk // 64), 2: max(1, nn * kk // 64), 3: 4 if ".F32" in i.op else 2}


def source_reads(body: list[Inst]) -> list[list[tuple[int, str, bool]]]:
    """Per instruction of a loop body, in steady state (the reuse cache carried around the
    loop: the body is walked twice and the second pass kept), its source registers as
    (operand slot, register, served by the reuse cache); RZ is not a read."""
    cache: dict[tuple[int, int], str] = {}
    out: list[list[tuple[int, str, bool]]] = []
    for lap in range(2):
        for i in body:
            skip_first = bool(i.dests())
            regs = []
            for slot, op in enumerate(x.strip() for x in i.operands.split(",")):
                if slot == 0 and skip_first:
                    continue
                m = _OPERAND_REG.search(op)
                if not m or m.group(1) == "RZ":
                    continue
                reg, flagged = m.group(1), bool(m.group(2))
                key = (slot, int(reg[1:]) % 2)
                hit = cache.get(key) == reg
                if flagged:
                    cache[key] = reg
                elif hit:
                    del cache[key]
                regs.append((slot, reg, hit))
            if lap:
                out.append(regs)
    return out


def rf_reads(body: list[Inst]) -> list[float]:
    """Warp-register reads per instruction of a loop body, in steady state (source_reads)."""
    return [float(sum(_operand_widths(i).get(slot, 1) for slot, _r, hit in regs if not hit))
            for i, regs in zip(body, source_reads(body))]


def pipe(i: Inst) -> str:
    b = i.base
    if b == "HMMA":
        return "tensor"
    if b == "HGMMA":
        return "wgmma"
    if b == "WARPGROUP":
        return "wgmma_ctl"
    if b in IMAD_OPS:
        return "imad"
    if b in FP32_OPS:
        return "fp32"
    if b in XU_OPS:
        return "xu"
    if b in SMEM_OPS:
        return "smem"
    if b in LOCAL_OPS:
        return "lsu"
    if b == "BAR":
        return "bar"
    if b in FREE_OPS or b.startswith("U") or b in ("R2UR", "S2UR", "VOTEU"):
        return "none"
    return "alu"


def never_executed_as_issue(body: list[Inst]) -> list[Inst]:
    """The loop with each never-executed instruction (predicate ``@!PT``) read as an issue slot only:
    a NOP with the same control code. Every cp.async loop here (flashprof's kernels, the series',
    FA2) carries six ``@!PT LDS RZ, [RZ]`` a pass; their report PCs are issued with no thread
    executing them, no shared-memory wavefront and no MIO throttle sample. Measured (issue 31,
    ``ldsm_cpc`` / ``ldsm_cpc_db`` on an H100, reports/h100/yield/ldsmcp2.json, both readings
    predicted before the run): read as LDS the six records are 3.0 % slow on average, read so 0.9 %."""
    return [dataclasses.replace(i, op="NOP", operands="") if i.predicate == "@!PT" else i for i in body]


@dataclass
class _Warp:
    wid: int
    cta: int
    sp: int
    pc: int = 0
    it: int = 0
    ready: float = 0.0
    at_bar: bool = False
    bar_key: tuple = ()
    role: int = 0
    stop: int = 0


# greedy_lri: greedy, and when the last warp cannot issue, the ready warp that issued least recently
# (a candidate for the warp-choice rule: the stall-count probe's four warps at stall count 3 are not
# starved on the GPU as warp order starves the fourth; docs/METHOD.md)
POLICIES = ("greedy", "round_robin", "greedy_lri")


def simulate(body: list[Inst], m: Machine, ctas: int, warps_per_cta: int, iterations: int | list = 8,
             conflict: float = 1.0, seed: int = 0, pingpong: bool = False,
             background_wavefronts: float = 0.0, warmup: int = 1, policy: str | None = None,
             subpartitions: int = SUBPARTITIONS, trace: dict | None = None, trace_pc: int = -1,
             pc_states: Counter | None = None, roles: list | None = None) -> dict:
    """Steady-state cycles per loop iteration of ``ctas`` CTAs on one SM. ``seed`` > 0
    starts each CTA after a pseudo-random delay of 0-255 cycles (CTAs never start in
    lockstep on hardware) and adds 0-``JITTER`` cycles to every variable-latency
    completion. A deterministic schedule locks into one of several steady states that
    differ by a few per cent (a 0.1 % change of one latency can flip it), so callers
    average a few seeds and report the spread.
    What-if options (analysis/gap/whatif.py): ``pingpong`` -- the SM's warpgroups take turns
    at their GEMM phases (WARPGROUP.ARRIVE to the HGMMA closing the group), in a fixed order,
    as named barriers make them in FlashAttention-3; a warp waiting for its turn counts as
    "barrier". ``background_wavefronts`` -- shared-memory wavefronts each CTA's tiles take per
    loop pass without any instruction of the loop (a TMA producer's writes), spread over that
    CTA's previous pass.
    ``warmup``: the steady-state window starts once every warp has finished this many passes
    (two warpgroups that start in phase need a few passes to settle theirs: issue_report
    simulates such loops longer and skips the first half). ``policy``: the warp choice (module
    docstring; None: the Machine's ``warp_choice``). ``subpartitions``: schedulers the warps are dealt to (1: all on one, as in the
    ``ceilings sched`` microbenchmark). ``trace``: if a dict, per warp id the cycles in which
    it issued the body's instruction ``trace_pc`` (default: the last, the pass's end).
    ``pc_states``: if a Counter, (body index, warp state) -> warp-cycles after the first pass,
    the model's counterpart of Nsight Compute's per-PC stall samples (analysis/gap/pc_stalls.py).
    ``roles``: a loop body per warpgroup of the CTA (warpgroup g runs ``roles[g % len(roles)]``,
    ``body`` is then unused): a warp-specialised block such as the split-role wgmma benchmark;
    each warp runs ``iterations`` passes of its own body (a list: per role) and ``finish_by_warp``
    gives the cycle each one ended (the steady-state window is the first role's)."""
    if roles is not None:
        roles = [never_executed_as_issue(r) if r else r for r in roles]
        body = roles[0]
    elif body:
        body = never_executed_as_issue(body)
    if not body or ctas < 1 or (roles is not None and not all(roles)):
        raise ValueError("empty loop body or no resident CTA")
    if m.sp_arbitration not in ("fixed", "rotating"):
        raise ValueError(f"unknown sub-partition arbitration {m.sp_arbitration!r}: fixed or rotating")
    policy = policy or m.warp_choice
    if policy not in POLICIES:
        raise ValueError(f"unknown warp choice {policy!r}: one of {POLICIES}")
    # per role: (body, pipes, wavefronts, register reads, HGMMA shapes, length)
    tabs = []
    for b in (roles if roles is not None else [body]):
        pp = [("smem" if m.shfl_in_smem and i.base == "SHFL" else pipe(i)) for i in b]
        # register-file read bandwidth (Machine.rf_reads_per_clk; None: unlimited): an instruction
        # issues only once its sub-partition's earlier reads are through ("register file")
        tabs.append((b, pp, [wavefronts(i) for i in b], rf_reads(b) if m.rf_reads_per_clk else [0.0] * len(b),
                     {k: hgmma_shape(i) for k, i in enumerate(b) if pp[k] == "wgmma"}, len(b)))
    n = len(body)
    rf_free = [0.0] * SUBPARTITIONS
    shapes = {k: v for tab in tabs for k, v in tab[4].items()}
    if shapes and (m.wgmma_flop_per_clk_sm is None or warps_per_cta % SUBPARTITIONS):
        raise ValueError(f"{m.gpu_key}: HGMMA in the loop but no measured wgmma rate for this GPU"
                         if m.wgmma_flop_per_clk_sm is None else
                         f"HGMMA with {warps_per_cta} warps per CTA: not whole warpgroups")
    rng = random.Random(seed)
    delay = [rng.randint(0, 255) if seed else 0 for _ in range(ctas)]
    its = list(iterations) if isinstance(iterations, (list, tuple)) else [iterations] * len(tabs)
    iterations = its[0]
    warps = [_Warp(w, w // warps_per_cta, w % subpartitions, ready=float(delay[w // warps_per_cta]),
                   role=((w % warps_per_cta) // SUBPARTITIONS) % len(tabs))
             for w in range(ctas * warps_per_cta)]
    for w in warps:
        w.stop = its[w.role]
    sb = [[0.0] * 6 for _ in warps]           # barrier release times
    groups: list[list[float]] = [[] for _ in warps]  # LDGDEPBAR group completion times
    open_group = [0.0 for _ in warps]
    busy = [dict(tensor=0.0, fp32a=0.0, fp32b=0.0, alu=0.0, xu=0.0) for _ in range(SUBPARTITIONS)]
    smem_free, lsu_free, l2_free = 0.0, 0.0, 0.0
    smem_starts: list[list[float]] = [[] for _ in range(SUBPARTITIONS)]
    bar_arrived: Counter = Counter()
    bar_release: dict = {}
    named: Counter = Counter()                 # ("sync"|"arv", cta, warpgroup, it) -> warps arrived
    wg_arrived: dict = {}                      # (cta, warpgroup, it, pc) -> [cell, warps so far]
    wg_chain: dict = {}                        # (cta, warpgroup) -> earliest start of its next HGMMA
    wg_pending: list[list[list]] = [[] for _ in warps]  # per warp: cells [finish time or None]
    smem_windows: list[tuple[float, float, float]] = []  # HGMMA operand reads: (start, end, share)
    hgmma_windows: list[list[float]] = []     # HGMMAs on the tensor pipe: [start, end, 1] (FP32 share)
    live: list[list] = []                     # HGMMAs on or queued for the pipe: [start, end, cell, drain, window]
    stolen = [0.0] * SUBPARTITIONS            # tensor-pipe cycles each sub-partition's FP32 issue took
    shifted = [0.0]                           # of which the pipe has been delayed (the most of any one)
    turn = {"order": sorted({(w.cta, (w.wid % warps_per_cta) // SUBPARTITIONS) for w in warps}), "k": 0,
            "committed": 0} if pingpong else None
    cta_pass = [0.0] * ctas
    last = [None] * SUBPARTITIONS
    issued_at: dict[int, int] = {}  # warp id -> the cycle it last issued (policy greedy_lri)
    hold = [0.0] * SUBPARTITIONS               # no issue before this cycle (an HMMA's dispatch)
    xu_owner = [None] * SUBPARTITIONS           # the warp whose MUFU issued last on the XU pipe
    # other warps' pipes that hold a busy XU (xu_steal_scope); the MUFU's own warp: every pipe
    others_steal = XU_STEAL_PIPES[m.xu_steal_scope]
    full_rate_only = m.xu_steal_scope == "fp32_full"
    last_fp32 = [-1e9] * SUBPARTITIONS          # the cycle of each sub-partition's last FP32-pipe issue
    hmma_warp = [None] * SUBPARTITIONS          # the warp whose HMMA issued last (Machine.hmma_switch_dispatch)
    # measured beside HMMA only (mma_mix); beside HGMMA it is Machine.wgmma_issue_steal
    steal = m.wgmma_issue_steal if shapes else m.tensor_issue_steal
    finish = {}
    stalls: Counter = Counter()
    warp_states: Counter = Counter()
    t = 0
    progressed, hist = 0, []
    limit = max(its) * max(t_[5] for t_ in tabs) * len(warps) * 40 + 10000
    while len(finish) < sum(w.stop + 1 for w in warps) and t < limit:
        for sp in (range(subpartitions) if m.sp_arbitration == "fixed"
                   else [(t + k) % subpartitions for k in range(subpartitions)]):
            cand = [w for w in warps if w.sp == sp and w.it < w.stop]
            if policy == "greedy_lri":
                cand.sort(key=lambda w: (issued_at.get(w.wid, -1), w.wid))
            if last[sp] is not None and last[sp] in cand:
                if policy in ("greedy", "greedy_lri"):
                    cand.remove(last[sp])
                    cand.insert(0, last[sp])
                else:
                    k = cand.index(last[sp])
                    cand = cand[k + 1:] + cand[:k + 1]
            issued = False
            reason = "idle" if not cand else None
            if turn is not None:
                _next_turn(turn, warps, warps_per_cta, iterations)
            for w in cand:
                if w.at_bar and w.bar_key[0] == "named" and w.bar_key not in bar_release \
                        and _named_ready(named, w.bar_key):
                    bar_release[w.bar_key] = t + m.bar_latency(2 * SUBPARTITIONS)
            whys = [_blocked(w, tabs[w.role][0][w.pc], tabs[w.role][1][w.pc], t, sb[w.wid], groups[w.wid], busy[sp],
                             m, smem_starts[sp], lsu_free, bar_release, wg_pending[w.wid])
                    or (_not_my_turn(turn, w, tabs[w.role][0][w.pc], warps_per_cta) if turn is not None else None)
                    or ("register file" if tabs[w.role][3][w.pc] and _held(rf_free[sp] - m.rf_read_depth, t) else None)
                    for w in cand]
            if m.hmma_switch_dispatch and hmma_warp[sp] is not None:
                # H1: an HMMA after another warp's waits hmma_switch_dispatch cycles more once the pipe frees
                whys = [("dispatch" if y is None and tabs[w.role][1][w.pc] == "tensor" and w.wid != hmma_warp[sp]
                         and _held(busy[sp]["tensor"] + m.hmma_switch_dispatch, t) else y) for w, y in zip(cand, whys)]
            if m.wgmma_fp32_share and hgmma_windows and _taken(hgmma_windows, t):
                # an FP32 instruction held back by the HGMMA's share of its datapaths: Nsight
                # Compute samples it as dispatch_stall (the wgmma mix benchmark's signature)
                whys = ["dispatch" if y == "fma pipe" else y for y in whys]
            if hold[sp] > t:  # an HMMA's dispatch cycles: ready warps wait ("dispatch")
                for w, y in zip(cand, whys):
                    if w.it >= 1:
                        warp_states[y or "dispatch"] += 1
                        if pc_states is not None:
                            pc_states[(w.pc, y or "dispatch")] += 1
                stalls["dispatch" if cand else "idle"] += 1
                continue
            chosen = next((w for w, y in zip(cand, whys) if y is None), None)
            for w, y in zip(cand, whys):
                if w.it >= 1:  # per-warp states after the first pass (ncu's stall reasons)
                    warp_states["issued" if w is chosen else (y or "not selected")] += 1
                    if pc_states is not None:  # per instruction: Nsight's per-PC samples
                        pc_states[(w.pc, "issued" if w is chosen else (y or "not selected"))] += 1
            for w, why in zip(cand, whys):
                if why:
                    reason = reason or why
                    continue
                body_w, pipes, waves, reads, shapes, n = tabs[w.role]
                i, p = body_w[w.pc], pipes[w.pc]
                c = i.ctrl
                done = t + 1
                if p == "tensor":
                    _take(busy[sp], "tensor", t, m.hmma_interval)
                    hmma_warp[sp] = w.wid
                elif p == "imad":
                    _take(busy[sp], "fp32a", t, m.fp32_interval / _fp32_left(m, hgmma_windows, t))
                    _steal(m, sp, t, live, stolen, shifted, busy, wg_chain)
                elif p == "fp32":
                    prev_fp32, last_fp32[sp] = last_fp32[sp], t
                    unit = "fp32a" if m.fp32_halves == 1 or busy[sp]["fp32a"] <= busy[sp]["fp32b"] else "fp32b"
                    _take(busy[sp], unit, t, m.fp32_interval / _fp32_left(m, hgmma_windows, t))
                    _steal(m, sp, t, live, stolen, shifted, busy, wg_chain)
                elif p == "alu":
                    unit = "fp32b" if m.int_shares_fp32 else "alu"
                    _take(busy[sp], unit, t, m.alu_interval)
                    busy[sp]["alu_own"] = busy[sp][unit]
                    if m.wgmma_alu_factor != 1.0 and hgmma_windows and not m.int_shares_fp32:
                        # beside a running HGMMA the pipe takes it wgmma_alu_factor x as long;
                        # "alu_own" keeps its end at the pipe's own rate (a warp held past
                        # it waits on the dispatch, not on the pipe)
                        busy[sp][unit] += m.alu_interval * (m.wgmma_alu_factor - 1) * _taken(hgmma_windows, t)
                elif p == "xu":
                    start = max(float(t), busy[sp]["xu"])
                    _take(busy[sp], "xu", t, m.mufu_interval)
                    busy[sp]["xu_own"] = busy[sp]["xu"]
                    xu_owner[sp] = w.wid
                    if m.wgmma_xu_factor != 1.0 and hgmma_windows:
                        # beside a running HGMMA the XU pipe takes a MUFU wgmma_xu_factor x as long
                        busy[sp]["xu"] += m.mufu_interval * (m.wgmma_xu_factor - 1) * _taken(hgmma_windows, t)
                    done = t + m.mufu_latency
                    if _queued_mufu(m, i):
                        # H2: it waits in the MIO queue (a slot until the XU pipe starts it)
                        smem_starts[sp].append(start)
                        done = start + m.mufu_latency
                elif p == "wgmma":
                    _issue_hgmma(w, t, shapes[w.pc], warps_per_cta, m, busy, wg_arrived, wg_chain,
                                 wg_pending[w.wid], smem_windows, hgmma_windows, live)
                    if turn is not None and shapes[w.pc][3]:
                        turn["committed"] += 1  # the fourth warp's commit ends the turn
                elif p in ("smem", "lsu"):
                    lsu_free = max(lsu_free, t) + 1.0 / m.lsu_per_clk_sm
                    if p == "smem":
                        start = max(t, smem_free)
                        wf = waves[w.pc] * (m.ldgsts_smem_share if i.base == "LDGSTS" else 1.0 if i.base == "SHFL"
                                            else conflict)  # a shuffle (shfl_in_smem) has no bank conflicts
                        if smem_windows:
                            wf /= max(0.05, 1.0 - _taken(smem_windows, start))
                        smem_free = start + wf
                        smem_starts[sp].append(start)
                        if i.base == "LDGSTS":
                            done = start + wf + m.l2_latency
                            if m.l2_bytes_per_clk_sm:
                                l2_free = max(l2_free, t) + 128 * waves[w.pc] / m.l2_bytes_per_clk_sm
                                done = max(start + wf, l2_free) + m.l2_latency
                        elif i.base == "LDSM" and m.ldsm_latency is not None:
                            # measured issue-to-use of a conflict-free LDSM.x4 (4 wavefronts)
                            done = start + wf - 4 + m.ldsm_latency
                        else:
                            done = start + wf + m.smem_latency
                        if i.base == "LDGSTS":
                            open_group[w.wid] = max(open_group[w.wid], done)
                    else:
                        done = t + (m.smem_latency if i.base == "SHFL" else m.l1_latency)
                if m.mbar_wait_latency and i.base == "SYNCS" and "TRYWAIT" in i.op:
                    done = t + m.mbar_wait_latency  # a completed phase's predicate (ceilings wgsplit4)
                if reads[w.pc]:
                    rf_free[sp] = max(rf_free[sp], t) + reads[w.pc] / m.rf_reads_per_clk
                if p == "tensor":
                    hold[sp] = t + m.hmma_issue_cycles
                elif steal and p not in _NO_STEAL and busy[sp]["tensor"] > t:
                    busy[sp]["tensor"] += steal
                if m.xu_issue_steal and p != "xu" and p not in _NO_STEAL and busy[sp]["xu"] > t \
                        and (xu_owner[sp] == w.wid or others_steal is None or p in others_steal) \
                        and (not full_rate_only
                             or (p == "fp32" and t - prev_fp32 <= m.fp32_interval / m.fp32_halves)):
                    busy[sp]["xu"] += m.xu_issue_steal  # issue beside a busy XU pipe (ceilings wgsplit3)
                if seed and done > t + 1:  # variable latency varies: 0-4 cycles of jitter
                    done += rng.random() * JITTER
                if i.base == "LDGDEPBAR":
                    groups[w.wid].append(open_group[w.wid])
                    open_group[w.wid] = 0.0
                if c.write_barrier is not None:
                    sb[w.wid][c.write_barrier] = max(sb[w.wid][c.write_barrier], done)
                if c.read_barrier is not None:
                    sb[w.wid][c.read_barrier] = max(sb[w.wid][c.read_barrier], t + 2)
                if p == "bar" and _is_named(i):
                    wg = (w.wid % warps_per_cta) // SUBPARTITIONS
                    kind = "arv" if ".ARV" in i.op else "sync"
                    named[(kind, w.cta, wg, w.it)] += 1
                    if kind == "sync":
                        w.at_bar, w.bar_key = True, ("named", w.cta, wg, w.it)
                elif p == "bar":
                    key = (w.cta, w.it, w.pc)
                    bar_arrived[key] += 1
                    if bar_arrived[key] == warps_per_cta:
                        bar_release[key] = t + m.bar_latency(warps_per_cta)
                    w.at_bar, w.bar_key = True, key
                w.ready = t + max(1, c.stall)
                if background_wavefronts and w.pc == n - 1 and w.wid % warps_per_cta == 0:
                    span = max(1.0, t - cta_pass[w.cta]) if cta_pass[w.cta] else float(n)
                    smem_windows.append((t, t + span, background_wavefronts / span))
                    cta_pass[w.cta] = t
                if trace is not None and w.pc == trace_pc % n:
                    trace.setdefault(w.wid, []).append(t)
                _advance(w, n, finish, t)
                last[sp] = w
                issued_at[w.wid] = t
                progressed += 1
                issued = True
                break
            stalls["issued" if issued else reason] += 1
        hist.append(progressed)
        t += 1
    done_it = {k: max(v for (wid, it), v in finish.items() if it == k) for k in range(1, iterations + 1)}
    # Steady state over the window in which every warp is past its ``warmup``-th iteration
    # and none has finished: the SM's instruction throughput there, per full loop pass of all
    # resident warps (CTAs drift apart, so per-warp finish times alone would mislead).
    t_a = done_it[min(max(1, warmup), iterations - 1)]
    t_b = min(v for (wid, it), v in finish.items() if it == iterations)
    if t_b <= t_a:
        t_a, t_b = 0, done_it[iterations]
    insts = hist[min(t_b, len(hist) - 1)] - hist[min(t_a, len(hist) - 1)]
    per_iter = len(warps) * len(tabs[0][0]) * (t_b - t_a) / insts if insts else float("nan")
    total = sum(stalls.values())
    n_issued = warp_states.pop("issued", 0) or 1
    return {"cycles_per_iter": per_iter, "slots": {k: v / total for k, v in stalls.items()},
            "warps_per_issue": {k: v / n_issued for k, v in warp_states.items()},
            "simulated_cycles": t, "tensor_busy_until": max(b["tensor"] for b in busy),
            "finish_by_warp": {w.wid: finish.get((w.wid, w.stop)) for w in warps}}


def _advance(w: _Warp, n: int, finish: dict, t: int) -> None:
    w.pc += 1
    if w.pc == n:
        w.pc = 0
        w.it += 1
        finish[(w.wid, w.it)] = t
    finish.setdefault((w.wid, 0), 0)


def _issue_hgmma(w, t, shape, warps_per_cta, m, busy, arrived, chain, pending, windows, running=None,
                 live=None) -> None:
    """One warp issues its part of a warpgroup MMA; the fourth warp to do so starts it."""
    n_, _k, rs, commit = shape
    wg = (w.wid % warps_per_cta) // SUBPARTITIONS
    key = (w.cta, wg, w.it, w.pc)
    entry = arrived.setdefault(key, [[None], 0])
    entry[1] += 1
    if commit:
        pending.append(entry[0])
    if entry[1] < SUBPARTITIONS:
        return
    del arrived[key]
    own = m.wgmma_cycles(n_, rs)
    start = max(t + 1.0, chain.get((w.cta, wg), 0.0), *(b["tensor"] for b in busy))
    end = start + own
    for b in busy:
        b["tensor"] = end
    chain[(w.cta, wg)] = start + m.wgmma_chain(n_, rs)
    if m.wgmma_smem_share:
        operand_bytes = 16 * n_ * 2 + (0 if rs else 64 * 16 * 2)
        windows.append((start, end, m.wgmma_smem_share * operand_bytes / 128 / own))
        if len(windows) > 64:
            del windows[:-64]
    window = None
    if (m.wgmma_fp32_share or m.wgmma_alu_factor != 1.0 or m.wgmma_xu_factor != 1.0) and running is not None:
        window = [start, end, 1.0]
        running.append(window)
        if len(running) > 64:
            del running[:-64]
    if commit:
        entry[0][0] = end + m.wgmma_drain(rs)
    if m.wgmma_fp32_steal and live is not None:
        live[:] = [x for x in live if x[1] > t]
        live.append([start, end, entry[0] if commit else None, m.wgmma_drain(rs), window])


def _steal(m, sp, t, live, stolen, shifted, busy, chain) -> None:
    """An FP32 / IMAD instruction issued on sub-partition ``sp`` while an HGMMA runs: the
    sub-partition's running total grows by ``Machine.wgmma_fp32_steal`` cycles; the pipe (all
    four work on each HGMMA) is as late as the largest total, so what the others took overlaps
    with it. The running HGMMA and those queued behind it move, with their
    FP32 windows and the completion of the groups they close."""
    if not m.wgmma_fp32_steal or not any(a <= t < b for a, b, *_ in live):
        return
    stolen[sp] += m.wgmma_fp32_steal
    s = max(stolen) - shifted[0]
    if s <= 0:
        return
    shifted[0] += s
    for x in live:
        if x[1] <= t:
            continue
        x[1] += s
        if x[0] > t:
            x[0] += s
            if x[4] is not None:
                x[4][0] += s
                x[4][1] += s
        if x[2] is not None:
            x[2][0] = x[1] + x[3]
    for b in busy:
        if b["tensor"] > t:
            b["tensor"] += s
    for k, v in chain.items():
        if v > t:
            chain[k] = v + s


def _is_named(i: Inst) -> bool:
    """A named barrier (id other than 0, or an id in a register) rather than __syncthreads."""
    first = i.operands.split(",")[0].strip().rstrip(";").strip()
    return i.base == "BAR" and first not in ("", "0x0", "0")


def _named_ready(named: Counter, key: tuple) -> bool:
    """A warpgroup's turn (FlashAttention-3's ping-pong, as kernel 7 codes it): its four warps
    wait at BAR.SYNC, and the other warpgroup's four have passed BAR.ARV for this turn --
    in the same pass for the second warpgroup, in the pass before for the first (whose first
    turn the second opens before the loop)."""
    _, cta, wg, it = key
    if named[("sync", cta, wg, it)] < SUBPARTITIONS:
        return False
    need = it - 1 if wg == 0 else it
    return need < 0 or named[("arv", cta, 1 - wg, need)] >= SUBPARTITIONS


def _not_my_turn(turn, w, i, warps_per_cta) -> str | None:
    """Ping-pong: a WARPGROUP.ARRIVE (a GEMM phase's start) waits for its warpgroup's turn."""
    if i.base != "WARPGROUP" or ".ARRIVE" not in i.op:
        return None
    mine = (w.cta, (w.wid % warps_per_cta) // SUBPARTITIONS)
    return None if turn["order"][turn["k"]] == mine else "barrier"


def _next_turn(turn, warps, warps_per_cta, iterations) -> None:
    """Pass the turn once the holder's four warps have closed their group, or when the
    holder has no pass left (it would hold the others forever)."""
    order = turn["order"]
    for _ in range(len(order)):
        cta, wg = order[turn["k"]]
        done = all(x.it >= iterations for x in warps
                   if x.cta == cta and (x.wid % warps_per_cta) // SUBPARTITIONS == wg)
        if turn["committed"] >= SUBPARTITIONS or done:
            turn["k"] = (turn["k"] + 1) % len(order)
            turn["committed"] = 0
        else:
            return


def _fp32_left(m: Machine, windows, t: float) -> float:
    """Share of a sub-partition's FP32 datapaths left to FP32 / IMAD instructions at t: a
    running HGMMA takes ``Machine.wgmma_fp32_share`` of them."""
    if not m.wgmma_fp32_share or not windows:
        return 1.0
    return max(0.05, 1.0 - m.wgmma_fp32_share * _taken(windows, t))


def _taken(windows, t: float) -> float:
    """Sum of the shares of the windows running at t, at most 1: of the shared-memory data
    path, the running HGMMAs' operand reads; of the FP32 datapaths, an HGMMA running."""
    return min(1.0, sum(share for a, b, share in windows if a <= t < b))


def _take(busy: dict, unit: str, t: int, interval: float) -> None:
    """A pipe takes one warp instruction: it is held ``interval`` cycles after the later of
    now and the end of its previous one. Intervals are rates, not whole cycles (the H200's
    measured HMMA interval is 6.0004 cycles, its MUFU one 8.0001): the fractions carry over
    to the next instruction instead of rounding every one up to the next cycle."""
    busy[unit] = max(busy[unit], t) + interval


def _held(until: float, t: int) -> bool:
    """Whether a pipe held until ``until`` still refuses an instruction in cycle ``t``: it
    accepts one in the cycle its previous one ends (a pipe free at 6.0004 takes the next
    instruction in cycle 6; over many instructions the rate is exactly 1 / interval)."""
    return until >= t + 1


def _blocked(w, i, p, t, sb, groups, busy, m, starts, lsu_free, bar_release, wg_pending=()) -> str | None:
    if w.at_bar:
        if bar_release.get(w.bar_key, float("inf")) > t:
            return "barrier"
        w.at_bar = False
    if t < w.ready:
        return "stall count"
    for b in i.ctrl.waits_on:
        if sb[b] > t:
            return "wait barrier"
    if p == "wgmma_ctl" and ".DEPBAR" in i.op:
        wg_pending[:] = [c for c in wg_pending if c[0] is None or c[0] > t]
        if len(wg_pending) > _depbar_n(i):
            return "wgmma wait"
    if i.base == "DEPBAR":
        allowed = _depbar_n(i)
        pending = sorted(g for g in groups if g > t)
        if len(pending) > allowed:
            return "wait barrier"
    if p == "tensor" and _held(busy["tensor"], t):
        return "tensor pipe"
    if p == "wgmma" and m.wgmma_issue_backlog is not None and busy["tensor"] > t + m.wgmma_issue_backlog:
        return "wgmma dispatch"  # the tensor pipe booked too far ahead (Machine.wgmma_issue_backlog)
    if p == "imad" and _held(busy["fp32a"], t):
        return "fma pipe"
    if p == "fp32" and _held(min(busy["fp32a"], busy["fp32b"] if m.fp32_halves > 1 else busy["fp32a"]), t):
        return "fma pipe"
    if p == "alu" and _held(busy["fp32b" if m.int_shares_fp32 else "alu"], t):
        # held only by the extra a running HGMMA costs: Nsight Compute's dispatch_stall
        return "alu pipe" if m.int_shares_fp32 or _held(busy.get("alu_own", busy["alu"]), t) else "alu dispatch"
    if p == "xu" and _queued_mufu(m, i):
        return "mio throttle" if _queue_full(starts, t, m) else None
    if p == "xu" and _held(busy["xu"], t):
        # held only by the extra of a running HGMMA or of other issue: a dispatch stall
        return "xu pipe" if _held(busy.get("xu_own", busy["xu"]), t) else "xu dispatch"
    if p in ("smem", "lsu"):
        if lsu_free > t:
            return "lsu/mio"
        if p == "smem" and _queue_full(starts, t, m):
            return "mio throttle"
    return None


def _queue_full(starts, t, m) -> bool:
    """Whether the sub-partition's MIO queue holds ``mio_queue_depth`` requests not yet started."""
    return sum(1 for s in starts[-64:] if s > t) >= m.mio_queue_depth


def _queued_mufu(m, i) -> bool:
    """A MUFU that waits for the XU pipe in the MIO queue (Machine.mufu_in_mio, H2)."""
    return m.mufu_in_mio and i.base == "MUFU"


def _depbar_n(i: Inst) -> int:
    parts = [p.strip() for p in i.operands.split(",")]
    try:
        return int(parts[1], 0) if len(parts) > 1 else 0
    except ValueError:
        return 0
