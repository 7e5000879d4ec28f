"""Warpgroup MMA with instructions issued while it runs (the ceilings binary's ``wgmix`` mode):
measured rate against the rate independent resources would allow (pure; records in, frame out).

Input: the ``measurement`` records of ``ceilings wgmix`` (``wgmma_mix.raw.jsonl``), the
measured per-SM peaks of the same chip (``ceilings.json``: wgmma_f16_f32, ffma, mufu_ex2) and,
optionally, per point the Nsight Compute metrics of the same kernels (``nsight_points``).
Output: one row per point (kind, K instructions per HGMMA, A from registers or not) with

* ``flop_per_clk_sm``: measured HGMMA FLOP per SM clock (work / cycles, median over repeats);
* ``rel``: that rate over the same form's (SS or RS) K = 0 rate;
* ``bound``: what independent resources allow, as a fraction of the K = 0 rate. A round is
  both warpgroups' groups of 8 HGMMA.64x128x16 (16 x ``wgmma_cycles`` on the tensor pipe);
  each scheduler then issues 2 x 8 x K instructions of the kind (one warp of each warpgroup),
  one per cycle at most, on their own pipe(s) at its measured rate (FMNMX at the ALU pipe's
  ``mma_mix.ALU_LANES``, IMAD at the FFMA rate); the round lasts the longest of these;
* ``missing_pct``: 100 x (1 - rel / bound), the cost such a model does not produce;
* Nsight Compute columns where given: issue active, tensor / FMA / ALU / XU pipe %, and the
  stall reasons dispatch_stall, math_pipe_throttle, wait, not_selected (warps per issued
  instruction), medians over the point's full-grid launches.
"""
from __future__ import annotations

import json
import re
import statistics
from pathlib import Path

import pandas as pd

from flashprof.analysis.stages import mma_mix
from flashprof.analysis.stages.mma_mix import ALU_LANES, load_records

WARPGROUPS = 2                   # wgmma_mix.cuh kWgmmaWarpgroups
PER_GROUP = 8                    # HGMMA per committed group (kWgmmaPerGroup)
HGMMA_FLOP = 2 * 64 * 128 * 16   # one HGMMA.64x128x16
SCHEDULERS = 4
WARP = 32
_NAME = re.compile(r"^wgmma_mix_(?P<kind>[a-z0-9]+)_k(?P<k>\d+)(?P<rs>_rs)?$")
# ceilings' function name of a point: k_wgmma_mix<KIND, K, RS> (wgmma_mix.cuh WgmixKind numbers)
_FUNCTION = re.compile(r"k_wgmma_mixILi(\d)ELi(\d+)ELb([01])E")
KIND_NUMBER = {0: "none", 1: "ffma", 2: "imad", 3: "ex2", 4: "fmnmx", 6: "ffma3", 7: "fadd", 8: "softmax"}
NSIGHT = {
    "issue_active_pct": "smsp__issue_active.avg.pct_of_peak_sustained_active",
    "tensor_pipe_pct": "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active",
    "fma_pipe_pct": "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active",
    "alu_pipe_pct": "sm__pipe_alu_cycles_active.avg.pct_of_peak_sustained_active",
    "xu_pipe_pct": "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active",
    "dispatch_stall": "smsp__average_warps_issue_stalled_dispatch_stall_per_issue_active.ratio",
    "math_pipe_throttle": "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio",
    "wait": "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio",
    "not_selected": "smsp__average_warps_issue_stalled_not_selected_per_issue_active.ratio",
}
COLUMNS = ("name", "kind", "k", "rs", "flop_per_clk_sm", "spread_pct", "rel", "bound", "bound_by",
           "missing_pct", "check")


def parse_name(name: str) -> tuple[str, int, bool]:
    """(kind, K, A from registers) of a record name ``wgmma_mix_<kind>_k<K>[_rs]``."""
    m = _NAME.match(name)
    if not m:
        raise ValueError(f"not a wgmma mix record: {name!r}")
    return m["kind"], int(m["k"]), bool(m["rs"])


