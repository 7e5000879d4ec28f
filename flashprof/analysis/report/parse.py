"""Parse stage: Nsight Compute reports -> one tidy long DataFrame (no arithmetic here).

Input: ``.ncu-rep`` files (any section set, any GPU, any Nsight Compute version), each
optionally with a sidecar JSON of the same stem written by the profiling stage (kernel
variant, shape, dtype, ...).

Output:
* ``load_frame(paths)``: one row per (report, launch, metric) with identity columns
  (IDENTITY_COLUMNS) and ``metric, unit, value``; numeric metrics only. Instanced
  metrics whose instances are keyed by a name (e.g. ``sass__inst_executed_per_opcode``)
  also appear once per key as ``metric[key]``. Per-PC instanced metrics are not in this
  frame: ``load_source_frame`` gives them, one row per SASS instruction.
* Crash isolation: this process never imports ``ncu_report``. Each report is read by a
  worker process (``flashprof.analysis.report.ncu_extract``; up to one per CPU core at a time, one report
  per worker) that writes the long frame into the cache. A worker killed by a signal
  (Nsight Compute's bundled reader has segfaulted under Python 3.12) becomes one
  ReportError naming the report, the signal and the fix; the report is never touched.
* A parquet cache under the user cache directory (``$XDG_CACHE_HOME`` or ``~/.cache``,
  then ``flashprof/<stem>.<sha1>.parquet``), keyed by the content hash of the report, its
  sidecar and the frame version, so a re-profiled report is never served stale and a
  read-only report folder works. Without pyarrow (or a writable cache directory) frames
  travel through a temporary pickle instead.

Analysis stages (roofline, pipes, stalls, summary) only ever see the long frame.
"""
from __future__ import annotations

import hashlib
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
import warnings
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd

from flashprof.analysis.metrics import recipes
from flashprof.analysis.report.errors import FlashprofWarning, ReportError
from flashprof.analysis.report.target_key import kernel_key
from flashprof.analysis.report.ncu_extract import (EXIT_REPORT_ERROR, FRAME_COLUMNS, IDENTITY_COLUMNS, SHAPE_FIELDS, loadable_name, normalise_dtypes)
from flashprof.profiling import sidecar as _sidecar
from flashprof.profiling.sidecar import Sidecar, SidecarError, sidecar_path  # noqa: F401 (sidecar_path: public here too)

REPORT_SUFFIX = ".ncu-rep"
CACHE_APP = "flashprof"
# Bump when the layout of the extracted frame changes: old cache files then miss.
_CACHE_VERSION = b"flashprof-long-frame-v5"  # v5: per-PC frames with source_text, ctx_file/ctx_line; rule results
_MAGIC = b"NVR\x00"  # first bytes of every .ncu-rep written by Nsight Compute
KEY_COLUMNS = ("report", "range_idx", "launch", "metric")
__all__ = ["FRAME_COLUMNS", "IDENTITY_COLUMNS", "KEY_COLUMNS", "SHAPE_FIELDS", "load_frame",
           "load_source_frame", "load_rules", "validate_frame", "cache_file", "cache_dir"]
_FIX = ("install the PyPI wheel (pip install ncu-report; on a machine without a registry, "
        "carry its wheel) instead of Nsight Compute's bundled copy")


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
    from flashprof.analysis.report.structure import check_blocks
    check_blocks(path)  # a file cut short (or never finished) is refused here, in the parent: ~1 ms


# --------------------------------------------------------------------------- sidecar
def _stem(path: Path) -> str:
    name = path.name
    return name[: -len(REPORT_SUFFIX)] if name.endswith(REPORT_SUFFIX) else path.stem


def read_sidecar(path: str | os.PathLike) -> Sidecar:
    """A report's sidecar (``Sidecar.missing()`` when it has none); a malformed one is a
    one-line ``ReportError`` naming the file."""
    try:
        return _sidecar.read_sidecar(path)
    except SidecarError as exc:
        raise ReportError(str(exc)) from None


