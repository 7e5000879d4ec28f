"""Empirical ceilings: build and run the microbenchmarks of kernels/ceilings/, derive rates.

Input: a CUDA GPU (or, with ``--from-output``, the raw output of an earlier run).
Output: reports/<gpu>/ceilings.json (the measurements, schema below), ceilings.csv (the same
rows), ceilings.meta.json (sidecar: GPU, driver, clocks, nvcc, git revision, date) and
ceilings.raw.jsonl (what the binary printed, from which everything else is re-derived).

    flashprof ceilings [--out DIR] [--arch sm_90] [--from-output RAW.jsonl]

The binary prints raw numbers only (cycles, milliseconds, work). Here:
  throughput, per SM  value = work per SM / cycles (median over blocks, one block per SM)
  throughput, memory  value = bytes / event time (GB/s)
  latency             value = (cycles of 2n links - cycles of n links) / n
  every kind          median over the repeats; spread_pct = (max - min) / median
The SM clock is measured, not assumed: block cycles / event time of the per-SM runs
(median), cross-checked against nvidia-smi's clocks.sm sampled during the run.
"""
from __future__ import annotations

import json
import math
import statistics
import sys
from pathlib import Path

from flashprof.kernels.ceilings import PEAKS_FILE, scaling_peak_name
from flashprof.kernels.config import gpu_slug

from flashprof.kernels.cli import FlashprofError

SCHEMA = 1
KINDS = ("throughput", "latency", "scaling")
FIELDS = ("name", "kind", "value", "unit", "per_second", "theoretical", "pct_of_theoretical",
          "warps_per_scheduler", "source_of_theoretical", "repeats", "spread_pct", "check")
CLOCK_DISAGREE = 0.05  # events clock vs nvidia-smi: warn beyond 5 %
_RAW_KEYS = ("name", "kind", "unit", "basis", "warps_per_scheduler", "work", "n", "cycles",
             "cycles_max", "cycles_2n", "ms", "check")


# ----------------------------------------------------------------------- parsing
def parse_output(text: str) -> tuple[dict, list[dict]]:
    """(device record, measurement records) of the binary's JSON-lines output."""
    device, records = None, []
    for i, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except json.JSONDecodeError as e:
            raise FlashprofError(f"ceilings output line {i} is not JSON ({e.msg}): {line[:80]!r}") from None
        kind = rec.get("record") if isinstance(rec, dict) else None
        if kind == "device":
            device = rec
        elif kind == "measurement":
            missing = [k for k in _RAW_KEYS if k not in rec]
            if missing:
                raise FlashprofError(f"ceilings output line {i} lacks {', '.join(missing)}")
            if rec["kind"] not in KINDS:
                raise FlashprofError(f"ceilings output line {i}: unknown kind {rec['kind']!r}")
            records.append(rec)
        else:
            raise FlashprofError(f"ceilings output line {i} is neither a device nor a measurement record")
    if device is None:
        raise FlashprofError("ceilings output has no device record (did the binary start?)")
    if not records:
        raise FlashprofError("ceilings output has no measurement records")
    return device, records


# ---------------------------------------------------------------------- deriving
def load_peaks(arch: str, path: Path = PEAKS_FILE) -> dict:
    """name -> {value, unit, source} for ``arch``; empty if the table lacks the arch."""
    table = json.loads(path.read_text())
    return table.get(arch, {}).get("peaks", {})


def _spread(values: list[float]) -> float | None:
    med = statistics.median(values)
    return 100.0 * (max(values) - min(values)) / med if med else None


def events_clock_hz(records: list[dict]) -> float | None:
    """The SM clock of the run: block cycles (max over blocks) / event time, median over
    every repeat of every per-SM throughput run (they last milliseconds, so the launch
    overhead inside the event time is < 0.1 %)."""
    est = [c / (ms * 1e-3) for r in records if r["basis"] == "cycles" and r["kind"] != "latency"
           for c, ms in zip(r["cycles_max"], r["ms"]) if ms > 0 and c > 0]
    return statistics.median(est) if est else None


def _ratio(a: float, b: float) -> float:
    return a / b if b > 0 else math.nan


def samples(rec: dict) -> list[float]:
    """Per-repeat values of one raw record, in its own unit (NaN where a time is 0)."""
    if rec["kind"] == "latency":
        return [_ratio(c2 - c1, rec["n"]) for c1, c2 in zip(rec["cycles"], rec["cycles_2n"])]
    if rec["basis"] == "events":
        return [_ratio(rec["work"], ms * 1e-3) / 1e9 for ms in rec["ms"]]
    return [_ratio(rec["work"], c) for c in rec["cycles"]]


def per_second(value: float, unit: str, sm_count: int, clock_hz: float | None) -> float | None:
    """Rate per second of a value: per-SM per-clock units x SMs x clock; GB/s x 1e9."""
    if unit == "GB/s":
        return value * 1e9
    if unit.endswith("/clk/SM") and clock_hz:
        return value * sm_count * clock_hz
    return None


