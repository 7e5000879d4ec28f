"""Per-GPU constants of the issue model: one ``Machine`` per gpus.json key.

Everything comes from ``analysis/gpus.json`` (each value carries its source there): the
per-SM throughputs become per-sub-partition issue intervals (cycles between two warp
instructions on one pipe), the ``issue_model`` block gives latencies, the bench clock and
the GA10x FP32/INT32 datapath sharing. For the H200, a measured ``reports/h200/
ceilings.json`` (microbenchmarks) replaces the literature latencies when present.
Nothing here is fitted to any measured or published % of FA2: ``Machine.fitted`` lists the
constants the model read whose source is neither a citation (a key of gpus.json's
``sources``) nor a measurement, and the report carries that list as ``fitted_parameters``.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from flashprof.analysis.gap.data import GPUS_FILE, REPO, load_gpus
from flashprof.kernels.gpus import SHIPPED

CEILINGS = REPO / SHIPPED.reports / "ceilings.json"
# The HMMA issue interplay derived from the mma_mix microbenchmark (analysis/gap/interplay.py).
INTERPLAY = REPO / SHIPPED.reports / "mma_mix" / "interplay.json"
_INTERPLAY_FIELDS = ("hmma_issue_cycles", "tensor_issue_steal", "rf_reads_per_clk", "rf_read_depth")
# The FP32 cost beside a running HGMMA, from the wgmma mix microbenchmark (analysis/gap/
# wgmma_interplay.py); HGMMA exists on sm_90a only.
WGMMA_INTERPLAY = REPO / SHIPPED.reports / "wgmma_mix" / "wgmma_interplay.json"
# Whether cp.async writes take the shared-memory data path: ceilings smemshare, judged in
# analysis/gap/smem_share.py (absent: the full charge, an assumption).
SMEM_SHARE = REPO / SHIPPED.reports / "smem_share" / "smem_share.json"
# The order the four schedulers take the SM-wide resources in, judged on the GH100 probes'
# records (analysis/gap/arbitration_rule.py; docs/METHOD.md's rule of commit a96f9f3).
ARBITRATION = REPO / SHIPPED.reports / "mio" / "arbitration_rule.json"
# The GPUs the measured interplay applies to: every mma.sync architecture the model runs.
# Measured on the H200 (GH100); on GA100 / GA102 it is the hypothesis of issue 31 (the same
# sub-partition issue path around HMMA), applied unchanged, never fitted to their numbers.
INTERPLAY_ARCHS = ("sm_80", "sm_86", "sm_90")
SUBPARTITIONS = 4  # cuda_pg_cc: 4 warp schedulers per SM
FLOP_PER_HMMA = 2 * 16 * 8 * 16
# Constants that are assumptions or simulator settings (not measurements) on the A100 /
# GA102, plus the L2 hit latency (near vs far partition); the sensitivity table varies each
# by +-20 %. The L1 latency and the L2 bandwidth are measured (gpus.json sources).
SENSITIVE = ("smem_latency", "l2_latency", "mufu_latency", "barrier_latency", "mio_queue_depth",
             "lsu_per_clk_sm", "hmma_issue_cycles", "tensor_issue_steal", "rf_reads_per_clk", "rf_read_depth")
# ceilings.json latency names -> Machine fields (cycles). cp_async_wait is a 16-byte
# cp.async from L2 + commit + wait_group 0 (kernels/ceilings/latency.cuh): the LDGSTS
# completion the scheduler charges as ``l2_latency``.
_CEILING_LATENCY = {"lds_32": "smem_latency", "ldsm_x4": "ldsm_latency", "mufu_ex2": "mufu_latency",
                    "bar_sync_128": "barrier_latency", "bar_sync_256": "barrier_latency_256",
                    "cp_async_wait": "l2_latency", "wgmma_ss_g1": "wgmma_group_latency",
                    "wgmma_ss_g8": "wgmma_group8_latency", "wgmma_rs_g1": "wgmma_rs_group_latency",
                    "wgmma_rs_g8": "wgmma_rs_group8_latency"}
# ceilings.json throughputs -> (Machine field, per-SM rate -> that field).
_CEILING_RATE = {
    "mma_f16_f32": ("hmma_interval", lambda v: FLOP_PER_HMMA / (v / SUBPARTITIONS)),  # FLOP/clk/SM
    "mufu_ex2": ("mufu_interval", lambda v: 32 / (v / SUBPARTITIONS)),                # op/clk/SM
    "wgmma_f16_f32": ("wgmma_flop_per_clk_sm", float),                                # FLOP/clk/SM
    "wgmma_rs_f16_f32": ("wgmma_rs_flop_per_clk_sm", float),
}
# The per-GPU gpus.json entries machine() reads besides its whole issue_model block.
READ = ("sm_count", "mma_sync_flop_per_clk_sm", "fp32_lanes_per_clk_sm", "alu_lanes_per_clk_sm",
        "mufu_lanes_per_clk_sm", "lsu_warp_inst_per_clk_sm", "registers_per_sm", "smem_per_sm_kb")


@dataclass(frozen=True)
class Machine:
    gpu_key: str
    name: str
    arch: str
    sm_count: int
    clock_mhz: float
    hmma_interval: float      # cycles per HMMA.16816 (fp32 accumulate) per sub-partition
    fp32_halves: int          # 16-lane FP32 datapaths per sub-partition (1 GA100, 2 GA102/GH100)
    int_shares_fp32: bool     # GA10x: the second FP32 datapath is also the INT32 one
    alu_interval: float
    mufu_interval: float
    lsu_per_clk_sm: float     # LSU/MIO warp instructions accepted per SM clock
    smem_latency: float
    l1_latency: float
    l2_latency: float
    mufu_latency: float
    barrier_latency: float
    mio_queue_depth: float
    max_warps_per_sm: int
    regs_per_sm: int
    smem_per_sm_kb: float
    smem_reserved_per_cta_kb: float
    # Measured on the H200 only (None elsewhere: the scheduler then uses smem_latency /
    # barrier_latency): LDSM.x4 issue-to-use latency, BAR.SYNC of 256 threads.
    ldsm_latency: float | None = None
    barrier_latency_256: float | None = None
    # Measured L2 -> SM load bandwidth per SM (B/clk) where a measurement exists (None: no
    # L2 bandwidth term): LDGSTS bytes queue on it before their L2 latency starts.
    l2_bytes_per_clk_sm: float | None = None
    # Warpgroup MMA (sm_90a), measured by make ceilings only (None: the GPU runs no HGMMA in
    # this model): SM rate with both operands in shared memory (SS) and with A from
    # registers (RS, default: the SS rate); cycles from a lone warpgroup's fence to the end of
    # its wait for a group of 1 and of 8 dependent m64n128k16.
    wgmma_flop_per_clk_sm: float | None = None
    wgmma_rs_flop_per_clk_sm: float | None = None
    wgmma_group_latency: float | None = None
    wgmma_group8_latency: float | None = None
    wgmma_rs_group_latency: float | None = None     # the same with A from registers (RS)
    wgmma_rs_group8_latency: float | None = None
    # An HGMMA's shared-memory operand bytes (A for SS, B always) take smem wavefronts
    # (an assumption: they share the 128 B/clk data path with LDS/STS/LDGSTS; 0 = they don't).
    wgmma_smem_share: float = 1.0
    # Issue interplay around HMMA, derived from the mma_mix microbenchmark where one was run
    # (analysis/gap/interplay.py; defaults: none): an HMMA holds its sub-partition's dispatch
    # ``hmma_issue_cycles`` cycles; each other instruction issued while that sub-partition's
    # tensor pipe is busy holds the pipe ``tensor_issue_steal`` cycles longer. Beside HGMMA
    # nothing is measured: ``wgmma_issue_steal`` (0 unless a what-if sets it).
    hmma_issue_cycles: float = 1.0
    tensor_issue_steal: float = 0.0
    wgmma_issue_steal: float = 0.0
    # Register-file read bandwidth, warp-register reads per cycle per sub-partition (scheduler.
    # rf_reads counts them), from the same microbenchmark where derived; None: unlimited.
    rf_reads_per_clk: float | None = None
    rf_read_depth: float = 0.0  # cycles of reads that may queue ahead of the register file (operand collectors)
    # Share of each sub-partition's FP32 datapaths a running HGMMA takes: an FP32 / IMAD
    # instruction issued while one runs holds its datapath fp32_interval / (1 - share) cycles.
    # Derived from the wgmma mix microbenchmark (analysis/gap/wgmma_interplay.py); 0: none.
    wgmma_fp32_share: float = 0.0
    # Tensor-pipe cycles an HGMMA loses to each FP32 / IMAD instruction a sub-partition issues
    # while it runs (the other side of the same exchange: ceilings wgmix's split-role run,
    # analysis/gap/wgmma_interplay.py); 0: none.
    wgmma_fp32_steal: float = 0.0
    # How much longer an integer / compare instruction (the ALU pipe: FMNMX, ISETP, LOP3 ...)
    # holds its pipe while an HGMMA runs, the HGMMA losing nothing (ceilings wgsplit2's
    # split-role run: FMNMX beside SS HGMMAs, analysis/gap/wgmma_interplay.alu_factor); 1: none.
    wgmma_alu_factor: float = 1.0
    # XU-pipe cycles each other instruction issued on a sub-partition costs while its XU pipe
    # (MUFU) is busy: from ceilings wgsplit3 (MUFU.EX2 one in five among FFMAs takes 10.8 cycles
    # an EX2, alone 8.0), judged in wgmma_interplay.mufu_candidate; 0: none.
    xu_issue_steal: float = 0.0
    # Whose instructions cost the XU pipe that extra time: "subpartition" (any warp's issued on
    # the sub-partition), "warp" (only the warp whose MUFU holds the pipe), "fp32" / "fma" (that
    # warp's, and the other warps' FP32-pipe / FP32-pipe and IMAD ones): decided by ceilings
    # wgsplit4 and wgsplit5, a neighbour warp's FFMA / FMNMX / FADD / FMUL / IMAD beside one
    # warp's EX2 (analysis/gap/xu_pair.py).
    xu_steal_scope: str = "subpartition"
    # How much longer a MUFU holds the XU pipe while an HGMMA runs (wgsplit3: EX2 beside SS HGMMAs
    # 10.75 cycles, alone 8.07; the HGMMAs keep their rate), judged in
    # wgmma_interplay.mufu_candidate; 1: none.
    wgmma_xu_factor: float = 1.0
    # Cycles from a transaction-barrier wait (SYNCS.PHASECHK.TRANS64.TRYWAIT) to its predicate,
    # the phase already complete: ceilings wgsplit4's chain of such waits (mbar_try_wait_done,
    # analysis/gap/xu_pair.py); 0: the next cycle.
    mbar_wait_latency: float = 0.0
    # An HGMMA issues only while the tensor pipe is booked at most this many cycles ahead (a
    # shallow queue in front of it; a warp held so counts as "dispatch"): ceilings wgsplit4's
    # issue spans of one and two warpgroups (analysis/gap/xu_pair.py); None: no limit.
    wgmma_issue_backlog: float | None = None
    # Candidates of docs/METHOD.md's rule written after the mix probe (issues 31/32; judged in
    # analysis/gap/dispatch_rule.py, adopted only where that rule says so): an HMMA whose
    # sub-partition's previous HMMA came from another warp waits this many cycles more at
    # dispatch once the tensor pipe frees (H1; a warp held so counts as "dispatch"); 0: none.
    hmma_switch_dispatch: float = 0.0
    # H2: a MUFU takes a slot of its sub-partition's MIO queue (``mio_queue_depth``, shared with
    # the shared-memory requests) from issue until the XU pipe starts it, instead of waiting at
    # issue for the pipe (a warp held by a full queue counts as "mio throttle"); False: no queue.
    mufu_in_mio: bool = False
    # The order in which the four schedulers take the SM-wide resources each cycle (the LSU/MIO
    # port, the shared-memory data path's queue, the L2 share): "fixed" -- sub-partition 0 first,
    # always (the model as built); "rotating" -- the first one moves on by one every cycle (no
    # scheduler favoured: ceilings mio2's two-warp records, analysis/gap/mio_probe.py).
    sp_arbitration: str = "fixed"
    # Which ready warp a scheduler issues (scheduler.POLICIES): "greedy" -- the last one while it
    # can, else the first in warp order (the model as built); the warp-choice rule's other
    # candidates, "round_robin" and "greedy_lri" (docs/METHOD.md). A simulate() call that names
    # its policy keeps it.
    warp_choice: str = "greedy"
    # SHFL takes a slot of the MIO queue and one wavefront of the shared-memory data path, as LDS
    # does, instead of the LSU port alone: gpus.json where measured (ceilings mio3 on the H100, a
    # SHFL chain beside an ldmatrix flood, analysis/gap/mio_probe.py); False elsewhere.
    shfl_in_smem: bool = False
    # Share of an LDGSTS's written bytes that take the shared-memory data path (128-byte
    # wavefronts, the path LDSM / LDS / STS use): ceilings smemshare, ldmatrix at full rate beside
    # cp.async (analysis/gap/smem_share.py); 1.0: all of them (the assumption before it).
    ldgsts_smem_share: float = 1.0
    # Cycles of Nsight Compute's sm__pipe_tensor_op_hmma_cycles_active one HMMA.16816.F32 adds per
    # sub-partition, where that differs from the cycles it holds the pipe (None: the same,
    # hmma_interval). GA10x GeForce runs fp32-accumulate HMMA at half its fp16-accumulate rate and
    # the counter counts it at the fp16-accumulate rate (gpus.json tensor_pipe_counted_flop_per_clk_sm):
    # a pipe % in Nsight Compute's unit, nothing the simulation reads.
    hmma_counted_interval: float | None = None
    sources: dict = field(default_factory=dict, compare=False)
    # Constants read from an entry whose source names no citation and no measurement.
    fitted: tuple = field(default=(), compare=False)

    @property
    def fp32_interval(self) -> float:
        return 2.0  # each 16-lane datapath takes a 32-thread warp instruction in 2 cycles

    def bar_latency(self, warps_per_cta: int) -> float:
        if warps_per_cta * 32 >= 256 and self.barrier_latency_256 is not None:
            return self.barrier_latency_256
        return self.barrier_latency

    def wgmma_cycles(self, n: int, rs: bool) -> float:
        """Cycles one m64nNk16 occupies the SM's tensor cores (all four sub-partitions)."""
        rate = (self.wgmma_rs_flop_per_clk_sm if rs else None) or self.wgmma_flop_per_clk_sm
        return 2.0 * 64 * n * 16 / rate

    def _group_latencies(self, rs: bool) -> tuple[float | None, float | None]:
        if rs and self.wgmma_rs_group_latency and self.wgmma_rs_group8_latency:
            return self.wgmma_rs_group_latency, self.wgmma_rs_group8_latency
        return self.wgmma_group_latency, self.wgmma_group8_latency

    def wgmma_chain(self, n: int, rs: bool) -> float:
        """Cycles between two dependent HGMMA of one warpgroup (the lone-warpgroup chain:
        (group of 8 - group of 1) / 7, at N = 128), never below the pipe occupancy."""
        own = self.wgmma_cycles(n, rs)
        g1, g8 = self._group_latencies(rs)
        if g1 and g8:
            return max(own, (g8 - g1) / 7 * n / 128)
        return own

    def wgmma_drain(self, rs: bool = False) -> float:
        """Cycles from the end of a group's last HGMMA on the pipe to its wait's release: the
        measured group-of-1 latency less that HGMMA's own pipe time (N = 128)."""
        g1, _ = self._group_latencies(rs)
        return max(0.0, (g1 or 0.0) - self.wgmma_cycles(128, rs))

    def scaled(self, name: str, factor: float) -> "Machine":
        v = getattr(self, name)
        return self if v is None else replace(self, **{name: v * factor})  # None: the cost is off


