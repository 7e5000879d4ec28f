"""Gap stage: why one kernel reaches ~101.5 % of FlashAttention-2 on an RTX 3090 but
~80 % on an A100 -- a pipe-time model built from H200 evidence (issue 6).

Input (all frames, nothing read here except the package data files named below):
* the long frame of ``analysis.parse.load_frame`` (any reports, any GPU);
* the static SASS opcode frame of ``kernels.sass`` (``load_static``: ``reports/sass/
  opcodes.csv``, kernel, arch, dtype, opcode, count -- instructions in the cubin, not
  executed -- with scope "kernel", plus ``opcodes_loop.csv``, the main-loop body only,
  with scope "loop" and the config slug);
* ``gpus.json`` (per-GPU throughputs with sources) and ``published.json`` (the seed's
  % of FA2 on A100 / RTX 3090), both next to this module;
* optionally a bench frame (``reports/<gpu>/bench.csv``) for measured % of FA2.

Output: ``gap_table`` (one row per target x GPU: per-pipe times, limiting pipe, predicted
and observed % of FA2, error), ``pipe_shares`` (where one target's time goes per GPU),
``ceilings`` (three-GPU roofline ceilings), ``model_errors`` (mean absolute error per GPU).

The model, stated plainly
-------------------------
1. Work. For every target (kernels "1".."7" and "ref" = FA2) the work per pipe is taken
   from executed-instruction counters (``sass__inst_executed_per_opcode[OP]``, warp
   instructions), grouped into pipes by OPCODE_PIPE, plus the shared-memory wavefronts
   (``l1tex__data_pipe_lsu_wavefronts_mem_shared.sum``, bank-conflict replays included)
   and DRAM bytes. Tensor work = HMMA x 4096 FLOP (every HMMA in these kernels is
   m16n8k16: 2*16*8*16).
2. Other architectures. A GPU with its own report for the target uses it unchanged.
   Otherwise the work is carried over from the report of another GPU (the H200 here)
   and corrected by the static SASS of the main loop (``reports/sass/opcodes_loop.csv``:
   the KV-block loop body, [backward-branch target, branch], which holds every HMMA and
   runs seq/B_c times; of the config the report ran, from its sidecar, else the seed
   config). trips = executed HMMA / loop HMMA on the source arch (loop bodies executed,
   x warps); each opcode's executed count becomes executed + trips x (loop(target arch)
   - loop(source arch)). Per pipe group this scales the loop part of the executed count by
   the loop-scope static ratio and leaves prologue/epilogue as executed: whole-kernel
   ratios let prologue code (IMAD/LEA address set-up, which differs a lot per arch)
   weigh in. ASSUMPTION: the same loop trip count on both arches (same config). Chosen
   on H200 data only: predicting kernel k+1's executed pipe counts from kernel k's with
   the loop delta is within 5 % for IMAD where a plain ratio misses by up to 38 %.
   Shared-memory wavefronts change by trips x the static delta of (4 x LDSM + LDS + STS +
   LDGSTS); DRAM bytes do not scale. Without loop data the whole-kernel per-opcode ratio
   (``scale_opcodes``) is the fallback. FA2 ("ref") has no static SASS per arch here and
   only sm_90 counters, so FA2 on the A100 / 3090 is modelled with its sm_90 instruction
   mix: a known limitation (FA2's sm_80 build differs, e.g. in spills).
3. Time each pipe imposes, in SM cycles (the grid spreads evenly over all SMs):
   tensor = FLOP / (mma.sync FLOP/clk/SM x SMs); fma = max((FP32 + IMAD) x 32 / FP32
   lanes, IMAD x 32 / IMAD lanes) / SMs; alu = ALU x 32 / ALU lanes / SMs; xu = XU x 32 /
   MUFU lanes / SMs; lsu = LSU / (LSU warp inst/clk) / SMs; smem = wavefronts x 128 B /
   (128 B/clk) / SMs; issue = all warp instructions / 4 / SMs; dram = bytes x clock /
   bandwidth.
4. Combination: T = max_p t_p + alpha x sum of the other t_p. alpha (how badly the
   non-limiting pipes fail to overlap) is fitted ONLY on GPUs with measured cycles in the
   frame (the H200), by least squares on relative error of the measured SM cycles, and
   then applied unchanged to every other GPU. The pure bound (alpha = 0) is reported next
   to it. Predicted % of FA2 = 100 x T(ref) / T(target) on the same GPU (clock and SM
   count cancel except for the DRAM term).
5. Validation: A100 and RTX 3090 against the published % (S=4096); H200 against the
   measured bench (S=4096), else the reports' durations. Error = predicted - observed,
   percentage points.
What the model does not have: latency / occupancy (warps to hide it), barrier waits,
instruction-cache effects, clock differences between the two kernels, and any FA2
code that differs per arch. A residual it cannot explain points at those.
"""
from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path

import pandas as pd

from ..parse import LAUNCH_KEY, launch_identity, per_launch, sidecar_path
from ..pipes import INST_PIPE_PREFIX, OPCODE_PREFIX
from ..recipe_kit import SMEM_BYTES_PER_WAVEFRONT
from ..recipes import ISSUE_METRIC, PIPE_METRICS
from ..targets import ANCHORS, KERNEL_IDS, kernel_key