def report_target(path: str | os.PathLike) -> str:
    """Which target a report is: the key its sidecar records (``Sidecar.target_key``), else,
    for a report without one, the guess from its file stem. The frame's ``variant`` column
    and ``kernel_key`` give the same per launch."""
    path = Path(path)
    return kernel_key(_stem(path), read_sidecar(path).target_key)


def _identity_from_sidecar(side: Sidecar) -> dict:
    ident = {
        "variant": side.target_key,
        "title": side.title,
        "dtype": side.dtype,
    }
    for name in SHAPE_FIELDS:
        ident[name] = side.shape_field(name)
    return ident


# --------------------------------------------------------------------------- cache
def cache_dir() -> Path:
    """``$XDG_CACHE_HOME/flashprof`` (an absolute XDG_CACHE_HOME only, as the XDG spec
    says), else ``~/.cache/flashprof``. Never created here."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    root = Path(base) if base and os.path.isabs(base) else Path.home() / ".cache"
    return root / CACHE_APP


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


def text_path(path) -> str:
    """A path as UTF-8 text: a file name's undecodable bytes (os.fsdecode's surrogates) as \\xNN,
    since the frames' text columns hold UTF-8 only."""
    return os.fsencode(str(path)).decode("utf-8", "backslashreplace")


def cache_file(path: str | os.PathLike) -> Path:
    path = Path(path)
    # the stem as UTF-8 text (a non-UTF-8 name's bytes as \xNN): pyarrow opens UTF-8 paths only
    stem = os.fsencode(_stem(path)).decode("utf-8", "backslashreplace").replace("\\", "_")
    return cache_dir() / f"{stem}.{_digest(path)}.parquet"


def _source_prefix(target: Path) -> str:
    """Per-PC frames of a cached report: ``<stem>.<sha1>.src<launch>.pkl`` beside it."""
    return str(target)[: -len(".parquet")] + ".src"


def _rules_file(target: Path) -> Path:
    """Rule results of a cached report: ``<stem>.<sha1>.rules.json`` beside it."""
    return Path(str(target)[: -len(".parquet")] + ".rules.json")


# Frames this process has loaded, by report (path, size, mtime and its sidecar's): a second
# load_frame of an unchanged report (flashprof profile reads the folder while ncu runs, then
# again with the new report) costs a copy, not a parquet read.
_MEMO: dict[tuple, pd.DataFrame] = {}
_MEMO_LOCK = threading.Lock()


def _memo_key(path: Path) -> tuple | None:
    try:
        st = path.stat()
        side = sidecar_path(path)
        ss = side.stat() if side.is_file() else None
    except OSError:
        return None
    return (os.path.realpath(path), st.st_size, st.st_mtime_ns, ss and (ss.st_size, ss.st_mtime_ns))


def _read_cached(target: Path) -> pd.DataFrame | None:
    if not target.is_file():
        return None
    try:
        return normalise_dtypes(pd.read_parquet(target))
    except Exception:
        return None  # a damaged cache file is simply re-parsed and overwritten


def _usable_cache(target: Path) -> bool:
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        return os.access(target.parent, os.W_OK)
    except OSError:
        return False


