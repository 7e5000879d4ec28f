"""The yield / operand-reuse probe (issue 31): what a cleared yield bit and missing reuse flags
cost, measured on the H200 against the issue model's prediction (which reads neither).

The probe (flashprof/kernels/ceilings/yield_probe.cu, yield_host.cu) runs three kernels from one
cubin and from copies with bits flipped by flashprof.kernels.sass.patch (the cubins measured are
committed beside the run, with their SASS): ``yield_ffma`` (128 independent FFMAs a pass),
``yield_mix`` (the same with an FMUL after every 4 FFMAs) and ``reuse_hmma`` (32 HMMA.16816.F32
a pass, one A fragment reused) on one SM with 1, 2 and 4 warps per sub-partition. Per record:
cycles per instruction per sub-partition = the slowest warp's clock64 span / (instructions a
warp runs x warps per sub-partition), the median over the timed launches.

    python -m flashprof.analysis.gap.yield_probe --predict FOLDER   # before the run: FOLDER's cubins
    python -m flashprof.analysis.gap.yield_probe --sidecar FOLDER   # after: yield.raw.jsonl there
    (--mode yield2: the second call, stall count 2 with and without the yield bit;
     --mode xu: the XU probe, ceilings/xu_probe.cu, MUFU.EX2 in the softmax's mix)
"""
from __future__ import annotations

import dataclasses
import datetime
import json
import statistics
import subprocess
import sys
from pathlib import Path

from flashprof.analysis.gap.ceil_run import same_chip_path, sidecar_head
from flashprof.analysis.gap.constants import SUBPARTITIONS, machine
from flashprof.analysis.gap.controls import main_loop, parse
from flashprof.analysis.gap.data import REPO
from flashprof.analysis.gap.scheduler import never_executed_as_issue, simulate
from flashprof.kernels.gpus import SHIPPED

# kernel -> (loop marker opcode, instructions a pass, {variant: cubin file})
PROBES = {"yield_ffma": ("FFMA", 128, {"orig": "orig.cubin", "y0": "ffma_y0.cubin"}),
          "yield_mix": ("FFMA", 160, {"orig": "orig.cubin", "y0fmul": "mix_y0fmul.cubin", "y0all": "mix_y0all.cubin"}),
          "reuse_hmma": ("HMMA", 32, {"orig": "orig.cubin", "noreuse": "hmma_noreuse.cubin", "y0": "hmma_y0.cubin"})}
# the second call (yield2): does a cleared yield bit add a cycle to a stall count of 2, or only
# make it at least 2? (the series' kernels clear it on instructions of stall 2 and more)
PROBES2 = {"yield_ffma": ("FFMA", 128, {"orig": "orig.cubin", "y0": "ffma_y0.cubin", "s2y1": "ffma_s2y1.cubin",
                                        "s2y0": "ffma_s2y0.cubin"})}
