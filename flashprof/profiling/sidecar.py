"""A report's sidecar: the JSON file of the same stem beside each ``.ncu-rep``.

``flashprof profile`` writes it (:meth:`Sidecar.to_json`) and every reader of the analysis
reads it through :meth:`Sidecar.from_json` / :func:`read_sidecar`, so the format lives
here once. Pure data: no torch, no GPU, no subprocess, so the analysis may import it as
upstream data.

Older sidecars are migrated in one place, :meth:`Sidecar.from_json`: the target key was
spelled ``kernel`` before ``target_key``, a user target's also ``target.name``; one that
records only a ``config_slug`` is the series kernel whose config has that slug (if exactly
one has). Keys this module does not know are kept (``extra``) and written back unchanged;
known keys a file lacked stay absent in :meth:`Sidecar.to_json`, so a sidecar read and
written again holds the same data (plus ``target_key`` where it was migrated).
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from flashprof.kernels.cli import FlashprofError

SCHEMA = 1
REPORT_SUFFIX = ".ncu-rep"

# Known fields whose value, when present and not null, must be a JSON object: readers
# index into them. A list or a number there is a malformed sidecar, named as such.
_OBJECTS = ("target", "config", "dispatch", "shape", "gpu", "clocks", "ncu", "correctness",
            "software", "git")
_TEXTS = ("title", "config_slug", "dtype", "correctness_where", "command", "created")


class SidecarError(FlashprofError):
    """A sidecar that cannot be read: not JSON, not an object, or a field of the wrong kind."""


def _given(v) -> bool:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return False
    return str(v) not in ("", "nan", "None")


@dataclass
class Sidecar:
    """One sidecar. ``target_key`` is the target the report measured (``"1"``..``"7"``,
    ``"ref"``, ``"cudnn"``, a user target's name), None when the sidecar records none."""

    target_key: str | None = None
    schema: int | None = SCHEMA
    title: str | None = None
    target: dict | None = None          # a user target: spec, name, file, sha256, git, ...
    config: dict | None = None          # KernelConfig.to_dict() of a series kernel
    config_slug: str | None = None
    dispatch: dict | None = None
    shape: dict | None = None           # Shape.to_dict(): batch, seq, heads, d_head, ...
    dtype: str | None = None
    flops: float | None = None
    gpu: dict | None = None
    clocks: dict | None = None
    ncu: dict | None = None
    correctness: dict | None = None
    correctness_where: str | None = None
    software: dict | None = None
    git: dict | None = None             # this checkout: revision, dirty (null + reason outside one)
    command: str | None = None
    created: str | None = None
    extra: dict = field(default_factory=dict)      # keys this module does not know, kept as read
    absent: frozenset = frozenset()                # known keys the file did not have

    # ------------------------------------------------------------------ reading
    @classmethod
    def from_json(cls, data: Any, where: str | Path = "sidecar") -> "Sidecar":
        """A sidecar from its parsed JSON, old spellings migrated. ``where`` (its file) names
        it in the one-line :class:`SidecarError` a malformed one raises."""
        if not isinstance(data, dict):
            raise SidecarError(f"{where}: sidecar JSON must be an object, not {_kind(data)}")
        known = {f.name for f in fields(cls)} - {"extra", "absent", "target_key"}
        for key in _OBJECTS:
            v = data.get(key)
            if v is not None and not isinstance(v, dict):
                raise SidecarError(f"{where}: sidecar field '{key}' must be an object, not {_kind(v)}")
        for key in _TEXTS:
            v = data.get(key)
            if v is not None and not isinstance(v, str):
                raise SidecarError(f"{where}: sidecar field '{key}' must be a string, not {_kind(v)}")
        for key in ("schema", "flops"):
            v = data.get(key)
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
                raise SidecarError(f"{where}: sidecar field '{key}' must be a number, not {_kind(v)}")
        key = _migrated_key(data)
        extra = {k: v for k, v in data.items() if k not in known and k not in ("target_key", "kernel")}
        if "kernel" in data and (key is None or not _given(data["kernel"]) or str(data["kernel"]) != key):
            extra["kernel"] = data["kernel"]  # a legacy value that is not the key: kept as it was
        if "target_key" in data and (key is None or data["target_key"] != key):
            extra["target_key"] = data["target_key"]  # e.g. an int or an empty string, kept as it was
        absent = frozenset(k for k in known if k not in data)
        return cls(target_key=key, extra=extra, absent=absent, **{k: data.get(k) for k in known})

    @classmethod
    def coerce(cls, side, where: str | Path = "sidecar") -> "Sidecar":
        """A Sidecar as is; a dict parsed; None or {} -> the empty sidecar (no file)."""
        if isinstance(side, cls):
            return side
        if not side:
            return cls.missing()
        return cls.from_json(side, where)

    @classmethod
    def missing(cls) -> "Sidecar":
        """What a report without a sidecar reads as: nothing recorded."""
        return cls(schema=None, absent=frozenset(f.name for f in fields(cls)) - {"extra", "absent"})

    @property
    def exists(self) -> bool:
        """False for :meth:`missing` (a report without a sidecar)."""
        return bool(self.to_json())

    def shape_field(self, name: str) -> float:
        """A shape field as a float (NaN when unrecorded or not a number)."""
        v = (self.shape or {}).get(name)
        return float(v) if isinstance(v, (int, float)) else math.nan

    @property
    def profiler_kernels(self) -> list | None:
        """The kernels one call of a user target launches, as the PyTorch profiler counted them."""
        v = (self.target or {}).get("profiler_kernels")
        return v if isinstance(v, list) else None

    # ------------------------------------------------------------------ writing
    def to_json(self) -> dict:
        """The JSON object to write: the keys today's readers know (``target_key`` and, for
        readers older than it, ``kernel`` with the same value), then the unknown keys."""
        out: dict = {}
        if "schema" not in self.absent:
            out["schema"] = self.schema
        if self.target_key is not None:
            out["target_key"] = self.target_key
            out["kernel"] = self.target_key
        for f in fields(self):
            if f.name in ("schema", "target_key", "extra", "absent") or f.name in self.absent:
                continue
            out[f.name] = getattr(self, f.name)
        out.update(self.extra)
        return out


def _kind(v) -> str:
    return {dict: "an object", list: "a list", str: "a string", bool: "a boolean",
            type(None): "null"}.get(type(v), "a number" if isinstance(v, (int, float)) else type(v).__name__)


def _migrated_key(data: dict) -> str | None:
    """The target key, from today's spelling or an older one (see the module docstring)."""
    user = data.get("target")
    for v in (data.get("target_key"), data.get("kernel"), user.get("name") if isinstance(user, dict) else None):
        if _given(v):
            return str(v)
    slug = data.get("config_slug")
    if _given(slug):
        hits = [k for k, slugs in _series_slugs().items() if str(slug) in slugs]
        if len(hits) == 1:
            return hits[0]
    return None


def _series_slugs() -> dict[str, set[str]]:
    """Target key -> slugs of the configs it runs: the series' config, and for kernel 7
    every config kernels/tuned.json can dispatch it to."""
    from flashprof.kernels import config

    out = {str(n): {c.slug} for n, c in config.VARIANTS.items()}
    out["7"] |= {c.slug for _, _, c in config.tuned_configs()}
    out[config.MMA_SYNC_KEY] = {config.mma_sync_variant(gpu).slug for gpu in config.load_dispatch()}
    return out


# ---------------------------------------------------------------------- files
def sidecar_path(report: str | Path) -> Path:
    """``kernel6.ncu-rep`` -> ``kernel6.json`` (the same stem, beside it)."""
    report = Path(report)
    name = report.name
    stem = name[: -len(REPORT_SUFFIX)] if name.endswith(REPORT_SUFFIX) else report.stem
    return report.with_name(stem + ".json")


def load(path: str | Path) -> Sidecar:
    """The sidecar in the JSON file ``path``; one-line :class:`SidecarError` if unreadable."""
    path = Path(path)
    try:
        data = json.loads(path.read_text())
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise SidecarError(f"{path}: unreadable sidecar JSON: {exc}") from None
    return Sidecar.from_json(data, path)


def read_sidecar(report: str | Path) -> Sidecar:
    """The sidecar of a report (:meth:`Sidecar.missing` when it has none)."""
    side = sidecar_path(report)
    if not side.is_file():
        return Sidecar.missing()
    return load(side)
