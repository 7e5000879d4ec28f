"""How a summary looks: the text table, the A/B comparison table, CSV and JSON of the
records ``flashprof.analysis.stages.summary`` computes. Pure: records in, text out; NaN becomes null
(JSON) or "-" (tables), never 0.
"""
from __future__ import annotations

import csv
import io
import json
import math

import pandas as pd


def nan_to_none(v):
    if v is None:
        return None
    if isinstance(v, float) and math.isnan(v):
        return None
    try:
        if pd.isna(v):
            return None
    except (TypeError, ValueError):
        pass
    if hasattr(v, "item"):  # numpy scalar -> Python scalar for json
        v = v.item()
    return v


def jsonable(obj):
    """Recursively replace NaN/NA by None and numpy scalars by Python ones."""
    if isinstance(obj, dict):
        return {k: jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [jsonable(v) for v in obj]
    return nan_to_none(obj)


def flatten(row: dict) -> dict:
    flat = {}
    for k, v in row.items():
        if isinstance(v, dict):
            flat.update({f"{k}.{kk}": vv for kk, vv in v.items()})
        else:
            flat[k] = v
    return flat


def _fmt(key: str, v) -> str:
    v = nan_to_none(v)
    if v is None:
        return "-"
    if isinstance(v, str):
        return v
    if key == "duration_ns":
        return f"{v / 1e6:.3f} ms"
    if key == "sm_clock_hz":
        return f"{v / 1e9:.3f} GHz"
    if key in ("ldsm_inst", "inst_executed") or key.startswith(("smem_bank_conflicts", "inst_mix")):
        return f"{v:,.0f}"
    if key.startswith("stalls.") or key.startswith("smem_nway"):
        return f"{v:.3f}"
    if isinstance(v, float) and v.is_integer() and key in ("batch", "seq", "heads", "d_head"):
        return str(int(v))
    if isinstance(v, float):
        return f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}"
    return str(v)


def _si(v: float) -> str:
    """Compact count for the table: 7.53G, 14.8M, 122.6k, 950."""
    for scale, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= scale:
            x = v / scale
            return f"{x:.3g}{suffix}" if abs(x) < 100 else f"{x:.0f}{suffix}"
    return f"{v:.0f}"


def _fmt_cell(key: str, v) -> str:
    """Table cell: like _fmt, but counts and very large intensities are compacted so that
    nine or more launches fit side by side (JSON/CSV keep the full values)."""
    n = nan_to_none(v)
    if isinstance(n, (int, float)) and not isinstance(n, bool):
        if key in ("ldsm_inst", "inst_executed") or key.startswith(("smem_bank_conflicts", "inst_mix")):
            return _si(float(n))
        if key.startswith("ai_") and abs(n) >= 1e5:
            return f"{n:.2e}"
        if abs(n) >= 1e6 and key not in ("duration_ns", "sm_clock_hz"):  # base-unit recipe quantities (bytes/s, FLOP/s, Hz); those two have units of their own
            return _si(float(n))
    return _fmt(key, v)


_TABLE_TEXT_WIDTH = 40  # long kernel names / titles (cuDNN, CUTLASS) would blow up the column
_LEGEND_WIDTH = 110
# Identity fields printed once above the table when every launch shares the value.
_COMMON_FIELDS = ("launch", "kernel", "gpu", "arch", "batch", "seq", "heads", "d_head", "dtype")
_LEGEND_FIELDS = ("title", "kernel")


def _clip(text: str) -> str:
    return text if len(text) <= _TABLE_TEXT_WIDTH else text[: _TABLE_TEXT_WIDTH - 3] + "..."


_HEAD_WIDTH = 16  # column heads past this are shortened in the middle; the legend has the rest


def _short_head(text: str) -> str:
    if len(text) <= _HEAD_WIDTH:
        return text
    keep = _HEAD_WIDTH - 1
    return text[: (keep + 1) // 2] + "…" + text[-(keep // 2):]


def render_table(rows: list[dict]) -> str:
    """Fixed-width table: one row per field, one column per launch. With several launches,
    identity fields shared by all are printed once above the table, and rows with no value
    in any launch are left out (JSON and CSV keep every field)."""
    flats = [flatten(r) for r in rows]
    # report names the column already; path is long and in the JSON/CSV forms.
    fields = list(dict.fromkeys(k for f in flats for k in f if k not in ("path", "report")))
    lines = []
    heads = [_short_head(f"{r['report']}#{r['launch']}" if sum(x["report"] == r["report"] for x in rows) > 1
                         else str(r["report"])) for r in rows]
    if len(flats) > 1:
        common = [k for k in _COMMON_FIELDS if k in fields
                  and len({_fmt(k, f.get(k)) for f in flats}) == 1]
        if common:
            lines.append("all launches: " + ", ".join(f"{k} {_fmt(k, flats[0].get(k))}" for k in common))
        # Long free text (title, kernel name) goes to a legend, one line per column.
        legend = [k for k in _LEGEND_FIELDS if k in fields and k not in common]
        if legend:
            hw = max(len(h) for h in heads)
            for h, f in zip(heads, flats):
                parts = [_fmt(k, f.get(k)) for k in legend if nan_to_none(f.get(k)) is not None]
                line = f"  {h.ljust(hw)}  " + " | ".join(parts)
                lines.append(line if len(line) <= _LEGEND_WIDTH else line[: _LEGEND_WIDTH - 3] + "...")
            lines.append("")
        fields = [k for k in fields if k not in common and k not in legend
                  and any(nan_to_none(f.get(k)) is not None for f in flats)]
    cells = [[_short_head(_fmt_cell(k, f.get(k))) if len(flats) > 1 else _clip(_fmt_cell(k, f.get(k)))
              for f in flats] for k in fields]
    w0 = max(len(k) for k in fields)
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(heads)]
    lines.append("  ".join([" " * w0] + [h.rjust(w) for h, w in zip(heads, widths)]))
    lines += ["  ".join([k.ljust(w0)] + [c.rjust(w) for c, w in zip(cs, widths)]) for k, cs in zip(fields, cells)]
    return "\n".join(lines)


def render_compare_table(pairs: list[dict]) -> str:
    out = []
    for p in pairs:
        out.append(f"A = {p['a']} ({p['kernel_a']}, launch {p['launch_a']})   "
                   f"B = {p['b']} ({p['kernel_b']}, launch {p['launch_b']})")
        w0 = max([len(r["field"]) for r in p["rows"]] + [5])
        out.append(f"{'field'.ljust(w0)}  {'A':>14}  {'B':>14}  {'delta':>14}  {'delta %':>9}")
        for r in p["rows"]:
            pct = "-" if r["delta_pct"] is None else f"{r['delta_pct']:+.1f}%"
            delta = "-" if r["delta"] is None else f"{r['delta']:+.4g}"
            out.append(f"{r['field'].ljust(w0)}  {_fmt(r['field'], r['a']):>14}  "
                       f"{_fmt(r['field'], r['b']):>14}  {delta:>14}  {pct:>9}")
        out.append("REGRESSIONS: " + "; ".join(p["regressions"]) if p["regressions"] else "no regressions flagged")
        out.append("")
    return "\n".join(out).rstrip("\n")


def render_csv(records: list[dict]) -> str:
    flats = [flatten(jsonable(r)) for r in records]
    fields = list(dict.fromkeys(k for f in flats for k in f))
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    writer.writerows(flats)
    return buf.getvalue().rstrip("\n")


def render_json(obj) -> str:
    return json.dumps(jsonable(obj), indent=2, allow_nan=False)
