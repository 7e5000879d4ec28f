"""Summary stage: long frame -> one record per kernel launch; two reports -> comparison.

Input: the long frame from ``flashprof.analysis.report.parse.load_frame`` (plus, for ``pct_of_fa2``, the
frames of FA2 reference reports: ``find_ref_reports`` looks for them next to inputs).
Output: ``summarize`` -> list of dicts (SUMMARY_KEYS, JSON-ready after ``jsonable``);
``compare`` -> dict with per-field deltas and regression flags; ``render_*`` -> text.

Conventions: ``flops_kind`` is the launch's largest FLOP kind (tensor, fp32, fp16, fp64;
see flashprof.analysis.stages.roofline) and ``tflops``, ``peak_tflops`` and ``ai_*`` are on that kind's chart
(for kernels 1-7: the Tensor Core chart, tensor FLOPs / bytes, as before). Every kind keeps
its own field (``tensor_tflops`` ... ``fp64_tflops``); ``total_tflops`` = all kinds together
(what ``tflops`` meant before: tensor + FP32 for kernels 1-7). ``ai_smem`` is the flashprof
shared-memory level. ``provenance`` = {field: exact | derived | estimated:<from> | null}
from flashprof.analysis.metrics.recipes; ``missing`` = quantities the report cannot support (null fields) and
``collect_hint`` the ncu options that would collect them. ``pct_of_fa2`` =
100 x duration(FA2 reference) / duration(this launch), given only when this launch's
problem is known (it has a sidecar, or it is the reference itself) and a reference
launch on the same GPU agrees on every shape/dtype field both sides know.
``inst_executed`` = smsp__inst_executed.sum (warp instructions); ``inst_mix`` = executed
warp instructions of INST_MIX_OPCODES from sass__inst_executed_per_opcode.
"""
from __future__ import annotations

import math
import os
import warnings
from pathlib import Path

import pandas as pd

from flashprof.analysis.metrics import recipes
from flashprof.analysis.report.parse import REPORT_SUFFIX, SHAPE_FIELDS, load_frame
from flashprof.analysis.stages.launches import launch_records
from flashprof.analysis.stages.pipes import pipes
from flashprof.analysis.stages.roofline import roofline
from flashprof.analysis.stages.stalls import STALL_REASONS, bank_conflicts, stalls
from flashprof.profiling.sidecar import SidecarError
from flashprof.profiling.sidecar import load as load_sidecar
from flashprof.analysis.stages.summary_render import (flatten, nan_to_none, jsonable, render_compare_table, render_csv, render_json, render_table)  # noqa: F401 (public names)
from flashprof.analysis.report.provenance import embedded
from flashprof.analysis.report.target_key import gpu_name, kernel_key

_BASE_KEYS = (
    "report", "path", "launch", "kernel", "variant", "title", "gpu", "arch",
    "batch", "seq", "heads", "d_head", "dtype",
    "duration_ns", "time_share", "dominant", "sm_clock_hz", "flops_kind", "tflops", "peak_tflops", "total_tflops",
    "tensor_tflops", "fp32_tflops", "fp16_tflops", "fp64_tflops",
    "tensor_tflops_peak", "tensor_path", "tensor_src", "pct_of_tensor_peak", "pct_of_measured_peak",
    "ai_l1", "ai_l2", "ai_dram", "ai_smem",
    "tensor_pipe_pct", "tensor_pipe_split", "tensor_pipe_work", "fma_pipe_pct", "alu_pipe_pct", "xu_pipe_pct",
    "lsu_pipe_pct", "issue_active_pct", "inst_executed", "inst_mix", "stalls", "smem_bank_conflicts", "smem_nway",
    "ldsm_inst", "pct_of_fa2", "pct_of_fa2_call", "ncu_version", "clock_control", "cache_control",
)
_TAIL_KEYS = ("provenance", "missing", "collect_hint")
# Recipe quantities whose summary field has another name (and unit: value / divisor): the
# rest of the recipe table appears under its own quantity name, in base units, with its
# provenance.
_QUANTITY_FIELDS: dict[str, tuple[str, float]] = {
    "duration_ns": ("duration_ns", 1.0), "sm_clock_hz": ("sm_clock_hz", 1.0),
    **{f"flops_{k}": (f"{k}_tflops", 1e12) for k in recipes.FLOP_KINDS},
    "tensor_ceiling": ("tensor_tflops_peak", 1e12),
    **{f"{k}_ceiling": (f"{k}_tflops_peak", 1e12) for k in recipes.FLOP_KINDS if k != "tensor"},
}


