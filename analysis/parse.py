"""Parse stage: Nsight Compute reports -> one tidy long DataFrame (no arithmetic here).

Input: ``.ncu-rep`` files (any section set, any GPU), each optionally with a sidecar JSON
of the same stem written by the profiling stage (kernel variant, shape, dtype, ...).

Output:
* ``load_frame(paths)``: one row per (report, launch, metric) with identity columns
  (IDENTITY_COLUMNS) and ``metric, unit, value``; numeric metrics only. Instanced
  metrics whose instances are keyed by a name (e.g. ``sass__inst_executed_per_opcode``)
  also appear once per key as ``metric[key]``. Per-PC instanced metrics are not in this
  frame: ``load_source_frame`` gives them, one row per SASS instruction.
* A parquet cache next to each report (``<dir>/.flashprof-cache/<stem>.<sha1>.parquet``),
  keyed by the content hash of the report and its sidecar, so a re-profiled report is
  never served stale. Without pyarrow the cache is skipped silently.

Analysis stages (roofline, pipes, stalls, summary) only ever see the long frame.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import tempfile
import warnings
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from .errors import FlashprofWarning, ReportError
from .ncu_import import ncu_report

REPORT_SUFFIX = ".ncu-rep"
CACHE_DIRNAME = ".flashprof-cache"
# Bump when the layout of the extracted frame changes: old cache files then miss.
_CACHE_VERSION = b"flashprof-long-frame-v1"
_MAGIC = b"NVR\x00"  # first bytes of every .ncu-rep written by Nsight Compute

IDENTITY_COLUMNS = (
    "report", "path", "gpu", "arch", "kernel", "kernel_full", "range_idx", "launch",
    "variant", "title", "batch", "seq", "heads", "d_head", "dtype",
)
FRAME_COLUMNS = IDENTITY_COLUMNS + ("metric", "unit", "value")
KEY_COLUMNS = ("report", "range_idx", "launch", "metric")
SHAPE_FIELDS = ("batch", "seq", "heads", "d_head")

# What the analysis stages read, grouped by the Nsight Compute section that collects it.
# Each entry is a tuple of alternatives (architectures name some counters differently);
# a requirement is met when any alternative is present. Used only to warn once, naming
# the sections a smaller section set lacks; the stages themselves yield NaN.
SECTION_METRICS: dict[str, tuple[tuple[str, ...], ...]] = {
    "SpeedOfLight": (("gpu__time_duration.sum",),),
    "SpeedOfLight_HierarchicalTensorRooflineChart": (
        ("sm__cycles_elapsed.avg.per_second",),
        ("dram__bytes.sum.per_second",),
        ("lts__lts2xbar_cycles_active.sum.per_second",),
        ("l1tex__lsu_writeback_active_mem_lgds.sum.per_second",
         "l1tex__lsu_writeback_active_mem_lg.sum.per_second"),
        ("sm__ops_path_tensor_op_hmma_src_fp16_dst_fp32_sparsity_off.sum.per_cycle_elapsed",
         "sm__ops_path_tensor_src_fp16_dst_fp32_sparsity_off.sum.per_cycle_elapsed"),
    ),
    "SpeedOfLight_HierarchicalSingleRooflineChart": (
        ("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum.per_cycle_elapsed",),
        ("sm__sass_thread_inst_executed_op_ffma_pred_on.sum.peak_sustained",),
    ),
    "ComputeWorkloadAnalysis": (
        ("sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",),
        ("sm__inst_executed_pipe_lsu.avg.pct_of_peak_sustained_active",),
    ),
    "SchedulerStats": (("smsp__issue_active.avg.pct_of_peak_sustained_active",),),
    "WarpStateStats": (
        ("smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio",),
    ),
    "MemoryWorkloadAnalysis_Tables": (
        ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum",),
        ("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",),
    ),
    "InstructionStats": (("sass__inst_executed_per_opcode",),),
}


# --------------------------------------------------------------------------- opening
def _check_file(path: Path) -> None:
    if not path.exists():
        raise ReportError(f"{path}: no such file")
    if path.is_dir():
        raise ReportError(f"{path}: is a directory, not a report file")
    if path.stat().st_size == 0:
        raise ReportError(f"{path}: empty file")
    with open(path, "rb") as f:
        head = f.read(len(_MAGIC))
    if head != _MAGIC:
        raise ReportError(f"{path}: not an Nsight Compute report (bad file signature)")


def _load_raw(path: Path):
    """Load with ncu_report; kept separate so tests can substitute a fake report."""
    try:
        return ncu_report().load_report(str(path))
    except ReportError:
        raise
    except Exception as exc:  # the SWIG layer raises assorted types
        raise ReportError(f"{path}: cannot be read by ncu_report: {exc}") from None


def open_report(path: str | os.PathLike):
    """Open one report, raising ReportError for anything that is not a usable report."""
    path = Path(path)
    _check_file(path)
    report = _load_raw(path)
    # A truncated or corrupt file loads without error but has no ranges.
    if report.num_ranges() == 0:
        raise ReportError(f"{path}: contains no profiled ranges (truncated or corrupt report?)")
    if sum(report.range_by_idx(i).num_actions() for i in range(report.num_ranges())) == 0:
        raise ReportError(f"{path}: contains no profiled kernel launches")
    return report


def _iter_actions(report):
    """Yield (range_idx, launch, action); launch counts actions across all ranges."""
    launch = 0
    for r in range(report.num_ranges()):
        rng = report.range_by_idx(r)
        for j in range(rng.num_actions()):
            yield r, launch, rng.action_by_idx(j)
            launch += 1


# --------------------------------------------------------------------------- sidecar
def sidecar_path(path: Path) -> Path:
    return path.with_name(_stem(path) + ".json")


def _stem(path: Path) -> str:
    name = path.name
    return name[: -len(REPORT_SUFFIX)] if name.endswith(REPORT_SUFFIX) else path.stem


def _read_sidecar(path: Path) -> dict:
    side = sidecar_path(path)
    if not side.is_file():
        return {}
    try:
        data = json.loads(side.read_text())
    except (OSError, ValueError) as exc:
        raise ReportError(f"{side}: unreadable sidecar JSON: {exc}") from None
    if not isinstance(data, dict):
        raise ReportError(f"{side}: sidecar JSON must be an object")
    return data


def _identity_from_sidecar(data: dict) -> dict:
    shape = data.get("shape") or {}
    ident = {
        "variant": None if data.get("kernel") is None else str(data["kernel"]),
        "title": data.get("title"),
        "dtype": data.get("dtype"),
    }
    for field in SHAPE_FIELDS:
        v = shape.get(field)
        ident[field] = float(v) if isinstance(v, (int, float)) else math.nan
    return ident


# --------------------------------------------------------------------------- extraction
def _short_name(action) -> str:
    # NameBase_FUNCTION drops namespaces and template arguments: "flash_fwd_kernel".
    try:
        return action.name(action.NameBase_FUNCTION)
    except Exception:
        return action.name()


def _extract(path: Path) -> pd.DataFrame:
    """Read one report into the long frame (report column = file stem)."""
    nr = ncu_report()
    numeric = {nr.IMetric.ValueKind_DOUBLE, nr.IMetric.ValueKind_FLOAT,
               nr.IMetric.ValueKind_UINT32, nr.IMetric.ValueKind_UINT64}
    string_kind = nr.IMetric.ValueKind_STRING
    report = open_report(path)
    ident_side = _identity_from_sidecar(_read_sidecar(path))
    stem = _stem(path)

    cols: dict[str, list] = {c: [] for c in FRAME_COLUMNS}
    for range_idx, launch, action in _iter_actions(report):
        def text(name: str):
            m = action.metric_by_name(name)
            return None if m is None else m.value()

        major, minor = text("device__attribute_compute_capability_major"), text(
            "device__attribute_compute_capability_minor")
        ident = {
            "report": stem,
            "path": str(path),
            "gpu": text("device__attribute_display_name"),
            "arch": f"sm_{major}{minor}" if major is not None and minor is not None else None,
            "kernel": _short_name(action),
            "kernel_full": action.name(action.NameBase_DEMANGLED),
            "range_idx": range_idx,
            "launch": launch,
            **ident_side,
        }
        names, units, values = [], [], []
        for name in action.metric_names():
            m = action.metric_by_name(name)
            if m is None:
                continue
            kind = m.kind()
            if kind in numeric:
                v = m.value()  # for instanced metrics: the aggregate over instances
                if v is not None:
                    names.append(name)
                    units.append(m.unit())
                    values.append(float(v))
            # Instances keyed by a name (opcode, opcode category) are an instruction mix:
            # small and useful, so they join the long frame as metric[key].
            n_inst = m.num_instances()
            if n_inst > 1 and m.has_correlation_ids():
                ids = m.correlation_ids()
                if ids.kind() == string_kind:
                    unit = m.unit()
                    for i in range(n_inst):
                        v = m.value(i)
                        if isinstance(v, (int, float)):
                            names.append(f"{name}[{ids.value(i)}]")
                            units.append(unit)
                            values.append(float(v))
        n = len(names)
        for c in IDENTITY_COLUMNS:
            cols[c].extend([ident[c]] * n)
        cols["metric"].extend(names)
        cols["unit"].extend(units)
        cols["value"].extend(values)

    frame = pd.DataFrame(cols, columns=list(FRAME_COLUMNS))
    return _normalise_dtypes(frame)


def _normalise_dtypes(frame: pd.DataFrame) -> pd.DataFrame:
    # Identity columns without a sidecar are missing values (NaN), not None objects.
    for c in ("variant", "title", "dtype", "gpu", "arch"):
        frame[c] = frame[c].astype("str")
    frame["range_idx"] = frame["range_idx"].astype("int64")
    frame["launch"] = frame["launch"].astype("int64")
    for c in SHAPE_FIELDS + ("value",):
        frame[c] = frame[c].astype("float64")
    return frame


# --------------------------------------------------------------------------- cache
def _digest(path: Path) -> str:
    h = hashlib.sha1(_CACHE_VERSION)
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    side = sidecar_path(path)
    if side.is_file():  # a corrected sidecar must invalidate the cached identity columns
        h.update(b"\0sidecar\0")
        h.update(side.read_bytes())
    return h.hexdigest()


def _have_pyarrow() -> bool:
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        return False
    return True


def cache_file(path: str | os.PathLike) -> Path:
    path = Path(path)
    return path.parent / CACHE_DIRNAME / f"{_stem(path)}.{_digest(path)}.parquet"


def _read_cached(target: Path) -> pd.DataFrame | None:
    if not target.is_file():
        return None
    try:
        return _normalise_dtypes(pd.read_parquet(target))
    except Exception:
        return None  # a damaged cache file is simply re-parsed and overwritten


def _write_cached(target: Path, frame: pd.DataFrame) -> None:
    try:
        target.parent.mkdir(exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, suffix=".tmp")
        os.close(fd)
        frame.to_parquet(tmp, index=False)
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would hide the cache from other users
        os.replace(tmp, target)  # atomic: a concurrent reader never sees half a file
        # Stale entries for the same stem (older report contents) are dead weight.
        stem = target.name[: -len(".parquet")].rsplit(".", 1)[0]
        for old in target.parent.glob(f"{stem}.*.parquet"):
            digest = old.name[len(stem) + 1: -len(".parquet")]
            if old != target and len(digest) == 40 and "." not in digest:
                old.unlink(missing_ok=True)
    except Exception:
        # Read-only checkouts and full disks must not break analysis: no cache then.
        try:
            os.unlink(tmp)  # type: ignore[possibly-undefined]
        except Exception:
            pass


def _load_one(path: Path, cache: bool) -> pd.DataFrame:
    _check_file(path)
    if cache and _have_pyarrow():
        target = cache_file(path)
        frame = _read_cached(target)
        if frame is None:
            frame = _extract(path)
            _write_cached(target, frame)
    else:
        frame = _extract(path)
    frame["path"] = str(path)  # the cache may have been written via another spelling
    return frame


# --------------------------------------------------------------------------- public
def _as_paths(paths) -> list[Path]:
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    if not isinstance(paths, Iterable):
        raise TypeError("paths must be a path or an iterable of paths")
    out, seen = [], set()
    for p in paths:
        p = Path(p)
        key = os.path.realpath(p)
        if key not in seen:  # the same file twice would break key uniqueness
            seen.add(key)
            out.append(p)
    if not out:
        raise ReportError("no report files given")
    return out


def load_frame(paths, cache: bool = True) -> pd.DataFrame:
    """Parse reports into the long frame (see module docstring); warns once on gaps.

    ``paths``: one path or an iterable of paths to ``.ncu-rep`` files. Raises
    ReportError naming the file for anything that is not a usable report.
    """
    plist = _as_paths(paths)
    frames = [_load_one(p, cache) for p in plist]
    # Two reports with one stem (reports/h200/ref, reports/a100/ref) get the parent
    # folder as a prefix so that the key stays unique.
    stems = [_stem(p) for p in plist]
    for f, p, s in zip(frames, plist, stems):
        if stems.count(s) > 1:
            f["report"] = f"{p.parent.name}/{s}"
    frame = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    validate_frame(frame)
    _warn_missing(frame)
    return frame


def validate_frame(frame: pd.DataFrame) -> None:
    """Check the long frame's contract: columns, unique key, one unit per metric."""
    missing = [c for c in FRAME_COLUMNS if c not in frame.columns]
    if missing:
        raise ValueError(f"long frame lacks columns {missing}")
    dup = frame.duplicated(list(KEY_COLUMNS))
    if dup.any():
        row = frame.loc[dup.idxmax(), list(KEY_COLUMNS)].to_dict()
        raise ValueError(f"long frame key {KEY_COLUMNS} is not unique, e.g. {row}")
    per_report = frame.groupby(["report", "metric"], sort=False)["unit"].nunique()
    if (per_report > 1).any():
        bad = per_report[per_report > 1].index[:5].tolist()
        raise ValueError(f"metrics with more than one unit within a report: {bad}")
    # Across reports a raw metric must keep its unit. Nsight Compute's section scripts
    # pick units for their derived__ metrics per section set (e.g. sector vs byte for
    # derived__memory_l2_theoretical_sectors_global_excessive), and no analysis reads them.
    raw = frame[~frame["metric"].str.startswith("derived__")]
    units = raw.groupby("metric", sort=False)["unit"].nunique()
    if (units > 1).any():
        bad = units[units > 1].index[:5].tolist()
        raise ValueError(f"metrics with more than one unit: {bad}")


