"""Every real report the suite can see: ../shared/public-reports (foreign GPUs, read in
place, never copied), tests/data and reports/ (H200). Skipped parts are simply absent."""
from __future__ import annotations

import os
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# ../shared beside the checkout (CI clones it there); FLASHPROF_PUBLIC_REPORTS points elsewhere
# (a git worktree). The one place the tests find it.
PUBLIC = Path(os.environ.get("FLASHPROF_PUBLIC_REPORTS") or ROOT.parent / "shared" / "public-reports")
PUBLIC_MISSING = None if PUBLIC.is_dir() else f"public reports not found at {PUBLIC} (../shared beside the checkout)"

# Device names of the reports here -> chip (RTX 3080 / A10 / A10G are GA102; RTX 4090 AD102;
# RTX 5060 Ti GB206; A100 GA100; H100/H800/H200 GH100; Tesla T4 TU104).
_CHIPS = (("RTX 5060 Ti", "gb206"), ("RTX 3080", "ga102"), ("A10G", "ga102"), ("A10", "ga102"),
          ("RTX 4090", "ad102"), ("A100", "ga100"), ("H800", "gh100"), ("H100", "gh100"),
          ("H200", "gh100"), ("T4", "tu104"))


def report_paths() -> list[Path]:
    out = sorted(PUBLIC.glob("*.ncu-rep")) if PUBLIC.is_dir() else []
    out += sorted((ROOT / "tests" / "data").rglob("*.ncu-rep"))
    out += sorted((ROOT / "reports").rglob("*.ncu-rep"))
    return out


def chip_of(action) -> str | None:
    m = action.metric_by_name("device__attribute_display_name")
    name = str(m.value()) if m is not None else ""
    return next((chip for key, chip in _CHIPS if key in name), None)
