"""The issue model's result as committed data: ``reports/gap/issue_model.json`` and its
sidecar ``issue_model.meta.json``.

The model takes minutes (a cycle-level simulation per GPU, kernel and seed), so
``flashprof gap`` and the figures read its last output instead of recomputing it,
as long as every input is byte-identical to what produced it. The sidecar records the
SHA-256 of each input (the SASS loops, gpus.json, published.json, the H200 ceilings, the
reports the H200 rows come from, the model's own code and the kernel configs that pick
the SASS), the git revision, the date and the runtime. Any difference -> stale -> the
caller recomputes (``flashprof gap --model issue --write reports/gap/``
regenerates the files).
"""
from __future__ import annotations

import hashlib
import json
import math
import subprocess
from datetime import datetime, timezone
from pathlib import Path

from flashprof.analysis.report.errors import ReportError
from flashprof.analysis.gap.data import GPUS_FILE, PUBLISHED_FILE, REPO, default_reports
from flashprof.paths import KERNELS_PKG
from flashprof.kernels.gpus import SHIPPED

DIR = REPO / "reports" / "gap"
RESULT = "issue_model.json"
META = "issue_model.meta.json"
_CODE = ("controls.py", "constants.py", "scheduler.py", "loops.py", "issue_report.py", "frozen.py",
         "data.py")  # data.py: the data files' loaders and launch_work, which reads the H200 evidence


# The reports the model reads: flashprof's kernels 1-7, kernel 7's mma.sync form and FA2 (ref) -- the rows, the
# bank-conflict factors and the measured H200 cycles -- and the other-shape launches. User
# targets (cudnn, flex_attention, triton, ...) under reports/<gpu>/ feed no row, so they are
# neither read nor hashed: adding one does not make the committed result stale.
# Kernel 7 twice on the H200: the shipped wgmma kernel (kernel7, target "7", HGMMA simulated)
# and its mma.sync form (kernel7mma, target "7mma", the one that compares to the series' code).
MODEL_TARGETS = ("kernel1", "kernel2", "kernel3", "kernel4", "kernel5", "kernel6", "kernel7", "kernel7mma", "ref")


def default_report_paths() -> list[Path]:
    """The reports the model reads when none are named (the CLI's default)."""
    return ([p for p in default_reports() if p.stem in MODEL_TARGETS]
            + sorted(REPO.joinpath("reports").glob("*/other-shapes/*.ncu-rep")))


def input_paths() -> list[Path]:
    """Every file whose bytes the committed result depends on, sorted, repo-relative order."""
    sass = REPO / "reports" / "sass"
    here = Path(__file__).resolve().parent
    files = [*sorted(sass.glob("loops/*.sass")), *sorted(sass.glob("fa2/*.sass")),
             *sorted(sass.glob("series/*_sm_80.sass")), *sorted(sass.glob("series/fa2_official_sm80*.sass")),
             GPUS_FILE, PUBLISHED_FILE, REPO / SHIPPED.reports / "ceilings.json",
             REPO / SHIPPED.reports / "mma_mix" / "interplay.json",
             REPO / SHIPPED.reports / "wgmma_mix" / "wgmma_interplay.json",
             REPO / SHIPPED.reports / "smem_share" / "smem_share.json",
             REPO / SHIPPED.reports / "mio" / "arbitration_rule.json",
             KERNELS_PKG / "config.py", *(here / c for c in _CODE), *default_report_paths()]
    return sorted(dict.fromkeys(Path(p) for p in files))


def _rel(p: Path) -> str:
    try:
        return p.resolve().relative_to(REPO.resolve()).as_posix()
    except ValueError:
        return str(p)


def input_hashes(paths: list[Path] | None = None) -> dict[str, str]:
    """``{repo-relative path: sha256 hex}``; a missing file hashes to ``"missing"``."""
    out = {}
    for p in paths if paths is not None else input_paths():
        try:
            out[_rel(p)] = hashlib.sha256(p.read_bytes()).hexdigest()
        except FileNotFoundError:
            out[_rel(p)] = "missing"
    return out