def _v(entry) -> float:
    return float(entry["value"]) if isinstance(entry, dict) else float(entry)


def traceable(source, cited) -> bool:
    """A source that names a gpus.json citation key, or a measurement (``measured ...``)."""
    if not isinstance(source, str):
        return False
    return source.startswith("measured") or any(re.search(rf"\b{re.escape(k)}\b", source) for k in cited)


def machine(gpu_key: str, gpus: dict | None = None, ceilings: Path | None = CEILINGS,
            interplay: Path | None = INTERPLAY, wgmma_interplay: Path | None = WGMMA_INTERPLAY,
            smem_share: Path | None = SMEM_SHARE, arbitration: Path | None = ARBITRATION) -> Machine:
    """The Machine of one gpus.json key (KeyError with the known keys if absent)."""
    gpus = gpus or load_gpus(GPUS_FILE)
    if gpu_key not in gpus["gpus"]:
        raise KeyError(f"unknown GPU {gpu_key!r}: known {sorted(gpus['gpus'])}")
    g = gpus["gpus"][gpu_key]
    im = g.get("issue_model")
    if not im:
        raise KeyError(f"{gpu_key}: gpus.json has no issue_model block")
    per_sp = 1.0 / SUBPARTITIONS
    fields = dict(
        gpu_key=gpu_key, name=g["name"], arch=g["arch"], sm_count=int(_v(g["sm_count"])),
        clock_mhz=_v(im["bench_clock_mhz"]),
        hmma_interval=FLOP_PER_HMMA / (_v(g["mma_sync_flop_per_clk_sm"]) * per_sp),
        fp32_halves=max(1, round(_v(g["fp32_lanes_per_clk_sm"]) * per_sp / 16)),
        int_shares_fp32=bool(_v(im["int_shares_fp32_datapath"])),
        alu_interval=32 / (_v(g["alu_lanes_per_clk_sm"]) * per_sp),
        mufu_interval=32 / (_v(g["mufu_lanes_per_clk_sm"]) * per_sp),
        lsu_per_clk_sm=_v(g["lsu_warp_inst_per_clk_sm"]),
        smem_latency=_v(im["smem_latency"]), l1_latency=_v(im["l1_latency"]),
        l2_latency=_v(im["l2_latency"]), mufu_latency=_v(im["mufu_latency"]),
        barrier_latency=_v(im["barrier_latency"]), mio_queue_depth=_v(im["mio_queue_depth"]),
        max_warps_per_sm=int(_v(im["max_warps_per_sm"])),
        regs_per_sm=int(_v(g["registers_per_sm"])), smem_per_sm_kb=_v(g["smem_per_sm_kb"]),
        smem_reserved_per_cta_kb=_v(im["smem_reserved_per_cta_kb"]),
        l2_bytes_per_clk_sm=_v(im["l2_bytes_per_clk_sm"]) if "l2_bytes_per_clk_sm" in im else None,
        shfl_in_smem=bool(_v(im["shfl_in_smem"])) if "shfl_in_smem" in im else False,
        sources={k: v["source"] for k, v in im.items()},
    )
    counted = g.get("tensor_pipe_counted_flop_per_clk_sm")
    if counted is not None:
        fields["hmma_counted_interval"] = FLOP_PER_HMMA / (_v(counted) * per_sp)
        fields["sources"]["hmma_counted_interval"] = counted.get("source") if isinstance(counted, dict) else None
    if g["arch"] == "sm_90" and ceilings is not None and Path(ceilings).is_file():
        fields.update(_measured(Path(ceilings), fields["sources"]))
    if g["arch"] in INTERPLAY_ARCHS and interplay is not None and Path(interplay).is_file():
        fields.update(_interplay(Path(interplay), fields["sources"], None if g["arch"] == "sm_90" else g["name"]))
    if g["arch"] == "sm_90" and wgmma_interplay is not None and Path(wgmma_interplay).is_file():
        fields.update(_wgmma_interplay(Path(wgmma_interplay), fields["sources"]))
    if g["arch"] in INTERPLAY_ARCHS and smem_share is not None and Path(smem_share).is_file():
        fields.update(_smem_share(Path(smem_share), fields["sources"], None if g["arch"] == "sm_90" else g["name"]))
    if arbitration is not None and Path(arbitration).is_file():
        fields.update(_arbitration(Path(arbitration), fields["sources"], None if g["arch"] == "sm_90" else g["name"]))
    read = {n: g[n].get("source") if isinstance(g[n], dict) else None for n in READ}
    read.update(fields["sources"])
    fields["fitted"] = tuple(sorted(n for n, src in read.items() if not traceable(src, gpus.get("sources", {}))))
    return Machine(**fields)


