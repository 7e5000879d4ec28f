"""Gap stage, the data both models stand on: the per-GPU data files (``gpus.json``:
throughputs with sources; ``published.json``: the series' published % of FA2 on A100 /
RTX 3090), the targets, which execution pipe each SASS opcode occupies, and the work per
pipe of each profiled launch (``launch_work``: the issue model's H200 evidence).

Input: those files and the long frame of ``flashprof.analysis.report.parse.load_frame``.
Output: constants, small readers and one frame. Neither model lives here: the issue model is
``gap/`` (controls, loops, constants, scheduler, issue_report), the superseded fitted one
``gap/legacy_pipes/``.
"""
from __future__ import annotations

import json
import math
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from flashprof.analysis.report.parse import LAUNCH_KEY, launch_identity, per_launch
from flashprof.analysis.report.target_key import ANCHORS, KERNEL_IDS, MMA_SYNC_KEY, kernel_key
from flashprof.analysis.stages.pipes import OPCODE_PREFIX
from flashprof.paths import ROOT as REPO
from flashprof.profiling.sidecar import SidecarError, sidecar_path
from flashprof.profiling.sidecar import load as load_sidecar

HERE = Path(__file__).resolve().parents[1]  # analysis/
GPUS_FILE = HERE / "gpus.json"
PUBLISHED_FILE = HERE / "published.json"

FLOP_PER_HMMA = 2 * 16 * 8 * 16  # m16n8k16, the only mma.sync shape kernels 1-7 and FA2 use
SMEM_METRIC = "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"
REF = ANCHORS[0]  # FlashAttention-2 (the PyTorch SDPA flash backend)
TARGETS = (*KERNEL_IDS, REF)
SEQ = 4096

# --------------------------------------------------------------------------- opcode -> pipe
# Which execution pipe each SASS opcode occupies (Nsight Compute's pipe names, Kernel
# Profiling Guide 'Pipelines'; checked on the H200 FA2 report, whose per-pipe utilisation
# this mapping reproduces: see pipe_check). "imad" is a sub-group of the FMA pipe that
# only its heavy half executes. "uniform" and "control" occupy no modelled pipe but are
# issued like every instruction.
PIPE_OPCODES: dict[str, tuple[str, ...]] = {
    "tensor": ("HMMA",),
    "fma": ("FADD", "FMUL", "FFMA", "FADD32I", "FMUL32I", "FFMA32I", "FSWZADD",
            "HADD2", "HMUL2", "HFMA2", "HFMA2.MMA"),
    "imad": ("IMAD", "IMUL", "IMADSP", "IDP", "IDP4A", "IMAD32I", "IMUL32I"),
    "alu": ("FMNMX", "FSETP", "FSEL", "FCHK", "FSET", "ISETP", "IADD3", "IADD", "IADD32I",
            "IABS", "IMNMX", "VIADD", "VIMNMX", "LOP3", "LOP", "LOP32I", "SHF", "SHL", "SHR",
            "LEA", "SEL", "MOV", "MOV32I", "PRMT", "F2FP", "PLOP3", "P2R", "R2P", "BMSK",
            "SGXT", "HSETP2", "HMNMX2", "CSET", "CSETP"),
    "xu": ("MUFU", "I2F", "F2I", "F2F", "FRND", "I2I", "FLO", "POPC", "BREV"),
    "lsu": ("LDS", "STS", "LDSM", "STSM", "LDG", "STG", "LDGSTS", "LDL", "STL", "LD", "ST",
            "ATOM", "ATOMS", "ATOMG", "RED", "SHFL", "MATCH", "LDC"),
    "uniform": ("UIADD3", "UMOV", "ULDC", "ULEA", "USHF", "UIMAD", "UISETP", "USEL", "ULOP3",
                "R2UR", "S2UR", "VOTEU", "UPLOP3", "UFLO", "UPOPC", "USETMAXREG"),
    "control": ("BRA", "BAR", "BSSY", "BSYNC", "EXIT", "RET", "CALL", "DEPBAR", "LDGDEPBAR",
                "NOP", "S2R", "CS2R", "WARPSYNC", "YIELD", "VOTE", "MEMBAR", "FENCE", "ERRBAR",
                "JMP", "BREAK", "KILL", "NANOSLEEP", "CCTL", "ELECT"),
}
OPCODE_PIPE: dict[str, str] = {op: pipe for pipe, ops in PIPE_OPCODES.items() for op in ops}
# Shared-memory proxy weights for static code (wavefronts per instruction, conflict-free).
SMEM_PROXY = {"LDSM": 4.0, "LDS": 1.0, "STS": 1.0, "LDGSTS": 1.0}

WORK_COLUMNS = ("tensor_flop", "fma_inst", "imad_inst", "alu_inst", "xu_inst", "lsu_inst",
                "smem_wavefronts", "issue_inst", "dram_bytes")



def pipe_of(opcode: str) -> str:
    """Pipe of a SASS opcode (the base name, modifiers stripped); 'other' if unknown."""
    base = opcode.split(".", 1)[0].upper()
    return OPCODE_PIPE.get(base, "other")


# --------------------------------------------------------------------------- data files
def load_gpus(path: str | Path = GPUS_FILE) -> dict:
    return json.loads(Path(path).read_text())


def load_published(path: str | Path = PUBLISHED_FILE) -> dict:
    return json.loads(Path(path).read_text())