def stale_inputs(meta: dict, current: dict[str, str] | None = None) -> list[str]:
    """Inputs that differ between the sidecar and now (changed, added or removed)."""
    current = input_hashes() if current is None else current
    old = meta.get("inputs", {})
    return sorted(k for k in set(old) | set(current) if old.get(k) != current.get(k))


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(["git", *args], cwd=REPO, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout if out.returncode == 0 else None


def _dirty_inputs(inputs: dict) -> list[str] | None:
    """Inputs with uncommitted changes (the revision alone does not pin them)."""
    st = _git("status", "--porcelain", "--", *inputs)
    return None if st is None else sorted(line[3:] for line in st.splitlines() if line.strip())


def _clean(v):
    """NaN -> None (JSON null) recursively: a value the model cannot give stays null."""
    if isinstance(v, float) and not math.isfinite(v):
        return None
    if isinstance(v, dict):
        return {k: _clean(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_clean(x) for x in v]
    return v


def _unclean(v):
    if v is None:
        return math.nan
    if isinstance(v, dict):
        return {k: (x if k in ("observed_source", "text") and x is None else _unclean(x))
                for k, x in v.items()}
    if isinstance(v, list):
        return [_unclean(x) for x in v]
    return v


def write(recs: list[dict], folder: str | Path = DIR, runtime_s: float | None = None,
          command: str = "flashprof gap --model issue --write reports/gap/") -> tuple[Path, Path]:
    """Write the records and the sidecar into ``folder``; returns both paths."""
    folder = Path(folder)
    inputs = input_hashes()
    meta = {"schema": 1, "command": command, "git_revision": (_git("rev-parse", "HEAD") or "").strip() or None,
            "uncommitted_inputs": _dirty_inputs(inputs),
            "date_utc": datetime.now(timezone.utc).isoformat(timespec="seconds"),
            "runtime_s": None if runtime_s is None else round(runtime_s, 1),
            "inputs": inputs}
    try:
        folder.mkdir(parents=True, exist_ok=True)
        res, side = folder / RESULT, folder / META
        res.write_text(json.dumps(_clean(recs), indent=1) + "\n")
        side.write_text(json.dumps(meta, indent=1) + "\n")
    except OSError as exc:
        raise ReportError(f"{folder}: cannot write the issue model's result ({exc})") from None
    return res, side


def read(folder: str | Path | None = None) -> tuple[list[dict], dict]:
    """The committed records (nulls back to NaN) and the sidecar (default folder: ``DIR``);
    ReportError if absent or unreadable."""
    folder = Path(DIR if folder is None else folder)
    try:
        recs = json.loads((folder / RESULT).read_text())
        meta = json.loads((folder / META).read_text())
    except FileNotFoundError as exc:
        raise ReportError(f"{exc.filename}: no committed issue-model result "
                          "(flashprof gap --model issue --write reports/gap/)") from None
    except (OSError, ValueError) as exc:
        raise ReportError(f"{folder / RESULT}: unreadable issue-model result ({exc})") from None
    if not isinstance(recs, list) or not isinstance(meta, dict):
        raise ReportError(f"{folder / RESULT}: not an issue-model result")
    return [_unclean(r) for r in recs], meta


def fresh(folder: str | Path | None = None) -> tuple[list[dict] | None, str]:
    """The committed records if every input hash matches, else ``None`` and why."""
    folder = Path(DIR if folder is None else folder)
    try:
        recs, meta = read(folder)
    except ReportError as exc:
        return None, str(exc)
    changed = stale_inputs(meta)
    if changed:
        more = f" and {len(changed) - 1} more" if len(changed) > 1 else ""
        return None, f"{_rel(folder / RESULT)} is stale ({changed[0]}{more} changed since it was written)"
    return recs, "fresh"
