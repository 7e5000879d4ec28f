"""HMMA with interleaved instructions (the ceilings binary's ``mix`` mode): measured rate
against the rate that independent resources would allow (pure; raw records in, frame out).

Input: the ``measurement`` records of ``ceilings mix`` (``mma_mix.raw.jsonl``) and the
measured per-SM peaks of the same GPU (``ceilings.json``: mma_f16_f32, ffma, mufu_ex2).
Output: one row per point (kind, K interleaved instructions per HMMA, operand reuse) with

* ``hmma_per_clk_sm``: measured HMMA.16816 per SM clock (work / cycles, median over repeats);
* ``rel``: that rate over the same reuse setting's K = 0 rate;
* ``bound``: what an issue model with independent resources predicts (as a fraction of
  the K = 0 rate): one instruction issued per scheduler per cycle, the tensor pipe taking
  one HMMA every ``interval`` cycles, and the other instruction's pipe its measured rate;
  the minimum of the three limits (IMAD is assumed to issue at the FFMA pipe's rate, FMNMX at
  the ALU pipe's ``ALU_LANES`` and the integer adds, which ptxas splits between IADD3 on the ALU
  pipe and IMAD.IADD on the FMA pipe, at both pipes' rates together: labelled assumptions);
* ``missing_pct``: 100 x (1 - rel / bound), the cost such a model does not produce.
"""
from __future__ import annotations

import json
import statistics
from pathlib import Path

import pandas as pd

HMMA_FLOP = 2 * 16 * 8 * 16     # one mma.sync m16n8k16
SCHEDULERS = 4                   # warp schedulers (sub-partitions) per SM
WARP = 32
# ALU-pipe results per clock per SM on sm_80 / sm_86 / sm_90: CUDA C++ Programming Guide,
# "Arithmetic Instructions" throughput table (32-bit integer add, compare, min/max: 64)
ALU_LANES = 64
COLUMNS = ("name", "kind", "k", "reuse", "hmma_per_clk_sm", "spread_pct", "rel", "bound", "bound_by",
           "missing_pct", "check")


def load_records(path: Path) -> list[dict]:
    """The measurement records of a ``ceilings mix`` output (JSON lines)."""
    out = []
    for line in Path(path).read_text().splitlines():
        line = line.strip()
        if line.startswith("{"):
            rec = json.loads(line)
            if rec.get("record") == "measurement" and rec.get("kind") == "mix":
                out.append(rec)
    return out


def _parse_name(name: str) -> tuple[str, int, bool]:
    # mma_mix_<kind>_k<K>[_noreuse]
    parts = name.split("_")
    return parts[2], int(parts[3][1:]), not name.endswith("_noreuse")


def mix_frame(records: list[dict], peaks: dict[str, float]) -> pd.DataFrame:
    """Rows per point (see the module docstring). ``peaks``: measured per-SM rates,
    ``mma_f16_f32`` (FLOP/clk/SM), ``ffma`` (FLOP/clk/SM), ``mufu_ex2`` (op/clk/SM)."""
    interval = HMMA_FLOP * SCHEDULERS / peaks["mma_f16_f32"]          # cycles per HMMA per scheduler
    per_sched = {  # warp instructions per cycle per scheduler of the interleaved pipe
        "ffma": peaks["ffma"] / 2 / WARP / SCHEDULERS,
        "ffma3": peaks["ffma"] / 2 / WARP / SCHEDULERS,  # the same FFMA, three registers read
        "imad": peaks["ffma"] / 2 / WARP / SCHEDULERS,  # assumed: IMAD at the FMA pipe's rate
        "ex2": peaks["mufu_ex2"] / WARP / SCHEDULERS,
        "fmnmx": ALU_LANES / WARP / SCHEDULERS,
        "iadd": (ALU_LANES + peaks["ffma"] / 2) / WARP / SCHEDULERS,
    }
    rows = []
    for rec in records:
        kind, k, reuse = _parse_name(rec["name"])
        rates = [rec["work"] / HMMA_FLOP / c for c in rec["cycles"] if c > 0]
        rate = statistics.median(rates) if rates else float("nan")
        spread = 100 * (max(rates) - min(rates)) / rate if len(rates) > 1 else float("nan")
        limits = {"tensor pipe": 1.0}
        if k:
            limits["issue slots"] = min(1.0, interval / (1 + k))
            limits[f"{kind} pipe"] = min(1.0, interval * per_sched[kind] / k)
        bound_by = min(limits, key=limits.get)
        rows.append({"name": rec["name"], "kind": kind, "k": k, "reuse": reuse, "hmma_per_clk_sm": rate,
                     "spread_pct": spread, "bound": limits[bound_by], "bound_by": bound_by, "check": rec["check"]})
    df = pd.DataFrame(rows, columns=[c for c in COLUMNS if c not in ("rel", "missing_pct")])
    base = {r: df[(df["k"] == 0) & (df["reuse"] == r)]["hmma_per_clk_sm"].median() for r in (True, False)}
    df["rel"] = [v / base[r] for v, r in zip(df["hmma_per_clk_sm"], df["reuse"])]
    df["missing_pct"] = 100 * (1 - df["rel"] / df["bound"])
    return df[list(COLUMNS)].sort_values(["kind", "reuse", "k"], ascending=[True, False, True]).reset_index(drop=True)


def peaks_from_ceilings(path: Path, want=("mma_f16_f32", "ffma", "mufu_ex2")) -> dict[str, float]:
    """Per-SM throughputs from a ceilings.json (make ceilings): by default the three mix_frame needs."""
    doc = json.loads(Path(path).read_text())
    want = set(want)
    got = {m["name"]: m["value"] for m in doc["measurements"] if m["name"] in want and m["kind"] == "throughput"}
    missing = want - set(got)
    if missing:
        raise KeyError(f"{path}: no {', '.join(sorted(missing))} throughput")
    return got


def markdown(df: pd.DataFrame) -> str:
    """The frame as a Markdown table (one row per point)."""
    head = "| interleaved | K per HMMA | operand reuse | HMMA/clk/SM | rate vs K=0 | bound (independent resources) | bound by | missing |"
    lines = [head, "|---|---|---|---|---|---|---|---|"]
    for r in df.to_dict("records"):
        lines.append(f"| {r['kind']} | {r['k']} | {'yes' if r['reuse'] else 'no'} | {r['hmma_per_clk_sm']:.3f} | "
                     f"{r['rel']:.3f} | {r['bound']:.3f} | {r['bound_by']} | {r['missing_pct']:+.1f} % |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """``python -m flashprof.analysis.stages.mma_mix RAW CEILINGS_JSON OUT_CSV``: the table of one run."""
    import sys

    raw, ceilings, out = (argv if argv is not None else sys.argv[1:])[:3]
    df = mix_frame(load_records(Path(raw)), peaks_from_ceilings(Path(ceilings)))
    df.to_csv(out, index=False, float_format="%.6g")
    print(markdown(df), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