HERE = Path(__file__).resolve().parent.parent
GPUS_FILE = HERE / "gpus.json"
PUBLISHED_FILE = HERE / "published.json"

FLOP_PER_HMMA = 2 * 16 * 8 * 16  # m16n8k16, the only mma.sync shape kernels 1-7 and FA2 use
SMEM_METRIC = "l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"
REF = ANCHORS[0]  # FlashAttention-2 (the PyTorch SDPA flash backend)
TARGETS = (*KERNEL_IDS, REF)
DEFAULT_GPUS = ("rtx3090", "a100_80gb", "h200_sxm")
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


# --------------------------------------------------------------------------- work
def _empty_work() -> dict:
    return {c: 0.0 for c in WORK_COLUMNS}


def work_from_opcodes(counts: Mapping[str, float], smem_wavefronts: float | None = None,
                      dram_bytes: float = 0.0) -> dict:
    """Pipe work from {opcode: warp instructions}. Without measured wavefronts the
    static proxy SMEM_PROXY is used."""
    w = _empty_work()
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
        side = json.loads(sidecar_path(Path(path)).read_text())
    except (OSError, ValueError):
        return None
    slug = side.get("config_slug") if isinstance(side, dict) else None
    return str(slug) if slug else None


def launch_work(frame: pd.DataFrame, gpus: dict | None = None) -> pd.DataFrame:
    """One row per launch that is a known target: identity, gpu_key, WORK_COLUMNS,
    opcode counts (dict column ``opcodes``), measured SM cycles and the report's peaks."""
    gpus = gpus or load_gpus()
    ident = launch_identity(frame).set_index(list(LAUNCH_KEY))
    rows = []
    for key, _arch, m in per_launch(frame):
        info = ident.loc[key]
        target = kernel_key(key[0], info["variant"])
        if target not in TARGETS:
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


def static_counts(opcodes: pd.DataFrame | None, kernel: str, arch: str, dtype: str = "fp16",
                  scope: str = "kernel", config: str | None = None) -> dict:
    """{opcode: static count} of one kernel's cubin for one arch (empty if unknown).

    ``scope`` "kernel": the whole function (opcodes.csv); "loop": the main-loop body
    (opcodes_loop.csv, see ``load_static``). A frame without a ``scope`` column is all
    kernel scope. For the loop scope, ``config`` (a config slug) picks that config's rows
    when present (the tuned kernel 7 a report ran); otherwise the seed config's rows."""
    if opcodes is None or opcodes.empty:
        return {}
    if "scope" in opcodes.columns:
        sel = opcodes[opcodes["scope"] == scope]
    else:
        sel = opcodes if scope == "kernel" else opcodes.iloc[0:0]
    sel = sel[(sel["kernel"].astype(str) == str(kernel)) & (sel["arch"] == arch) & (sel["dtype"] == dtype)]
    if "config" in sel.columns and len(sel):
        own = sel[sel["config"] == config] if config else sel.iloc[0:0]
        if len(own):
            sel = own
        elif "tuned_gpu" in sel.columns:
            sel = sel[sel["tuned_gpu"].fillna("").astype(str) == ""]
    return {str(o): float(c) for o, c in zip(sel["opcode"], sel["count"])}


def load_static(path: str | Path) -> pd.DataFrame:
    """Static opcode frame with a ``scope`` column: opcodes.csv (scope "kernel") plus the
    ``<stem>_loop.csv`` beside it (scope "loop") when it exists. A CSV that already has a
    ``scope`` column is returned as is."""
    path = Path(path)
    kern = pd.read_csv(path)
    if "scope" in kern.columns:
        return kern
    kern["scope"] = "kernel"
    loop_file = path.with_name(f"{path.stem}_loop{path.suffix}")
    if not loop_file.is_file():
        return kern
    loop = pd.read_csv(loop_file, dtype={"tuned_gpu": str, "config": str})
    loop["scope"] = "loop"
    return pd.concat([kern, loop], ignore_index=True)


def loop_trips(dynamic: Mapping[str, float], loop_from: Mapping[str, float]) -> float:
    """Executed main-loop bodies (iterations x warps) on the source arch: executed HMMA /
    HMMA in the loop body (every HMMA of kernels 1-7 lies in the loop; checked against
    the reports in tests/test_sass.py). NaN without HMMA in the loop."""
    h = loop_from.get("HMMA", 0.0)
    return float(dynamic.get("HMMA", 0.0)) / h if h else math.nan


def scale_by_loop(dynamic: Mapping[str, float], loop_from: Mapping[str, float],
                  loop_to: Mapping[str, float]) -> dict:
    """Executed counts on the source arch -> estimated executed counts on the target arch,
    changing only the main-loop part: executed(op) + trips x (loop_to(op) - loop_from(op)),
    floored at 0. Equivalently, per pipe group g: the loop part of the executed count
    (trips x loop_from[g]) is scaled by the loop-scope static ratio loop_to[g] /
    loop_from[g]; the prologue/epilogue part stays as executed on the source arch."""
    trips = loop_trips(dynamic, loop_from)
    if math.isnan(trips):
        return dict(dynamic)
    out = {op: float(n) for op, n in dynamic.items()}
    for op in set(loop_from) | set(loop_to):
        delta = trips * (loop_to.get(op, 0.0) - loop_from.get(op, 0.0))
        out[op] = max(0.0, out.get(op, 0.0) + delta)
    return out