def point_of_function(function: str) -> str | None:
    """The record name of a ``k_wgmma_mix<KIND, K, RS>`` function (mangled), or None."""
    m = _FUNCTION.search(function or "")
    if not m or int(m.group(1)) not in KIND_NUMBER:
        return None
    return f"wgmma_mix_{KIND_NUMBER[int(m.group(1))]}_k{int(m.group(2))}{'_rs' if m.group(3) == '1' else ''}"


def wgmix_frame(records: list[dict], peaks: dict[str, float], nsight: dict[str, dict] | None = None) -> pd.DataFrame:
    """Rows per point (module docstring). ``peaks``: per-SM ``wgmma_f16_f32`` (FLOP/clk),
    ``ffma`` (FLOP/clk), ``mufu_ex2`` (op/clk); ``nsight``: record name -> NSIGHT columns."""
    round_cycles = WARPGROUPS * PER_GROUP * HGMMA_FLOP / peaks["wgmma_f16_f32"]
    fma = peaks["ffma"] / 2 / WARP / SCHEDULERS  # warp instructions per cycle per scheduler
    xu, alu = peaks["mufu_ex2"] / WARP / SCHEDULERS, ALU_LANES / WARP / SCHEDULERS
    # per kind: {pipe: (share of the kind's instructions, that pipe's warp instructions per cycle)};
    # IMAD at the FFMA rate (an assumption, as in mma_mix); softmax: FFMA, FMUL, FADD, FMNMX, EX2 in turn
    pipes = {"ffma": {"fma": (1, fma)}, "ffma3": {"fma": (1, fma)}, "fadd": {"fma": (1, fma)},
             "imad": {"fma": (1, fma)}, "ex2": {"xu": (1, xu)}, "fmnmx": {"alu": (1, alu)},
             "softmax": {"fma": (0.6, fma), "alu": (0.2, alu), "xu": (0.2, xu)}}
    rows = []
    for rec in records:
        kind, k, rs = parse_name(rec["name"])
        rates = [rec["work"] / c for c in rec["cycles"] if c > 0]
        rate = statistics.median(rates) if rates else float("nan")
        spread = 100 * (max(rates) - min(rates)) / rate if len(rates) > 1 else float("nan")
        n = WARPGROUPS * PER_GROUP * k  # instructions per scheduler per round
        limits = {"tensor pipe": 1.0}
        if k:
            limits["issue slots"] = min(1.0, round_cycles / (n + WARPGROUPS * PER_GROUP))
            for pipe_name, (share, per_clk) in pipes[kind].items():
                limits[f"{pipe_name} pipe"] = min(1.0, round_cycles * per_clk / (share * n))
        bound_by = min(limits, key=limits.get)
        row = {"name": rec["name"], "kind": kind, "k": k, "rs": rs, "flop_per_clk_sm": rate, "spread_pct": spread,
               "bound": limits[bound_by], "bound_by": bound_by, "check": rec["check"]}
        for col in NSIGHT:
            row[col] = (nsight or {}).get(rec["name"], {}).get(col, float("nan"))
        rows.append(row)
    cols = [c for c in COLUMNS if c not in ("rel", "missing_pct")] + list(NSIGHT)
    df = pd.DataFrame(rows, columns=cols)
    base = {r: df[(df["k"] == 0) & (df["rs"] == r)]["flop_per_clk_sm"].median() for r in (True, False)}
    df["rel"] = [v / base[r] for v, r in zip(df["flop_per_clk_sm"], df["rs"])]
    df["missing_pct"] = 100 * (1 - df["rel"] / df["bound"])
    keep = list(COLUMNS) + (list(NSIGHT) if nsight else [])
    return df[keep].sort_values(["kind", "rs", "k"]).reset_index(drop=True)


