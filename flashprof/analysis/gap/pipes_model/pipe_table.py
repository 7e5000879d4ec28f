"""Gap stage, pipes model: the fixed tables it stands on. Which execution pipe each SASS
opcode occupies, the per-GPU data files (``gpus.json``: throughputs with sources;
``published.json``: the series' published % of FA2 on A100 / RTX 3090) and where the
default inputs live. Input: nothing but those files. Output: constants and small readers.
"""
from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

import pandas as pd

from flashprof.analysis.report.target_key import ANCHORS, KERNEL_IDS
from flashprof.kernels.gpus import GPUS, SHIPPED

HERE = Path(__file__).resolve().parents[2]  # analysis/
GPUS_FILE = HERE / "gpus.json"
PUBLISHED_FILE = HERE / "published.json"

FLOP_PER_HMMA = 2 * 16 * 8 * 16  # m16n8k16, the only mma.sync shape kernels 1-7 and FA2 use
SMEM_METRIC = "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"
REF = ANCHORS[0]  # FlashAttention-2 (the PyTorch SDPA flash backend)
TARGETS = (*KERNEL_IDS, REF)
# the GPUs with published numbers and the shipped one, in kernels/gpus.py order
DEFAULT_GPUS = tuple(g.model_key for g in GPUS
                     if g is SHIPPED or g.slug in json.loads(PUBLISHED_FILE.read_text())["gpus"])
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

MODEL_PIPES = ("tensor", "fma", "alu", "xu", "lsu", "smem", "issue", "dram")
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


def _val(entry) -> float:
    if isinstance(entry, Mapping):
        return float(entry["value"])
    return float(entry)


def gpu_specs(gpus: dict) -> pd.DataFrame:
    """Wide frame, one row per GPU key, the numeric ``value`` of every field."""
    rows = []
    for key, g in gpus["gpus"].items():
        row = {"gpu_key": key, "name": g["name"], "chip": g["chip"], "arch": g["arch"]}
        for field, entry in g.items():
            if isinstance(entry, Mapping) and "value" in entry:
                row[field] = _val(entry)
        rows.append(row)
    return pd.DataFrame(rows)


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
from flashprof.paths import ROOT as REPO  # noqa: E402
DEFAULT_SASS = REPO / "reports" / "sass" / "opcodes.csv"


def default_reports() -> list[Path]:
    """Every report under reports/<gpu>/ (reports of a real A100 / 3090 drop in there)."""
    return sorted(p for p in (REPO / "reports").glob("*/*.ncu-rep"))
