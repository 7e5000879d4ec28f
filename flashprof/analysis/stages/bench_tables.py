"""Bench stage: benchmark and static-SASS tables -> small derived frames (pure functions).

Input: frames read from ``reports/<gpu>/bench.csv`` (target, seq, tflops, ...),
``reports/<gpu>/autotune.csv`` (one row per kernel-7 candidate x S, ``config`` = JSON of
the KernelConfig fields, ``ref_tflops`` = FA2 measured in the same session),
``reports/<gpu>/autotune_static.csv`` (keep/reason per candidate) and
``reports/sass/opcodes.csv`` (static opcode counts per kernel/arch/dtype).
Output: frames for the plot stage; nothing is read or drawn here.

Headline convention (the seed's): harmonic mean over S of TFLOP/s, as % of the
reference's harmonic mean over the same S.
"""
from __future__ import annotations

import json
import math

import pandas as pd

from flashprof.kernels.common import harmonic_mean
from flashprof.kernels.config import VARIANTS

SASS_ARCH, SASS_DTYPE = "sm_90", "fp16"
# The RTX 3090 winner of the kernel series (kernel 7's fallback config, kernels/config.py),
# as the fields the sweep varies.
SEED_3090_CONFIG = {k: v for k, v in VARIANTS[7].to_dict().items()
                    if k in ("B_r", "B_c", "n_warps", "Q_mma_load_K_fragments", "K_mma_load_K_fragments",
                             "V_mma_load_K_fragments", "mma_double_buffer_loads", "optimized_softmax")}
# Candidate parameters of the sweep; "tile" is the combined B_r x B_c x warps shape.
TILE = "tile"
FRAGMENTS = "fragments"
SWEEP_PARAMS = (TILE, "B_r", "B_c", "n_warps", FRAGMENTS, "mma_double_buffer_loads",
                "optimized_softmax")
PARAM_LABELS = {TILE: "tile B_r\u00d7B_c\u00d7warps", "B_r": "B_r", "B_c": "B_c", "n_warps": "warps",
                FRAGMENTS: "Q/K/V fragments", "mma_double_buffer_loads": "register double buffer",
                "optimized_softmax": "optimised softmax"}


def bench_headline(bench: pd.DataFrame, ref: str = "ref", at_seq: int | None = 4096) -> pd.DataFrame:
    """Per target: harmonic mean of TFLOP/s over the S it shares with ``ref``, that as %
    of the reference's harmonic mean, and (``at_seq``) the % of the reference at one S."""
    b = bench.assign(target=bench["target"].astype(str))
    ref_rows = b[b["target"] == ref]
    ref_seqs = set(ref_rows["seq"])
    ref_at = ref_rows.loc[ref_rows["seq"] == at_seq, "tflops"]
    rows = []
    for t, s in b.groupby("target", sort=False):
        s = s[s["seq"].isin(ref_seqs)] if ref_seqs else s
        at = s.loc[s["seq"] == at_seq, "tflops"]
        rows.append({"target": t, "n_seq": len(s), "hm_tflops": harmonic_mean(s["tflops"]),
                     "pct_at_seq": (100 * float(at.iloc[0]) / float(ref_at.iloc[0])
                                    if len(at) and len(ref_at) else math.nan)})
    out = pd.DataFrame(rows, columns=["target", "n_seq", "hm_tflops", "pct_at_seq"])
    ref_hm = out.loc[out["target"] == ref, "hm_tflops"]
    out["pct_of_ref_hm"] = 100 * out["hm_tflops"] / ref_hm.iloc[0] if len(ref_hm) else math.nan
    out["at_seq"] = at_seq
    return out


def pct_of_ref(bench: pd.DataFrame, ref: str = "ref") -> pd.DataFrame:
    """bench rows with ``pct`` = 100 x tflops / reference tflops at the same S (and dtype)."""
    b = bench.assign(target=bench["target"].astype(str))
    keys = ["seq"] + (["dtype"] if "dtype" in b.columns else [])
    r = b[b["target"] == ref][keys + ["tflops"]].rename(columns={"tflops": "_ref"})
    out = b.merge(r, on=keys, how="left")
    out["pct"] = 100 * out["tflops"] / out["_ref"]
    return out.drop(columns="_ref")


def batch_note(bench: pd.DataFrame) -> str:
    """'B16 for S<=4096, B8 at S=8192, B4 at S=16384' from the bench rows."""
    if "batch" not in bench.columns:
        return "batch not recorded"
    per = bench.groupby("seq")["batch"].agg(lambda s: sorted({int(v) for v in s}))
    parts, run = [], []
    for seq, batches in per.items():
        label = "/".join(f"B{b}" for b in batches)
        if run and run[-1][0] == label:
            run[-1][2] = seq
        else:
            run.append([label, seq, seq])
    for label, lo, hi in run:
        if lo == hi:
            parts.append(f"{label} at S={lo}")
        elif lo == min(per.index):
            parts.append(f"{label} for S\u2264{hi}")
        else:
            parts.append(f"{label} for S={lo}\u2013{hi}")
    return ", ".join(parts)


def sass_deltas(opcodes: pd.DataFrame, arch: str = SASS_ARCH, dtype: str = SASS_DTYPE) -> pd.DataFrame:
    """Static opcode count change between consecutive kernels (a -> b) for one arch/dtype."""
    o = opcodes[(opcodes["arch"] == arch) & (opcodes["dtype"] == dtype)]
    wide = o.pivot_table(index="opcode", columns="kernel", values="count", aggfunc="sum", fill_value=0)
    ks = sorted(wide.columns, key=lambda k: (not str(k).isdigit(), int(k) if str(k).isdigit() else 0, str(k)))
    rows = []
    for a, b in zip(ks, ks[1:]):
        for op in wide.index:
            ca, cb = wide.at[op, a], wide.at[op, b]
            rows.append({"a": str(a), "b": str(b), "opcode": op, "count_a": ca, "count_b": cb, "delta": cb - ca})
    return pd.DataFrame(rows, columns=["a", "b", "opcode", "count_a", "count_b", "delta"])


