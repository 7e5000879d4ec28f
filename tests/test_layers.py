"""The package's layering, read from its own imports (ast, nothing run): which module may
import which. docs/ARCHITECTURE.md states the rules; tests/test_architecture_doc.py holds
the doc to the code."""
from __future__ import annotations

import ast
from functools import cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "flashprof"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path) -> list[tuple[str, int, str | None]]:
    """(imported module, line, enclosing function or None at module level) for every import
    of ``path``; ``from a import b`` gives ``a.b`` when ``a/b`` is a module of the package,
    else ``a``. A function is named by its qualified name (``Machine._preload``)."""
    tree = ast.parse(path.read_text(), str(path))
    here = module_name(path)
    out = []

    def visit(node, scope: list[str], in_function: bool):
        for child in ast.iter_child_nodes(node):
            where = ".".join(scope) if in_function else None
            if isinstance(child, ast.Import):
                out.extend((a.name, child.lineno, where) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    pkg = here.split(".") if path.name == "__init__.py" else here.split(".")[:-1]
                    pkg = pkg[: len(pkg) - (child.level - 1)]
                    base = ".".join([*pkg, base] if base else pkg)
                for a in child.names:
                    sub = f"{base}.{a.name}"
                    out.append((sub if _is_module(sub) else base, child.lineno, where))
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
                visit(child, [*scope, child.name], True)
            elif isinstance(child, ast.ClassDef):
                visit(child, [*scope, child.name], in_function)
            else:
                visit(child, scope, in_function)

    visit(tree, [], False)
    return out


def _is_module(name: str) -> bool:
    p = ROOT.joinpath(*name.split("."))
    return p.with_suffix(".py").is_file() or (p / "__init__.py").is_file()


def package_modules() -> list[Path]:
    return sorted(p for p in PKG.rglob("*.py") if "__pycache__" not in p.parts)


@cache
def edges() -> tuple[tuple[str, str, int, str | None], ...]:
    """(importer, imported, line, enclosing function or None) for imports of flashprof modules."""
    out = []
    for p in package_modules():
        for mod, line, where in imports(p):
            if mod == "flashprof" or mod.startswith("flashprof."):
                out.append((module_name(p), mod, line, where))
    return tuple(out)


def within(mod: str, prefix: str) -> bool:
    return mod == prefix or mod.startswith(prefix + ".")


LEGACY = "flashprof.analysis.gap.legacy_pipes"
# the superseded model is imported for `flashprof gap --model pipes` and the figures that draw it
LEGACY_USERS = {"flashprof.analysis.__main__", "flashprof.analysis.charts.inputs",
                "flashprof.analysis.charts.gap_charts"}


def test_the_scanner_sees_imports():
    found = {(a, b) for a, b, _, _ in edges()}
    assert ("flashprof.analysis.report.parse", "flashprof.profiling.sidecar") in found
    assert ("flashprof.analysis.gap.issue_report", "flashprof.analysis.gap.data") in found
    lazy = {(a, b) for a, b, _, lz in edges() if lz}
    assert ("flashprof.analysis.__main__", "flashprof.analysis.gap.legacy_pipes.pipes_report") in lazy


def test_legacy_pipes_model_is_imported_only_by_its_verb_and_figures():
    users = {a for a, b, _, _ in edges() if within(b, LEGACY) and not within(a, LEGACY)}
    assert users and users <= LEGACY_USERS, users - LEGACY_USERS
    # the issue model's own modules never read the superseded one
    live = [a for a, b, _, _ in edges() if within(b, LEGACY)
            and within(a, "flashprof.analysis.gap") and not within(a, LEGACY)]
    assert live == []
    # and the gap verb reaches it lazily (only with --model pipes)
    assert all(lz for a, b, _, lz in edges() if a == "flashprof.analysis.__main__" and within(b, LEGACY))


# ------------------------------------------------------------------ the stages' order
STAGES = ("flashprof.kernels", "flashprof.profiling", "flashprof.analysis")  # data flows this way
# inside analysis/, by what imports what (the recipe table first: parse reads it)
ANALYSIS_ROOMS = ("metrics", "report", "stages", "gap", "charts", "page")
# every room may import these; the entry points (verbs, __main__) may import anything
FLOOR = {"flashprof", "flashprof.paths", "flashprof.kernels.cli", "flashprof.kernels.common"}
TOP = {"flashprof.verbs", "flashprof.__main__"}
# the arrows that run back up, on purpose, each inside one function (docs/ARCHITECTURE.md
# names them; tests/test_architecture_doc.py checks that it does): (module, function, room)
BACK_ARROWS = {
    ("flashprof.analysis.gap.issue_report", "write_plot", "flashprof.analysis.charts"),
    ("flashprof.profiling.profile", "Machine._preload", "flashprof.analysis"),
    ("flashprof.profiling.profile", "Machine._prefetch", "flashprof.analysis"),
    ("flashprof.profiling.profile", "analyse", "flashprof.analysis"),
}
# what the analysis may import of profiling: its pure data
PROFILING_DATA = {"flashprof.profiling.sidecar"}


def rank(mod: str) -> tuple[int, int] | None:
    """(stage, room inside analysis) of a module; None for the floor and the entry points."""
    if mod in FLOOR or mod in TOP:
        return None
    for i, stage in enumerate(STAGES):
        if within(mod, stage):
            if i == 2:
                rest = mod.split(".")[2:3]
                return (i, ANALYSIS_ROOMS.index(rest[0]) if rest and rest[0] in ANALYSIS_ROOMS else len(ANALYSIS_ROOMS))
            return (i, 0)
    return None


def back_arrow(a: str, b: str, where: str | None) -> bool:
    return where is not None and any(a == m and where == f and within(b, room) for m, f, room in BACK_ARROWS)


def upstream_violations(graph) -> list[str]:
    bad = []
    for a, b, line, where in graph:
        ra, rb = rank(a), rank(b)
        if ra is None or rb is None or ra >= rb or back_arrow(a, b, where):
            continue
        bad.append(f"{a}:{line} imports {b}" + (f" (inside {where})" if where else ""))
    return bad


def test_no_room_imports_a_room_after_it():
    bad = upstream_violations(edges())
    assert bad == [], "downstream imports (document a deliberate one in ARCHITECTURE.md):\n" + "\n".join(bad)


def test_the_rule_catches_a_back_arrow():
    fake = [("flashprof.kernels.build", "flashprof.profiling.env", 3, None),            # a stage after it
            ("flashprof.analysis.report.parse", "flashprof.analysis.charts.style", 9, None),  # a room after it
            ("flashprof.analysis.gap.issue_report", "flashprof.analysis.charts.gap_charts", 5, None),  # not lazy
            ("flashprof.analysis.gap.issue_report", "flashprof.analysis.charts.gap_charts", 7, "write_plot"),
            ("flashprof.analysis.charts.specs", "flashprof.analysis.stages.roofline", 1, None)]
    assert upstream_violations(fake) == [
        "flashprof.kernels.build:3 imports flashprof.profiling.env",
        "flashprof.analysis.report.parse:9 imports flashprof.analysis.charts.style",
        "flashprof.analysis.gap.issue_report:5 imports flashprof.analysis.charts.gap_charts"]


def test_every_back_arrow_is_lazy_and_still_there():
    graph = edges()
    for mod, fn, room in BACK_ARROWS:
        hits = [(b, w) for a, b, _, w in graph if a == mod and within(b, room)]
        assert hits, f"{mod} no longer imports {room}: drop it from BACK_ARROWS and the doc"
        assert (fn in {w for _, w in hits}), f"{mod}.{fn} no longer imports {room}"
        assert all(w is not None for _, w in hits), f"{mod} imports {room} at module level"


def test_analysis_imports_only_profilings_pure_data():
    bad = sorted({f"{a} -> {b}" for a, b, _, _ in edges()
                  if within(a, "flashprof.analysis") and within(b, "flashprof.profiling") and b not in PROFILING_DATA})
    assert bad == []
    # and that data imports no torch, nor anything of profiling beyond the floor
    sidecar = [b for a, b, _, _ in edges() if a == "flashprof.profiling.sidecar"]
    assert set(sidecar) <= FLOOR | {"flashprof.kernels.config"}
    src = (PKG / "profiling" / "sidecar.py").read_text()
    assert "import torch" not in src


def test_doctor_reads_reports_in_a_child_process_not_by_import():
    # the first documented back-arrow: doctor runs the report reader in a child process
    assert not [b for a, b, _, _ in edges() if a == "flashprof.profiling.doctor" and within(b, "flashprof.analysis")]
    assert "from flashprof.analysis.report.ncu_import import ncu_report" in (PKG / "profiling" / "doctor.py").read_text()