# the XU probe (flashprof/kernels/ceilings/xu_probe.cu, one cubin, nothing patched): MUFU.EX2 in
# the softmax's mix, 1 / 2 / 3 FP32 instructions per exponential (cycles per EX2 per sub-partition)
PROBES_XU = {k: ("MUFU", 128, {"orig": "xu.cubin"}) for k in ("xu_soft1", "xu_soft2", "xu_soft3")}
# FA2's compute skeleton (flashprof/kernels/ceilings/mix_probe.cu): 96 HMMA and 32 EX2 a pass, no
# memory; cycles per HMMA per sub-partition (6.0: the tensor pipe alone), a held-out check of the
# model's interplay and XU rules on FA2's own instruction mix
PROBES_MIX = {"fa2_skel": ("HMMA", 96, {"orig": "mix.cubin"})}
# the same without the exponential (mix2.cubin: no MUFU), to tell the HMMA side from the XU side
PROBES_MIX2 = {"fa2_skel_noexp": ("HMMA", 96, {"orig": "mix2.cubin"})}
# the wait after a stall count (issue 31): every kernel's per-PC samples put the wait after an
# instruction of stall count S near S cycles where the model waits S - 1 (pc_stalls.wait_after_stall);
# the lone-warp yield probe measured S + 0.09 for S = 1, 2. Every FFMA's stall count set to S (yield
# bit as compiled), 1 / 2 / 4 warps a sub-partition: does a warp wait longer than its count when others are there?
STALLS = (2, 3, 4, 5, 6, 8, 10)
PROBES_STALL = {"yield_ffma": ("FFMA", 128, {"orig": "orig.cubin", **{f"s{s}": f"ffma_s{s}y1.cubin" for s in STALLS}})}
# FA2's shared-memory side without the softmax (flashprof/kernels/ceilings/ldsm_probe.cu): 48 ldmatrix.x4
# and 96 HMMA a warp and pass, the data path needing 4/3 of the tensor pipe's time; the model is 3-6 %
# slow on the series' kernels 3-6, whose data path this is (cycles per HMMA per sub-partition)
PROBES_LDSM = {k: ("HMMA", 96, {"orig": "ldsm.cubin"}) for k in ("ldsm_mma", "ldsm_mma_db")}
# the same with a KV pass's cp.async copies and barriers (ldsm_cp, ldsm_cp_db; ldsmcp.cubin, built from
# the same source: its ldsm_mma / ldsm_mma_db are ldsm.cubin's instruction for instruction): what the
# kernels add to that side, 6 LDGSTS.128, 2 waits and 2 BAR.SYNC a pass, and the 6 never-executed
# "@!PT LDS RZ, [RZ]" ptxas puts beside every cp.async loop (predicted both as the model reads them, an
# LDS, and as issue slots only)
PROBES_LDSMCP = {k: ("HMMA", 96, {"orig": "ldsmcp.cubin"}) for k in ("ldsm_mma", "ldsm_cp", "ldsm_cp_db")}
# ldsmcp's copies turned out not FA2's (its report: 32 sectors and 24 shared-memory wavefronts an LDGSTS,
# threads 96 bytes apart; the kernels' reports: 16 and 4); ldsmcp2 adds the coalesced ones (ldsm_cpc,
# ldsm_cpc_db: a warp's 32 copies 512 contiguous bytes), the first two kernels unchanged
PROBES_LDSMCP2 = {k: ("HMMA", 96, {"orig": "ldsmcp2.cubin"}) for k in ("ldsm_mma", "ldsm_cpc", "ldsm_cpc_db")}
MODES = {"yield": PROBES, "yield2": PROBES2, "xu": PROBES_XU, "mix": PROBES_MIX, "mix2": PROBES_MIX2,
         "stall": PROBES_STALL, "ldsm": PROBES_LDSM, "ldsmcp": PROBES_LDSMCP, "ldsmcp2": PROBES_LDSMCP2}
COMMANDS = {"yield": "bash devjobs/session23.sh", "yield2": "bash devjobs/session23b.sh",
            "xu": "bash devjobs/session24b.sh", "mix": "bash devjobs/session24c.sh",
            "mix2": "bash devjobs/session24d.sh", "stall": "bash devjobs/stall_call.sh",
            "ldsm": "bash devjobs/ldsm_call.sh", "ldsmcp": "bash devjobs/ldsmcp_call.sh",
            "ldsmcp2": "bash devjobs/ldsmcp2_call.sh"}  # the device job of each mode
PER_SP = (1, 2, 4)
# ldsm mode: the model's other settings predicted beside the committed one (written before the run)
LDSM_VARIANTS = {"rotating": {"sp_arbitration": "rotating"}, "depth8": {"mio_queue_depth": 8},
                 "depth16": {"mio_queue_depth": 16}, "depth64": {"mio_queue_depth": 64},
                 "round_robin": {"warp_choice": "round_robin"}}
# ldsmcp mode: the committed model's order is rotating now (session 27); the queue depth and the warp choice beside it
LDSMCP_VARIANTS = {"fixed": {"sp_arbitration": "fixed"}, "depth8": {"mio_queue_depth": 8},
                   "depth16": {"mio_queue_depth": 16}, "round_robin": {"warp_choice": "round_robin"}}