# --------------------------------------------------------------------------- workers
def _worker_env() -> dict:
    """The worker imports this same analysis package: its parent folder goes first on
    PYTHONPATH (anything the caller put there stays, after it)."""
    env = dict(os.environ)
    import flashprof
    here = str(Path(flashprof.__file__).resolve().parents[1])  # the folder holding flashprof/
    env["PYTHONPATH"] = os.pathsep.join([here] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    return env


def _signal_name(rc: int) -> str:
    try:
        return f"signal {-rc}, {signal.Signals(-rc).name}"
    except ValueError:
        return f"signal {-rc}"


_WORKER_CODE = "import sys; from flashprof.analysis.report.ncu_extract import main; sys.exit(main(sys.argv[1:]))"
_WARM: list[subprocess.Popen] = []
_WARM_LOCK = threading.Lock()


def prestart_workers(n: int) -> None:
    """Start ``n`` report readers ahead of need: a reader spends most of its start-up
    importing pandas and ncu_report, which can happen while Nsight Compute still runs
    (``flashprof profile``). Each waits for its job on stdin; one never used reads end of
    file when this process exits, and exits too."""
    for _ in range(n):
        try:
            proc = subprocess.Popen([sys.executable, "-c", _WORKER_CODE, "job-on-stdin"], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=_worker_env())
        except OSError:
            return  # the reader then starts when needed, as usual
        with _WARM_LOCK:
            _WARM.append(proc)


def _take_warm() -> subprocess.Popen | None:
    with _WARM_LOCK:
        while _WARM:
            proc = _WARM.pop(0)
            if proc.poll() is None:
                return proc
    return None


def _run_worker(args: list[str], path: Path, stdin: str = "") -> None:
    """Run one worker (a started one if ``prestart_workers`` left any); raise ReportError
    (one line) for anything but success."""
    warm = _take_warm()
    try:
        if warm is not None:
            _, err = warm.communicate(json.dumps({"argv": args, "stdin": stdin}))
            rc = warm.returncode
        else:
            r = subprocess.run([sys.executable, "-c", _WORKER_CODE, *args], input=stdin, capture_output=True, text=True,
                               env=_worker_env())
            rc, err = r.returncode, r.stderr
    except OSError as exc:
        raise ReportError(f"{path}: could not start the report reader: {exc}") from None
    if rc == 0:
        return
    last = (err.strip().splitlines() or [""])[-1].strip()
    if rc < 0:
        raise ReportError(f"{path}: ncu_report crashed while reading it ({_signal_name(rc)}); "
                          f"the report is kept; fix: {_FIX}")
    if rc == EXIT_REPORT_ERROR:
        raise ReportError(last or f"{path}: cannot be read by ncu_report")
    raise ReportError(f"{path}: the report reader failed (exit {rc}): {last}")


def _extract_many(jobs: list[tuple[Path, dict, Path]]) -> list[ReportError | None]:
    """[(report, sidecar identity, output file)] -> one error (or None) per job, in order.
    Reports run concurrently, one worker process each, at most one per CPU core."""
    def one(job):
        path, ident, out = job
        extra = [_source_prefix(out), str(_rules_file(out))] if out.suffix == ".parquet" else []
        name = loadable_name(path)
        if name != str(path):  # a non-UTF-8 file name: the worker opens a link; the frame keeps the
            # name with its undecodable bytes written as \xNN (text columns hold UTF-8 only)
            ident = {**ident, "path": text_path(path), "__stem__": text_path(ident.get("__stem__", path.stem))}
        try:
            _run_worker(["long", name, str(out), *extra], path, json.dumps(ident))
        except ReportError as exc:
            return exc
        return None

    if len(jobs) == 1:
        return [one(jobs[0])]
    with ThreadPoolExecutor(max_workers=max(1, min(len(jobs), os.cpu_count() or 1))) as pool:
        return list(pool.map(one, jobs))


def _load_many(plist: list[Path], cache: bool, skipped: list | None = None) -> list[pd.DataFrame]:
    if skipped is not None:
        good = []
        for p in plist:
            try:
                _check_file(p)
                good.append(p)
            except ReportError as e:
                skipped.append((p, str(e)))
        if not good:
            raise ReportError("; ".join(why for _p, why in skipped))
        try:
            return _load_many(good, cache)  # all at once (parallel workers) when all are good
        except ReportError:
            pass
        frames = []
        for p in good:  # else one at a time: a bad report costs only itself
            try:
                frames += _load_many([p], cache)
            except ReportError as e:
                skipped.append((p, str(e)))
        if not frames:
            raise ReportError("; ".join(why for _p, why in skipped))
        return frames
    for p in plist:
        _check_file(p)
    use_cache = cache and _have_pyarrow()
    frames: list[pd.DataFrame | None] = [None] * len(plist)
    keys = [_memo_key(p) if cache else None for p in plist]
    jobs, slots = [], []
    with tempfile.TemporaryDirectory(prefix="flashprof-") as tmp:
        for i, p in enumerate(plist):
            with _MEMO_LOCK:
                hit = _MEMO.get(keys[i]) if keys[i] is not None else None
            if hit is not None:
                frames[i] = hit.copy()
                continue
            ident = {"__stem__": _stem(p), **_identity_from_sidecar(read_sidecar(p))}
            target = cache_file(p) if use_cache else None
            if target is not None:
                frames[i] = _read_cached(target)
                if frames[i] is not None:
                    continue
                if not _usable_cache(target):
                    target = None  # read-only home or full disk: no cache, still works
            out = target if target is not None else Path(tmp) / f"{i}.pkl"
            jobs.append((p, ident, out))
            slots.append(i)
        errors = _extract_many(jobs)
        bad = [str(e) for e in errors if e is not None]
        if bad:
            raise ReportError("; ".join(bad))
        for i, (_p, _ident, out) in zip(slots, jobs):
            frame = pd.read_parquet(out) if out.suffix == ".parquet" else pd.read_pickle(out)
            frames[i] = normalise_dtypes(frame)
    with _MEMO_LOCK:
        for f, k in zip(frames, keys):
            if k is not None and k not in _MEMO:
                _MEMO[k] = f.copy()
    for f, p in zip(frames, plist):
        f["path"] = text_path(p)  # the cache may have been written via another spelling
    return frames  # type: ignore[return-value]


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


def load_frame(paths, cache: bool = True, skipped: list | None = None) -> pd.DataFrame:
    """Parse reports into the long frame (see module docstring); warns once per report
    that lacks quantities the analysis reports.

    ``paths``: one path or an iterable of paths to ``.ncu-rep`` files. Raises
    ReportError naming the file for anything that is not a usable report; with ``skipped``
    (a list, for folder commands) each unusable report is appended to it as
    ``(path, reason)`` and left out instead, and only a set with no usable report raises.
    """
    plist = _as_paths(paths)
    frames = _load_many(plist, cache, skipped)
    if skipped is not None:
        bad = {str(q) for q, _why in skipped}
        plist = [q for q in plist if str(q) not in bad]
    # Two reports with one stem (reports/h200/ref, reports/a100/ref) get the parent
    # folder as a prefix so that the key stays unique.
    stems = [_stem(p) for p in plist]
    for f, p, s in zip(frames, plist, stems):
        f["report"] = text_path(f"{p.parent.name}/{s}" if stems.count(s) > 1 else s)
    frame = pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]
    validate_frame(frame)
    _warn_missing(frame)
    return frame