def measurement(rec: dict, peaks: dict, sm_count: int, clock_hz: float | None) -> dict:
    """One output row (the JSON schema's measurement) from one raw record."""
    vals = samples(rec)
    ok = rec["check"] == "ok" and vals and all(math.isfinite(v) and v > 0 for v in vals)
    value = statistics.median(vals) if ok else None
    peak_name = scaling_peak_name(rec["name"]) if rec["kind"] == "scaling" else rec["name"]
    peak = peaks.get(peak_name) if rec["kind"] != "latency" else None
    theo = source = None
    if peak is not None:
        source = peak["source"]
        if peak.get("value") is not None and peak["unit"] == rec["unit"]:
            theo = float(peak["value"])
        elif peak.get("value") is not None:
            source = f"none: the peak table's unit {peak['unit']} differs from {rec['unit']}"
    elif rec["kind"] != "latency":
        source = "none: no theoretical peak for this arch in kernels/ceilings/peaks.json"
    check = rec["check"] if rec["check"] != "ok" or ok else "no positive finite value"
    return {
        "name": rec["name"], "kind": rec["kind"], "value": value, "unit": rec["unit"],
        "per_second": per_second(value, rec["unit"], sm_count, clock_hz) if value is not None else None,
        "theoretical": theo,
        "pct_of_theoretical": 100.0 * value / theo if value is not None and theo else None,
        "warps_per_scheduler": rec["warps_per_scheduler"] or None,
        "source_of_theoretical": source,
        "repeats": len(vals),
        "spread_pct": _spread(vals) if ok else None,
        "check": check,
    }


def derive(device: dict, records: list[dict], smi_sm_mhz: list[float] | None = None) -> dict:
    """The ceilings.json document: GPU facts, the measured SM clock, one row per record."""
    sm_count = int(device["sm_count"])
    clock = events_clock_hz(records)
    smi = statistics.median(smi_sm_mhz) * 1e6 if smi_sm_mhz else None
    peaks = load_peaks(device["arch"])
    return {
        "schema": SCHEMA,
        "gpu": device["name"],
        "arch": device["arch"],
        "sm_count": sm_count,
        "sm_clock_hz": clock,
        "sm_clock_hz_nvidia_smi": smi,
        "measurements": [measurement(r, peaks, sm_count, clock) for r in records],
    }


def clock_warning(doc: dict) -> str | None:
    a, b = doc.get("sm_clock_hz"), doc.get("sm_clock_hz_nvidia_smi")
    if a and b and abs(a - b) / b > CLOCK_DISAGREE:
        return (f"SM clock from cycles/event time {a / 1e6:.0f} MHz differs from nvidia-smi's "
                f"{b / 1e6:.0f} MHz by more than {CLOCK_DISAGREE:.0%}")
    return None


def over_peak(doc: dict, slack_pct: float = 0.5) -> list[str]:
    """Measurements above their theoretical peak (beyond ``slack_pct``): a wrong peak, a
    clock other than the peak assumed, or a benchmark that counts work it did not do."""
    return [f"{m['name']} ({m['kind']}) at {m['pct_of_theoretical']:.1f} % of its theoretical peak"
            for m in doc["measurements"]
            if m["pct_of_theoretical"] is not None and m["pct_of_theoretical"] > 100 + slack_pct]


def csv_text(doc: dict) -> str:
    """The measurements as CSV (empty cells for nulls), GPU and clock on every row."""
    import csv
    import io

    buf = io.StringIO()
    cols = ("gpu", "arch", "sm_clock_hz", *FIELDS)
    w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n")
    w.writeheader()
    for m in doc["measurements"]:
        row = {"gpu": doc["gpu"], "arch": doc["arch"], "sm_clock_hz": doc["sm_clock_hz"], **m}
        w.writerow({k: ("" if row.get(k) is None else f"{row[k]:.6g}" if isinstance(row[k], float)
                        else row[k]) for k in cols})
    return buf.getvalue()


def _human(per_s: float | None, unit: str) -> str:
    """A per-second rate for the table: TFLOP/s, TB/s, or G<thing>/s for instructions."""
    if per_s is None:
        return ""
    if unit.startswith(("FLOP", "B/", "GB/")):
        return f"{per_s / 1e12:8.2f} T{'FLOP' if unit.startswith('FLOP') else 'B'}/s"
    return f"{per_s / 1e9:8.1f} G{unit.split('/')[0]}/s"


def table(doc: dict) -> str:
    lines = [f"{doc['gpu']} ({doc['arch']}, {doc['sm_count']} SMs) at "
             + (f"{doc['sm_clock_hz'] / 1e6:.0f} MHz" if doc["sm_clock_hz"] else "unknown clock")]
    for m in doc["measurements"]:
        val = "FAILED" if m["value"] is None else f"{m['value']:.4g}"
        pct = "" if m["pct_of_theoretical"] is None else f"{m['pct_of_theoretical']:5.1f} % of {m['theoretical']:.4g}"
        wps = f" wps={m['warps_per_scheduler']}" if m["kind"] == "scaling" else ""
        lines.append(f"  {m['kind']:10s} {m['name'] + wps:22s} {val:>10s} {m['unit']:17s} "
                     f"{_human(m['per_second'], m['unit']):15s} {pct}".rstrip())
    return "\n".join(lines)
