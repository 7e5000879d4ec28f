"""Worker side of the parse stage: the ONLY module that opens reports with ``ncu_report``.

Runs in a child process (``flashprof.analysis.report.ncu_extract.main``: ``long REPORT OUT [SOURCE_PREFIX [RULES_OUT]]``,
``source REPORT OUT STEM LAUNCH`` or ``rules REPORT OUT``),
started by ``flashprof.analysis.report.parse``; Nsight Compute's compiled reader can crash the interpreter
(SIGSEGV), and then only this child dies.

Input: one ``.ncu-rep`` (the parent already checked the file signature) and, for ``long``,
the sidecar identity as JSON on stdin.
Output: the long frame (``long``) or the per-PC frame of one launch (``source``) written to
OUT (parquet if OUT ends in .parquet, else a pickle), or Nsight Compute's rule results of
every launch (``rules``, and ``long`` with RULES_OUT) as JSON; exit 0. A report ncu_report cannot use: its message on stderr, exit 3.
"""
from __future__ import annotations

import json
import re
import math
import sys
from pathlib import Path

import pandas as pd

from flashprof.kernels.common import write_atomic

from flashprof.analysis.report.errors import ReportError
from flashprof.analysis.report.ncu_import import ncu_report

EXIT_REPORT_ERROR = 3
IDENTITY_COLUMNS = (
    "report", "path", "gpu", "arch", "kernel", "kernel_full", "range_idx", "launch",
    "variant", "title", "batch", "seq", "heads", "d_head", "dtype",
)
FRAME_COLUMNS = IDENTITY_COLUMNS + ("metric", "unit", "value")
SHAPE_FIELDS = ("batch", "seq", "heads", "d_head")
_PCSAMP_PREFIX = "smsp__pcsamp_warps_issue_stalled_"
# PC sampling spells one reason differently from the per-issue stall ratios.
_PCSAMP_RENAME = {"no_instructions": "no_instruction"}


def loadable_name(path: Path) -> str:
    """A name ``ncu_report`` can open: the path itself, or, for a file name that is not valid
    UTF-8 (its C++ layer takes a UTF-8 string), a link to the file with a plain name in a
    private temporary folder (removed when the process ends)."""
    name = str(path)
    try:
        name.encode("utf-8")
        return name
    except UnicodeEncodeError:
        pass
    import atexit
    import shutil
    import tempfile

    tmp = tempfile.mkdtemp(prefix="flashprof-name-")
    atexit.register(shutil.rmtree, tmp, True)
    link = Path(tmp) / "report.ncu-rep"
    try:
        link.symlink_to(Path(path).resolve())
    except OSError:
        shutil.copyfile(path, link)
    return str(link)


def open_report(path: Path):
    """Load one report, raising ReportError for anything that is not a usable report."""
    try:
        report = ncu_report().load_report(loadable_name(path))
    except ReportError:
        raise
    except Exception as exc:  # the SWIG layer raises assorted types
        raise ReportError(f"{path}: cannot be read by ncu_report: {exc}") from None
    # A truncated or corrupt file loads without error but has no ranges.
    if report.num_ranges() == 0:
        raise ReportError(f"{path}: contains no profiled ranges (truncated or corrupt report?)")
    if sum(report.range_by_idx(i).num_actions() for i in range(report.num_ranges())) == 0:
        raise ReportError(f"{path}: contains no profiled kernel launches")
    # A file cut inside a launch's record still loads: that launch comes back with no kernel
    # name and not one metric (seen for kernel6.ncu-rep cut at 25-99 % of its bytes). A real
    # launch always has both, so such a report is refused, never read as an empty launch.
    for _r, launch, action in _iter_actions(report):
        if action.name() is None and not action.metric_names():
            size = path.stat().st_size if Path(path).exists() else 0
            raise ReportError(f"{path}: incomplete report (launch {launch} has no kernel name and no metrics: "
                              f"the file, {size} bytes, is truncated or was not finished by ncu)")
    return report