def nsight_points(launches: list[tuple[str, int, dict]]) -> dict[str, dict]:
    """Per record name, the median of each NSIGHT column over its full-grid launches.
    ``launches``: (mangled function name, grid size, {metric name: value}) per profiled launch;
    the 1-block probe each point starts with is left out (the largest grid per point is kept)."""
    by: dict[str, list[tuple[int, dict]]] = {}
    for fn, grid, metrics in launches:
        name = point_of_function(fn)
        if name:
            by.setdefault(name, []).append((grid, metrics))
    out = {}
    for name, runs in by.items():
        top = max(g for g, _ in runs)
        full = [m for g, m in runs if g == top]
        out[name] = {col: statistics.median(float(m[metric]) for m in full) if all(metric in m for m in full)
                     else float("nan") for col, metric in NSIGHT.items()}
    return out


def peaks_from_ceilings(path: Path) -> dict[str, float]:
    """The three per-SM rates wgmix_frame needs, from a ceilings.json (make ceilings)."""
    return mma_mix.peaks_from_ceilings(path, ("wgmma_f16_f32", "ffma", "mufu_ex2"))


def markdown(df: pd.DataFrame) -> str:
    """The frame as a Markdown table (one row per point)."""
    ns = "dispatch_stall" in df.columns
    head = ("| interleaved | K per HGMMA | A | FLOP/clk/SM | rate vs K=0 | bound (independent resources) | bound by | missing |"
            + (" dispatch stall | math pipe throttle | FMA / ALU / XU pipe % |" if ns else ""))
    lines = [head, "|---|---|---|---|---|---|---|---|" + ("---|---|---|" if ns else "")]
    for r in df.to_dict("records"):
        line = (f"| {r['kind']} | {r['k']} | {'registers' if r['rs'] else 'smem'} | {r['flop_per_clk_sm']:.0f} | "
                f"{r['rel']:.3f} | {r['bound']:.3f} | {r['bound_by']} | {r['missing_pct']:+.1f} % |")
        if ns:
            line += (f" {r['dispatch_stall']:.2f} | {r['math_pipe_throttle']:.2f} | "
                     f"{r['fma_pipe_pct']:.0f} / {r['alu_pipe_pct']:.0f} / {r['xu_pipe_pct']:.0f} |")
        lines.append(line)
    return "\n".join(lines) + "\n"


def read_launches(report: Path) -> list[tuple[str, int, dict]]:
    """(mangled function, grid size, NSIGHT metrics) of every launch of a report (ncu_report)."""
    from flashprof.analysis.report.ncu_extract import ncu_report, open_report

    rep = open_report(Path(report))
    mangled = ncu_report().IAction.NameBase_MANGLED
    out = []
    for r in range(rep.num_ranges()):
        rng = rep.range_by_idx(r)
        for j in range(rng.num_actions()):
            a = rng.action_by_idx(j)
            grid = a.metric_by_name("launch__grid_size")
            metrics = {}
            for metric in NSIGHT.values():
                m = a.metric_by_name(metric)
                if m is not None and m.value() is not None:
                    metrics[metric] = float(m.value())
            out.append((a.name(mangled), int(grid.value()) if grid is not None else 0, metrics))
    return out


def load_launches(path: Path) -> list[tuple[str, int, dict]]:
    """``read_launches`` of a report, or the same list saved as JSON on the GPU machine
    ([{"function", "grid", "metrics"}]: a report too large to bring back)."""
    if Path(path).suffix == ".json":
        return [(d["function"], int(d["grid"]), d["metrics"]) for d in json.loads(Path(path).read_text())]
    return read_launches(path)


def main(argv: list[str] | None = None) -> int:
    """``python -m flashprof.analysis.stages.wgmma_mix RAW CEILINGS_JSON OUT_CSV [NCU_REPORT | LAUNCHES_JSON]``."""
    import sys

    args = list(argv if argv is not None else sys.argv[1:])
    raw, ceilings, out = args[:3]
    ns = nsight_points(load_launches(Path(args[3]))) if len(args) > 3 else None
    df = wgmix_frame(load_records(Path(raw)), peaks_from_ceilings(Path(ceilings)), ns)
    df.to_csv(out, index=False, float_format="%.6g")
    Path(out).with_suffix(".md").write_text(markdown(df))
    print(markdown(df), end="")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