def _measured(path: Path, sources: dict) -> dict:
    """Latencies (cycles) and pipe rates measured by the H200 microbenchmarks
    (``make ceilings``), where present and checked ok; they replace the literature values."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    out = {}
    for m in data.get("measurements", []):
        v, kind = m.get("value"), m.get("kind")
        if not (isinstance(v, (int, float)) and math.isfinite(v) and v > 0) or m.get("check", "ok") != "ok":
            continue
        if kind == "latency" and m.get("name") in _CEILING_LATENCY:
            name, value = _CEILING_LATENCY[m["name"]], float(v)
        elif kind == "throughput" and m.get("name") in _CEILING_RATE:
            name, convert = _CEILING_RATE[m["name"]]
            value = convert(float(v))
        else:
            continue
        out[name] = value
        sources[name] = f"measured: {path.parent.name}/{path.name} {kind} {m['name']} = {v:.4g} {m.get('unit', '')}"
    return out


def _interplay(path: Path, sources: dict, assumed_for: str | None = None) -> dict:
    """hmma_issue_cycles and tensor_issue_steal as derived from the mma_mix microbenchmark;
    ``assumed_for``: the GPU they are carried to unmeasured (its source says so)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    out = {}
    for name in _INTERPLAY_FIELDS:
        v = data.get(name)
        if isinstance(v, (int, float)) and math.isfinite(v) and v >= 0:
            out[name] = float(v)
            # the held-out error of the model as used: with the register-file cap where it was adopted
            rf = data.get("rf_read_cap") or {}
            held = (rf.get("chosen") or {}).get("held_out_mae_pct") if rf.get("adopted") else data.get("held_out_mae_pct")
            sources[name] = (f"measured: {path.parent.parent.name}/{path.parent.name}/{path.name} (ceilings mix, "
                             f"held-out error {held if held is not None else float('nan'):.1f} %) = {v:g}"
                             + (f"; on the H200, assumed unchanged for the {assumed_for} (not measured there)"
                                if assumed_for else ""))
    return out