def recipe_fields() -> dict[str, tuple[str, float]]:
    """{quantity: (summary field, divisor)} for every quantity of the recipe table."""
    return {q: _QUANTITY_FIELDS.get(q, (q, 1.0)) for q in recipes.RECIPES}


def summary_keys() -> tuple[str, ...]:
    """The summary record's fields: identity and derived fields, then every recipe
    quantity not already among them (table order), then provenance/missing."""
    extra = [f for f, _s in recipe_fields().values() if f not in _BASE_KEYS]
    return _BASE_KEYS + tuple(dict.fromkeys(extra)) + _TAIL_KEYS


SUMMARY_KEYS = summary_keys()
# Executed warp instructions of these opcodes go into ``inst_mix`` (all opcodes are in the
# long frame / flashprof.analysis.stages.pipes): tensor (mma.sync HMMA, Hopper warpgroup HGMMA), the FP32
# softmax work, MUFU exp2, smem loads.
INST_MIX_OPCODES = ("HMMA", "HGMMA", "FFMA", "FMUL", "FADD", "FMNMX", "MUFU", "LDSM", "IMAD")
INST_EXECUTED_METRIC = recipes.INST_EXECUTED_METRIC
REF_VARIANT = "ref"
# Regression thresholds for `compare` (B against baseline A).
DURATION_REGRESSION_PCT = 2.0
STALL_REGRESSION_ABS = 0.05   # warps per issued instruction
STALL_REGRESSION_REL = 0.10   # and at least 10 % more than in A

_LEVEL_KEYS = {"L1": "ai_l1", "L2": "ai_l2", "DRAM": "ai_dram", "shared memory": "ai_smem"}
_PIPE_KEYS = {"tensor": "tensor_pipe_pct", "fma": "fma_pipe_pct", "alu": "alu_pipe_pct",
              "xu": "xu_pipe_pct", "lsu": "lsu_pipe_pct", "issue_active": "issue_active_pct"}


def _is_ref(report: str, variant) -> bool:
    return kernel_key(report, variant) == REF_VARIANT


def find_ref_reports(paths) -> list[Path]:
    """FA2 reference reports sitting in the directories of ``paths``: ``ref.ncu-rep``, or
    any report whose sidecar's target is ``ref``."""
    found: list[Path] = []
    for d in sorted({Path(p).resolve().parent for p in paths}):
        candidates = [d / f"{REF_VARIANT}{REPORT_SUFFIX}"]
        for side in d.glob("*.json"):
            try:
                if load_sidecar(side).target_key == REF_VARIANT:
                    candidates.append(side.with_name(side.stem + REPORT_SUFFIX))
            except SidecarError:
                continue
        found += [c for c in candidates if c.is_file() and c not in found]
    return found


def _shape_matches(a: dict, b: dict) -> bool:
    for field in SHAPE_FIELDS + ("dtype",):
        va, vb = a.get(field), b.get(field)
        if nan_to_none(va) is not None and nan_to_none(vb) is not None and va != vb:
            return False
    return True