WHAT = ("yield / operand-reuse probe (flashprof/kernels/ceilings/yield_probe.cu, yield_host.cu; cubins patched "
        "by flashprof.kernels.sass.patch, committed here): cycles per instruction per sub-partition, clock64 "
        "spans of every warp, one CTA on one SM")


def record_name(kernel: str, variant: str, per_sp: int) -> str:
    return f"yield_{kernel}_{variant}_w{per_sp}"


def measured(path: Path) -> dict[str, dict]:
    """Per record: cycles per instruction per sub-partition (median over the launches of the
    slowest warp's span) and the spread of the warps' spans within a launch (max / min)."""
    out = {}
    for line in path.read_text().splitlines():
        r = json.loads(line) if line.strip() else {}
        if r.get("record") != "measurement":
            continue
        slow = statistics.median(max(s) for s in r["spans"])
        out[r["name"]] = {"kernel": r["kernel"], "variant": r["variant"], "warps_per_scheduler": r["warps_per_scheduler"],
                          "cycles_per_inst_sp": slow / (r["work"] * r["warps_per_scheduler"]),
                          "warp_spread": statistics.median(max(s) / min(s) for s in r["spans"])}
    return out


def loop_of(sass: str, kernel: str, marker: str | None = None):
    insts = parse(sass)[kernel]
    marker = marker or PROBES[kernel][0]
    lo, hi = main_loop(insts, marker)
    return insts[lo:hi + 1]


def never_true_as_issue(body: list) -> list:
    """The loop with each never-executed instruction (predicate ``@!PT``) read as an issue slot only
    (scheduler.never_executed_as_issue). Before the ldsmcp2 run the scheduler read
    "@!PT LDS RZ, [RZ]" as an LDS (a queue slot, the LSU port, a wavefront) and this was the
    alternative predicted beside it; the run chose it and the scheduler now reads every loop so,
    which makes this map the identity on what simulate sees."""
    return never_executed_as_issue(body)


def predict(folder: Path, probes: dict = PROBES, policy: str | None = None, m=None, body_map=None) -> dict:
    """The issue model on each cubin's loop: cycles per instruction per sub-partition with 1, 2
    and 4 warps a sub-partition (one CTA, seed 1). The model reads stall counts, barriers and
    pipes from the control codes; it ignores the yield bit and the reuse flags, so where a
    measured variant differs from the compiler's cubin the difference is theirs. ``policy``: the
    scheduler's warp choice (scheduler.simulate; None: the Machine's)."""
    from flashprof.kernels.sass.static import dump_sass

    m = m or machine(SHIPPED.model_key)
    out = {}
    for kernel, (marker, _per_pass, variants) in probes.items():
        timed = {marker, "FMUL"} if kernel == "yield_mix" else {marker}  # the instructions a pass times
        for variant, cubin in variants.items():
            body = loop_of(dump_sass(folder / cubin), kernel, marker)
            if body_map is not None:
                body = body_map(body)
            n = sum(1 for i in body if i.base in timed)
            for per_sp in PER_SP:
                sim = simulate(list(body), m, 1, SUBPARTITIONS * per_sp, 8, seed=1, policy=policy)
                out[record_name(kernel, variant, per_sp)] = sim["cycles_per_iter"] / (n * per_sp)
    return out


