"""docs/ARCHITECTURE.md is true: every module path and folder it names exists, its
'Who imports whom' table is each room's imports exactly, and the arrows it says run back up
are the ones tests/test_layers.py allows."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from test_layers import BACK_ARROWS, FLOOR, TOP, edges, within

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "ARCHITECTURE.md"
TEXT = DOC.read_text()
# folders of the user's work, made at run time (build/, history/) or holding generated files
WORK = ("build/", "history/", "figures/<slug>/")


# ------------------------------------------------------------------ the names
def _rows(text: str):
    """(first cell's folder or None, line) for each line: a table row's folder is where its
    bare file names live."""
    for line in text.splitlines():
        folder = None
        if line.startswith("| `flashprof/"):
            folder = re.match(r"\| `([^`]+)`", line).group(1)
        yield folder, line


def path_tokens(text: str) -> list[tuple[str | None, str]]:
    """(row folder, token) for each backticked path: a ``*.py`` file, or a folder ``x/``."""
    out = []
    for folder, line in _rows(text):
        for tok in re.findall(r"`([^`\s]+)`", line):
            if tok.endswith(".py") or (tok.endswith("/") and re.fullmatch(r"[\w./<>*-]+", tok)):
                out.append((folder, tok))
    return out


def resolve(tok: str, folder: str | None, root: Path = ROOT) -> list[Path]:
    """Where a named path is: a path with a slash under the checkout, the package, the
    analysis package or the row's folder; a bare name anywhere under the row's folder (or
    the package). ``<x>`` and ``*`` match any one name."""
    pattern = re.sub(r"<[^>]+>", "*", tok.rstrip("/"))
    bases = [root, root / "flashprof", root / "flashprof" / "analysis"] + ([root / folder] if folder else [])
    if "/" in tok.rstrip("/"):
        hits = [p for b in bases for p in b.glob(pattern)]
    else:
        hits = list((root / (folder or "flashprof")).rglob(pattern)) + list(root.glob(pattern))
    want_dir = tok.endswith("/")
    return [p for p in hits if (p.is_dir() if want_dir else p.is_file())]


TOKENS = [t for t in path_tokens(TEXT) if t[1] not in WORK]


def test_the_doc_names_the_new_modules():
    names = {t for _, t in TOKENS}
    assert {"sidecar.py", "gap/data.py", "flashprof/analysis/gap/legacy_pipes/", "flashprof/analysis/page/"} <= names
    assert "pipes_model" not in TEXT
    assert len(TOKENS) > 80


@pytest.mark.parametrize("folder, tok", TOKENS, ids=[f"{f or '-'}:{t}" for f, t in TOKENS])
def test_every_named_path_exists(folder, tok):
    assert resolve(tok, folder), f"docs/ARCHITECTURE.md names `{tok}` ({folder or 'prose'}): no such path"


def test_the_resolver_can_say_no(tmp_path):
    (tmp_path / "flashprof" / "kernels").mkdir(parents=True)
    (tmp_path / "flashprof" / "kernels" / "config.py").write_text("")
    assert resolve("config.py", "flashprof/kernels/", tmp_path)
    assert resolve("kernels/config.py", None, tmp_path)
    assert not resolve("kernels/konfig.py", None, tmp_path)
    assert not resolve("nvcc.py", "flashprof/kernels/", tmp_path)
    assert not resolve("kernels/config.py/", None, tmp_path)  # a folder is asked for
    assert [t for _, t in path_tokens("| `flashprof/x/` | `a.py`, `b/`, `make x` |")] == ["flashprof/x/", "a.py", "b/"]


# ------------------------------------------------------------------ the arrows
def _section(title: str) -> str:
    start = TEXT.index(f"## {title}")
    end = TEXT.find("\n## ", start + 3)
    return TEXT[start:end if end > 0 else None]


def _module(path: str) -> str:
    return path.rstrip("/").removesuffix(".py").replace("/", ".")


def _table(section: str, first: str) -> list[list[str]]:
    rows = []
    for line in section.splitlines():
        if line.startswith(f"| `{first}"):
            rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return rows


def _first(cell: str) -> str:
    return _module(re.match(r"`([^`]+)`", cell).group(1))


_ROWS = _table(_section("Who imports whom"), "flashprof/")
# the room table: | room | imports |; the back-arrow table: | module | function | imports | why |
IMPORTS = {_first(r[0]): {_module(t) for t in re.findall(r"`([^`]+)`", r[1])} for r in _ROWS if len(r) == 2}
DOC_BACK = {(_first(r[0]), r[1].strip("`"), _first(r[2])) for r in _ROWS if len(r) == 4}
ROOMS = sorted(IMPORTS, key=len, reverse=True)


def room_of(mod: str, rooms) -> str | None:
    """The most specific room (or named module) ``mod`` belongs to."""
    return next((r for r in sorted(rooms, key=len, reverse=True) if within(mod, r)), None)


def test_the_import_table_is_read():
    assert "flashprof.analysis.charts" in IMPORTS and "flashprof.kernels" in IMPORTS
    assert IMPORTS["flashprof.analysis.report"] == {"flashprof.kernels", "flashprof.profiling.sidecar",
                                                   "flashprof.analysis.metrics"}
    assert IMPORTS["flashprof.kernels"] == set()  # "the floor only"


def test_each_room_imports_what_its_row_says():
    targets = set(IMPORTS) | {t for ts in IMPORTS.values() for t in ts}
    back = {(m, f) for m, f, _ in BACK_ARROWS}
    actual: dict[str, set[str]] = {r: set() for r in IMPORTS}
    for a, b, _line, where in edges():
        if a in TOP or b in FLOOR or (a, where) in back:
            continue
        ra, rb = room_of(a, ROOMS), room_of(b, targets)
        if ra is None or rb is None or ra == rb or (within(rb, ra) and rb not in IMPORTS):
            continue  # inside one room (profiling importing its own sidecar.py, too)
        actual[ra].add(rb)
    diffs = {r: {"undocumented": sorted(actual[r] - IMPORTS[r]), "not imported": sorted(IMPORTS[r] - actual[r])}
             for r in IMPORTS if actual[r] != IMPORTS[r]}
    assert diffs == {}


def test_analysis_reads_kernels_config():
    # the prose's example arrow
    assert "analysis reads `flashprof.kernels.config`" in TEXT
    assert any(within(a, "flashprof.analysis") and b == "flashprof.kernels.config" for a, b, _, _ in edges())


def test_the_back_arrows_the_doc_names_are_the_allowed_ones():
    assert DOC_BACK == BACK_ARROWS
    assert "flashprof.analysis.report.ncu_import" in _section("Who imports whom")  # doctor's child process