def validate_frame(frame: pd.DataFrame) -> None:
    """Check the long frame's contract: columns, unique key, one unit per metric within a
    report. Across reports a metric may change its unit (Nsight Compute versions spell
    some differently, e.g. nvlrx__bytes.sum.per_second, derived__ metrics): recipes read
    base-unit values, never the unit string."""
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


def missing_quantities(frame: pd.DataFrame) -> dict[str, list[str]]:
    """{report: [quantity, ...]} the recipes cannot compute for at least one launch."""
    out: dict[str, list[str]] = {}
    for (report, _r, _l), ev in recipes.evaluate_launches(frame, per_launch).items():
        lost = ev.missing
        have = out.setdefault(str(report), [])
        have += [q for q in lost if q not in have]
    return {r: sorted(q, key=recipes.EXPECTED.index) for r, q in out.items() if q}


def _warn_missing(frame: pd.DataFrame) -> None:
    for report, lost in missing_quantities(frame).items():
        warnings.warn(
            f"{report}: no {', '.join(recipes.LABELS[q] for q in lost)} in this report (null); "
            f"collect with: ncu {recipes.collect_hint(lost)}",
            FlashprofWarning, stacklevel=3)


# --------------------------------------------------------------------------- per-PC
def load_source_frame(path: str | os.PathLike, launch: int = 0) -> pd.DataFrame:
    """Per-SASS-instruction frame for one launch of one report (read in a worker).

    Columns: report, launch, function, pc, pc_offset, sass, file, line, inst_executed,
    samples (all PC samples), and one ``stall_<reason>`` column per PC-sampling stall
    reason (total samples; ``stall_<reason>_not_issued`` too when collected). ``file``
    and ``line`` are empty/NaN unless the kernel was built with -lineinfo and profiled
    with --import-source yes. Reports without the SourceCounters section give a frame
    with only pc/sass columns filled from whatever per-PC metrics exist (possibly empty).
    """
    path = Path(path)
    _check_file(path)
    if _have_pyarrow():  # the long-frame worker may have written it already
        cached = Path(f"{_source_prefix(cache_file(path))}{int(launch)}.pkl")
        if cached.is_file():
            try:
                return pd.read_pickle(cached)
            except Exception:
                pass  # damaged: read the report again
    with tempfile.TemporaryDirectory(prefix="flashprof-") as tmp:
        out = Path(tmp) / "source.pkl"
        _run_worker(["source", str(path), str(out), _stem(path), str(int(launch))], path)
        return pd.read_pickle(out)


