"""The series' kernels on a Hopper GPU we can measure (issue 31): the issue model on the very
binaries that ran, against their own Nsight Compute reports.

Inputs, all committed:
* ``reports/<gpu>/series/series_targets-k<listing>.ncu-rep`` (+ sidecar, whose shape must be S = 4096),
  and the same in each subfolder of it (another device call, with its own ``ref``; e.g. ``rtx3090/``):
  the series' kernels 1-16 (sonnyli/flash_attention_from_scratch @ 58b7e33, the A100 and RTX
  3090 configs) built for the GPU from their own source and profiled by ``flashprof profile``
  as user targets (devjobs/series_h200.sh), and ``ref.ncu-rep`` (FA2: PyTorch's SDPA
  FLASH_ATTENTION) from the same run;
* ``reports/sass/series/<gpu>/<listing>_sm_90.sass``: ``cuobjdump -sass`` of each shared
  library that ran, with a header (``import_sass``: registers from its ptxas log, tile, warps,
  dynamic shared memory = (B_r + 2 B_c) d 2 bytes, as the series' smem_bytes()).

Per kernel: measured % of FA2 = FA2's SM cycles / the kernel's (``sm__cycles_elapsed.avg``, the
same clock domain, so a clock difference between the two launches cancels); predicted % of FA2
from ``issue_report.kernel_time`` on the kernel's loop against torch's FA2 sm_90 loop
(reports/sass/fa2), each with the bank-conflict factor of its *own* report (wavefronts /
(wavefronts - conflicts)), so no factor is borrowed from another kernel. Skill over kernels 2-16
is stated beside the trivial baselines (every kernel 100 %, every kernel the measured mean) by
MAE and Spearman rank correlation, with and without the measured HMMA interplay
(analysis/gap/interplay.py), which was chosen on a microbenchmark, never on these kernels.

    python -m flashprof.analysis.gap.series_measured [--gpu h200] [--import-sass DIR] [--write]
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import re
import statistics
import sys
from pathlib import Path

from flashprof.analysis.gap.data import REF, REPO
from flashprof.kernels.gpus import GPUS, SHIPPED, by_name, by_slug

SERIES_SASS = REPO / "reports" / "sass" / "series"
CONFIGS = REPO / "devjobs" / "series" / "configs.tsv"
# the reports folders (GPU slugs) this can read: the sm_90 GPUs, which build the series' mma.sync code
SLUGS = tuple(g.slug for g in GPUS if g.arch == "sm_90")
_STEM = re.compile(r"^series_targets-k(\w+)$")
SEEDS = (1, 2, 3, 4)


def configs() -> dict[str, dict]:
    out = {}
    for line in CONFIGS.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            listing, kernel, measured, src_dir, cfg = line.split("\t")
            f = [x.strip() for x in cfg.split(",")]
            out[listing] = {"kernel": int(kernel), "measured_on": measured, "src_dir": src_dir, "config": cfg,
                            "d": int(f[1]), "B_r": int(f[2]), "B_c": int(f[3]), "warps": int(f[4])}
    return out


def listing_of(fn: str) -> str:
    """series_targets' function name (without the k) -> configs.tsv listing."""
    return "7_64_64_swizzling" if fn == "7" else fn


def tile_set(listing: str) -> str:
    """Which GPU's configuration a listing is, as configs.tsv tags it (its ``measured_on``), or
    'both' for one the series ran on both GPUs (kernels 1-7)."""
    on = configs()[listing]["measured_on"]
    return "both" if "," in on else on


def tile_sets(rows: list[dict]) -> list[str]:
    """The GPU tags of the configs (8-16) among ``rows``, sorted."""
    return sorted({tile_set(r["listing"]) for r in rows} - {"both", "-"})


def published_steps() -> dict[int, float]:
    """{kernel number: the A100's published % of FA2 at S = 4096} (published.json): the same
    step on the GPU the series measured, beside each kernel measured here."""
    from flashprof.analysis.gap.data import load_published
    from flashprof.analysis.gap.issue_report import A100, PUBLISHED_KEY

    pub = load_published()["gpus"][PUBLISHED_KEY[A100]]["pct_of_fa2"]
    return {int(k): v["seq_4096"] for k, v in pub.items() if k.isdigit() and v.get("seq_4096") is not None}


def published_tag(res: dict) -> dict | None:
    """The skill record of the tile set of the GPU whose published numbers the model is held to
    first (the series' GA100 configs), else the first one."""
    sk = res.get("skill") or []
    ga100 = [s for s in sk if (g := by_name(s["tiles"])) is not None and g.chip == "ga100"]
    return (ga100 or sk or [None])[0]