def missing_sections(frame: pd.DataFrame) -> dict[str, dict[str, list[str]]]:
    """{report: {section: [missing metric, ...]}} for the metrics in SECTION_METRICS."""
    out: dict[str, dict[str, list[str]]] = {}
    for report, sub in frame.groupby("report", sort=False):
        have = set(sub["metric"].unique())
        # Name-keyed instance rows (metric[key]) count as their base metric.
        have |= {m.split("[", 1)[0] for m in have if m.endswith("]")}
        gaps: dict[str, list[str]] = {}
        for section, reqs in SECTION_METRICS.items():
            lost = [alts[0] for alts in reqs if not any(a in have for a in alts)]
            if lost:
                gaps[section] = lost
        if gaps:
            out[str(report)] = gaps
    return out


def _warn_missing(frame: pd.DataFrame) -> None:
    gaps = missing_sections(frame)
    if not gaps:
        return
    parts = [f"{rep}: {', '.join(sorted(secs))}" for rep, secs in gaps.items()]
    warnings.warn(
        "reports lack sections the analysis uses (their values will be NaN): "
        + "; ".join(parts),
        FlashprofWarning,
        stacklevel=3,
    )


# --------------------------------------------------------------------------- per-PC
_PCSAMP_PREFIX = "smsp__pcsamp_warps_issue_stalled_"
# PC sampling spells one reason differently from the per-issue stall ratios.
_PCSAMP_RENAME = {"no_instructions": "no_instruction"}


