"""Do cp.async writes take the shared-memory data path? ``ceilings smemshare`` (issue 31/32).

The scheduler charges each LDGSTS.128 the four 128-byte wavefronts it writes on the SM's one
shared-memory data path (128 B/clk, measured), the path LDSM / LDS / STS read and write through.
Two things say that may be wrong on GH100: Nsight Compute counts far fewer shared wavefronts for
the H200 kernels' LDGSTS than four (``report_wavefronts``: kernel 6 and FA2 under one), and the
kernels whose cycles the model over-predicts most (kernels 3-6 and FA2, +4 to +6 %) are the
LDGSTS-fed ones. Kernel 3 moves from +5 % to -10 % and FA2 from +4 % to 0 between a full charge
and none, so the charge is decided by a measurement, not by those kernels' times:
``k_smem_share`` (flashprof/kernels/ceilings/smem_share.cuh) runs ldmatrix.x4 at the path's full
rate beside cp.async from L2, each alone and together. The share is the readers' loss in bytes
per clock over the bytes per clock the fillers wrote beside them: 1 if the fills take the path,
0 if they have their own.

``--sidecar FOLDER`` (after copying a run there) writes ``smemshare.json``; ``--judge`` stores the
share as ``smem_share.json`` beside it (``RESULT``), which constants reads into
``Machine.ldgsts_smem_share``."""
from __future__ import annotations

import json
import statistics
import sys
from pathlib import Path

from flashprof.analysis.gap.ceil_run import same_chip_path, sidecar_head
from flashprof.analysis.gap.data import REPO
from flashprof.kernels.gpus import SHIPPED

FOLDER = REPO / SHIPPED.reports / "smem_share"
RUN = "smemshare.raw.jsonl"
RESULT = FOLDER / "smem_share.json"
NAMES = ("smem_share_ldsm_alone", "smem_share_ldsm_with_cp", "smem_share_cp_alone", "smem_share_cp_with_ldsm")
REPORT_METRICS = ("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum",
                  "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum",
                  "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum", "smsp__inst_executed_op_ldgsts.sum")


def rates(path: Path) -> dict[str, dict]:
    """Per record: B/clk/SM of each repeat (work / cycles) and their median."""
    out = {}
    for line in path.read_text().splitlines():
        if '"record": "measurement"' not in line:
            continue
        r = json.loads(line)
        if r.get("name") not in NAMES or r.get("check") != "ok" or not r.get("cycles"):
            continue
        per = [r["work"] / c for c in r["cycles"] if c > 0]
        out[r["name"]] = {"bytes_per_clk": statistics.median(per), "repeats": per}
    return out


def share(r: dict[str, dict]) -> dict:
    """The data-path bytes the ldmatrix readers lost per byte the cp.async fillers wrote beside
    them, with the inputs; ``None`` where a record is missing or the fillers wrote nothing."""
    need = [n for n in NAMES if n not in r]
    if need:
        return {"share": None, "why": "missing records: " + ", ".join(need)}
    alone, beside = r["smem_share_ldsm_alone"]["bytes_per_clk"], r["smem_share_ldsm_with_cp"]["bytes_per_clk"]
    fill = r["smem_share_cp_with_ldsm"]["bytes_per_clk"]
    fill_alone = r["smem_share_cp_alone"]["bytes_per_clk"]
    if fill <= 0:
        return {"share": None, "why": "the fillers wrote nothing beside the readers"}
    return {"share": (alone - beside) / fill, "ldsm_alone": alone, "ldsm_with_cp": beside,
            "cp_alone": fill_alone, "cp_with_ldsm": fill,
            "cp_slowdown": fill / fill_alone if fill_alone else None}


def report_wavefronts(paths) -> list[dict]:
    """Per Nsight Compute report: the shared wavefronts that are neither loads nor stores, per
    LDGSTS executed (what the profiler counts for cp.async on the data path)."""
    import math

    from flashprof.analysis.report.parse import load_frame, pivot_metrics

    out = []
    for p in paths:
        wide = pivot_metrics(load_frame([Path(p)]), REPORT_METRICS)
        for _, row in wide.iterrows():
            total, ld, st, n = (row.get(k) for k in REPORT_METRICS)
            ok = all(isinstance(v, (int, float)) and math.isfinite(v) for v in (total, ld, st, n)) and n > 0
            out.append({"report": str(p), "kernel": row.get("kernel"),
                        "per_ldgsts": (total - ld - st) / n if ok else None, "ldgsts": n if ok else None})
    return out