def _iter_actions(report):
    """Yield (range_idx, launch, action); launch counts actions across all ranges."""
    launch = 0
    for r in range(report.num_ranges()):
        rng = report.range_by_idx(r)
        for j in range(rng.num_actions()):
            yield r, launch, rng.action_by_idx(j)
            launch += 1


# Function names that say nothing about the work: CUTLASS's cutlass::Kernel<Op> / Kernel2<Op>
# and similar wrappers; their template argument does.
_GENERIC_NAME = re.compile(r"^(?:[Kk]ernel\d*|device_kernel|kernel_entry|generic_kernel|global_kernel)$")


def readable_name(function: str | None, demangled: str | None) -> str | None:
    """The launch's short name: the function name, or for a generic wrapper the innermost
    class of its first template argument ('Kernel' + 'void cutlass::Kernel<cutlass::gemm::
    kernel::B2bGemm<...>>(...)' -> 'Kernel<B2bGemm>')."""
    if not function or not _GENERIC_NAME.match(function) or not demangled or "<" not in demangled:
        return function
    inner = demangled[demangled.index("<") + 1:]
    hit = re.match(r"\s*(?:struct\s+|class\s+)?([A-Za-z_][\w:]*)", inner)
    if not hit:
        return function
    return f"{function}<{hit.group(1).split('::')[-1]}>"


def short_name(action) -> str:
    # NameBase_FUNCTION drops namespaces and template arguments: "flash_fwd_kernel".
    try:
        function = action.name(action.NameBase_FUNCTION)
    except Exception:
        return action.name()
    try:
        return readable_name(function, action.name(action.NameBase_DEMANGLED))
    except Exception:
        return function


def canonical_gpu(name) -> str | None:
    """One spelling per GPU: Nsight Compute versions name a board 'GeForce RTX 3080' or
    'NVIDIA GeForce RTX 3080'; both become the latter."""
    if name is None:
        return None
    s = " ".join(str(name).split())
    if s and not s.startswith("NVIDIA ") and re.match(r"(GeForce|Quadro|Tesla|TITAN|RTX|Jetson|[ABHLT]\d|G[BH]\d)", s):
        return "NVIDIA " + s
    return s


def extract(path: Path, stem: str, ident_side: dict) -> pd.DataFrame:
    """Read one report into the long frame (numeric metrics, name-keyed instances)."""
    report = open_report(path)
    nr = ncu_report()
    numeric = {nr.IMetric.ValueKind_DOUBLE, nr.IMetric.ValueKind_FLOAT,
               nr.IMetric.ValueKind_UINT32, nr.IMetric.ValueKind_UINT64}
    string_kind = nr.IMetric.ValueKind_STRING
    cols: dict[str, list] = {c: [] for c in FRAME_COLUMNS}
    for range_idx, launch, action in _iter_actions(report):
        def text(name: str):
            m = action.metric_by_name(name)
            return None if m is None else m.value()

        major, minor = text("device__attribute_compute_capability_major"), text(
            "device__attribute_compute_capability_minor")
        ident = {
            "report": stem, "path": str(path), "gpu": canonical_gpu(text("device__attribute_display_name")),
            "arch": f"sm_{major}{minor}" if major is not None and minor is not None else None,
            "kernel": short_name(action), "kernel_full": action.name(action.NameBase_DEMANGLED),
            "range_idx": range_idx, "launch": launch, **ident_side,
        }
        names, units, values = [], [], []
        for name in action.metric_names():
            m = action.metric_by_name(name)
            if m is None:
                continue
            if m.kind() in numeric:
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
    return normalise_dtypes(pd.DataFrame(cols, columns=list(FRAME_COLUMNS)))


def normalise_dtypes(frame: pd.DataFrame) -> pd.DataFrame:
    # Identity columns without a sidecar are missing values (NaN), not None objects.
    for c in ("variant", "title", "dtype", "gpu", "arch"):
        frame[c] = frame[c].astype("str")
    frame["range_idx"] = frame["range_idx"].astype("int64")
    frame["launch"] = frame["launch"].astype("int64")
    for c in SHAPE_FIELDS + ("value",):
        frame[c] = frame[c].astype("float64")
    return frame