# ------------------------------------------------------------------ SASS import
def import_sass(src_dir: Path, gpu: str, arch: str = "sm_90") -> list[Path]:
    """Device ``cuobjdump -sass`` outputs (``<listing>_<arch>.sass`` + ``.ptxas``) -> the model's
    files under reports/sass/series/<gpu>/, a provenance header on top."""
    cfgs = configs()
    out_dir = SERIES_SASS / gpu
    out_dir.mkdir(parents=True, exist_ok=True)
    written = []
    for sass in sorted(Path(src_dir).glob(f"*_{arch}.sass")):
        listing = sass.name[: -len(f"_{arch}.sass")]
        if listing not in cfgs:
            continue
        c = cfgs[listing]
        ptx = sass.with_suffix(".ptxas").read_text() if sass.with_suffix(".ptxas").is_file() else ""
        regs = re.search(r"Used (\d+) registers", ptx)
        stack = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads", ptx)
        hdr = [f"# series kernel {c['kernel']} (listing {listing}), {arch}, fp16 d128: "
               "sonnyli/flash_attention_from_scratch@58b7e33 (devjobs/series/launch.cu, devjobs/series_h200.sh)",
               f"# config (FlashForwardKernelConfig): {c['config']}; measured on: {gpu} (this folder's reports)",
               f"# built on the {gpu} machine by nvcc with the series' flags for {arch}; cuobjdump -sass of the "
               "shared library that was profiled",
               f"# ptxas: {stack.group(0) if stack else 'no spill line'}",
               f"# registers: {regs.group(1) if regs else 'nan'}",
               f"# smem_bytes: {(c['B_r'] + 2 * c['B_c']) * c['d'] * 2}", f"# warps: {c['warps']}",
               f"# B_r: {c['B_r']}", f"# B_c: {c['B_c']}", f"# measured_on: {gpu}"]
        path = out_dir / f"{listing}_{arch}.sass"
        path.write_text("\n".join(hdr) + "\n" + sass.read_text())
        written.append(path)
    return written


def series_code(listing: str, gpu: str, arch: str = "sm_90"):
    """The model's LoopCode of one imported listing (target = its kernel number)."""
    from flashprof.analysis.gap.loops import series_loop

    code = series_loop(str(configs()[listing]["kernel"]), f"{gpu}/{listing}_{arch}")
    return dataclasses.replace(code, arch=arch)


# ------------------------------------------------------------------ evidence
def evidence(folder: Path, extra: tuple[str, ...] = ()) -> dict[str, dict]:
    """listing (or 'ref') -> what its S = 4096 report measured: SM cycles, clock, duration,
    bank-conflict factor, tensor pipe %, issue active %, the stall groups of the model.
    ``extra``: other series_targets functions read under their own name (the fork's FA2)."""
    from flashprof.analysis.gap.issue_report import CONFLICT_LD, WAVEFRONTS, measured_stalls
    from flashprof.analysis.report.parse import load_frame, per_launch
    from flashprof.analysis.stages.summary import summarize_paths

    out = {}
    for path in sorted(Path(folder).glob("*.ncu-rep")):
        stem = path.name[: -len(".ncu-rep")]
        m = _STEM.match(stem)
        fn = stem.split("-", 1)[1] if stem.startswith("series_targets-") else None
        name = fn if fn in extra else listing_of(m.group(1)) if m else REF if stem == "ref" else None
        try:
            shape = json.loads(path.with_suffix(".json").read_text()).get("shape", {})
        except (OSError, ValueError):
            continue
        if name is None or shape.get("seq") != 4096:
            continue
        frame = load_frame([path])
        launches = list(per_launch(frame))
        if len(launches) != 1:
            continue
        _key, _arch, met = launches[0]
        rec = next(r for r in summarize_paths([path]) if r.get("dominant", True))
        wf, bc = met.get(WAVEFRONTS), met.get(CONFLICT_LD)
        out[name] = {"report": str(path.relative_to(REPO)), "cycles": met.get("sm__cycles_elapsed.avg", math.nan),
                     "duration_ms": rec["duration_ns"] / 1e6, "clock_ghz": rec["sm_clock_hz"] / 1e9,
                     "tflops": rec["tflops"], "tensor_pipe_pct": rec["tensor_pipe_pct"],
                     "issue_active_pct": rec["issue_active_pct"],
                     "conflict": wf / (wf - bc) if wf and bc is not None and wf > bc else math.nan,
                     "stalls": measured_stalls(met),
                     "registers": met.get("launch__registers_per_thread", math.nan)}
    return out


