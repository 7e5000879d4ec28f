"""The issue model's stall reasons per instruction, beside a report's per-PC samples.

Nsight Compute's PC sampling (SourceCounters) charges each sample to the instruction a warp
is about to issue, with the reason it is not issuing; the scheduler's ``pc_states`` counts the
model's warp states the same way. Both are normalised per issued instruction of the loop, so
a reason's sum over the loop is the kernel-level ``warps_per_issue`` figure. Where the two part
says which instructions carry a cost the model lacks.

``wait_after_stall`` groups the loop's instructions by the stall count of the instruction
before them (the fixed wait the compiler asked for): on the shipped GPU's FA2 the measured wait after
an instruction of stall count S is S - 1 cycles for S = 1, but about S for S = 4, 5, 7, 8, while
the model waits S - 1 throughout.

``python -m flashprof.analysis.gap.pc_stalls [--write]`` prints (writes
reports/gap/pc_stalls_<gpu>.json) that table and the reasons by opcode for the shipped GPU's reports
of kernels 1-7, 7mma and FA2; for a wgmma loop also by stretch between its warpgroup fences
and waits (``by_region``).
"""
from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

from flashprof.analysis.gap.constants import Machine
from flashprof.analysis.gap.data import REPO
from flashprof.analysis.gap.issue_report import STALL_GROUPS
from flashprof.analysis.gap.loops import LoopCode
from flashprof.analysis.gap.scheduler import simulate
from flashprof.kernels.gpus import SHIPPED

OUT = REPO / "reports" / "gap" / f"pc_stalls_{SHIPPED.slug}.json"
# Nsight Compute's per-PC reasons (load_source_frame's stall_<reason> columns) -> model groups
MEASURED = {"selected": "issued", **{r: g for g, (_mine, theirs) in STALL_GROUPS.items() for r in theirs}}
MODEL = {"issued": "issued", **{s: g for g, (mine, _theirs) in STALL_GROUPS.items() for s in mine}}
SEEDS = (1, 2)


def model_per_pc(code: LoopCode, m: Machine, ctas: int, conflict: float, seeds=SEEDS) -> dict[int, Counter]:
    """Body index -> Counter(group -> warp-cycles), summed over ``seeds`` runs of as many passes
    as the issue model runs the loop (issue_report.passes; a TMA-fed loop with its producer's
    shared-memory writes, issue_report.with_tma_writes)."""
    from flashprof.analysis.gap.issue_report import with_tma_writes, passes

    n_pass, warm = passes(code, ctas)
    opts = dict(with_tma_writes(code, ()))
    pcs: Counter = Counter()
    for s in seeds:
        simulate(list(code.body), m, ctas, code.warps, n_pass, conflict, s, pc_states=pcs,
                 background_wavefronts=opts.get("background_wavefronts", 0.0), warmup=max(1, warm))
    out: dict[int, Counter] = {k: Counter() for k in range(len(code.body))}
    for (k, state), v in pcs.items():
        out[k][MODEL.get(state, state)] += v
    return out


def measured_per_pc(code: LoopCode, frame) -> dict[int, Counter]:
    """Body index -> Counter(group -> samples) from a load_source_frame frame of the same function."""
    by_offset = frame.set_index("pc_offset")
    out: dict[int, Counter] = {}
    for k, i in enumerate(code.body):
        row = by_offset.loc[i.addr]
        out[k] = Counter({g: 0.0 for g in set(MEASURED.values())})
        for reason, g in MEASURED.items():
            col = f"stall_{reason}"
            if col in by_offset.columns:
                out[k][g] += float(row[col])
    return out


def per_issue(per_pc: dict[int, Counter]) -> dict[int, Counter]:
    """Each count over the loop's issued total, times the body length: cycles per execution of
    that instruction (every body instruction runs once per pass)."""
    issued = sum(c["issued"] for c in per_pc.values()) or 1.0
    n = len(per_pc)
    return {k: Counter({g: v * n / issued for g, v in c.items()}) for k, c in per_pc.items()}


def wait_after_stall(code: LoopCode, meas: dict[int, Counter], model: dict[int, Counter]) -> list[dict]:
    """Mean wait cycles at an instruction, by the previous instruction's stall count."""
    groups: dict[int, list[int]] = {}
    for k in range(len(code.body)):
        groups.setdefault(code.body[k - 1].ctrl.stall, []).append(k)
    return [{"prev_stall": s, "instructions": len(ks),
             "measured_wait": sum(meas[k]["wait"] for k in ks) / len(ks),
             "model_wait": sum(model[k]["wait"] for k in ks) / len(ks)} for s, ks in sorted(groups.items())]


def by_opcode(code: LoopCode, meas: dict[int, Counter], model: dict[int, Counter]) -> dict[str, dict]:
    """group -> opcode -> [measured, model] warps per issued instruction of the loop."""
    n = len(code.body)
    out: dict[str, dict] = {}
    for k, i in enumerate(code.body):
        for g in set(meas[k]) | set(model[k]):
            if g == "issued":
                continue
            cell = out.setdefault(g, {}).setdefault(i.base, [0.0, 0.0])
            cell[0] += meas[k][g] / n
            cell[1] += model[k][g] / n
    return out