def source(path: Path, stem: str, launch: int, report=None) -> pd.DataFrame:
    """Per-SASS-instruction frame of one launch (see flashprof.analysis.report.parse.load_source_frame)."""
    report = report if report is not None else open_report(path)
    action = next((act for _r, idx, act in _iter_actions(report) if idx == launch), None)
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
    texts = source_texts(action, files, lines)
    ctx_file, ctx_line = pc_order_context(files, lines)
    frame.insert(0, "report", stem)
    frame.insert(1, "launch", launch)
    frame.insert(2, "function", short_name(action))
    base = pcs[0] if pcs else 0
    frame.insert(4, "pc_offset", [pc - base for pc in pcs])
    frame.insert(5, "sass", sass)
    frame.insert(6, "file", files)
    frame.insert(7, "line", pd.Series(lines, dtype="float64"))
    frame.insert(8, "source_text", texts)
    frame.insert(9, "ctx_file", ctx_file)
    frame.insert(10, "ctx_line", pd.Series(ctx_line, dtype="float64"))
    return frame


SOURCE_TEXT_MAX = 240  # characters of one source line kept (a generated line can be very long)


def source_texts(action, files: list[str], lines: list[float]) -> list[str]:
    """The text of each instruction's source line, from the files the report imported
    (``ncu --import-source yes``; ``action.source_files()`` maps a file to "" when it was not
    imported): only the referenced lines travel, never whole files. "" where unknown."""
    try:
        imported = dict(action.source_files() or {})
    except Exception:
        imported = {}
    split: dict[str, list[str]] = {}
    out = []
    for f, ln in zip(files, lines):
        if not f or ln != ln or f not in imported:
            out.append("")
            continue
        if f not in split:
            split[f] = (imported.get(f) or "").splitlines()
        rows, i = split[f], int(ln) - 1
        text = rows[i].rstrip() if 0 <= i < len(rows) else ""
        out.append(text[:SOURCE_TEXT_MAX])
    return out


def pc_order_context(files: list[str], lines: list[float]) -> tuple[list[str], list[float]]:
    """Per instruction, the nearest instruction at or before it (in PC order) whose line lies
    in the entry function's file (the file of the launch's first instruction with a line).
    ``ncu_report`` gives one file:line per PC, the innermost: no inlined call stack
    (``ISourceInfo`` has ``file_name()`` and ``line()`` only). For an inline wrapper's line
    (``mma.cuh:42`` under both QK^T and PV) this neighbour is where in the kernel's own code
    its instructions sit: a PC-order heuristic, not the call stack."""
    entry = next((f for f, ln in zip(files, lines) if f and ln == ln), "")
    cf, cl = [], []
    cur_f, cur_l = "", math.nan
    for f, ln in zip(files, lines):
        if entry and f == entry and ln == ln:
            cur_f, cur_l = f, ln
        cf.append(cur_f)
        cl.append(cur_l)
    return cf, cl


# Nsight Compute's rule message types (ncu_report.MsgType) and speed-up kinds (SpeedupType)
MSG_KINDS = {0: "none", 1: "info", 2: "optimization", 3: "warning", 4: "error"}
SPEEDUP_KINDS = {0: "unknown", 1: "local", 2: "global"}
_MARKUP = re.compile(r"@(section|url|sass|source):([^@]*)@")


def plain_message(text: str) -> str:
    """A rule message with Nsight Compute's link markup as plain text:
    ``@section:ID:Name@`` -> Name, ``@url:Text:link@`` -> Text, ``@sass:addr:Text@`` -> Text,
    ``@source:file:line:Text@`` -> Text."""
    def one(m):
        kind, body = m.group(1), m.group(2)
        if kind == "url":
            return body.split(":", 1)[0]
        if kind == "source":
            hit = re.match(r"^.*:\d+:(.*)$", body, re.S)
            return hit.group(1) if hit else body
        return body.split(":", 1)[1] if ":" in body else body
    return _MARKUP.sub(one, text or "")