def summarize(frame: pd.DataFrame, ref_frame: pd.DataFrame | None = None,
              ceilings: dict[str, tuple[str, pd.DataFrame]] | None = None) -> list[dict]:
    """One record per launch (``summary_keys()``). ``ref_frame``: extra reports that may
    hold the FA2 reference; launches in ``frame`` itself are also considered. ``ceilings``:
    {GPU name: (source, measured ceilings frame)} for ``pct_of_measured_peak``."""
    records = launch_records(frame)
    roof = roofline(frame)
    pipe = pipes(frame)
    stall = stalls(frame)
    banks = bank_conflicts(frame)
    keys = summary_keys()
    fields = recipe_fields()

    refs = []
    for f in (frame, ref_frame):
        if f is None:
            continue
        for lr in launch_records(f):
            dur = lr.value("duration_ns")
            if _is_ref(lr.ident["report"], lr.ident["variant"]) and not math.isnan(dur):
                refs.append((lr.ident, dur))

    def rows_of(table: pd.DataFrame, key: tuple) -> pd.DataFrame:
        return table[(table["report"] == key[0]) & (table["launch"] == key[2]) & (table["range_idx"] == key[1])]

    out = []
    for lr in records:
        rec, key, res = lr.ident, lr.key, lr.results
        r = rows_of(roof, key).set_index("level")
        first = r.iloc[0]
        row = {k: rec.get(k) for k in keys if k in rec}
        for q, (field, divisor) in fields.items():
            row[field] = res[q].value / divisor
        row["time_share"] = lr.time_share
        row["dominant"] = lr.dominant
        row["flops_kind"] = nan_to_none(first["flops_kind"])
        row["tflops"] = first["flops"] / 1e12
        row["peak_tflops"] = first["compute_ceiling"] / 1e12
        row["total_tflops"] = first["flops_total"] / 1e12
        row["tensor_path"] = first["tensor_path"]
        row["tensor_src"] = nan_to_none(first["tensor_src"])
        row["pct_of_tensor_peak"] = 100 * first["flops_tensor"] / first["tensor_ceiling"]
        measured, measured_from = _pct_of_measured(rec.get("gpu"), first, row["sm_clock_hz"], ceilings)
        row["pct_of_measured_peak"] = measured
        for level, k in _LEVEL_KEYS.items():
            row[k] = r.loc[level, "ai"] if level in r.index else math.nan
        row["provenance"] = _provenance(lr, r)
        row["provenance"]["pct_of_measured_peak"] = measured_from
        lost = list(lr.eval.missing)
        row["missing"] = lost
        row["collect_hint"] = recipes.collect_hint(lost) or None

        p = rows_of(pipe, key)
        pv = dict(zip(p["name"], p["value"]))
        for name, k in _PIPE_KEYS.items():
            row[k] = pv.get(name, math.nan)
        m = lr.metrics
        row["tensor_pipe_split"] = {op: next((m[n] for n in names if n in m), math.nan)
                                    for op, names in recipes.TENSOR_SPLIT.items()}
        work, work_why = recipes.tensor_pipe_work(m)
        row["tensor_pipe_work"] = work
        row["inst_executed"] = lr.metrics.get(INST_EXECUTED_METRIC, math.nan)
        mix = p[p["category"] == "inst_mix_opcode"]
        mv = dict(zip(mix["name"], mix["value"]))
        row["inst_mix"] = ({op: mv.get(op, 0.0) for op in INST_MIX_OPCODES} if mv
                           else {op: math.nan for op in INST_MIX_OPCODES})

        s = rows_of(stall, key)
        sv = dict(zip(s["reason"].astype(str), s["per_issue"]))
        row["stalls"] = {reason: sv.get(reason, math.nan) for reason in STALL_REASONS}
        b = rows_of(banks, key)
        row["smem_bank_conflicts"] = dict(zip(b["op"], b["conflicts"]))
        row["smem_nway"] = dict(zip(b["op"], b["nway"]))
        row["ldsm_inst"] = b["ldsm_inst"].iloc[0] if len(b) else math.nan
        made = embedded(rec["path"])  # from the report file itself: foreign reports have it too
        for k in ("ncu_version", "clock_control", "cache_control"):
            row[k] = made[k]
            row["provenance"][k] = "exact: the report file" if made[k] else "null: not in the report file"
        fa2 = _fa2_duration(rec, refs)
        row["_fa2_ns"] = fa2
        is_attn, attn_why = attention_launch(rec, row)
        row["pct_of_fa2"] = (100.0 * fa2 / row["duration_ns"]
                             if fa2 is not None and is_attn and _positive(row["duration_ns"]) else None)
        pv = dict(zip(p["name"], p["provenance"]))
        row["provenance"].update({k: pv.get(name) for name, k in _PIPE_KEYS.items()})
        if row["provenance"].get("tensor_pipe_pct") == recipes.DERIVED:
            row["provenance"]["tensor_pipe_pct"] = ("derived: the HMMA sub-pipe only (the report lacks "
                                                    "sm__pipe_tensor_cycles_active; DMMA/IMMA work not counted)")
        row["provenance"]["tensor_pipe_split"] = (
            recipes.EXACT if any(not math.isnan(v) for v in row["tensor_pipe_split"].values()) else None)
        row["provenance"]["tensor_pipe_work"] = (f"derived: {work_why}" if work else f"null: {work_why}")
        if row["flops_kind"] is None and recipes.integer_mma_main(m):
            row["provenance"]["tflops"] = (
                f"null: the launch's main work is integer MMA ({work}, tensor pipe {row['tensor_pipe_pct']:.3g} % "
                f"busy), which performs no FLOPs; its FP32/FP16 epilogue is not drawn as its roofline point "
                f"(fp32_tflops etc. keep those rates)")
        row["provenance"]["stalls"] = "exact" if any(not math.isnan(v) for v in row["stalls"].values()) else None
        row["provenance"]["smem_bank_conflicts"] = (
            "exact" if any(not pd.isna(v) for v in row["smem_bank_conflicts"].values()) else None)
        row["provenance"]["time_share"] = (recipes.weakest(recipes.DERIVED, res["duration_ns"].provenance)
                                           if not math.isnan(lr.time_share) else None)
        for q, (field, _scale) in fields.items():
            row["provenance"].setdefault(field, res[q].provenance)
        row["provenance"]["pct_of_fa2"] = (
            recipes.DERIVED if row["pct_of_fa2"] is not None
            else f"null: {attn_why}" if fa2 is not None and not is_attn
            else "null: no sidecar, so nothing says this launch solved FA2's problem"
            if nan_to_none(rec.get("variant")) is None and not _is_ref(rec["report"], rec["variant"])
            else "null: no FA2 reference launch on this GPU for this launch's shape and dtype")
        out.append(row)
    _per_call(out)
    return [{k: row.get(k) for k in keys} for row in out]