def group_ratios(loop_from: Mapping[str, float], loop_to: Mapping[str, float]) -> dict:
    """Loop-scope static ratio per pipe group: sum loop_to[g] / sum loop_from[g]."""
    num: dict[str, float] = {}
    den: dict[str, float] = {}
    for op, n in loop_to.items():
        num[pipe_of(op)] = num.get(pipe_of(op), 0.0) + n
    for op, n in loop_from.items():
        den[pipe_of(op)] = den.get(pipe_of(op), 0.0) + n
    return {g: (num.get(g, 0.0) / den[g] if den.get(g) else math.inf) for g in set(num) | set(den)}


def scale_opcodes(dynamic: Mapping[str, float], static_from: Mapping[str, float],
                  static_to: Mapping[str, float]) -> dict:
    """Executed counts on the source arch -> estimated executed counts on the target arch
    (the static-mix assumption of the module docstring, step 2)."""
    if not static_from or not static_to:
        return dict(dynamic)
    out: dict[str, float] = {}
    group_dyn: dict[str, float] = {}
    group_static: dict[str, float] = {}
    for op, n in dynamic.items():
        g = pipe_of(op)
        s_from = static_from.get(op, 0.0)
        if s_from > 0:
            group_dyn[g] = group_dyn.get(g, 0.0) + n
            group_static[g] = group_static.get(g, 0.0) + s_from
            out[op] = n * static_to.get(op, 0.0) / s_from
        else:  # executed but not in the static histogram (should not happen): keep it
            out[op] = n
    for op, s_to in static_to.items():
        if op not in out and s_to > 0:
            g = pipe_of(op)
            per_static = group_dyn.get(g, 0.0) / group_static[g] if group_static.get(g) else 0.0
            out[op] = s_to * per_static
    return out


def _smem_proxy(counts: Mapping[str, float]) -> float:
    return sum(SMEM_PROXY.get(op, 0.0) * n for op, n in counts.items())


def estimate_work(target: str, gpu_key: str, gpus: dict, launches: pd.DataFrame,
                  opcodes: pd.DataFrame | None = None, dtype: str = "fp16") -> tuple[dict, str, pd.Series | None]:
    """(work, source note, measured launch row or None) for one target on one GPU."""
    arch = gpus["gpus"][gpu_key]["arch"]
    cand = launches[(launches["target"] == target) & launches["has_opcodes"]] if len(launches) else launches
    if len(cand):
        # Prefer the profiled shape the published numbers use (S=4096).
        cand = cand.assign(_pref=(cand["seq"] != SEQ)).sort_values("_pref", kind="stable")
        own = cand[cand["gpu_key"] == gpu_key]
        if len(own):
            row = own.iloc[0]
            return {c: float(row[c]) for c in WORK_COLUMNS}, f"measured ({row['report']})", row
        row = cand.iloc[0]
        dyn = row["opcodes"]
        if target == REF:
            w = work_from_opcodes(dyn, row["smem_wavefronts"], row["dram_bytes"])
            return w, f"{row['arch']} counters of {row['report']}, unscaled (no per-arch FA2 SASS)", None
        config = row.get("config_slug") or None
        l_from = static_counts(opcodes, target, row["arch"], dtype, "loop", config)
        l_to = static_counts(opcodes, target, arch, dtype, "loop", config)
        if l_from.get("HMMA") and l_to:
            scaled = scale_by_loop(dyn, l_from, l_to)
            trips = loop_trips(dyn, l_from)
            wave = row["smem_wavefronts"] + trips * (_smem_proxy(l_to) - _smem_proxy(l_from))
            w = work_from_opcodes(scaled, max(0.0, wave), row["dram_bytes"])
            matched = config is not None and static_counts(opcodes, target, row["arch"], dtype, "loop", None) != l_from
            cfg_note = f" ({config})" if matched else (f" (seed-config static; report ran {config})" if config else "")
            note = ("counters" if row["arch"] == arch
                    else f"counters + loop-body delta {row['arch']}->{arch}{cfg_note}")
            return w, f"{row['report']} {note}", None
        s_from = static_counts(opcodes, target, row["arch"], dtype)
        s_to = static_counts(opcodes, target, arch, dtype)
        if not s_from or not s_to:
            w = work_from_opcodes(dyn, row["smem_wavefronts"], row["dram_bytes"])
            return w, f"{row['arch']} counters of {row['report']}, unscaled (no static SASS)", None
        scaled = scale_opcodes(dyn, s_from, s_to)
        smem_ratio = _smem_proxy(s_to) / _smem_proxy(s_from) if _smem_proxy(s_from) else 1.0
        w = work_from_opcodes(scaled, row["smem_wavefronts"] * smem_ratio, row["dram_bytes"])
        note = "counters" if row["arch"] == arch else f"counters x whole-kernel static mix {row['arch']}->{arch}"
        return w, f"{row['report']} {note}", None
    # No counters for this target anywhere: static proxy, normalised to the problem's FLOPs.
    ref_rows = launches[launches["target"] == REF] if len(launches) else launches
    flop = (float(ref_rows.iloc[0]["tensor_flop"]) if len(ref_rows)
            else 4.0 * 16 * 16 * SEQ * SEQ * 128)
    s_loop = static_counts(opcodes, target, arch, dtype, "loop")
    if s_loop.get("HMMA"):
        k = flop / (s_loop["HMMA"] * FLOP_PER_HMMA)
        w = work_from_opcodes({op: n * k for op, n in s_loop.items()})
        return w, f"static proxy ({arch} loop body x iterations; prologue/epilogue omitted)", None
    s_to = static_counts(opcodes, target, arch, dtype)
    if not s_to or not s_to.get("HMMA"):
        return _empty_work(), "no data", None
    k = flop / (s_to["HMMA"] * FLOP_PER_HMMA)
    w = work_from_opcodes({op: n * k for op, n in s_to.items()})
    return w, f"static proxy ({arch} cubin x iterations; prologue/epilogue over-counted)", None


