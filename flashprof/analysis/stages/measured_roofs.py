"""Ceilings stage: reports/<gpu>/ceilings.json -> one tidy frame, and the measured roofs.

Input: the ceilings.json that ``flashprof ceilings`` writes (the file or its
folder). Output: one row per measurement (``COLUMNS``; the run's GPU, arch, SM count and
clock on every row; a null in the file is NaN here, its reason in ``check`` or
``source_of_theoretical``), the rows a roofline draws (``measured_roofs``) and the measured
peak a kernel is compared with (``measured_peak``). Pure: no plotting, no GPU.

Per-SM rates are per SM clock cycle, so a measured peak can be re-expressed at another
clock (e.g. the clock of a profiled kernel): value x sm_count x that clock.
"""
from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd

from flashprof.kernels.cli import ArgumentParser, run_cli

from flashprof.analysis.report.errors import ReportError

FILE = "ceilings.json"
KINDS = ("throughput", "latency", "scaling")
RUN_COLUMNS = ("gpu", "arch", "sm_count", "sm_clock_hz")
ROW_COLUMNS = ("name", "kind", "value", "unit", "per_second", "theoretical", "pct_of_theoretical",
               "warps_per_scheduler", "source_of_theoretical", "repeats", "spread_pct")
COLUMNS = (*RUN_COLUMNS, *ROW_COLUMNS, "check")
_NUMERIC = ("sm_count", "sm_clock_hz", "value", "per_second", "theoretical", "pct_of_theoretical",
            "warps_per_scheduler", "repeats", "spread_pct")
# roof label -> (throughput measurement, unit of its per_second)
ROOFS = {
    "mma.sync fp16": ("mma_f16_f32", "FLOP/s"),
    "mma.sync bf16": ("mma_bf16_f32", "FLOP/s"),
    "wgmma fp16": ("wgmma_f16_f32", "FLOP/s"),
    "FFMA": ("ffma", "FLOP/s"),
    "shared memory": ("smem_ld", "B/s"),
    "L2": ("l2_read", "B/s"),
    "DRAM": ("dram_copy", "B/s"),
}
MMA_BY_DTYPE = {"fp16": "mma_f16_f32", "bf16": "mma_bf16_f32"}


def _path(path: str | Path) -> Path:
    p = Path(path)
    return p / FILE if p.is_dir() else p


