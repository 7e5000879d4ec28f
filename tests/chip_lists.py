"""The committed chip metric lists (tests/data/chips) and the suffix model that turns a base
name into the names a report can hold; shared by the chip-coverage and no-silent-zero tests."""
from __future__ import annotations

import gzip
from functools import lru_cache
from pathlib import Path

CHIPS_DIR = Path(__file__).resolve().parent / "data" / "chips"
CHIPS = tuple(CHIPS_DIR.joinpath("chips.txt").read_text().split())

# Compute capability per chip, for the recipes' few arch-keyed estimates. gb10b (Thor) and
# gb20b (GB10) are this suite's reading of NVIDIA's naming, not from the chip lists.
CHIP_ARCH = {**{c: "sm_75" for c in ("tu102", "tu104", "tu106", "tu116", "tu117")},
             "ga100": "sm_80", **{c: "sm_86" for c in ("ga102", "ga103", "ga104", "ga106", "ga107")},
             "ga10b": "sm_87", **{c: "sm_89" for c in ("ad102", "ad103", "ad104", "ad106", "ad107")},
             "gh100": "sm_90", "gb100": "sm_100", "gb102": "sm_100", "gb110": "sm_103",
             "gb10b": "sm_110", **{c: "sm_120" for c in ("gb202", "gb203", "gb205", "gb206", "gb207")},
             "gb20b": "sm_121"}

_ROLLUPS = ("sum", "avg", "min", "max")
_COUNTER_SUB = ("", "per_second", "per_cycle_elapsed", "per_cycle_active", "per_cycle_in_region",
                "per_cycle_in_frame", "peak_sustained", "peak_sustained_active", "peak_sustained_elapsed",
                "peak_sustained_region", "peak_sustained_frame", "peak_sustained_active.per_second",
                "peak_sustained_elapsed.per_second", "peak_sustained_region.per_second",
                "peak_sustained_frame.per_second", "pct_of_peak_sustained_active",
                "pct_of_peak_sustained_elapsed", "pct_of_peak_sustained_region", "pct_of_peak_sustained_frame")
_THROUGHPUT_SUB = ("pct_of_peak_sustained_active", "pct_of_peak_sustained_elapsed",
                   "pct_of_peak_sustained_region", "pct_of_peak_sustained_frame")
SUFFIXES = {
    "Counter": {""} | {f".{r}" + (f".{s}" if s else "") for r in _ROLLUPS for s in _COUNTER_SUB},
    "Ratio": {".ratio", ".pct", ".max_rate"},
    "Throughput": {f".{r}.{s}" for r in _ROLLUPS for s in _THROUGHPUT_SUB},
}
# Names that are no chip's counters: launch/device attributes (every report has them).
ATTRIBUTE_PREFIXES = ("launch__", "device__")


@lru_cache(maxsize=None)
def chip_metrics(chip: str) -> dict[str, str]:
    """{base name: type} of one chip."""
    with gzip.open(CHIPS_DIR / f"{chip}.txt.gz", "rt") as fh:
        return dict(line.split() for line in fh if line.strip())


def split(name: str, chip: str) -> tuple[str, str] | None:
    """(base, suffix) of a full metric name on ``chip``, or None if its base is not listed."""
    bases = chip_metrics(chip)
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        base = ".".join(parts[:i])
        if base in bases:
            return base, name[len(base):]
    return None


def on_chip(name: str, chip: str) -> bool:
    """A report from ``chip`` can hold ``name``: an attribute, or a listed base with a suffix
    its type takes."""
    if name.startswith(ATTRIBUTE_PREFIXES):
        return True
    hit = split(name, chip)
    return bool(hit) and hit[1] in SUFFIXES[chip_metrics(chip)[hit[0]]]