def write_predictions(folder: Path, mode: str = "yield") -> Path:
    head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=REPO, capture_output=True, text=True).stdout.strip()
    rec = {"what": "the issue model's cycles per instruction per sub-partition for every yield probe record, "
                   "written before the run (analysis/gap/yield_probe.py predict)",
           "created": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%MZ"), "commit": head,
           "records": predict(folder, MODES[mode])}
    if mode in ("xu", "mix", "mix2", "stall"):  # the warp choice matters with 2 and 4 warps a sub-partition: both, named
        rec["records_round_robin"] = predict(folder, MODES[mode], policy="round_robin")
        m = machine(SHIPPED.model_key)
        rec["machine"] = {"xu_issue_steal": m.xu_issue_steal, "xu_steal_scope": m.xu_steal_scope,
                          "mufu_interval": m.mufu_interval, "mufu_latency": m.mufu_latency}
    if mode in ("ldsm", "ldsmcp", "ldsmcp2"):  # the shared-memory side's open choices, each named (none is judged by this record alone)
        m = machine(SHIPPED.model_key)
        for name, change in (LDSM_VARIANTS if mode == "ldsm" else LDSMCP_VARIANTS).items():
            rec[f"records_{name}"] = predict(folder, MODES[mode], m=dataclasses.replace(m, **change))
        if mode in ("ldsmcp", "ldsmcp2"):
            rec["records_never_true_issue"] = predict(folder, MODES[mode], body_map=never_true_as_issue)
        rec["machine"] = {"mio_queue_depth": m.mio_queue_depth, "sp_arbitration": m.sp_arbitration,
                          "ldsm_latency": m.ldsm_latency, "smem_latency": m.smem_latency, "warp_choice": m.warp_choice}
    if mode == "mix":  # the XU rule's other candidates too (analysis/gap/xu_rule.py), for comparison only
        from flashprof.analysis.gap.xu_rule import candidates

        for c, mc in candidates().items():
            rec[f"records_{c}"] = predict(folder, MODES[mode], m=mc)
    out = folder / f"{mode}_predictions.json"
    out.write_text(json.dumps(rec, indent=1, sort_keys=True) + "\n")
    return out


def write_sidecar(folder: Path, command: str = "bash devjobs/session23.sh", mode: str = "yield") -> Path:
    rec = sidecar_head(folder, mode, WHAT, command)
    raw = folder / f"{mode}.raw.jsonl"
    runs = sorted(folder.glob(f"{mode}.run*.raw.jsonl"))
    per = measured(raw)
    if len(runs) > 1:
        a, b = measured(runs[0]), measured(runs[1])
        rec["runs_max_difference_pct"] = max(100 * abs(b[n]["cycles_per_inst_sp"] / a[n]["cycles_per_inst_sp"] - 1)
                                             for n in a if n in b)
    # the predictions sit with the cubins, in the shipped GPU's folder (or this one's)
    pred_file = folder / f"{mode}_predictions.json"
    if not pred_file.is_file():
        pred_file = same_chip_path(f"yield/{mode}_predictions.json") or pred_file
    pred = json.loads(pred_file.read_text()) if pred_file.is_file() else {}
    rec["predicted_before"] = {"file": str(pred_file.relative_to(REPO)) if pred_file.is_file() else None,
                               "created": pred.get("created")}
    for n, v in per.items():
        p = (pred.get("records") or {}).get(n)
        v["predicted"] = p
        v["error_pct"] = None if p is None else 100 * (p / v["cycles_per_inst_sp"] - 1)
        base = per.get(record_name(v["kernel"], "orig", v["warps_per_scheduler"]))
        v["vs_orig"] = None if base is None else v["cycles_per_inst_sp"] / base["cycles_per_inst_sp"]
    rec["per_record"] = per
    out = folder / f"{mode}.json"
    out.write_text(json.dumps(rec, indent=1, sort_keys=True) + "\n")
    return out


def main(argv=None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    mode = argv[argv.index("--mode") + 1] if "--mode" in argv else "yield"
    if "--predict" in argv:
        folder = Path(argv[argv.index("--predict") + 1]).resolve()
        path = write_predictions(folder, mode)
        for n, v in json.loads(path.read_text())["records"].items():
            print(f"{n:36s} predicted {v:6.3f} cycles / instruction / sub-partition")
    if "--sidecar" in argv:
        folder = Path(argv[argv.index("--sidecar") + 1]).resolve()
        path = write_sidecar(folder, COMMANDS[mode], mode)
        for n, v in sorted(json.loads(path.read_text())["per_record"].items()):
            pr = "" if v["predicted"] is None else f"  predicted {v['predicted']:6.3f} ({v['error_pct']:+.1f} %)"
            print(f"{n:36s} {v['cycles_per_inst_sp']:6.3f} (x{v['vs_orig']:.3f} of orig){pr}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