# ------------------------------------------------------------------ model vs measurement
def skill(rows: list[dict], tiles: str) -> dict:
    """MAE and rank correlation over kernels 2-16 of one tile set, beside the trivial baselines."""
    from flashprof.analysis.gap.gap_doc import spearman

    sel = [r for r in rows if r["kernel"] >= 2 and tile_set(r["listing"]) in ("both", tiles)]
    meas = [r["measured_pct"] for r in sel]
    pred = [r["predicted_pct"] for r in sel]
    mean = statistics.fmean(meas) if meas else math.nan
    mae = lambda p: statistics.fmean(abs(a - b) for a, b in zip(p, meas)) if meas else math.nan
    return {"tiles": tiles, "n": len(sel), "mae_pp": mae(pred), "spearman": spearman(pred, meas),
            "baseline_100_mae_pp": mae([100.0] * len(meas)), "baseline_mean_mae_pp": mae([mean] * len(meas)),
            "bias_pp": statistics.fmean(p - a for p, a in zip(pred, meas)) if meas else math.nan,
            "all16_mae_pp": statistics.fmean(abs(r["predicted_pct"] - r["measured_pct"]) for r in rows
                                             if tile_set(r["listing"]) in ("both", tiles)) if rows else math.nan}


def predict(gpu: str, ev: dict, interplay: bool = True, seeds=SEEDS) -> list[dict]:
    from flashprof.analysis.gap import issue_report as ir
    from flashprof.analysis.gap.constants import machine
    from flashprof.analysis.gap.interplay import same_bank_reads
    from flashprof.analysis.gap.loops import fa2_loop

    key = by_slug(gpu).model_key
    m = machine(key) if interplay else machine(key, interplay=None)
    ref_code = fa2_loop("sm_90")
    ref_conf = ev[REF]["conflict"] if REF in ev and not math.isnan(ev[REF]["conflict"]) else 1.0
    ref = ir.kernel_time(ref_code, m, ref_conf, seeds)
    cfgs = configs()
    rows = []
    for listing in sorted((k for k in ev if k != REF), key=lambda k: (cfgs[k]["kernel"], k)):
        e = ev[listing]
        conf = e["conflict"] if not math.isnan(e["conflict"]) else 1.0
        code = series_code(listing, gpu)
        r = ir.kernel_time(code, m, conf, seeds)
        pct = 100 * ref["pred_cycles"] / r["pred_cycles"]
        # spread: the sd over seeds of the seed-paired ratio (each seed's FA2 over the same seed's kernel)
        per_seed = [100 * a / b for a, b in zip(ref["cycles_seeds"], r["cycles_seeds"])]
        sd = statistics.pstdev(per_seed) if len(per_seed) > 1 else math.nan
        rows.append({"listing": listing, "kernel": cfgs[listing]["kernel"], "tiles": tile_set(listing),
                     "measured_pct": 100 * ev[REF]["cycles"] / e["cycles"], "predicted_pct": pct, "sd_pp": sd,
                     "error_pp": pct - 100 * ev[REF]["cycles"] / e["cycles"],
                     "cycles_error_pct": 100 * (r["pred_cycles"] / e["cycles"] - 1),
                     "conflict": conf, "registers": code.registers, "ctas_per_sm": r["ctas_per_sm"],
                     "pred_tensor_pct": r["pipe_pct"]["tensor"], "meas_tensor_pct": e["tensor_pipe_pct"],
                     "pred_issue_pct": r["issue_pct"], "meas_issue_active_pct": e["issue_active_pct"],
                     "pred_stalls": r["stalls"], "meas_stalls": e["stalls"], "report": e["report"],
                     "clock_ghz": e["clock_ghz"], "sass": code.source,
                     "same_bank_extra_per_hmma": same_bank_reads(code.body)})
    rows.append({"listing": REF, "kernel": 0, "tiles": "both", "measured_pct": 100.0, "predicted_pct": 100.0,
                 "cycles_error_pct": 100 * (ref["pred_cycles"] / ev[REF]["cycles"] - 1), "conflict": ref_conf,
                 "pred_tensor_pct": ref["pipe_pct"]["tensor"], "meas_tensor_pct": ev[REF]["tensor_pipe_pct"],
                 "pred_issue_pct": ref["issue_pct"], "meas_issue_active_pct": ev[REF]["issue_active_pct"],
                 "pred_stalls": ref["stalls"], "meas_stalls": ev[REF]["stalls"], "report": ev[REF]["report"],
                 "clock_ghz": ev[REF]["clock_ghz"], "sass": ref_code.source,
                 "same_bank_extra_per_hmma": same_bank_reads(ref_code.body)})
    return rows


