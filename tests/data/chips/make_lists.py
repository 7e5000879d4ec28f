"""Turn raw ``ncu --query-metrics --chip <chip>`` outputs into the compact lists here.

Usage: python tests/data/chips/make_lists.py RAW_DIR   (RAW_DIR holds <chip>.base.txt and
list-chips.txt). Writes <chip>.txt.gz: one "name type" line per metric, sorted, gzip with
mtime 0 so a rerun on the same input gives the same bytes. Description lines that ncu wraps
onto a second line carry no name and no type and are dropped.
"""
from __future__ import annotations

import gzip
import re
import sys
from pathlib import Path

TYPES = ("Counter", "Ratio", "Throughput")
_ROW = re.compile(r"^(?P<name>[A-Za-z0-9_.]+__[A-Za-z0-9_]+)\s+(?P<type>" + "|".join(TYPES) + r")\s")


def rows(text: str) -> list[tuple[str, str]]:
    out = {}
    for line in text.splitlines():
        hit = _ROW.match(line)
        if hit:
            out[hit["name"]] = hit["type"]
    return sorted(out.items())


def main(raw: Path) -> None:
    here = Path(__file__).resolve().parent
    chips = [c.strip() for c in (raw / "list-chips.txt").read_text().split(",") if c.strip()]
    for chip in chips:
        found = rows((raw / f"{chip}.base.txt").read_text())
        body = "".join(f"{n} {t}\n" for n, t in found).encode()
        with open(here / f"{chip}.txt.gz", "wb") as fh:
            with gzip.GzipFile(filename="", mode="wb", fileobj=fh, mtime=0, compresslevel=9) as gz:
                gz.write(body)
        print(chip, len(found))
    (here / "chips.txt").write_text("\n".join(chips) + "\n")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
