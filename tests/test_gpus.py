"""One record per GPU (kernels/gpus.py): consistent with analysis/gpus.json and
published.json, and the only place in the code that spells a GPU."""
from __future__ import annotations

import ast
import json
from pathlib import Path

from flashprof.kernels import gpus
from flashprof.kernels.config import gpu_slug

ROOT = Path(__file__).resolve().parents[1]
MODEL = json.loads((ROOT / "flashprof" / "analysis" / "gpus.json").read_text())["gpus"]
PUBLISHED = json.loads((ROOT / "flashprof" / "analysis" / "published.json").read_text())["gpus"]

# Files of the gap model that still spell GPUs while it is rewritten; each entry is the set
# of spellings the file holds today. Patch the file to read kernels/gpus.py, then drop it here.
ALLOWED = {
    # the series' SASS files are named per GPU it measured on (reports/sass/series/*_A100 / *_RTX3090)
    "flashprof/analysis/gap/loops.py": {"a100_80gb", "rtx3090", "a100"},
}
# devjobs/ is left out: its scripts transcribe external sources, whose card names are data.
CODE_DIRS = ("flashprof",)


def test_every_record_is_its_gpus_json_block():
    for g in gpus.GPUS:
        block = MODEL.get(g.model_key)
        assert block is not None, f"{g.slug}: no block {g.model_key!r} in analysis/gpus.json"
        assert g.name == block["name"], g.slug
        assert g.arch == block["arch"], g.slug
        assert g.chip == block["chip"].lower(), g.slug
        assert list(g.match) == block["match"], g.slug


def test_every_gpus_json_block_and_published_gpu_has_a_record():
    assert {g.model_key for g in gpus.GPUS} >= set(MODEL)
    for slug in PUBLISHED:
        assert gpus.by_slug(slug) is not None, f"published.json's {slug!r} is no record's slug"


def test_spellings_are_unique_and_lookups_round_trip():
    for field in ("slug", "name", "model_key", "colour"):
        vals = [getattr(g, field) for g in gpus.GPUS]
        assert len(set(vals)) == len(vals), field
    for g in gpus.GPUS:
        assert gpus.by_slug(g.slug) is g and gpus.by_model_key(g.model_key) is g
        assert gpus.by_name(g.name) is g, g.name           # longest match: 40GB is not 80GB
        assert gpus.by_name(g.name.replace("NVIDIA ", "")) is g
        assert gpu_slug(g.name) == g.slug
        assert g.reports == f"reports/{g.slug}"
        assert g.arch.startswith("sm_") and g.colour.startswith("#") and len(g.colour) == 7
    assert gpus.SHIPPED.reports == "reports/h200" and (ROOT / gpus.SHIPPED.reports).is_dir()


def test_unknown_gpus_get_a_slug_from_their_name():
    assert gpus.by_name("NVIDIA GeForce RTX 4090") is None
    assert gpu_slug("NVIDIA GeForce RTX 4090") == "rtx4090"
    assert gpu_slug("NVIDIA L40S") == "l40s"
    assert gpu_slug("") == "gpu"


def test_gap_chart_colours_are_the_records():
    from flashprof.analysis.charts.gap_charts import GPU_COLORS
    for key, colour in GPU_COLORS.items():
        assert gpus.by_model_key(key).colour == colour, key


def _spellings() -> set[str]:
    out = set()
    for g in gpus.GPUS:
        out |= {g.slug, g.name, g.model_key, g.name.replace("NVIDIA ", ""), g.reports}
    return {s.lower() for s in out}


def _literals(tree) -> set[str]:
    """Every string constant of a module (f-string parts included), lower case."""
    return {n.value.lower() for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)}


def test_no_code_spells_a_gpu_outside_the_records():
    spell = _spellings()
    found: dict[str, set[str]] = {}
    for d in CODE_DIRS:
        for p in sorted((ROOT / d).rglob("*.py")):
            rel = p.relative_to(ROOT).as_posix()
            if rel == "flashprof/kernels/gpus.py":
                continue
            hits = _literals(ast.parse(p.read_text(), filename=rel)) & spell
            if hits:
                found[rel] = hits
    new = {f: sorted(h - ALLOWED.get(f, set())) for f, h in found.items() if h - ALLOWED.get(f, set())}
    assert not new, f"GPU spelled outside kernels/gpus.py (look it up there instead): {new}"
    stale = {f: sorted(a - found.get(f, set())) for f, a in ALLOWED.items() if a - found.get(f, set())}
    assert not stale, f"allow-list entries no longer needed (drop them from ALLOWED): {stale}"


def test_the_scan_sees_a_spelling():
    tree = ast.parse('DEFAULT = ROOT / "reports" / "h200"\nKEY = f"{x}" + "h200_sxm"\n')
    assert _literals(tree) & _spellings() == {"h200", "h200_sxm"}