CLOCK_SPREAD_WARN = 0.03  # SM clocks 3 % or more apart: durations are not comparable as they are


def clock_spread(rows: list[dict]) -> str | None:
    """A warning when the reports' SM clocks (each report's dominant launch) differ by
    CLOCK_SPREAD_WARN or more, else None."""
    by_gpu: dict[str, dict] = {}
    for r in rows:
        c = r.get("sm_clock_hz")
        clocks = by_gpu.setdefault(gpu_name(r.get("gpu")), {})
        if _positive(c) and (r["report"] not in clocks or r.get("dominant")):
            clocks[r["report"]] = (c, r.get("clock_control"))
    # per GPU: a different GPU's clock says nothing about this one's
    warn = [w for w in (_spread(c) for c in by_gpu.values()) if w]
    return "; ".join(warn) or None


def _spread(clocks: dict) -> str | None:
    if len(clocks) < 2:
        return None
    lo = min(clocks, key=lambda k: clocks[k][0])
    hi = max(clocks, key=lambda k: clocks[k][0])
    spread = clocks[hi][0] / clocks[lo][0] - 1
    if spread < CLOCK_SPREAD_WARN:
        return None
    ctl = lambda k: f", --clock-control {clocks[k][1]}" if clocks[k][1] else ""
    return (f"SM clocks differ by {100 * spread:.1f} % across these reports ({lo} at {clocks[lo][0] / 1e9:.2f} GHz"
            f"{ctl(lo)}; {hi} at {clocks[hi][0] / 1e9:.2f} GHz{ctl(hi)}): durations and % of FA2 carry that "
            "difference (cycles do not)")


