"""One record per GPU the project knows by name: every spelling of it in one place.

A GPU is named four ways: its *slug* (``h200``: kernels/tuned.json's key, the reports
folder ``reports/h200``, the ``gpu`` column of bench and tune tables), its *name* as the
driver, torch and Nsight Compute give it (``NVIDIA H200``), its *model key* in
analysis/gpus.json (``h200_sxm``: throughputs with sources for the cross-GPU model) and
its chip (``gh100``, Nsight Compute's chip name). Code that needs one of them looks it up
here by another; nothing else spells a GPU. Pure data and small lookups: profiling and
analysis may both import it; it imports nothing of the project.

A GPU without a record still works everywhere: its slug comes from its name
(``slug_of``), it simply has no colour, model block or published numbers.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Gpu:
    slug: str               # 'h200': tuned.json key, reports/<slug>/, bench 'gpu' column
    name: str               # 'NVIDIA H200': as the driver / torch / Nsight Compute name it
    arch: str               # 'sm_90': what nvcc builds for it
    chip: str               # 'gh100': Nsight Compute's chip name (lower case)
    model_key: str          # 'h200_sxm': its block in analysis/gpus.json
    colour: str             # its colour wherever GPUs are told apart in one chart
    match: tuple[str, ...]  # substrings of a device name that mean this GPU (longest wins)

    @property
    def reports(self) -> str:
        """Its reports folder, relative to the repository root."""
        return reports_folder(self.slug)


GPUS: tuple[Gpu, ...] = (
    Gpu("rtx3090", "NVIDIA GeForce RTX 3090", "sm_86", "ga102", "rtx3090", "#2ca02c", ("RTX 3090",)),
    Gpu("a100_40gb", "NVIDIA A100-SXM4-40GB", "sm_80", "ga100", "a100_40gb", "#17becf",
        ("A100-SXM4-40GB", "A100-PCIE-40GB", "A100 40GB")),
    Gpu("a100", "NVIDIA A100-SXM4-80GB", "sm_80", "ga100", "a100_80gb", "#1f77b4",
        ("A100-SXM4-80GB", "A100 80GB", "A100")),
    Gpu("h100", "NVIDIA H100 80GB HBM3", "sm_90", "gh100", "h100_sxm", "#ff7f0e", ("H100",)),
    Gpu("h200", "NVIDIA H200", "sm_90", "gh100", "h200_sxm", "#d62728", ("H200",)),
)

#: The GPU the shipped reports (reports/h200) and figures come from.
SHIPPED: Gpu = next(g for g in GPUS if g.slug == "h200")

_BY_SLUG = {g.slug: g for g in GPUS}
_BY_MODEL_KEY = {g.model_key: g for g in GPUS}


def reports_folder(slug: str) -> str:
    """'reports/<slug>' (relative to the repository root) for any slug, known or not."""
    return f"reports/{slug}"


def by_slug(slug: str) -> Gpu | None:
    return _BY_SLUG.get(str(slug))


def by_model_key(key: str) -> Gpu | None:
    return _BY_MODEL_KEY.get(str(key))


def _norm(s: str) -> str:
    return str(s).lower().replace(" ", "").replace("-", "")


def by_name(name: str) -> Gpu | None:
    """The record whose longest ``match`` pattern occurs in a device name ('NVIDIA H200',
    'GeForce RTX 3090', 'NVIDIA A100-SXM4-80GB'; case, spaces and dashes ignored)."""
    norm = _norm(name or "")
    best, best_len = None, 0
    for g in GPUS:
        for pat in g.match:
            p = _norm(pat)
            if p in norm and len(p) > best_len:
                best, best_len = g, len(p)
    return best


def slug_of(name: str) -> str:
    """The slug of a device name: its record's, else one made from the name
    ('NVIDIA GeForce RTX 4090' -> 'rtx4090'; 'gpu' for an empty name)."""
    g = by_name(name)
    if g is not None:
        return g.slug
    s = str(name).lower().replace("nvidia", "").replace("geforce", "").strip().replace(" ", "")
    for sep in ("-", "_"):
        s = s.split(sep)[0]
    return "".join(ch for ch in s if ch.isalnum()) or "gpu"
