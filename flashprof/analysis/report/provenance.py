"""How a report was made, read from the report file itself (no sidecar needed).

Nsight Compute stores, with the profiled process, the Nsight Compute version that ran it
("Nsight Compute Target ... 2025.3.1.0 (build 36398880)") and the full ``ncu`` command line.
This reads both from the file's bytes (the ncu_report API exposes neither) and derives the
clock and cache control the command line set (ncu's defaults where it sets none:
``--clock-control base``, ``--cache-control all``). Absent pieces are None.
"""
from __future__ import annotations

import re
import shlex
from functools import lru_cache
from pathlib import Path

_VERSION = re.compile(rb"Nsight Compute Target.{0,8}?(\d{4}\.\d+\.\d+(?:\.\d+)?) \(build (\d+)\)", re.S)
# A printable run holding an ncu executable followed by options.
_RUN = re.compile(rb"[\x20-\x7e]{6,}")
_NCU = re.compile(r'(?:^|[\s/\\])ncu(?:\.exe)?"?(?=\s+-)')
_PATH_START = re.compile(r'"?[A-Za-z]:\\|(?<![\w.])/')
_DEFAULTS = {"clock_control": "base", "cache_control": "all"}


def _command_line(blob: bytes) -> str | None:
    for run in _RUN.finditer(blob):
        text = run.group().decode("ascii")
        hit = _NCU.search(text)
        if not hit:
            continue
        # The run may start with a protobuf length byte that happens to be printable: begin
        # at the executable's path (Unix or a drive letter, quoted or not), else at "ncu".
        path = _PATH_START.search(text, 0, hit.end())
        start = path.start() if path else hit.start() + (text[hit.start()] in " /\\")
        return text[start:].strip()
    return None


def _option(args: list[str], name: str) -> str | None:
    for i, a in enumerate(args):
        if a == name and i + 1 < len(args):
            return args[i + 1]
        if a.startswith(name + "="):
            return a.split("=", 1)[1]
    return None


@lru_cache(maxsize=256)
def _read(path: str, size: int, mtime: float) -> dict:
    blob = Path(path).read_bytes()
    out: dict = {"ncu_version": None, "ncu_build": None, "command_line": None,
                 "clock_control": None, "cache_control": None}
    v = _VERSION.search(blob)
    if v:
        out["ncu_version"], out["ncu_build"] = v.group(1).decode(), v.group(2).decode()
    cmd = _command_line(blob)
    if cmd:
        out["command_line"] = cmd
        try:
            args = shlex.split(cmd, posix=True)
        except ValueError:
            args = cmd.split()
        for key, opt in (("clock_control", "--clock-control"), ("cache_control", "--cache-control")):
            out[key] = _option(args, opt) or f"{_DEFAULTS[key]} (ncu default)"
    return out


def embedded(path) -> dict:
    """{ncu_version, ncu_build, command_line, clock_control, cache_control} of one report file;
    every value None where the file does not hold it (or cannot be read)."""
    p = Path(path)
    try:
        st = p.stat()
        return dict(_read(str(p), st.st_size, st.st_mtime))
    except OSError:
        return dict.fromkeys(("ncu_version", "ncu_build", "command_line", "clock_control", "cache_control"))