def _positive(v) -> bool:
    return isinstance(v, (int, float)) and math.isfinite(v) and v > 0


_ATTENTION_NAME = ("attn", "attention", "flash", "fmha", "sdpa", "mha")


def attention_launch(rec: dict, row: dict) -> tuple[bool, str]:
    """Whether a launch is the attention itself rather than a helper of the call (a fill,
    a copy, a transpose): its counted FLOPs are at least a quarter of the attention's
    4·B·H·S²·d (a quarter: causal masking halves it); without FLOP counters, its name."""
    shape = [rec.get(k) for k in ("batch", "heads", "seq", "d_head")]
    flops = (row.get("total_tflops") or math.nan) * 1e12 * (row.get("duration_ns") or math.nan) * 1e-9
    if all(_positive(v) for v in shape) and isinstance(flops, float) and math.isfinite(flops):
        b, h, sq, d = shape
        want = 4.0 * b * h * sq * sq * d
        if flops >= 0.25 * want:
            return True, ""
        return False, (f"not an attention launch: it counted {flops:.3g} FLOPs, under a quarter of the "
                       f"attention's 4·B·H·S²·d = {want:.3g} (a helper of the call: see pct_of_fa2_call)")
    name = str(rec.get("kernel") or "").lower()
    if any(t in name for t in _ATTENTION_NAME):
        return True, ""
    return False, ("no FLOP counters or shape to tell an attention launch from a helper, and its name "
                   "does not say attention")


def _per_call(rows: list[dict]) -> None:
    """``pct_of_fa2_call``: FA2's time over the whole call's (every launch of the report, e.g.
    FlexAttention's fill kernels with its attention kernel), on each of the report's rows."""
    by_report: dict[str, list[dict]] = {}
    for r in rows:
        by_report.setdefault(r["path"], []).append(r)
    for rs in by_report.values():
        fa2 = next((r["_fa2_ns"] for r in rs if r["_fa2_ns"] is not None), None)
        total = sum(r["duration_ns"] for r in rs) if all(_positive(r["duration_ns"]) for r in rs) else math.nan
        pct = 100.0 * fa2 / total if fa2 is not None and _positive(total) else None
        for r in rs:
            r["pct_of_fa2_call"] = pct
            r["provenance"]["pct_of_fa2_call"] = (
                recipes.DERIVED if pct is not None else
                "null: a launch of the call has no duration" if fa2 is not None else r["provenance"]["pct_of_fa2"])


def _provenance(lr, r: pd.DataFrame) -> dict:
    """{summary field: provenance} for the recipe and roofline fields of one launch."""
    res = lr.results
    prov = {"duration_ns": res["duration_ns"].provenance, "sm_clock_hz": res["sm_clock_hz"].provenance}
    first = r.iloc[0]
    kind = first["flops_kind"]
    prov["tflops"] = nan_to_none(first["flops_provenance"])
    if prov["tflops"] is None and nan_to_none(first["flops_kind"]) is None and any(
            nan_to_none(first[f"flops_{k}"]) == 0 for k in recipes.FLOP_KINDS):
        prov["tflops"] = ("null: every floating-point counter is 0 (no FLOPs: e.g. integer tensor "
                          "work, IMMA); such a launch has no point on a FLOP roofline")
    prov["peak_tflops"] = res[f"{kind}_ceiling"].provenance if isinstance(kind, str) else None
    for k in recipes.FLOP_KINDS:
        prov[f"{k}_tflops"] = res[f"flops_{k}"].provenance or _null(res[f"flops_{k}"])
    prov["tensor_tflops_peak"] = res["tensor_ceiling"].provenance
    for level, k in _LEVEL_KEYS.items():
        prov[k] = (recipes.weakest(prov["tflops"], nan_to_none(r.loc[level, "bytes_provenance"]))
                   if level in r.index else None) or _null(res[_LEVEL_BYTES[level]])
    return prov


