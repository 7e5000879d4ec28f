"""The package's layering, read from its own imports (ast, nothing run): which module may
import which. docs/ARCHITECTURE.md states the rules; tests/test_architecture_doc.py holds
the doc to the code."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "flashprof"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def imports(path: Path) -> list[tuple[str, int, bool]]:
    """(imported module, line, lazy: inside a function) for every import of ``path``;
    ``from a import b`` gives ``a.b`` when ``a/b`` is a module of the package, else ``a``."""
    tree = ast.parse(path.read_text(), str(path))
    here = module_name(path)
    out = []

    def visit(node, lazy):
        for child in ast.iter_child_nodes(node):
            inner = lazy or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                out.extend((a.name, child.lineno, lazy) for a in child.names)
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    pkg = here.split(".") if path.name == "__init__.py" else here.split(".")[:-1]
                    pkg = pkg[: len(pkg) - (child.level - 1)]
                    base = ".".join([*pkg, base] if base else pkg)
                for a in child.names:
                    sub = f"{base}.{a.name}"
                    out.append((sub if _is_module(sub) else base, child.lineno, lazy))
            visit(child, inner)

    visit(tree, False)
    return out


def _is_module(name: str) -> bool:
    p = ROOT.joinpath(*name.split("."))
    return p.with_suffix(".py").is_file() or (p / "__init__.py").is_file()


def package_modules() -> list[Path]:
    return sorted(p for p in PKG.rglob("*.py") if "__pycache__" not in p.parts)


def edges() -> list[tuple[str, str, int, bool]]:
    """(importer, imported, line, lazy) for imports of flashprof modules."""
    out = []
    for p in package_modules():
        for mod, line, lazy in imports(p):
            if mod == "flashprof" or mod.startswith("flashprof."):
                out.append((module_name(p), mod, line, lazy))
    return out


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
