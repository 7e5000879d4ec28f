"""Gap stage, pipes model: what the model cannot explain, its table as text / records,
and the front door from report paths (``gap_paths``, used by ``flashprof gap
--model pipes``). Input: the frames of ``throughput``. Output: strings and records.
"""
from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from flashprof.analysis.gap.data import REF, REPO, default_reports
from flashprof.analysis.gap.legacy_pipes.pipe_table import DEFAULT_SASS, MODEL_PIPES
from flashprof.analysis.gap.legacy_pipes.throughput import gap_table, model_errors
from flashprof.analysis.gap.legacy_pipes.work import load_static
from flashprof.analysis.report.errors import read_table


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
    lines = ["pipe-time model of issue 6 (fitted, superseded by the issue model: flashprof gap)",
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


def gap_paths(reports=None, sass: str | Path | None = None, bench=None,
              cache: bool = True) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(gap_table, model_errors) from files: reports (default: reports/*/*.ncu-rep), the
    static opcode CSV (default reports/sass/opcodes.csv, optional) and bench CSVs (default
    reports/*/bench.csv, optional). Raises ReportError for an unusable explicit input."""
    import warnings

    from flashprof.analysis.report.errors import ReportError
    from flashprof.analysis.report.parse import load_frame

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
        frames.append(read_table(b))
    bench_frame = pd.concat(frames, ignore_index=True) if frames else None
    table = gap_table(frame, opcodes, bench=bench_frame)
    return table, model_errors(table)
