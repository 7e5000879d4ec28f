"""Private names stay private: no module of flashprof/ imports another module's underscore
name (``from flashprof.x import _y``), nor reaches one through a module it imported
(``import flashprof.x as m; m._y``). A name used across modules is public."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "flashprof"


def _private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def _is_module(dotted: str) -> bool:
    p = ROOT.joinpath(*dotted.split("."))
    return p.with_suffix(".py").is_file() or (p / "__init__.py").is_file()


def _absolute(node: ast.ImportFrom, here: str, is_pkg: bool) -> str:
    if not node.level:
        return node.module or ""
    parts = here.split(".") if is_pkg else here.split(".")[:-1]
    parts = parts[: len(parts) - (node.level - 1)]
    return ".".join([*parts, node.module] if node.module else parts)


def cross_module_private(source: str, here: str, is_pkg: bool = False) -> list[str]:
    """'line: what' for each underscore name of another flashprof module that ``source``
    (the module ``here``) imports or reaches through an imported module."""
    tree = ast.parse(source)
    found, modules = [], {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("flashprof"):
                    if a.asname:
                        modules[a.asname] = a.name
                    for part in a.name.split(".")[1:]:
                        if _private(part):
                            found.append(f"{node.lineno}: import {a.name}")
        elif isinstance(node, ast.ImportFrom):
            mod = _absolute(node, here, is_pkg)
            if not (mod == "flashprof" or mod.startswith("flashprof.")) or mod == here:
                continue
            for a in node.names:
                if _private(a.name):
                    found.append(f"{node.lineno}: from {mod} import {a.name}")
                elif _is_module(f"{mod}.{a.name}"):
                    modules[a.asname or a.name] = f"{mod}.{a.name}"
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and _private(node.attr) and isinstance(node.value, ast.Name)
                and node.value.id in modules and modules[node.value.id] != here):
            found.append(f"{node.lineno}: {node.value.id}.{node.attr} ({modules[node.value.id]})")
    return found


def _module(path: Path) -> tuple[str, bool]:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    is_pkg = parts[-1] == "__init__"
    return ".".join(parts[:-1] if is_pkg else parts), is_pkg


def test_the_scan_catches_each_form():
    src = ("from flashprof.analysis.metrics.recipe_kit import _r, tensor_counters\n"
           "from . import recipe_kit as kit\n"
           "from .recipe_kit import _finite as ok\n"
           "import flashprof.analysis.charts.identity as ident\n"
           "x = kit._hidden + ident._fmt_shape + kit.public\n"
           "def f(self):\n    return self._own\n")
    hits = cross_module_private(src, "flashprof.analysis.metrics.recipes")
    assert hits == ["1: from flashprof.analysis.metrics.recipe_kit import _r",
                    "3: from flashprof.analysis.metrics.recipe_kit import _finite",
                    "5: kit._hidden (flashprof.analysis.metrics.recipe_kit)",
                    "5: ident._fmt_shape (flashprof.analysis.charts.identity)"]
    # a package's own names and anything outside flashprof are not its business
    assert cross_module_private("from os import _exit\nfrom . import _x\n", "flashprof.analysis", is_pkg=True) == []


def test_no_module_imports_another_modules_private_name():
    bad = []
    for path in sorted(PKG.rglob("*.py")):
        here, is_pkg = _module(path)
        bad += [f"{path.relative_to(ROOT)}:{hit}" for hit in cross_module_private(path.read_text(), here, is_pkg)]
    assert bad == [], "make these names public or keep them inside their module:\n" + "\n".join(bad)