# --------------------------------------------------------------------------- autotune
def _config_fields(cfg) -> dict:
    c = json.loads(cfg) if isinstance(cfg, str) else dict(cfg)
    return {
        "B_r": int(c["B_r"]), "B_c": int(c["B_c"]), "n_warps": int(c["n_warps"]),
        TILE: f"{int(c['B_r'])}\u00d7{int(c['B_c'])}\u00d7{int(c['n_warps'])}w",
        FRAGMENTS: (f"Q{c.get('Q_mma_load_K_fragments', 0)}/K{c.get('K_mma_load_K_fragments', 0)}"
                    f"/V{c.get('V_mma_load_K_fragments', 0)}"),
        "Q_mma_load_K_fragments": int(c.get("Q_mma_load_K_fragments", 0)),
        "K_mma_load_K_fragments": int(c.get("K_mma_load_K_fragments", 0)),
        "V_mma_load_K_fragments": int(c.get("V_mma_load_K_fragments", 0)),
        "mma_double_buffer_loads": bool(c.get("mma_double_buffer_loads", False)),
        "optimized_softmax": bool(c.get("optimized_softmax", False)),
    }


def autotune_table(sweep: pd.DataFrame, seqs=None) -> pd.DataFrame:
    """One row per candidate (slug): harmonic-mean TFLOP/s over ``seqs`` (default: every S
    the sweep timed), % of FA2 (harmonic mean of the FA2 timings of the same rows), the
    config fields, rank (1 = fastest), ``winner`` and ``seed_3090`` flags. Candidates
    missing an S are kept with NaN headline numbers and ranked last."""
    s = sweep if seqs is None else sweep[sweep["seq"].isin(list(seqs))]
    want = sorted(s["seq"].unique())
    rows = []
    for slug, g in s.groupby("slug", sort=False):
        full = sorted(g["seq"].unique()) == want
        hm = harmonic_mean(g["tflops"]) if full else math.nan
        ref_hm = harmonic_mean(g["ref_tflops"]) if full and "ref_tflops" in g else math.nan
        row = {"slug": slug, "n_seq": g["seq"].nunique(), "hm_tflops": hm,
               "ref_hm_tflops": ref_hm, "pct_of_ref_hm": 100 * hm / ref_hm if ref_hm else math.nan,
               **{f"tflops_s{int(q)}": float(t) for q, t in zip(g["seq"], g["tflops"])},
               **_config_fields(g["config"].iloc[0])}
        rows.append(row)
    out = pd.DataFrame(rows)
    if out.empty:
        return out
    out = out.sort_values(["hm_tflops", "slug"], ascending=[False, True], na_position="last").reset_index(drop=True)
    out["rank"] = range(1, len(out) + 1)
    out["winner"] = out["rank"] == 1
    out["seed_3090"] = [all(_config_fields_match(r, SEED_3090_CONFIG)) for r in out.to_dict("records")]
    return out


def _config_fields_match(row: dict, want: dict):
    return [row.get(k) == v for k, v in want.items()]


def parameter_importance(table: pd.DataFrame, params=SWEEP_PARAMS, value: str = "hm_tflops") -> pd.DataFrame:
    """How much of the spread in ``value`` each parameter explains: eta squared (between-
    group sum of squares / total sum of squares) when candidates are grouped by that
    parameter alone; 1 = the parameter fixes the result, 0 = it does not matter."""
    t = table.dropna(subset=[value])
    total = float(((t[value] - t[value].mean()) ** 2).sum())
    rows = []
    for p in params:
        if p not in t.columns:
            continue
        g = t.groupby(p)[value]
        between = float((g.count() * (g.mean() - t[value].mean()) ** 2).sum())
        rows.append({"param": p, "label": PARAM_LABELS.get(p, p), "levels": int(g.ngroups),
                     "eta2": between / total if total else math.nan})
    out = pd.DataFrame(rows, columns=["param", "label", "levels", "eta2"])
    return out.sort_values("eta2", ascending=False).reset_index(drop=True)


def static_prune_counts(static: pd.DataFrame) -> pd.DataFrame:
    """Candidates kept / pruned by static checks, grouped by reason family ('kept',
    'register spills', 'config rule', else the reason's text before ':')."""
    keep = static["keep"].astype(str).str.lower().isin(["true", "1", "yes"])

    def family(reason, kept) -> str:
        if kept:
            return "kept (timed)"
        r = "" if pd.isna(reason) else str(reason)
        if r.startswith("spills"):
            return "pruned: register spills"
        if r.startswith("config rule"):
            return "pruned: config rule"
        return "pruned: " + (r.split(":", 1)[0] or "unknown")

    fam = [family(r, k) for r, k in zip(static.get("reason", [None] * len(static)), keep)]
    out = pd.Series(fam).value_counts().rename_axis("reason").reset_index(name="count")
    out["kept"] = out["reason"].str.startswith("kept")
    return out.sort_values(["kept", "count"], ascending=[False, False]).reset_index(drop=True)


__all__ = ["FRAGMENTS", "PARAM_LABELS", "SEED_3090_CONFIG", "SWEEP_PARAMS", "TILE", "autotune_table",
           "batch_note", "bench_headline", "harmonic_mean", "parameter_importance", "pct_of_ref",
           "sass_deltas", "static_prune_counts"]