def by_region(code: LoopCode, meas: dict[int, Counter], model: dict[int, Counter]) -> list[dict]:
    """The loop cut at its warpgroup-MMA fences and waits (WARPGROUP.ARRIVE / DEPBAR: a wgmma
    loop's GEMM issue, its waits and the softmax between): per stretch, warp-cycles per pass of
    one warp in each group, measured and model, and the cycles one pass of the stretch takes
    (issued plus every stall). A loop without them is one stretch."""
    cuts = [k for k, i in enumerate(code.body) if i.base == "WARPGROUP"] or [0]
    if cuts[0] != 0:
        cuts = [0] + cuts
    out = []
    for a, b in zip(cuts, cuts[1:] + [len(code.body)]):
        ks = range(a, b)
        groups = sorted({g for k in ks for g in set(meas[k]) | set(model[k])})
        row = {"first": f"{a}: {code.body[a].op}", "instructions": b - a,
               "measured": {g: sum(meas[k][g] for k in ks) for g in groups},
               "model": {g: sum(model[k][g] for k in ks) for g in groups}}
        row["measured_cycles"] = sum(row["measured"].values())
        row["model_cycles"] = sum(row["model"].values())
        out.append(row)
    return out


def analyse(code: LoopCode, report: Path, m: Machine, ctas: int, conflict: float) -> dict:
    from flashprof.analysis.report.parse import load_source_frame

    meas = per_issue(measured_per_pc(code, load_source_frame(report, 0)))
    model = per_issue(model_per_pc(code, m, ctas, conflict))
    totals = {g: [sum(meas[k][g] for k in meas) / len(meas), sum(model[k][g] for k in model) / len(model)]
              for g in sorted(set(MEASURED.values()) - {"issued"})}
    return {"report": str(report.relative_to(REPO)), "sass": code.source, "instructions": len(code.body),
            "ctas_per_sm": ctas, "warps_per_issue": totals,
            "wait_after_stall": wait_after_stall(code, meas, model), "by_opcode": by_opcode(code, meas, model),
            "by_region": by_region(code, meas, model)}


def shipped_targets() -> dict[str, tuple[LoopCode, Path]]:
    from flashprof.analysis.gap.issue_report import GPUS, H200
    from flashprof.analysis.gap.loops import fa2_loop, kernel_loop

    folder = REPO / SHIPPED.reports
    out = {}
    for t in ("1", "2", "3", "4", "5", "6", "7", "7mma"):
        rep = folder / f"kernel{t}.ncu-rep"
        if rep.is_file():
            slug = json.loads(rep.with_suffix(".json").read_text())["config_slug"]
            out[t] = (kernel_loop(t, GPUS[H200], slug), rep)
    out["ref"] = (fa2_loop(GPUS[H200]), folder / "ref.ncu-rep")
    return out


def conflict_of(report: Path) -> float:
    """The report's shared-memory bank-conflict factor, as the issue model takes it
    (issue_report.h200_evidence): wavefronts over conflict-free wavefronts."""
    from flashprof.analysis.gap.issue_report import CONFLICT_LD, WAVEFRONTS
    from flashprof.analysis.report.parse import load_frame, per_launch

    m = next(iter(per_launch(load_frame([report]))))[2]
    wf, bc = m.get(WAVEFRONTS), m.get(CONFLICT_LD)
    return wf / (wf - bc) if wf and bc is not None and wf > bc else 1.0


def main(argv=None) -> int:
    from flashprof.analysis.gap.constants import machine
    from flashprof.analysis.gap.issue_report import H200, occupancy

    argv = sys.argv[1:] if argv is None else argv
    m = machine(H200)
    result = {"gpu_key": H200, "what": "per issued loop instruction: the report's PC samples and the "
              "model's warp states (scheduler pc_states, seeds 1-2, 8 passes), by group; wait_after_stall: "
              "mean wait cycles at an instruction by its predecessor's stall count", "targets": {}}
    for t, (code, rep) in shipped_targets().items():
        ctas = occupancy(m, code.registers, code.smem_bytes, code.warps)["ctas"]
        r = analyse(code, rep, m, ctas, conflict_of(rep))
        result["targets"][t] = r
        print(f"{t}: wait per issue measured {r['warps_per_issue']['wait'][0]:.2f}, model {r['warps_per_issue']['wait'][1]:.2f}")
        if len(r["by_region"]) > 1:
            for row in r["by_region"]:
                print(f"   from {row['first'][:40]:40s} cycles a pass: measured {row['measured_cycles']:6.0f}, "
                      f"model {row['model_cycles']:6.0f}")
        for row in r["wait_after_stall"]:
            print(f"   after stall {row['prev_stall']:2d} ({row['instructions']:4d} instructions): "
                  f"measured {row['measured_wait']:5.2f}, model {row['model_wait']:5.2f}")
    if "--write" in argv:
        OUT.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
        print(f"wrote {OUT.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