# --------------------------------------------------------------------------- pipe times
def rates(gpu_key: str, gpus: dict, measured: pd.Series | None = None) -> dict:
    """Per-SM-per-clock rates for one GPU; a measured report's own peaks win."""
    g = gpus["gpus"][gpu_key]
    r = {
        "sm_count": _val(g["sm_count"]),
        "clock_hz": _val(g["boost_clock_mhz"]) * 1e6,
        "mma_sync_flop_per_clk_sm": _val(g["mma_sync_flop_per_clk_sm"]),
        "fp32_lanes_per_clk_sm": _val(g["fp32_lanes_per_clk_sm"]),
        "imad_lanes_per_clk_sm": _val(g["imad_lanes_per_clk_sm"]),
        "alu_lanes_per_clk_sm": _val(g["alu_lanes_per_clk_sm"]),
        "mufu_lanes_per_clk_sm": _val(g["mufu_lanes_per_clk_sm"]),
        "lsu_warp_inst_per_clk_sm": _val(g["lsu_warp_inst_per_clk_sm"]),
        "issue_warp_inst_per_clk_sm": _val(g["issue_warp_inst_per_clk_sm"]),
        "smem_bytes_per_clk_sm": _val(g["smem_bytes_per_clk_sm"]),
        "dram_bps": _val(g["dram_gbs"]) * 1e9,
    }
    if measured is not None:
        for k_rep, k in (("report_mma_sync_flop_per_clk_sm", "mma_sync_flop_per_clk_sm"),
                         ("report_fp32_lanes_per_clk_sm", "fp32_lanes_per_clk_sm"),
                         ("report_dram_bps", "dram_bps"), ("sm_count", "sm_count"),
                         ("sm_clock_hz", "clock_hz")):
            v = measured.get(k_rep, math.nan)
            if v is not None and not math.isnan(v) and v > 0:
                r[k] = float(v)
    return r


def pipe_times(work: Mapping[str, float], r: Mapping[str, float]) -> dict:
    """Lower bound each pipe imposes, in SM cycles (module docstring, step 3)."""
    sms = r["sm_count"]
    fma_all = work["fma_inst"] + work["imad_inst"]
    return {
        "tensor": work["tensor_flop"] / r["mma_sync_flop_per_clk_sm"] / sms,
        "fma": max(fma_all * 32 / r["fp32_lanes_per_clk_sm"],
                   work["imad_inst"] * 32 / r["imad_lanes_per_clk_sm"]) / sms,
        "alu": work["alu_inst"] * 32 / r["alu_lanes_per_clk_sm"] / sms,
        "xu": work["xu_inst"] * 32 / r["mufu_lanes_per_clk_sm"] / sms,
        "lsu": work["lsu_inst"] / r["lsu_warp_inst_per_clk_sm"] / sms,
        "smem": work["smem_wavefronts"] * SMEM_BYTES_PER_WAVEFRONT / r["smem_bytes_per_clk_sm"] / sms,
        "issue": work["issue_inst"] / r["issue_warp_inst_per_clk_sm"] / sms,
        "dram": work["dram_bytes"] * r["clock_hz"] / r["dram_bps"],
    }


def combine(times: Mapping[str, float], alpha: float) -> tuple[float, str]:
    """(predicted cycles, limiting pipe): max + alpha x sum of the rest."""
    limit = max(MODEL_PIPES, key=lambda p: times[p])
    rest = sum(times[p] for p in MODEL_PIPES if p != limit)
    return times[limit] + alpha * rest, limit


def fit_alpha(points: Iterable[tuple[Mapping[str, float], float]]) -> float:
    """Least-squares alpha on relative error: points = (pipe times, measured cycles).
    Returns 0 without points; never negative."""
    num = den = 0.0
    for times, measured in points:
        if not measured or math.isnan(measured):
            continue
        t_max = max(times[p] for p in MODEL_PIPES)
        rest = sum(times[p] for p in MODEL_PIPES) - t_max
        x, y = rest / measured, 1.0 - t_max / measured
        num += x * y
        den += x * x
    return max(0.0, num / den) if den else 0.0


