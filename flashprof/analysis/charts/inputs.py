"""Inputs of the figures: the report folder parsed once, its analysis frames computed lazily.

Input: a folder of ``*.ncu-rep`` (+ ``bench.csv``/``bench.json``, ``autotune.csv``) and the
static SASS tables. Output: an ``Inputs`` object whose cached properties are the frames the
figure specs draw from; a figure whose input is missing raises ``Skip`` (noted, not an error),
a user-facing problem raises ``FiguresError`` (one line, exit 2).
"""
from __future__ import annotations

import json
import warnings
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import pandas as pd

from flashprof.kernels.cli import FlashprofError
from flashprof.kernels.common import write_atomic
from flashprof.kernels.gpus import SHIPPED

from flashprof.analysis.charts.identity import KERNEL_IDS, fmt_shape, kernel_key, kernel_rank
from flashprof.analysis.report.parse import (REPORT_SUFFIX, cache_file, launch_identity, load_frame, load_source_frame)
from flashprof.analysis.stages.pipes import pipes
from flashprof.analysis.stages.roofline import roofline
from flashprof.analysis.stages.launches import ALL, DOMINANT, launch_records, select
from flashprof.analysis.stages.stalls import bank_conflicts, stalls

PROG = "figures"
from flashprof.paths import FIGURES, ROOT  # noqa: E402
from flashprof.analysis.report.errors import read_table
DEFAULT_REPORTS = ROOT / SHIPPED.reports
DEFAULT_OUT = FIGURES


class FiguresError(FlashprofError):
    """A user-facing problem (bad arguments, missing inputs): one line, exit 2."""


class Skip(Exception):
    """A figure whose inputs are absent: noted, not an error."""