def load(path: str | Path) -> pd.DataFrame:
    """The measurements of one ceilings.json (or of the one in folder ``path``)."""
    p = _path(path)
    try:
        doc = json.loads(p.read_text())
    except FileNotFoundError:
        raise ReportError(f"{p}: no such file (run `make ceilings` on the GPU machine)") from None
    except (OSError, UnicodeDecodeError) as e:
        raise ReportError(f"{p}: cannot read it ({e})") from None
    except json.JSONDecodeError as e:
        raise ReportError(f"{p}: not JSON ({e.msg} at line {e.lineno})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("measurements"), list):
        raise ReportError(f"{p}: not a ceilings file (no 'measurements' list)")
    missing = [k for k in RUN_COLUMNS if k not in doc]
    if missing:
        raise ReportError(f"{p}: lacks {', '.join(missing)}")
    rows = []
    for i, m in enumerate(doc["measurements"]):
        if not isinstance(m, dict) or any(k not in m for k in ROW_COLUMNS):
            lacks = [k for k in ROW_COLUMNS if not isinstance(m, dict) or k not in m]
            raise ReportError(f"{p}: measurement {i} lacks {', '.join(lacks)}")
        if m["kind"] not in KINDS:
            raise ReportError(f"{p}: measurement {i} ({m['name']}) has unknown kind {m['kind']!r}")
        rows.append({**{k: doc[k] for k in RUN_COLUMNS}, **{k: m[k] for k in ROW_COLUMNS},
                     "check": m.get("check", "ok")})
    if not rows:
        raise ReportError(f"{p}: holds no measurements")
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    for c in _NUMERIC:
        frame[c] = pd.to_numeric(frame[c], errors="coerce").astype(float)
    key = frame[["name", "kind", "warps_per_scheduler"]].fillna({"warps_per_scheduler": -1})
    if key.duplicated().any():
        dup = frame.loc[key.duplicated(), "name"].tolist()
        raise ReportError(f"{p}: duplicate measurements {dup}")
    return frame


def _row(frame: pd.DataFrame, name: str, kind: str, warps_per_scheduler: int | None) -> pd.Series | None:
    sel = (frame["name"] == name) & (frame["kind"] == kind)
    if warps_per_scheduler is not None:
        sel &= frame["warps_per_scheduler"] == warps_per_scheduler
    hits = frame[sel]
    return hits.iloc[0] if len(hits) else None


def value(frame: pd.DataFrame, name: str, kind: str = "throughput",
          warps_per_scheduler: int | None = None) -> float:
    """One measured value in its own unit; NaN if absent or failed."""
    row = _row(frame, name, kind, warps_per_scheduler)
    return float(row["value"]) if row is not None else math.nan


def measured_peak(frame: pd.DataFrame, name: str, sm_clock_hz: float | None = None) -> float:
    """Measured throughput of ``name`` per second: at the ceilings run's own clock, or,
    for per-SM-per-clock units, at ``sm_clock_hz`` (e.g. a profiled kernel's clock). NaN
    if the measurement is absent or failed."""
    row = _row(frame, name, "throughput", None)
    if row is None or not math.isfinite(row["value"]):
        return math.nan
    if sm_clock_hz is not None and str(row["unit"]).endswith("/clk/SM"):
        return float(row["value"] * row["sm_count"] * sm_clock_hz)
    return float(row["per_second"])


def pct_of_measured_peak(achieved_flops_per_s: float, frame: pd.DataFrame, dtype: str = "fp16",
                         sm_clock_hz: float | None = None) -> float:
    """A kernel's FLOP/s as % of the measured mma.sync peak of its dtype (at its clock)."""
    if dtype not in MMA_BY_DTYPE:
        raise ValueError(f"dtype {dtype!r}: expected one of {', '.join(MMA_BY_DTYPE)}")
    peak = measured_peak(frame, MMA_BY_DTYPE[dtype], sm_clock_hz)
    return 100.0 * achieved_flops_per_s / peak if peak and math.isfinite(peak) else math.nan


def measured_roofs(frame: pd.DataFrame, sm_clock_hz: float | None = None) -> pd.DataFrame:
    """The measured roofs a roofline draws: roof, name, per_second, unit, pct_of_theoretical,
    and the clock they are expressed at; roofs whose measurement is absent or failed are left out."""
    rows = []
    for roof, (name, unit) in ROOFS.items():
        per_s = measured_peak(frame, name, sm_clock_hz)
        if math.isfinite(per_s):
            row = _row(frame, name, "throughput", None)
            rows.append({"roof": roof, "name": name, "per_second": per_s, "unit": unit,
                         "pct_of_theoretical": float(row["pct_of_theoretical"]),
                         "sm_clock_hz": sm_clock_hz or float(row["sm_clock_hz"])})
    return pd.DataFrame(rows, columns=["roof", "name", "per_second", "unit", "pct_of_theoretical", "sm_clock_hz"])


def main(argv: list[str] | None = None) -> int:
    p = ArgumentParser(prog="python -m flashprof.analysis.stages.measured_roofs", description="print a GPU's measured ceilings")
    p.add_argument("path", help="reports/<gpu> or reports/<gpu>/ceilings.json")
    args = p.parse_args(argv)
    return run_cli("ceilings", lambda: _print(load(args.path)))


def _print(frame: pd.DataFrame) -> int:
    with pd.option_context("display.width", 160, "display.max_columns", 20):
        print(frame.drop(columns=["gpu", "arch", "sm_count", "source_of_theoretical"]).to_string(index=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