# --------------------------------------------------------------------------- observed
def observed_pct(published: dict | None, bench: pd.DataFrame | None, gpus: dict,
                 seq: int = SEQ) -> dict[tuple[str, str], tuple[float, str]]:
    """{(target, gpu_key): (% of FA2, source)} from published data and bench frames."""
    out: dict[tuple[str, str], tuple[float, str]] = {}
    if published:
        for pub in published["gpus"].values():
            key = pub["gpu_key"]
            for target, vals in pub["pct_of_fa2"].items():
                v = vals.get(f"seq_{seq}")
                if v is not None:
                    out[(target, key)] = (float(v), "published")
    if bench is not None and len(bench):
        b = bench[(bench["seq"] == seq) & (bench["dtype"] == "fp16")]
        for rec in b.to_dict("records"):
            key = match_gpu(rec["gpu"], gpus)
            target = str(rec["target"])
            if key and target in TARGETS and (target, key) not in out and not pd.isna(rec["pct_of_ref"]):
                out[(target, key)] = (float(rec["pct_of_ref"]), "bench")
    return out


def _ncu_pct(launches: pd.DataFrame, target: str, gpu_key: str) -> float:
    if not len(launches):
        return math.nan
    own = launches[launches["gpu_key"] == gpu_key]
    t = own[own["target"] == target]
    ref = own[own["target"] == REF]
    if not len(t) or not len(ref):
        return math.nan
    return 100.0 * float(ref.iloc[0]["duration_ns"]) / float(t.iloc[0]["duration_ns"])


# --------------------------------------------------------------------------- front door
GAP_COLUMNS = (
    "target", "gpu_key", "gpu", "arch", "work_source", "limit", "limit_bound",
    *(f"t_{p}" for p in MODEL_PIPES), "pred_cycles", "measured_cycles",
    "pred_pct_max", "pred_pct", "observed_pct", "observed_source", "ncu_pct", "error_pp",
    "error_pp_max", "alpha",
)


def model(frame: pd.DataFrame | None, opcodes: pd.DataFrame | None = None,
          gpus: dict | None = None, gpu_keys: Iterable[str] | None = None,
          targets: Iterable[str] = TARGETS, dtype: str = "fp16",
          alpha: float | None = None) -> pd.DataFrame:
    """Pipe times and predicted cycles for every target x GPU (no observed data)."""
    gpus = gpus or load_gpus()
    launches = launch_work(frame, gpus) if frame is not None and len(frame) else pd.DataFrame()
    keys = list(gpu_keys or DEFAULT_GPUS)
    if len(launches):  # GPUs a user brought reports for join the table
        keys += [k for k in launches["gpu_key"].dropna().unique() if k not in keys]
    rows = []
    for key in keys:
        for target in targets:
            work, source, measured = estimate_work(target, key, gpus, launches, opcodes, dtype)
            r = rates(key, gpus, measured)
            times = pipe_times(work, r)
            rows.append({"target": target, "gpu_key": key, "gpu": gpus["gpus"][key]["name"],
                         "arch": gpus["gpus"][key]["arch"], "work_source": source,
                         "measured_cycles": (float(measured["measured_sm_cycles"])
                                             if measured is not None else math.nan),
                         **{f"t_{p}": t for p, t in times.items()}})
    out = pd.DataFrame(rows)
    if alpha is None:
        pts = [({p: row[f"t_{p}"] for p in MODEL_PIPES}, row["measured_cycles"])
               for row in out.to_dict("records") if not math.isnan(row["measured_cycles"])]
        alpha = fit_alpha(pts)
    preds = [combine({p: row[f"t_{p}"] for p in MODEL_PIPES}, alpha) for row in out.to_dict("records")]
    out["pred_cycles"] = [p[0] for p in preds]
    out["limit"] = [p[1] for p in preds]
    out["limit_bound"] = [row[f"t_{lim}"] for row, lim in zip(out.to_dict("records"), out["limit"])]
    out["alpha"] = alpha
    return out