# --------------------------------------------------------------------------- inputs
@dataclass
class Inputs:
    """Everything the figures read, parsed once and computed lazily."""
    reports_dir: Path
    sass_dir: Path
    paths: list[Path]
    cache: bool = True
    launch: str | int = DOMINANT  # which launches per-report charts show: dominant, all or an index
    _sources: dict = field(default_factory=dict, repr=False)
    notes: dict = field(default_factory=dict, repr=False)  # (figure, file) -> why it was left out
    listed: dict = field(default_factory=dict, repr=False)  # figure -> its jobs
    skipped: list = field(default_factory=list, repr=False)  # (path, why): unusable reports left out

    def note(self, figure: str, what: str, why: str) -> None:
        self.notes[(figure, what)] = why

    @cached_property
    def keys(self) -> pd.Series:
        """Kernel key per launch of ``ident`` ('1'..'7', 'ref', 'cudnn', else the report stem)."""
        return pd.Series([kernel_key(r, v) for r, v in zip(self.ident["report"], self.ident["variant"])],
                         index=self.ident.index, dtype=object)

    @cached_property
    def series(self) -> bool:
        """The folder holds reports of the flashprof kernels 1-7 (sidecar variant or stem)."""
        return bool(self.keys.isin(KERNEL_IDS).any())

    @cached_property
    def shape(self) -> str:
        """'fp16, B16 H16 S4096 d128' of the series' launches, from their sidecars."""
        rows = self.ident[self.keys.isin(KERNEL_IDS)]
        shapes = list(dict.fromkeys(s for s in (fmt_shape(r) for r in rows.to_dict("records")) if s))
        dts = sorted({str(d) for d in rows["dtype"].dropna()})
        return f"{'/'.join(dts) or 'dtype not recorded'}, {' | '.join(shapes) or 'shape not recorded'}"

    @cached_property
    def frame(self) -> pd.DataFrame:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            frame = load_frame(self.paths, cache=self.cache, skipped=self.skipped)
        if self.skipped:  # the folder's other reports go on; the command names these and exits 1
            bad = {str(q) for q, _w in self.skipped}
            self.paths = [q for q in self.paths if str(q) not in bad]
        for w in caught:
            print(f"{PROG}: warning: {w.message}", flush=True)
        return frame

    @cached_property
    def ident(self) -> pd.DataFrame:
        return launch_identity(self.frame)

    @cached_property
    def records(self) -> list:
        """Every launch's record (recipes evaluated once, time share, dominant)."""
        return launch_records(self.frame)

    @cached_property
    def shown(self) -> list:
        """The launch records the charts are about (``launch``: each report's dominant
        launch, all launches, or launch N); FiguresError for a launch no report has."""
        try:
            return select(self.records, self.launch)
        except ValueError as exc:
            raise FiguresError(str(exc)) from None

    @cached_property
    def shown_keys(self) -> set:
        return {r.key for r in self.shown}

    def _only_shown(self, frame: pd.DataFrame) -> pd.DataFrame:
        if self.launch == ALL:
            return frame
        keep = [k in self.shown_keys for k in zip(frame["report"], frame["range_idx"], frame["launch"])]
        return frame[keep].reset_index(drop=True)

    @cached_property
    def shown_ident(self) -> pd.DataFrame:
        return self._only_shown(self.ident)

    def record(self, key: tuple):
        return next(r for r in self.records if r.key == key)

    @cached_property
    def roof(self) -> pd.DataFrame:
        return self._only_shown(roofline(self.frame))

    @cached_property
    def stall(self) -> pd.DataFrame:
        return self._only_shown(stalls(self.frame))

    @cached_property
    def pipe(self) -> pd.DataFrame:
        return self._only_shown(pipes(self.frame))

    @cached_property
    def banks(self) -> pd.DataFrame:
        return self._only_shown(bank_conflicts(self.frame))

    @cached_property
    def stems(self) -> dict[str, Path]:
        """report name (as in the frame) -> path, in kernel order."""
        names = self.ident.drop_duplicates("report")[["report", "path", "variant"]]
        names = names.assign(_r=[kernel_rank(kernel_key(r, v)) for r, v in zip(names["report"], names["variant"])])
        return {r: Path(p) for r, p in names.sort_values(["_r", "report"])[["report", "path"]].itertuples(index=False)}

    def source(self, report: str, launch: int = 0) -> pd.DataFrame:
        if (report, launch) not in self._sources:
            self._sources[(report, launch)] = _cached_source(self.stems[report], self.cache, launch)
        return self._sources[(report, launch)]

    @cached_property
    def autotune(self) -> pd.DataFrame | None:
        p = self.reports_dir / "autotune.csv"
        if not p.is_file():
            return None
        df = read_table(p)
        need = {"slug", "seq", "tflops", "ref_tflops", "config"}
        if not need <= set(df.columns):
            raise FiguresError(f"{p}: lacks columns {sorted(need - set(df.columns))}")
        return df

    @cached_property
    def ceilings(self) -> pd.DataFrame | None:
        """The measured ceilings of this folder's GPU (reports/<gpu>/ceilings.json), if any."""
        from flashprof.analysis.stages import measured_roofs as ceilings
        p = self.reports_dir / ceilings.FILE
        return ceilings.load(p) if p.is_file() else None

    def measured_roofs(self, reports) -> pd.DataFrame | None:
        """Measured roofs for a roofline of ``reports``: per-SM-per-clock rates at the median
        SM clock of those launches (the clock the theoretical roofs are drawn at); only for
        reports on the GPU the ceilings were measured on."""
        from flashprof.analysis.stages import measured_roofs as ceilings
        meas = self.ceilings
        if meas is None or meas.empty:
            return None
        sel = self.roof[self.roof["report"].isin(list(reports))]
        from flashprof.analysis.report.target_key import gpu_name
        if {gpu_name(g) for g in sel["gpu"].dropna().unique()} != {gpu_name(meas["gpu"].iloc[0])}:
            return None
        clock = float(sel["sm_clock_hz"].median())
        roofs = ceilings.measured_roofs(meas, clock if clock == clock else None)
        return roofs if len(roofs) else None

    @cached_property
    def autotune_static(self) -> pd.DataFrame | None:
        p = self.reports_dir / "autotune_static.csv"
        return read_table(p) if p.is_file() else None

    @cached_property
    def gap(self) -> dict:
        """gap_table / pipe_shares / ceilings from flashprof.analysis.gap over the parsed frame, or
        {'error': text} when that module fails (its figures are then skipped)."""
        try:
            from flashprof.analysis.gap.legacy_pipes import throughput, work

            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                static = self.sass_dir / "opcodes.csv"  # + opcodes_loop.csv beside it
                table = throughput.gap_table(self.frame, work.load_static(static) if static.is_file() else None,
                                         bench=self.bench)
                return {"table": table, "shares": throughput.pipe_shares(table, "7"),
                        "ceilings": throughput.ceilings(frame=self.frame)}
        except Exception as exc:  # another stage's bug must not cost the other figures
            return {"error": f"{type(exc).__name__}: {str(exc).strip().splitlines()[0] if str(exc).strip() else ''}"}

    @cached_property
    def gap_issue(self) -> dict:
        """The issue model's committed result (reports/gap/issue_model.json) while every
        input it was computed from is unchanged: {'records': [...]}, else {'error': why}
        (drawing never reruns the minutes-long model)."""
        from flashprof.analysis.gap import frozen
        recs, why = frozen.fresh()
        return {"records": recs} if recs is not None else {"error": why}

    @cached_property
    def bench(self) -> pd.DataFrame | None:
        p = self.reports_dir / "bench.csv"
        if not p.is_file():
            return None
        df = read_table(p, dtype={"target": str})
        need = {"target", "seq", "tflops"}
        if not need <= set(df.columns):
            raise FiguresError(f"{p}: lacks columns {sorted(need - set(df.columns))}")
        return df

    @cached_property
    def bench_meta(self) -> dict:
        p = self.reports_dir / "bench.json"
        try:
            return json.loads(p.read_text()) if p.is_file() else {}
        except (OSError, ValueError):
            return {}

    @cached_property
    def hopper_steps(self) -> dict | None:
        """The Hopper steps' data (``hopper-steps/steps.json`` beside the reports), if any."""
        p = self.reports_dir / "hopper-steps" / "steps.json"
        if not p.is_file():
            return None
        try:
            data = json.loads(p.read_text())
        except ValueError as exc:
            raise FiguresError(f"{p}: not JSON ({exc})") from None
        lacking = [k for k in ("gains", "rounds", "profiles") if not isinstance(data.get(k), list)]
        if lacking:
            raise FiguresError(f"{p}: lacks {', '.join(lacking)}")
        return data

    @cached_property
    def opcodes(self) -> pd.DataFrame | None:
        p = self.sass_dir / "opcodes.csv"
        return read_table(p, dtype={"kernel": str}) if p.is_file() else None

    @cached_property
    def ptxas(self) -> pd.DataFrame | None:
        p = self.sass_dir / "ptxas.csv"
        return read_table(p, dtype={"kernel": str}) if p.is_file() else None


