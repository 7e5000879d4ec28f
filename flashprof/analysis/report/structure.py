"""Structural check of a .ncu-rep without ncu_report: the file ends where its own records say.

Layout: b"NVR\\0", u32 size + FileHeader protobuf, then blocks until end of file, each
u32 size + BlockHeader protobuf (1 NumSources, 2 NumResults, 5 PayloadSize,
7 NumRangeResults) followed by PayloadSize bytes of entries, each u32 size + protobuf.
A file cut anywhere leaves a short last block (or a short size field): refused.
"""
from __future__ import annotations

import os
import struct
from pathlib import Path

from flashprof.analysis.report.errors import ReportError


class IncompleteReportError(ReportError):
    """A report whose bytes end before its own structure does (truncated, unfinished)."""


_MAGIC = b"NVR\x00"
_FIELDS = {1: "sources", 2: "results", 5: "payload", 7: "range_results"}


def _varint(buf: bytes, i: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if i >= len(buf) or shift > 63:
            raise ValueError("varint runs past the header")
        byte = buf[i]
        i += 1
        value |= (byte & 0x7F) << shift
        shift += 7
        if not byte & 0x80:
            return value, i


def _header_counts(buf: bytes) -> dict[str, int]:
    """The BlockHeader's counts (scalar fields 1, 2, 5, 7); other fields skipped."""
    out = dict.fromkeys(_FIELDS.values(), 0)
    i = 0
    while i < len(buf):
        key, i = _varint(buf, i)
        field, wire = key >> 3, key & 7
        if wire == 0:
            value, i = _varint(buf, i)
            if field in _FIELDS:
                out[_FIELDS[field]] = value
        elif wire == 1:
            i += 8
        elif wire == 2:
            n, i = _varint(buf, i)
            i += n
        elif wire == 5:
            i += 4
        else:
            raise ValueError(f"wire type {wire}")
        if i > len(buf):
            raise ValueError("field runs past the header")
    return out


def check_blocks(path: str | os.PathLike) -> int:
    """Walk every block; return the number of profile results the file declares.
    Raises IncompleteReportError (one line, naming the file) when it ends early."""
    path = Path(path)
    size = path.stat().st_size
    cut = f"{path}: truncated or incomplete report ({size} bytes"

    with open(path, "rb") as f:
        def read(n: int, at: int) -> bytes:
            f.seek(at)
            return f.read(n)

        if read(4, 0) != _MAGIC:
            raise ReportError(f"{path}: not an Nsight Compute report (bad file signature)")
        if size < 8:
            raise IncompleteReportError(f"{cut}: ends inside the file header)")
        pos = 8 + struct.unpack("<I", read(4, 4))[0]
        if pos > size:
            raise IncompleteReportError(f"{cut}: ends inside the file header)")
        blocks = results = range_results = 0
        while pos < size:
            blocks += 1
            if pos + 4 > size:
                raise IncompleteReportError(f"{cut}: ends inside block {blocks}'s size field)")
            hsize = struct.unpack("<I", read(4, pos))[0]
            pos += 4
            if pos + hsize > size:
                raise IncompleteReportError(f"{cut}: block {blocks}'s header needs {hsize} bytes, "
                                            f"{size - pos} remain)")
            try:
                counts = _header_counts(read(hsize, pos))
            except ValueError as exc:
                raise IncompleteReportError(f"{path}: corrupt report (block {blocks}'s header: {exc})") from None
            pos += hsize
            end = pos + counts["payload"]
            if end > size:
                raise IncompleteReportError(f"{cut}: block {blocks} declares {counts['payload']} payload bytes, "
                                            f"{size - pos} remain)")
            entries = 0
            while pos < end:
                if pos + 4 > end:
                    raise IncompleteReportError(f"{path}: corrupt report (block {blocks}: entry size field "
                                                "crosses the payload end)")
                pos += 4 + struct.unpack("<I", read(4, pos))[0]
                entries += 1
            if pos != end:
                raise IncompleteReportError(f"{path}: corrupt report (block {blocks}: entries overrun the payload)")
            declared = counts["sources"] + counts["results"]
            if entries < declared:
                raise IncompleteReportError(f"{path}: incomplete report (block {blocks} declares {declared} "
                                            f"entries, holds {entries})")
            results += counts["results"]
            range_results += counts["range_results"]
    if results + range_results == 0:
        raise IncompleteReportError(f"{path}: contains no profiled kernel launches (no profile results "
                                    f"in its {blocks} block(s): truncated or unfinished?)")
    return results