def match_gpu(name: str, gpus: dict) -> str | None:
    """gpus.json key whose longest ``match`` pattern occurs in ``name`` (case-insensitive)."""
    norm = str(name).lower().replace(" ", "").replace("-", "")
    best, best_len = None, 0
    for key, g in gpus["gpus"].items():
        for pat in g.get("match", []):
            p = pat.lower().replace(" ", "").replace("-", "")
            if p in norm and len(p) > best_len:
                best, best_len = key, len(p)
    return best


# --------------------------------------------------------------------------- default inputs
def default_reports() -> list[Path]:
    """Every report under reports/<gpu>/ (reports of a real A100 / 3090 drop in there)."""
    return sorted(p for p in (REPO / "reports").glob("*/*.ncu-rep"))


# --------------------------------------------------------------------------- work
def empty_work() -> dict:
    return {c: 0.0 for c in WORK_COLUMNS}


def work_from_opcodes(counts: Mapping[str, float], smem_wavefronts: float | None = None,
                      dram_bytes: float = 0.0) -> dict:
    """Pipe work from {opcode: warp instructions}. Without measured wavefronts the
    static proxy SMEM_PROXY is used."""
    w = empty_work()
    proxy = 0.0
    for op, n in counts.items():
        n = float(n)
        if not n or math.isnan(n):
            continue
        pipe = pipe_of(op)
        w["issue_inst"] += n
        if pipe == "tensor":
            w["tensor_flop"] += n * FLOP_PER_HMMA
        elif pipe in ("fma", "imad", "alu", "xu", "lsu"):
            w[f"{pipe}_inst"] += n
        proxy += SMEM_PROXY.get(op.split(".", 1)[0].upper(), 0.0) * n
    w["smem_wavefronts"] = proxy if smem_wavefronts is None or math.isnan(smem_wavefronts) else float(smem_wavefronts)
    w["dram_bytes"] = float(dram_bytes or 0.0)
    return w


def _config_slug(path) -> str | None:
    """``config_slug`` of a report's sidecar JSON (the kernel config it ran), if readable."""
    if not isinstance(path, str) or not path:
        return None
    try:
        slug = load_sidecar(sidecar_path(path)).config_slug
    except SidecarError:
        return None
    return str(slug) if slug else None


def launch_work(frame: pd.DataFrame, gpus: dict | None = None, wgmma: bool = False) -> pd.DataFrame:
    """One row per launch that is a known target: identity, gpu_key, WORK_COLUMNS,
    opcode counts (dict column ``opcodes``), measured SM cycles and the report's peaks.
    Kernel 7: by default its mma.sync form is target "7" and the wgmma kernel 7 is left out
    (the pipe-time model has no warpgroup MMA); with ``wgmma`` (the issue model, which
    simulates HGMMA) the shipped kernel 7 is "7" and its mma.sync form "7mma"."""
    gpus = gpus or load_gpus()
    ident = launch_identity(frame).set_index(list(LAUNCH_KEY))
    rows = []
    for key, _arch, m in per_launch(frame):
        info = ident.loc[key]
        target = kernel_key(key[0], info["variant"])
        if target == MMA_SYNC_KEY:
            if not wgmma:
                target = "7"  # kernel 7's mma.sync form: the kernel 7 the pipe-time model describes
        elif target == "7" and "wgmma" in str(_config_slug(info.get("path")) or "").split("_") and not wgmma:
            continue  # the Hopper wgmma kernel 7: the pipe-time model does not simulate warpgroup MMA
        if target not in TARGETS and not (wgmma and target == MMA_SYNC_KEY):
            continue
        ops = {k[len(OPCODE_PREFIX):-1]: v for k, v in m.items() if k.startswith(OPCODE_PREFIX)}
        dram = m.get("dram__bytes.sum")
        if dram is None and "dram__bytes.sum.per_second" in m and "gpu__time_duration.sum" in m:
            dram = m["dram__bytes.sum.per_second"] * m["gpu__time_duration.sum"] * 1e-9
        w = work_from_opcodes(ops, m.get(SMEM_METRIC), dram or 0.0)
        sms = m.get("launch__sm_count", m.get("device__attribute_multiprocessor_count", math.nan))
        tensor_peak = math.nan
        for name in ("sm__ops_path_tensor_op_hmma_src_fp16_dst_fp32_sparsity_off.sum.peak_sustained",
                     "sm__ops_path_tensor_src_fp16_dst_fp32_sparsity_off.sum.peak_sustained"):
            if name in m:
                tensor_peak = m[name] / sms
                break
        fp32_peak = m.get("sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained", math.nan) / sms
        dram_peak = (m.get("dram__bytes.sum.peak_sustained", math.nan)
                     * m.get("dram__cycles_elapsed.avg.per_second", math.nan))
        rows.append({
            "report": key[0], "launch": key[2], "target": target, "gpu": info["gpu"],
            "config_slug": _config_slug(info.get("path")),
            "gpu_key": match_gpu(info["gpu"], gpus), "arch": info["arch"], "dtype": info["dtype"],
            "seq": info["seq"], **w, "opcodes": ops, "has_opcodes": bool(ops),
            "measured_sm_cycles": m.get("sm__cycles_elapsed.avg", math.nan),
            "duration_ns": m.get("gpu__time_duration.sum", math.nan),
            "sm_clock_hz": m.get("sm__cycles_elapsed.avg.per_second", math.nan),
            "sm_count": sms, "report_mma_sync_flop_per_clk_sm": tensor_peak,
            "report_fp32_lanes_per_clk_sm": fp32_peak, "report_dram_bps": dram_peak,
        })
    return pd.DataFrame(rows)