def gap_table(frame: pd.DataFrame | None, opcodes: pd.DataFrame | None = None,
              gpus: dict | None = None, published: dict | None = None,
              bench: pd.DataFrame | None = None, gpu_keys: Iterable[str] | None = None,
              dtype: str = "fp16", alpha: float | None = None) -> pd.DataFrame:
    """One row per target x GPU: per-pipe cycles, limiting pipe, predicted % of FA2 (fitted
    combination and pure max bound), observed % (published / bench), error in points."""
    gpus = gpus or load_gpus()
    published = load_published() if published is None else published
    m = model(frame, opcodes, gpus, gpu_keys, TARGETS, dtype, alpha)
    launches = launch_work(frame, gpus) if frame is not None and len(frame) else pd.DataFrame()
    obs = observed_pct(published, bench, gpus)
    rows = []
    for key, sub in m.groupby("gpu_key", sort=False):
        ref = sub[sub["target"] == REF]
        ref_pred = float(ref["pred_cycles"].iloc[0]) if len(ref) else math.nan
        ref_bound = float(ref["limit_bound"].iloc[0]) if len(ref) else math.nan
        for row in sub.to_dict("records"):
            pred = 100.0 * ref_pred / row["pred_cycles"] if row["pred_cycles"] else math.nan
            pred_max = 100.0 * ref_bound / row["limit_bound"] if row["limit_bound"] else math.nan
            ncu = _ncu_pct(launches, row["target"], key)
            o, src = obs.get((row["target"], key), (math.nan, None))
            if math.isnan(o) and not math.isnan(ncu):
                o, src = ncu, "ncu durations"
            rows.append({**row, "pred_pct": pred, "pred_pct_max": pred_max, "observed_pct": o,
                         "observed_source": src, "ncu_pct": ncu, "error_pp": pred - o,
                         "error_pp_max": pred_max - o})
    out = pd.DataFrame(rows)
    return out.reindex(columns=list(GAP_COLUMNS))


def model_errors(table: pd.DataFrame) -> pd.DataFrame:
    """Mean absolute error (percentage points) per GPU over kernels 1-7 with an observed %,
    for the fitted combination and for the pure max bound."""
    t = table[(table["target"] != REF) & table["error_pp"].notna()]
    rows = []
    for key, sub in t.groupby("gpu_key", sort=False):
        k7 = sub[sub["target"] == "7"]
        rows.append({"gpu_key": key, "n": len(sub), "mae_pp": sub["error_pp"].abs().mean(),
                     "mae_pp_max": sub["error_pp_max"].abs().mean(),
                     "mae_pp_2to7": sub[sub["target"] != "1"]["error_pp"].abs().mean(),
                     "k7_pred_pct": float(k7["pred_pct"].iloc[0]) if len(k7) else math.nan,
                     "k7_observed_pct": float(k7["observed_pct"].iloc[0]) if len(k7) else math.nan,
                     "alpha": float(sub["alpha"].iloc[0])})
    return pd.DataFrame(rows, columns=["gpu_key", "n", "mae_pp", "mae_pp_max", "mae_pp_2to7",
                                       "k7_pred_pct", "k7_observed_pct", "alpha"])


def pipe_shares(table: pd.DataFrame, target: str = "7") -> pd.DataFrame:
    """Where one target's modelled time goes on each GPU (long): cycles per pipe, share of
    the sum of pipe times, and each pipe's time relative to the tensor time."""
    rows = []
    for row in table[table["target"] == target].to_dict("records"):
        total = sum(row[f"t_{p}"] for p in MODEL_PIPES)
        for p in MODEL_PIPES:
            t = row[f"t_{p}"]
            rows.append({"target": target, "gpu_key": row["gpu_key"], "gpu": row["gpu"], "pipe": p,
                         "cycles": t, "share_of_sum": t / total if total else math.nan,
                         "vs_tensor": t / row["t_tensor"] if row["t_tensor"] else math.nan,
                         "is_limit": p == row["limit"]})
    return pd.DataFrame(rows, columns=["target", "gpu_key", "gpu", "pipe", "cycles",
                                       "share_of_sum", "vs_tensor", "is_limit"])


def ceilings(gpus: dict | None = None, frame: pd.DataFrame | None = None,
             gpu_keys: Iterable[str] | None = None) -> pd.DataFrame:
    """Roofline ceilings per GPU at its boost clock (a GPU with a report in ``frame`` uses
    the report's own peaks and clock): mma.sync tensor, FP32, shared memory, DRAM, and
    the ridge points (FLOP per DRAM byte / per shared byte)."""
    gpus = gpus or load_gpus()
    launches = launch_work(frame, gpus) if frame is not None and len(frame) else pd.DataFrame()
    keys = list(gpu_keys or DEFAULT_GPUS)
    if len(launches):
        keys += [k for k in launches["gpu_key"].dropna().unique() if k not in keys]
    rows = []
    for key in keys:
        own = launches[launches["gpu_key"] == key] if len(launches) else launches
        measured = own.iloc[0] if len(own) else None
        r = rates(key, gpus, measured)
        g = gpus["gpus"][key]
        tensor = r["mma_sync_flop_per_clk_sm"] * r["sm_count"] * r["clock_hz"]
        fp32 = 2 * r["fp32_lanes_per_clk_sm"] * r["sm_count"] * r["clock_hz"]
        smem = r["smem_bytes_per_clk_sm"] * r["sm_count"] * r["clock_hz"]
        rows.append({
            "gpu_key": key, "gpu": g["name"], "arch": g["arch"], "source": "report" if measured is not None else "gpus.json",
            "sm_count": r["sm_count"], "clock_hz": r["clock_hz"],
            "tensor_flops": tensor, "fp32_flops": fp32, "dram_bps": r["dram_bps"], "smem_bps": smem,
            "tensor_datasheet_flops": _val(g["tensor_datasheet_tflops"]) * 1e12,
            "ridge_tensor_dram": tensor / r["dram_bps"], "ridge_fp32_dram": fp32 / r["dram_bps"],
            "ridge_tensor_smem": tensor / smem,
            "tensor_per_fp32": tensor / fp32,
        })
    return pd.DataFrame(rows)