_LEVEL_BYTES = {"L1": "bytes_l1", "L2": "bytes_l2", "DRAM": "bytes_dram", "shared memory": "bytes_smem"}


def _null(result) -> str | None:
    """'null: <why>' where the recipes left a value null although the report shows work."""
    return f"null: {result.reason}" if getattr(result, "reason", None) else None


def _pct_of_measured(gpu, first, sm_clock: float, ceilings) -> tuple[float, str | None]:
    """Tensor FLOP/s as % of the measured peak of the instruction the launch used
    (wgmma for the hgmma path, else mma.sync of its source type) re-expressed at the
    launch's SM clock; (NaN, None) without a ceilings file for this GPU or tensor work."""
    if not ceilings or gpu_name(gpu) not in ceilings:
        return math.nan, None
    source, meas = ceilings[gpu_name(gpu)]
    flops = first["flops_tensor"]
    if not (isinstance(flops, float) and math.isfinite(flops) and flops > 0):
        return math.nan, None
    from flashprof.analysis.stages.measured_roofs import measured_peak
    name = ("wgmma_f16_f32" if first["tensor_path"] == "hgmma"
            else "mma_bf16_f32" if first["tensor_src"] == "bf16" else "mma_f16_f32")
    peak = measured_peak(meas, name, sm_clock if math.isfinite(sm_clock) else None)
    if not math.isfinite(peak) or peak <= 0:
        return math.nan, None
    return 100.0 * flops / peak, "measured"  # ceilings.json beside the reports; the instruction by path


def find_ceilings(paths) -> dict[str, tuple[str, pd.DataFrame]]:
    """{GPU name: (file, frame)} from ceilings.json beside the reports or one folder up
    (reports/h200/other-shapes/x.ncu-rep -> reports/h200/ceilings.json)."""
    from flashprof.analysis.stages.measured_roofs import FILE, load
    out: dict[str, tuple[str, pd.DataFrame]] = {}
    for d in sorted({Path(p).resolve().parent for p in paths}):
        for cand in (d / FILE, d.parent / FILE):
            if cand.is_file():
                try:
                    meas = load(cand)
                except Exception:  # a broken ceilings file must not cost the summary
                    continue
                if len(meas):
                    out.setdefault(gpu_name(meas["gpu"].iloc[0]), (os.path.relpath(cand), meas))
                break
    return out


def _fa2_duration(rec: dict, refs: list[tuple[dict, float]]) -> float | None:
    """FA2's launch time for this launch's problem (same GPU, no shape/dtype field differing;
    the same folder preferred), None where nothing says this launch solved it."""
    is_ref = _is_ref(rec["report"], rec["variant"])
    # Without a sidecar nothing says this launch solved the reference's problem.
    if not is_ref and nan_to_none(rec.get("variant")) is None:
        return None
    matches = [(r, d) for r, d in refs if r.get("gpu") == rec.get("gpu") and _shape_matches(r, rec)]
    if not matches:
        return None
    # Prefer a reference from the same folder (same profiling campaign).
    here = os.path.dirname(os.path.realpath(rec["path"]))
    matches.sort(key=lambda rd: os.path.dirname(os.path.realpath(rd[0]["path"])) != here)
    return matches[0][1]


def select_rows(rows: list[dict], choice) -> list[dict]:
    """Summary records of the launches ``choice`` picks (see stages.launches.select):
    'dominant' or a launch index per report; ValueError for a launch a report lacks."""
    by_report: dict[str, list[dict]] = {}
    for r in rows:
        by_report.setdefault(r["report"], []).append(r)
    out = []
    for report, rs in by_report.items():
        if choice == "dominant":
            out += [r for r in rs if r["dominant"]] or rs[:1]
        elif len(rs) == 1:
            out += rs
        else:
            pick = [r for r in rs if r["launch"] == choice]
            if not pick:
                raise ValueError(f"--launch {choice}: report {report} has no launch {choice} "
                                 f"(launches {', '.join(str(r['launch']) for r in rs)})")
            out += pick
    return out