def rules(report) -> list[dict]:
    """Every launch's rule results: one dict per rule message (launch, range_idx, rule,
    name, section, title, message as plain text, type and kind, speedup in % with its kind,
    focus metrics)."""
    out = []
    for range_idx, launch, action in _iter_actions(report):
        try:
            results = action.rule_results_as_dicts()
        except Exception:
            continue
        for d in results:
            msg = d.get("rule_message") or {}
            est = d.get("speedup_estimation") or {}
            sp = est.get("speedup")
            out.append({
                "launch": launch, "range_idx": range_idx, "rule": d.get("rule_identifier"), "name": d.get("name"),
                "section": d.get("section_identifier"), "title": msg.get("title") or "",
                "message": plain_message(msg.get("message") or ""), "type": int(msg.get("type") or 0),
                "kind": MSG_KINDS.get(int(msg.get("type") or 0), "none"),
                "speedup": float(sp) if isinstance(sp, (int, float)) and math.isfinite(sp) else None,
                "speedup_type": SPEEDUP_KINDS.get(int(est.get("type") or 0)) if est else None,
                "focus": [{"metric": f.get("name"), "value": f.get("value") if isinstance(f.get("value"), (int, float))
                           and math.isfinite(f.get("value")) else None, "severity": f.get("severity"), "info": f.get("info")}
                          for f in d.get("focus_metrics") or []],
            })
    return out


def write_rules(report, out: Path) -> None:
    text = json.dumps(rules(report), allow_nan=False)
    write_atomic(out, text)


# With the report open anyway, the per-PC frames of a report with PC sampling and at most
# this many launches (flashprof's own reports have one) go to the cache as well: drawing
# the stall-line figures then starts no second worker.
PREFETCH_MAX_LAUNCHES = 4


def _write(frame: pd.DataFrame, out: Path) -> None:
    """Atomic: a concurrent reader never sees half a file."""
    if out.suffix == ".parquet":
        write_atomic(out, lambda tmp: frame.to_parquet(tmp, index=False))
    else:
        write_atomic(out, lambda tmp: frame.to_pickle(tmp, compression=None))


def _prefetch_sources(path: Path, stem: str, frame: pd.DataFrame, prefix: str) -> None:
    launches = sorted(frame["launch"].unique())
    if len(launches) > PREFETCH_MAX_LAUNCHES or not (frame["metric"] == "smsp__pcsamp_sample_count").any():
        return
    report = open_report(path)
    for launch in launches:
        _write(source(path, stem, int(launch), report), Path(f"{prefix}{launch}.pkl"))


def main(argv: list[str], stdin_text: str | None = None) -> int:
    if argv == ["job-on-stdin"]:  # a reader started ahead of need (parse.prestart_workers)
        text = sys.stdin.read()
        if not text:
            return 0  # never given a job: its parent is done
        job = json.loads(text)
        return main(job["argv"], job["stdin"])
    mode, path, out = argv[0], Path(argv[1]), Path(argv[2])
    try:
        if mode == "long":
            side = json.loads((sys.stdin.read() if stdin_text is None else stdin_text) or "{}")
            stem = side.pop("__stem__")
            frame = extract(path, stem, side)
            if len(argv) > 3:
                _prefetch_sources(path, stem, frame, argv[3])
            if len(argv) > 4:
                write_rules(open_report(path), Path(argv[4]))
        elif mode == "rules":
            write_rules(open_report(path), out)
            return 0
        else:
            frame = source(path, argv[3], int(argv[4]))
    except ReportError as exc:
        print(exc, file=sys.stderr)
        return EXIT_REPORT_ERROR
    # The long frame goes straight into the parse cache (parquet) when the parent asks for
    # it; otherwise (no cache, no pyarrow) a pickle the parent reads once and deletes.
    _write(frame, out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