def pipe_check(frame: pd.DataFrame, gpus: dict | None = None) -> pd.DataFrame:
    """The opcode->pipe mapping against Nsight Compute's own pipe utilisation: per launch
    and pipe, modelled busy % of active cycles vs ``sm__inst_executed_pipe_<p>`` (or
    ``sm__pipe_<p>_cycles_active``) % of peak sustained active."""
    gpus = gpus or load_gpus()
    launches = launch_work(frame, gpus)
    # Instruction-issue shares (what the opcode counts model), not cycles-active.
    metrics = {"tensor": PIPE_METRICS["tensor"][0],
               **{p: f"{INST_PIPE_PREFIX}{p}.avg.pct_of_peak_sustained_active" for p in ("fma", "alu", "xu", "lsu")},
               "issue": ISSUE_METRIC, "smem": f"{SMEM_METRIC}.pct_of_peak_sustained_elapsed"}
    by_launch = {(key[0], key[2]): m for key, _arch, m in per_launch(frame)}
    rows = []
    for row in launches.to_dict("records"):
        if not row["gpu_key"]:
            continue
        m = by_launch[(row["report"], row["launch"])]
        active = m.get("sm__cycles_active.avg", math.nan)
        times = pipe_times({c: row[c] for c in WORK_COLUMNS}, rates(row["gpu_key"], gpus, pd.Series(row)))
        for p, metric in metrics.items():
            rows.append({"report": row["report"], "target": row["target"], "pipe": p,
                         "model_pct": 100 * times[p] / active, "ncu_pct": m.get(metric, math.nan),
                         "metric": metric})
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------- limits
def limitations(table: pd.DataFrame) -> list[str]:
    """Plain statements of what the model cannot explain, computed from the table.

    * On GPUs with measured cycles: measured cycles / largest pipe bound per target. A
      ratio well above 1 means no modelled pipe is saturated: the time goes to latency
      the resident warps cannot hide (occupancy, dependency chains, barriers), which the
      model only absorbs through the single fitted alpha.
    * Sign of the errors on the measured GPU: a one-signed residual is systematic, not noise.
    * Kernel 7 carried to another GPU is the config tuned on the GPU it was profiled on,
      not the config the published number was tuned for on that GPU.
    """
    notes: list[str] = []
    meas = table[table["measured_cycles"].notna() & (table["limit_bound"] > 0)]
    for key, sub in meas.groupby("gpu_key", sort=False):
        ratio = (sub["measured_cycles"] / sub["limit_bound"]).set_axis(sub["target"])
        busy = ratio[ratio > 1.2]
        notes.append(
            f"{key}: measured cycles / largest pipe bound = {ratio.min():.2f} (target {ratio.idxmin()}) "
            f"to {ratio.max():.2f} (target {ratio.idxmax()}); {len(busy)} of {len(ratio)} launches are "
            "above 1.2, i.e. no modelled pipe is near saturation and the rest of the time is latency the "
            "resident warps do not hide. The model has no latency/occupancy term: one fitted alpha stands in.")
        k = sub[(sub["target"] != REF)]
        err = table[(table["gpu_key"] == key) & (table["target"] != REF)]["error_pp"].dropna()
        if len(err) and ((err < 0).all() or (err > 0).all()):
            side = "under" if (err < 0).all() else "over"
            notes.append(f"{key}: the model {side}-predicts every kernel's % of FA2 "
                         f"(errors {err.min():+.1f} to {err.max():+.1f} pp): a systematic residual, "
                         "not noise.")
        if len(k):
            lim = k["limit"].value_counts()
            notes.append(f"{key}: limiting pipe by the model: "
                         + ", ".join(f"{p} x{n}" for p, n in lim.items())
                         + f"; FA2's is {sub[sub['target'] == REF]['limit'].iloc[0] if (sub['target'] == REF).any() else '-'}.")
    carried = table[(table["target"] == "7") & ~table["work_source"].astype(str).str.startswith("measured")
                    & ~table["work_source"].astype(str).str.startswith("static")]
    if len(carried):
        notes.append("kernel 7 on " + ", ".join(carried["gpu_key"]) + " is modelled from the kernel-7 "
                     "config profiled on another GPU (tuned there); the published kernel 7 was tuned per "
                     "GPU, so its error mixes model error and config difference.")
    src = table["work_source"].astype(str)
    for key, sub in table[(table["target"] != REF) & src.str.contains("loop-body delta")
                          & table["error_pp"].notna()].groupby("gpu_key", sort=False):
        worst = sub.loc[sub["error_pp"].abs().idxmax()]
        notes.append(f"{key}: worst kernel {worst['target']} at {worst['error_pp']:+.1f} pp (predicted "
                     f"{worst['pred_pct']:.1f} % vs {worst['observed_pct']:.1f} %) although the per-arch "
                     "main-loop SASS is already in the work: that residual is not the compiler's instruction "
                     "mix but what the model lacks (latency/occupancy, the per-GPU tuned config, FA2's own "
                     f"{worst['arch']} code).")
    notes.append("FA2 on GPUs without its own report uses its sm_90 instruction mix unscaled "
                 "(no per-arch FA2 SASS here).")
    return notes