def _smem_share(path: Path, sources: dict, assumed_for: str | None = None) -> dict:
    """ldgsts_smem_share as judged from ceilings smemshare (analysis/gap/smem_share.py);
    ``assumed_for``: a GPU it is carried to unmeasured (the same SM data path as issue 31's
    hypothesis; its source says so)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    v = data.get("ldgsts_smem_share")
    if not (isinstance(v, (int, float)) and math.isfinite(v) and 0 <= v <= 1):
        return {}
    sources["ldgsts_smem_share"] = (f"{data.get('source', 'measured: ' + path.name)} = {v:g}"
                                    + (f"; on the H200, assumed unchanged for the {assumed_for} (not measured there)"
                                       if assumed_for else ""))
    return {"ldgsts_smem_share": float(v)}


def _arbitration(path: Path, sources: dict, assumed_for: str | None = None) -> dict:
    """sp_arbitration as the arbitration rule chose it (R1: "rotating"); ``assumed_for``: a GPU it
    is carried to (the fixed order is the simulator's loop order, not a property of any SM)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    order = {"R0": "fixed", "R1": "rotating"}.get(data.get("choice"))
    if order is None:
        return {}
    pooled = ", ".join(f"{c} {v:.2f} %" for c, v in (data.get("pooled_mae_pct") or {}).items())
    sources["sp_arbitration"] = (f"measured: {path.parent.parent.name}/{path.parent.name}/{path.name} (arbitration rule, "
                                 f"written before scoring: the GH100 probes' records other than ceilings mio2's, pooled "
                                 f"MAE {pooled}; {data['choice']}) = {order}"
                                 + (f"; carried unchanged to the {assumed_for}" if assumed_for else ""))
    return {"sp_arbitration": order}


def _mode(run: str | None) -> str:
    """The ceilings mode of a run file (``.../wgsplit5.raw.jsonl`` -> wgsplit5)."""
    return Path(run).name.split(".")[0] if run else "wgsplit4"


def _wgmma_interplay(path: Path, sources: dict) -> dict:
    """wgmma_fp32_share (and wgmma_fp32_steal, wgmma_alu_factor, xu_issue_steal, wgmma_xu_factor) where the
    wgmma mix and split-role derivations adopted them."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    out = {}
    alu = data.get("alu") or {}
    f = alu.get("wgmma_alu_factor")
    if alu.get("adopted") and isinstance(f, (int, float)) and f >= 1:
        m = (alu.get("mae_pct") or {}).get("with") or {}
        sources["wgmma_alu_factor"] = (f"measured: {path.parent.parent.name}/{path.parent.name}/{path.name} (ceilings wgsplit2 "
                                       f"split-role run, {alu.get('source', 'wgsplit2.raw.jsonl')}: FMNMX beside HGMMAs over "
                                       f"alone; FMNMX mix points held out, error {m.get('fmnmx', float('nan')):.1f} %) = {f:.4g}")
        out["wgmma_alu_factor"] = float(f)
    mufu = data.get("mufu") or {}
    if mufu.get("adopted") and isinstance(mufu.get("xu_issue_steal"), (int, float)) \
            and isinstance(mufu.get("wgmma_xu_factor"), (int, float)):
        w = (mufu.get("mae_pct") or {}).get("with") or {}
        where = (f"measured: {path.parent.parent.name}/{path.parent.name}/{path.name} (ceilings wgsplit3 split-role run, "
                 f"{mufu.get('source', 'wgsplit3.raw.jsonl')}")
        sources["xu_issue_steal"] = (f"{where}: EX2 one in five among FFMAs, alone; held out: the other mixes alone "
                                     f"{w.get('alone_mae_pct', float('nan')):.1f} %, the EX2 / softmax mix points "
                                     f"{w.get('mix_mae_pct', float('nan')):.1f} %) = {mufu['xu_issue_steal']:g}")
        sources["wgmma_xu_factor"] = (f"{where}: EX2 beside SS HGMMAs over alone; held out: the mixes beside HGMMAs "
                                      f"{w.get('beside_mae_pct', float('nan')):.1f} %) = {mufu['wgmma_xu_factor']:.4g}")
        out["xu_issue_steal"] = float(mufu["xu_issue_steal"])
        out["wgmma_xu_factor"] = float(mufu["wgmma_xu_factor"])
    sc = data.get("xu_scope") or {}
    if sc.get("xu_steal_scope") in ("subpartition", "warp", "fp32", "fma", "fp32_full") and "xu_issue_steal" in out:
        sources["xu_steal_scope"] = (f"measured: {path.parent.parent.name}/{path.parent.name}/{path.name} (ceilings "
                                     f"{_mode(sc.get('run'))}, {sc.get('run', 'wgsplit4.raw.jsonl')}: one warp's EX2 beside a "
                                     f"neighbour's FP32 / ALU / IMAD instruction, predicted before the run; MAE " + ", ".join(
                                         f"{k} {v:.1f} %" for k, v in (sc.get("mae_pct") or {}).items()) + f") = {sc['xu_steal_scope']}")
        out["xu_steal_scope"] = sc["xu_steal_scope"]
    rule = data.get("xu_rule") or {}
    if rule.get("xu_steal_scope") in ("fp32", "fp32_full") and isinstance(rule.get("xu_issue_steal"), (int, float)) \
            and "xu_issue_steal" in out:
        # the rule judged on every XU record of the SM (analysis/gap/xu_rule.py) over the scope alone
        where = f"measured: {path.parent.parent.name}/{path.parent.name}/{path.name} (xu_rule: "
        pooled = ", ".join(f"{c} {v:.1f} %" for c, v in (rule.get("pooled_mae_pct") or {}).items())
        sources["xu_steal_scope"] = (f"{where}wgsplit3, wgsplit5 and the XU probe's records, rule written before "
                                     f"scoring; pooled MAE {pooled}; {rule.get('choice')}) = {rule['xu_steal_scope']}")
        if rule["xu_issue_steal"] != out["xu_issue_steal"]:
            sources["xu_issue_steal"] = f"{where}{rule.get('choice')}) = {rule['xu_issue_steal']:g}"
        out["xu_steal_scope"] = rule["xu_steal_scope"]
        out["xu_issue_steal"] = float(rule["xu_issue_steal"])
    dr = data.get("dispatch_rule") or {}
    if dr.get("choice") in ("H1", "H2", "H3"):
        # the compute-side rule judged on the mma_mix points and FA2's skeleton (analysis/gap/dispatch_rule.py)
        where = (f"measured: {path.parent.parent.name}/{path.parent.name}/{path.name} (dispatch_rule: the mma_mix points "
                 f"and the skeleton probe, rule written before scoring; {dr['choice']})")
        if dr["choice"] in ("H1", "H3") and isinstance(dr.get("hmma_switch_dispatch"), (int, float)):
            sources["hmma_switch_dispatch"] = f"{where} = {dr['hmma_switch_dispatch']:g}"
            out["hmma_switch_dispatch"] = float(dr["hmma_switch_dispatch"])
        if dr["choice"] in ("H2", "H3"):
            sources["mufu_in_mio"] = f"{where} = True"
            out["mufu_in_mio"] = True
    mb = data.get("mbar") or {}
    if isinstance(mb.get("mbar_wait_latency"), (int, float)) and mb["mbar_wait_latency"] > 0:
        sources["mbar_wait_latency"] = (f"measured: {path.parent.parent.name}/{path.parent.name}/{path.name} (ceilings "
                                        f"{_mode(mb.get('run'))}, {mb.get('run', 'wgsplit4.raw.jsonl')}: a chain of completed-phase mbarrier waits, "
                                        f"(cycles(2n) - cycles(n)) / n) = {mb['mbar_wait_latency']:.4g}")
        out["mbar_wait_latency"] = float(mb["mbar_wait_latency"])
    wi = data.get("wgmma_issue") or {}
    if wi.get("adopted") and isinstance(wi.get("wgmma_issue_backlog"), (int, float)):
        g = (wi.get("grid") or {})
        best = g.get(f"{wi['wgmma_issue_backlog']:g}", {}).get("mae_pct", float("nan"))
        sources["wgmma_issue_backlog"] = (f"measured: {path.parent.parent.name}/{path.parent.name}/{path.name} (ceilings wgsplit4, "
                                          f"{wi.get('run', 'wgsplit4.raw.jsonl')}: issue spans of a group of 8 HGMMAs, one and "
                                          f"two warpgroups, chosen on the grid: error {best:.1f} %, unlimited "
                                          f"{(g.get('none') or {}).get('mae_pct', float('nan')):.1f} %) = {wi['wgmma_issue_backlog']:g}")
        out["wgmma_issue_backlog"] = float(wi["wgmma_issue_backlog"])
    ex = data.get("exchange") or {}
    share, steal = ex.get("wgmma_fp32_share"), ex.get("wgmma_fp32_steal")
    if ex.get("adopted") and isinstance(share, (int, float)) and 0 <= share < 1 and isinstance(steal, (int, float)):
        where = (f"measured: {path.parent.parent.name}/{path.parent.name}/{path.name} (ceilings wgmix split-role run, "
                 f"{ex.get('source', 'wgmma_split.raw.jsonl')}")
        mae = (ex.get("mae_pct") or {}).get("exchange", float("nan"))
        sources["wgmma_fp32_share"] = f"{where}: FP32 cycles lost per HGMMA over its own; {ex.get('n')} mix points held out, error {mae:.1f} %) = {share:.4g}"
        sources["wgmma_fp32_steal"] = f"{where}: pipe cycles lost per FP32 instruction) = {steal:.4g}"
        return {**out, "wgmma_fp32_share": float(share), "wgmma_fp32_steal": float(steal)}
    v = data.get("wgmma_fp32_share")
    if not data.get("adopted") or not isinstance(v, (int, float)) or not 0 <= v < 1:
        return out
    held = (data.get("chosen") or {}).get("held_out_mae_pct", float("nan"))
    sources["wgmma_fp32_share"] = (f"measured: {path.parent.parent.name}/{path.parent.name}/{path.name} (ceilings wgmix, "
                                   f"held-out error {held:.1f} %) = {v:g}")
    return {**out, "wgmma_fp32_share": float(v)}


def occupancy(m: Machine, regs_per_thread: int, smem_bytes: int, warps_per_cta: int) -> dict:
    """CTAs per SM and which resource limits it (registers allocated per warp in units of
    256, cuda_pg_cc; shared memory plus the per-CTA reservation; resident warps)."""
    regs_warp = math.ceil(regs_per_thread * 32 / 256) * 256
    by = {
        "registers": m.regs_per_sm // (regs_warp * warps_per_cta),
        "shared memory": int(m.smem_per_sm_kb * 1024 // (smem_bytes + m.smem_reserved_per_cta_kb * 1024)),
        "warps": m.max_warps_per_sm // warps_per_cta,
    }
    limit = min(by, key=by.get)
    return {"ctas": max(0, by[limit]), "limit": limit, **{f"by_{k.split()[0]}": v for k, v in by.items()}}