def ncu_counts(path: Path) -> dict[str, dict] | None:
    """Nsight Compute's counts on the benchmark itself (``smemshare_ncu.csv``, ``--csv --metrics``
    over each mode's launches): per mode (1 readers, 2 fillers, 3 both) the medians over its
    launches of the shared wavefronts that are neither loads nor stores, per LDGSTS executed, and
    of the load wavefronts per LDSM. ``None`` without the file."""
    import csv
    import re

    if not path.is_file():
        return None
    rows = [r for r in csv.reader(path.read_text().splitlines()) if r]
    head = next((r for r in rows if r[0] == "ID"), None)
    if head is None:
        return None
    col = {k: head.index(k) for k in ("ID", "Kernel Name", "Metric Name", "Metric Value")}
    launches: dict[str, dict] = {}
    for r in rows:
        if r is head or len(r) != len(head):
            continue
        mode = re.search(r"k_smem_share<(\d+)>", r[col["Kernel Name"]])
        val = float(r[col["Metric Value"]].replace(",", ""))
        launches.setdefault(r[col["ID"]], {"mode": mode.group(1) if mode else "?"})[r[col["Metric Name"]]] = val
    out: dict[str, dict] = {}
    for m in launches.values():
        total, ld, st, n = (m.get(k, 0.0) for k in REPORT_METRICS)
        ldsm = m.get("smsp__inst_executed_op_ldsm.sum", 0.0)
        o = out.setdefault(m["mode"], {"per_ldgsts": [], "ld_per_ldsm": []})
        if n:
            o["per_ldgsts"].append((total - ld - st) / n)
        if ldsm:
            o["ld_per_ldsm"].append(ld / ldsm)
    return {k: {f: statistics.median(v) if v else None for f, v in o.items()} | {"launches": max(len(x) for x in o.values())}
            for k, o in sorted(out.items())}


def write_sidecar(folder: Path, command: str = "bash devjobs/ceil_modes.sh smemshare") -> Path:
    rec = sidecar_head(folder, "smemshare", "ceilings smemshare (flashprof/kernels/ceilings/smem_share.cuh): 8 warps of "
                       "ldmatrix.x4 at full rate and 8 warps of cp.async 16 B from an L2-resident slice, one block per "
                       "SM, each alone and together; B/clk/SM from clock64 spans, median over SMs per launch, 5 "
                       "launches after a warm-up", command)
    r = rates(folder / RUN)
    rec.update(per_run=[share(rates(folder / n)) for n in rec["runs"]], rates=r, result=share(r),
               nsight_on_the_benchmark=ncu_counts(folder / "smemshare_ncu.csv"))
    out = folder / "smemshare.json"
    out.write_text(json.dumps(rec, indent=1, sort_keys=True) + "\n")
    return out


def run_folder() -> Path | None:
    """The folder of the shipped GPU's smemshare run: its own, else a same-chip GPU's (the share
    is a property of the SM, which the H100 and H200 share)."""
    side = same_chip_path("smem_share/smemshare.json")
    return side.parent if side else None


def judge(folder: Path | None = None) -> dict:
    """The share the model uses: the run's, clamped to [0, 1], with the two runs' range."""
    folder = folder or run_folder()
    if folder is None:
        raise FileNotFoundError(f"no smemshare.json of the {SHIPPED.chip} chip")
    side = json.loads((folder / "smemshare.json").read_text())
    s = side["result"].get("share")
    runs = [r.get("share") for r in side.get("per_run", []) if r.get("share") is not None]
    rec = {"what": " ".join(share.__doc__.split()), "source": f"measured: {folder.relative_to(REPO)}/smemshare.json "
           f"({side.get('gpu')}, {side.get('created')})", "measured_share": s, "runs": runs,
           "ldgsts_smem_share": None if s is None else round(min(1.0, max(0.0, s)), 2)}
    RESULT.parent.mkdir(parents=True, exist_ok=True)
    RESULT.write_text(json.dumps(rec, indent=1, sort_keys=True) + "\n")
    return rec


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if "--sidecar" in argv:
        print(write_sidecar(Path(argv[argv.index("--sidecar") + 1]).resolve()).relative_to(REPO))
    if "--judge" in argv:
        print(json.dumps(judge(), indent=1))
    if "--reports" in argv:
        for r in report_wavefronts(argv[argv.index("--reports") + 1:]):
            print(r)
    return 0


if __name__ == "__main__":
    sys.exit(main())