# --------------------------------------------------------------------------- rendering
def to_records(table: pd.DataFrame, errors: pd.DataFrame) -> list[dict]:
    """JSON shape of the CLI: one object per table row (kind 'row'), one per GPU
    (kind 'summary') carrying the mean absolute error, then the model's limitations
    (kind 'limitation', field 'text')."""
    recs = [{"kind": "row", **r} for r in table.to_dict("records")]
    recs += [{"kind": "summary", **r} for r in errors.to_dict("records")]
    recs += [{"kind": "limitation", "text": t} for t in limitations(table)]
    return recs


def _f(v, fmt="{:.1f}") -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    return fmt.format(v)


def render_table(table: pd.DataFrame, errors: pd.DataFrame) -> str:
    head = (f"{'target':>6} {'gpu':<10} {'limit':<6} "
            + " ".join(f"{p:>7}" for p in MODEL_PIPES)
            + f" {'pred%':>6} {'max%':>6} {'obs%':>6} {'src':<9} {'err':>6}")
    lines = ["pipe-time model of issue 6 (fitted, superseded by the issue model: python -m analysis gap)",
             "pipe times in M SM-cycles (whole kernel, per SM); pred% = fitted combination,"
             " max% = pure max bound; err = pred% - obs% (points)", head]
    for r in table.to_dict("records"):
        lines.append(f"{r['target']:>6} {r['gpu_key']:<10} {r['limit']:<6} "
                     + " ".join(f"{r[f't_{p}'] / 1e6:>7.3f}" for p in MODEL_PIPES)
                     + f" {_f(r['pred_pct']):>6} {_f(r['pred_pct_max']):>6} {_f(r['observed_pct']):>6}"
                     f" {str(r['observed_source'] or '-'):<9} {_f(r['error_pp'], '{:+.1f}'):>6}")
    lines.append("")
    alpha = float(table["alpha"].iloc[0]) if len(table) else math.nan
    lines.append(f"alpha (fitted on GPUs with measured cycles only) = {alpha:.3f}")
    for r in errors.to_dict("records"):
        lines.append(f"MAE {r['gpu_key']}: {r['mae_pp']:.1f} pp over {r['n']} kernels "
                     f"(kernels 2-7: {_f(r['mae_pp_2to7'])} pp; pure max bound: {r['mae_pp_max']:.1f} pp); "
                     f"kernel 7 predicted {r['k7_pred_pct']:.1f} % vs observed {r['k7_observed_pct']:.1f} %")
    sources = table.drop_duplicates(["target", "gpu_key"])[["target", "gpu_key", "work_source"]]
    lines.append("work sources: " + "; ".join(
        f"{s['target']}@{s['gpu_key']}: {s['work_source']}" for s in sources.to_dict("records")
        if s["target"] in ("7", REF)))
    lines.append("")
    lines.append("what this model cannot explain:")
    lines += [f"- {t}" for t in limitations(table)]
    return "\n".join(lines)


# --------------------------------------------------------------------------- I/O glue
REPO = HERE.parent
DEFAULT_SASS = REPO / "reports" / "sass" / "opcodes.csv"


def default_reports() -> list[Path]:
    """Every report under reports/<gpu>/ (reports of a real A100 / 3090 drop in there)."""
    return sorted(p for p in (REPO / "reports").glob("*/*.ncu-rep"))


def gap_paths(reports=None, sass: str | Path | None = None, bench=None,
              cache: bool = True) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(gap_table, model_errors) from files: reports (default: reports/*/*.ncu-rep), the
    static opcode CSV (default reports/sass/opcodes.csv, optional) and bench CSVs (default
    reports/*/bench.csv, optional). Raises ReportError for an unusable explicit input."""
    import warnings

    from ..errors import ReportError
    from ..parse import load_frame

    paths = list(reports) if reports else default_reports()
    if not paths:
        raise ReportError("no reports given and none under reports/*/")
    with warnings.catch_warnings():
        # Reports without the InstructionStats section simply give no counters here.
        warnings.simplefilter("ignore")
        frame = load_frame(paths, cache=cache)
    sass_path = Path(sass) if sass else DEFAULT_SASS
    opcodes = None
    if sass_path.is_file():
        opcodes = load_static(sass_path)
        missing = {"kernel", "arch", "dtype", "opcode", "count"} - set(opcodes.columns)
        if missing:
            raise ReportError(f"{sass_path}: not an opcode CSV (lacks {sorted(missing)})")
    elif sass:
        raise ReportError(f"{sass_path}: no such file")
    bench_paths = [Path(b) for b in bench] if bench else sorted((REPO / "reports").glob("*/bench.csv"))
    frames = []
    for b in bench_paths:
        if not b.is_file():
            raise ReportError(f"{b}: no such file")
        frames.append(pd.read_csv(b))
    bench_frame = pd.concat(frames, ignore_index=True) if frames else None
    table = gap_table(frame, opcodes, bench=bench_frame)
    return table, model_errors(table)