def load_source_frame(path: str | os.PathLike, launch: int = 0) -> pd.DataFrame:
    """Per-SASS-instruction frame for one launch of one report.

    Columns: report, launch, function, pc, pc_offset, sass, file, line, inst_executed,
    samples (all PC samples), and one ``stall_<reason>`` column per PC-sampling stall
    reason (total samples; ``stall_<reason>_not_issued`` too when collected). ``file``
    and ``line`` are empty/NaN unless the kernel was built with -lineinfo and profiled
    with --import-source yes. Reports without the SourceCounters section give a frame
    with only pc/sass columns filled from whatever per-PC metrics exist (possibly empty).
    """
    path = Path(path)
    report = open_report(path)
    action = None
    for _r, idx, act in _iter_actions(report):
        if idx == launch:
            action = act
            break
    if action is None:
        raise ReportError(f"{path}: has no launch {launch}")

    columns: dict[str, dict[int, float]] = {}

    def take(metric_name: str, column: str) -> None:
        m = action.metric_by_name(metric_name)
        if m is None or not m.has_correlation_ids() or m.num_instances() < 1:
            return
        ids = m.correlation_ids()
        columns[column] = {int(ids.value(i)): float(m.value(i) or 0) for i in range(m.num_instances())}

    take("inst_executed", "inst_executed")
    take("smsp__pcsamp_sample_count", "samples")
    for name in sorted(action.metric_names()):
        if name.startswith(_PCSAMP_PREFIX):
            reason = name[len(_PCSAMP_PREFIX):]
            suffix = ""
            if reason.endswith("_not_issued"):
                reason, suffix = reason[: -len("_not_issued")], "_not_issued"
            reason = _PCSAMP_RENAME.get(reason, reason)
            take(name, f"stall_{reason}{suffix}")

    pcs = sorted(set().union(*[c.keys() for c in columns.values()])) if columns else []
    frame = pd.DataFrame({"pc": pd.Series(pcs, dtype="int64")})
    for col, vals in columns.items():
        frame[col] = [vals.get(pc, 0.0) for pc in pcs]
    sass, files, lines = [], [], []
    for pc in pcs:
        sass.append((action.sass_by_pc(pc) or "").strip())
        info = action.source_info(pc)
        files.append(info.file_name() if info is not None else "")
        lines.append(float(info.line()) if info is not None else math.nan)
    frame.insert(0, "report", _stem(path))
    frame.insert(1, "launch", launch)
    frame.insert(2, "function", _short_name(action))
    base = pcs[0] if pcs else 0
    frame.insert(4, "pc_offset", [pc - base for pc in pcs])
    frame.insert(5, "sass", sass)
    frame.insert(6, "file", files)
    frame.insert(7, "line", pd.Series(lines, dtype="float64"))
    return frame


# --------------------------------------------------------------------------- reshaping
LAUNCH_KEY = ("report", "range_idx", "launch")


def launch_identity(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per launch with the identity columns, in frame order."""
    return frame.drop_duplicates(list(LAUNCH_KEY))[list(IDENTITY_COLUMNS)].reset_index(drop=True)


def pivot_metrics(frame: pd.DataFrame, metrics: Iterable[str] | None = None) -> pd.DataFrame:
    """Wide view for analysis code: one row per launch, identity columns, then one column
    per metric (NaN where a report lacks it). Only analysis functions should call this;
    the long frame stays the exchange format between stages."""
    ident = launch_identity(frame)
    sub = frame if metrics is None else frame[frame["metric"].isin(list(metrics))]
    wide = sub.pivot(index=list(LAUNCH_KEY), columns="metric", values="value")
    if metrics is not None:
        wide = wide.reindex(columns=list(metrics))
    wide.columns.name = None
    return ident.merge(wide.reset_index(), on=list(LAUNCH_KEY), how="left")
