"""Every relative link of README.md and docs/*.md points at a file that exists."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\]\(([^)\s]+)\)")


def _links():
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]:
        text = re.sub(r"```.*?```", "", page.read_text(), flags=re.S)
        for target in LINK.findall(text):
            if re.match(r"[a-z]+:", target) or target.startswith("#"):
                continue
            yield page, target.split("#")[0]


def test_relative_links_resolve():
    broken = [f"{p.relative_to(ROOT)} -> {t}" for p, t in _links() if t and not (p.parent / t).exists()]
    assert not broken, broken


def test_the_scan_finds_links():
    assert sum(1 for _ in _links()) > 10