def _cached_source(path: Path, cache: bool = True, launch: int = 0) -> pd.DataFrame:
    """``load_source_frame`` behind a parquet cache beside the parse cache (same content
    hash, ``.src`` suffix; ``.src<N>`` for launch N > 0), so drawing the stall-line figures
    does not reopen reports."""
    if not cache:
        return load_source_frame(path, launch)
    try:
        target = cache_file(path)
        target = target.with_name(target.name[: -len(".parquet")] + f".src{int(launch) or ''}.parquet")
        if target.is_file():
            return pd.read_parquet(target)
    except Exception:
        target = None
    frame = load_source_frame(path, launch)
    if target is not None:
        try:
            target.parent.mkdir(exist_ok=True)
            write_atomic(target, lambda tmp: frame.to_parquet(tmp, index=False))
            stem = target.name.split(".", 1)[0]
            suffix = target.name.rsplit(".", 2)[-2]  # src or src<N>
            for old in target.parent.glob(f"{stem}.*.{suffix}.parquet"):
                if old != target:
                    old.unlink(missing_ok=True)
        except Exception:
            pass  # read-only checkout: no cache
    return frame


def find_reports(reports_dir: Path) -> list[Path]:
    if not reports_dir.exists():
        raise FiguresError(f"reports directory {reports_dir} does not exist")
    if not reports_dir.is_dir():
        raise FiguresError(f"{reports_dir} is not a directory")
    found = sorted(reports_dir.glob(f"*{REPORT_SUFFIX}"))
    if not found:
        raise FiguresError(f"{reports_dir} holds no *{REPORT_SUFFIX} files")
    return found


def make_inputs(reports_dir: Path, sass_dir: Path | None = None, cache: bool = True,
                launch: str | int = DOMINANT) -> Inputs:
    reports_dir = Path(reports_dir)
    sass_dir = Path(sass_dir) if sass_dir else reports_dir.parent / "sass"
    return Inputs(reports_dir, sass_dir, find_reports(reports_dir), cache=cache, launch=launch)