RULE_COLUMNS = ("report", "range_idx", "launch", "rule", "name", "section", "title", "message", "type", "kind",
                "speedup", "speedup_type", "focus")


def load_rules(paths, cache: bool = True) -> pd.DataFrame:
    """Nsight Compute's own rule results (``action.rule_results_as_dicts()``, read in a
    worker), one row per rule message of each launch, in the report's order.

    Columns (RULE_COLUMNS): report (as ``load_frame`` names it), range_idx, launch, rule
    (identifier), name, section (identifier), title, message (plain text: the
    ``@section:ID:Name@``-style link markup reduced to its text), type (``ncu_report.MsgType``:
    0 none, 1 ok/info, 2 optimization, 3 warning, 4 error) and kind (its name), speedup (the
    rule's estimated speed-up in %, None without one) and speedup_type ('global': of the
    whole launch, 'local': of the unit the rule looks at), focus (list of {metric, value,
    severity, info}). The long-frame worker caches them beside the parquet frame; a report
    not in the cache costs one worker (~0.2 s)."""
    plist = _as_paths(paths)
    use_cache = cache and _have_pyarrow()
    stems = [_stem(p) for p in plist]
    rows = []
    for p, s in zip(plist, stems):
        _check_file(p)
        target = _rules_file(cache_file(p)) if use_cache else None
        data = None
        if target is not None and target.is_file():
            try:
                data = json.loads(target.read_text())
            except (OSError, ValueError):
                data = None
        if data is None:
            with tempfile.TemporaryDirectory(prefix="flashprof-") as tmp:
                out = Path(tmp) / "rules.json"
                _run_worker(["rules", loadable_name(p), str(out)], p)
                text = out.read_text()
            data = json.loads(text)
            if target is not None and _usable_cache(target):
                try:
                    from flashprof.kernels.common import write_atomic
                    write_atomic(target, text)
                except OSError:
                    pass
        name = text_path(f"{p.parent.name}/{s}" if stems.count(s) > 1 else s)
        rows += [{"report": name, **r} for r in data]
    return pd.DataFrame(rows, columns=list(RULE_COLUMNS))


# --------------------------------------------------------------------------- reshaping
LAUNCH_KEY = ("report", "range_idx", "launch")


def launch_identity(frame: pd.DataFrame) -> pd.DataFrame:
    """One row per launch with the identity columns, in frame order."""
    return frame.drop_duplicates(list(LAUNCH_KEY))[list(IDENTITY_COLUMNS)].reset_index(drop=True)


def per_launch(frame: pd.DataFrame):
    """Yield ``(launch key, arch, {metric: value})`` per launch, in frame order: the one
    place a launch's long rows become the dict the recipes read (an absent metric is
    absent, not NaN). For a table of chosen metrics use ``pivot_metrics``."""
    for key, sub in frame.groupby(list(LAUNCH_KEY), sort=False):
        yield key, sub["arch"].iloc[0], dict(zip(sub["metric"], sub["value"]))


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