def top2(st: dict) -> list[str]:
    return [k for k, v in sorted(st.items(), key=lambda kv: -(kv[1] if not math.isnan(kv[1]) else -1))[:2]]


def render(res: dict) -> str:
    lines = [f"series kernels on the {res['gpu']} (their own reports), issue model "
             f"{'with' if res['interplay'] else 'without'} the measured HMMA interplay",
             f"{'listing':>20} {'meas %':>7} {'pred %':>7} {'err pp':>7} {'cyc err':>8} {'confl':>6} "
             f"{'tensor m/p':>11} {'issue m/p':>10}  stalls measured | predicted (top 2)"]
    for r in res["rows"]:
        lines.append(f"{r['listing']:>20} {r['measured_pct']:7.1f} {r['predicted_pct']:7.1f} "
                     f"{r.get('error_pp', 0.0):+7.1f} {r['cycles_error_pct']:+7.1f}% {r['conflict']:6.2f} "
                     f"{r['meas_tensor_pct']:5.1f}/{r['pred_tensor_pct']:4.1f} {r['meas_issue_active_pct']:5.1f}/"
                     f"{r['pred_issue_pct']:4.1f}  {','.join(top2(r['meas_stalls']))} | {','.join(top2(r['pred_stalls']))}")
    for s in res["skill"]:
        lines.append(f"kernels 2-16, {s['tiles']} tiles (n={s['n']}): MAE {s['mae_pp']:.1f} pp, bias {s['bias_pp']:+.1f}, "
                     f"Spearman {s['spearman']:.2f}; baselines: all 100 % {s['baseline_100_mae_pp']:.1f} pp, "
                     f"measured mean {s['baseline_mean_mae_pp']:.1f} pp")
    return "\n".join(lines)


def run_folders(gpu: str) -> list[Path]:
    """The series' reports folder of a GPU, then each subfolder holding another run (e.g. the
    RTX 3090 configurations, profiled in a later call beside their own FA2 report). Not the
    fork's-FA2 run (fa2_official.FOLDER): its own module reads it against its own denominator."""
    from flashprof.analysis.gap.fa2_official import FOLDER

    folder = REPO / "reports" / gpu / "series"
    subs = sorted(d for d in folder.glob("*/") if d.is_dir() and d.name != FOLDER and any(d.glob("*.ncu-rep")))
    return [folder, *subs]


def run(gpu: str, interplay: bool = True) -> dict:
    rows: list[dict] = []
    for folder in run_folders(gpu):
        ev = evidence(folder)
        if REF not in ev:
            raise SystemExit(f"{folder}: no FA2 (ref) report at S = 4096")
        # each run's kernels against the FA2 of the same run; one FA2 row (the first run's)
        new = [r for r in predict(gpu, ev, interplay) if not rows or r["listing"] != REF]
        rows += [r for r in new if r["listing"] not in {x["listing"] for x in rows}]
    rows = [r for r in rows if r["listing"] != REF] + [r for r in rows if r["listing"] == REF]
    scored = [r for r in rows if r["listing"] != REF]
    return {"gpu": gpu, "gpu_key": by_slug(gpu).model_key, "interplay": interplay, "seeds": list(SEEDS),
            "rows": rows,  # a tile set's skill only where one of its own configs (8-16) was measured
            "skill": [skill(scored, t) for t in tile_sets(scored)]}


def main(argv=None) -> int:
    p = argparse.ArgumentParser(prog="python -m flashprof.analysis.gap.series_measured")
    p.add_argument("--gpu", default=SHIPPED.slug, choices=SLUGS, help="the reports folder (GPU slug)")
    p.add_argument("--import-sass", type=Path, default=None, help="a device run's sass folder to import first")
    p.add_argument("--write", action="store_true", help="write reports/gap/series_<gpu>.json")
    a = p.parse_args(argv)
    if a.import_sass:
        for w in import_sass(a.import_sass, a.gpu):
            print(w.relative_to(REPO))
    res = [run(a.gpu, True), run(a.gpu, False)]
    for r in res:
        print(render(r))
    if a.write:
        out = REPO / "reports" / "gap" / f"series_{a.gpu}.json"
        out.write_text(json.dumps(res, indent=1, default=lambda v: None) + "\n")
        print(out.relative_to(REPO))
    return 0


if __name__ == "__main__":
    sys.exit(main())