# --------------------------------------------------------------------------- compare
def _num(v) -> float | None:
    v = nan_to_none(v)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else None


_COMPARE_SKIP = {"launch", "batch", "seq", "heads", "d_head"}


def compare(a_rows: list[dict], b_rows: list[dict]) -> list[dict]:
    """Pair launches by position and diff every numeric field (B minus A).

    Returns one dict per pair: a/b report names and kernels, ``rows`` of
    {field, a, b, delta, delta_pct} and ``regressions`` (human-readable strings):
    duration up more than DURATION_REGRESSION_PCT %, or a stall reason up by at least
    STALL_REGRESSION_ABS warps per issued instruction and STALL_REGRESSION_REL relative.
    Stall ratios are per *issued instruction*: a kernel that issues fewer instructions
    (e.g. FP32 fusion) raises every ratio without stalling more. So when both sides know
    ``inst_executed``, a stall is flagged only if its total warp-cycles (ratio x
    instructions) also rose by STALL_REGRESSION_REL; the message gives both changes.
    """
    pairs = []
    for a, b in zip(a_rows, b_rows):
        fa, fb = flatten(a), flatten(b)
        ia, ib = _num(fa.get("inst_executed")), _num(fb.get("inst_executed"))
        rows, regressions = [], []
        for field in fa:
            if field in _COMPARE_SKIP:
                continue
            va, vb = _num(fa.get(field)), _num(fb.get(field))
            if va is None and vb is None:
                continue
            delta = vb - va if va is not None and vb is not None else None
            pct = 100.0 * delta / abs(va) if delta is not None and va else None
            rows.append({"field": field, "a": va, "b": vb, "delta": delta, "delta_pct": pct})
            if field == "duration_ns" and pct is not None and pct > DURATION_REGRESSION_PCT:
                regressions.append(f"duration +{pct:.1f}% (threshold {DURATION_REGRESSION_PCT:g}%)")
            if (field.startswith("stalls.") and delta is not None and delta >= STALL_REGRESSION_ABS
                    and (va == 0 or delta / abs(va) >= STALL_REGRESSION_REL)):
                reason = field[len("stalls."):]
                detail = [f"+{pct:.0f}%"] if pct is not None else []
                if ia and ib:
                    ta, tb = va * ia, vb * ib
                    total_pct = 100.0 * (tb - ta) / ta if ta else math.inf
                    if total_pct < 100.0 * STALL_REGRESSION_REL:
                        continue  # only the per-instruction normalisation moved
                    detail.append(f"total warp-cycles {total_pct:+.0f}%")
                regressions.append(f"stall {reason} +{delta:.2f} warps/issue"
                                   + (f" ({'; '.join(detail)})" if detail else ""))
        pairs.append({"a": a["report"], "b": b["report"], "kernel_a": a["kernel"], "kernel_b": b["kernel"],
                      "launch_a": a["launch"], "launch_b": b["launch"], "rows": rows,
                      "regressions": regressions})
    return pairs


# --------------------------------------------------------------------------- I/O glue
def summarize_paths(paths, cache: bool = True, skipped: list | None = None) -> list[dict]:
    """load_frame + summarize, also loading FA2 reference reports found next to inputs;
    ``skipped``: see load_frame (unusable reports are listed there and left out)."""
    frame = load_frame(paths, cache=cache, skipped=skipped)
    if skipped:
        bad = {os.path.realpath(q) for q, _w in skipped}
        paths = [q for q in paths if os.path.realpath(q) not in bad]
    given = {os.path.realpath(p) for p in paths}
    extra = [p for p in find_ref_reports(paths) if os.path.realpath(p) not in given]
    ref_frame = None
    if extra:
        with warnings.catch_warnings():
            # A reference with a smaller section set still has a duration; its gaps are
            # not what the user asked about.
            warnings.simplefilter("ignore")
            ref_frame = load_frame(extra, cache=cache)
    return summarize(frame, ref_frame, find_ceilings(paths))
