"""Write reports/gap/constant_sources.json: A100 / GA102 latencies and bandwidths with sources.

Usage: python3 devjobs/series/constant_sources.py GPU_BENCHES_GIT ACCEL_SIM_GIT GPGPU_SIM_GIT OUT

The three arguments are git directories of RRZE-HPC/gpu-benches, accel-sim/accel-sim-framework
and accel-sim/gpgpu-sim_distribution (e.g. mirrors fetched for the purpose). Every value is
read from the file at the pinned commit below, and its line numbers are recorded, so that a
reader can check each one. Two Accel-Sim files for the A100 (SM80_A100) live at commits the
local mirrors lack; their values and line numbers were read from those commits' text and are
written as literals (marked "read_from": "literal").

gpu-benches values are measurements on real cards (A100-SXM4-80GB; A40, a GA102 like the
RTX 3090 but with 84 SMs, ECC GDDR6 and its own clocks). Accel-Sim values are simulator
settings chosen by its authors to match their correlation runs: not measurements.
"""
from __future__ import annotations

import json
import statistics
import subprocess
import sys

GPU_BENCHES = ("RRZE-HPC/gpu-benches", "1038c5d0d0f48cfe9912930d34eb2d8a31b72b9b")
ACCEL_SIM_DEV = ("accel-sim/accel-sim-framework", "73f9fac68a1a717750da54d2d867c7524b47b4c3")
ACCEL_SIM_A100 = ("accel-sim/accel-sim-framework", "d907fc849f0f2b501aa4ef10689dd331bb76bf49")
GPGPU_SIM_DEV = ("accel-sim/gpgpu-sim_distribution", "667834cfe5214523edd7769aeab77f91b7137686")
GPGPU_SIM_A100 = ("accel-sim/gpgpu-sim_distribution", "9f767fb80a4fea83c6b767834ee3f76fe9898c50")
SMS = {"A100-SXM4-80GB": 108, "A40": 84}


def show(git_dir: str, commit: str, path: str) -> list[str]:
    out = subprocess.run(["git", f"--git-dir={git_dir}", "show", f"{commit}:{path}"],
                         capture_output=True, text=True, check=True).stdout
    return out.splitlines()


def src(repo_commit, path, lines, read_from="git"):
    repo, commit = repo_commit
    return {"repository": repo, "commit": commit, "path": path,
            "lines": lines if isinstance(lines, list) else [lines], "read_from": read_from}


def clock_of(lines: list[str]) -> int:
    """The clock the benchmark used: the last value of its 'clock:' line (MHz)."""
    return int(lines[0].split()[-1])


def latency_plateau(lines, lo_kb, hi_kb):
    """Median of the per-row median latency (cycles) over footprints lo_kb..hi_kb.
    gpu-latency prints: iterations, clock MHz, footprint kB, total ms, cycles avg/median/min/max."""
    rows = [(n + 1, float(f[2]), float(f[5])) for n, ln in enumerate(lines)
            if len(f := ln.split()) == 8 and not ln.startswith("clock")]
    sel = [(n, c) for n, kb, c in rows if lo_kb <= kb <= hi_kb]
    return round(statistics.median(c for _, c in sel), 1), [sel[0][0], sel[-1][0]]


def bw_plateau(lines, lo_kb, hi_kb, col_kb=0, col_bw=None, how="median"):
    """Bandwidth (GB/s) over rows whose data set (kB, column col_kb) is in lo_kb..hi_kb."""
    sel = []
    for n, ln in enumerate(lines):
        f = ln.split()
        if "GB/s" not in f or not f[0].replace(".", "").isdigit():
            continue
        kb_vals = [float(f[i]) for i in range(len(f) - 1) if f[i + 1] == "kB"]
        bws = [float(f[i]) for i in range(len(f) - 1) if f[i + 1] == "GB/s"]
        kb = kb_vals[col_kb]
        if lo_kb <= kb <= hi_kb:
            sel.append((n + 1, bws[0 if col_bw is None else col_bw]))
    vals = [b for _, b in sel]
    v = max(vals) if how == "max" else statistics.median(vals)
    return round(v, 1), [sel[0][0], sel[-1][0]]


def entry(gpu, quantity, value, unit, source, kind, note="", **extra):
    e = {"gpu": gpu, "quantity": quantity, "value": value, "unit": unit, "kind": kind,
         "source": source}
    if note:
        e["note"] = note
    e.update(extra)
    return e


def gpu_benches(git_dir):
    out = []
    for gpu, name in (("A100-SXM4-80GB", "a100_80"), ("A40", "a40")):
        lat = show(git_dir, GPU_BENCHES[1], f"gpu-latency/{name}.txt")
        mhz = clock_of(lat)
        ranges = {"A100-SXM4-80GB": {"L1 hit latency": (0, 150), "L2 hit latency (near partition)": (300, 16100),
                                     "L2 hit latency (far partition)": (24000, 39500),
                                     "DRAM latency": (200000, 2e6)},
                  "A40": {"L1 hit latency": (0, 100), "L2 hit latency": (200, 4600),
                          "DRAM latency": (150000, 3e6)}}[gpu]
        for q, (lo, hi) in ranges.items():
            v, ln = latency_plateau(lat, lo, hi)
            out.append(entry(gpu, q, v, "cycles", src(GPU_BENCHES, f"gpu-latency/{name}.txt", ln),
                             "measured",
                             f"pointer chase by one warp, footprint {lo:g}-{hi:g} kB; median over rows "
                             f"of the per-row median; cycles = time x the {mhz} MHz clock the "
                             "benchmark measured at start (gpu-latency/main.cu)",
                             clock_mhz=mhz, ns=round(v / mhz * 1000, 1)))
        cache = show(git_dir, GPU_BENCHES[1], f"gpu-cache/{name}.txt")
        mhz_c = clock_of(cache)
        l1_hi = 128 if gpu.startswith("A100") else 96
        for q, (lo, hi, how) in {"L1 load bandwidth (whole GPU)": (1, l1_hi, "max"),
                                  "L2 load bandwidth (whole GPU, gpu-cache)": (600, 12000, "median")}.items():
            v, ln = bw_plateau(cache, lo, hi, how=how)
            out.append(entry(gpu, q, v, "GB/s", src(GPU_BENCHES, f"gpu-cache/{name}.txt", ln), "measured",
                             f"one block per SM re-reading a buffer of {lo}-{hi} kB (gpu-cache/main.cu); {how} "
                             "over those rows; global loads through L1 (LDG), not shared memory (LDS)",
                             clock_mhz=mhz_c,
                             bytes_per_clk_per_sm=round(v * 1e9 / (mhz_c * 1e6) / SMS[gpu], 1)))
    l2 = show(git_dir, GPU_BENCHES[1], "gpu-l2-cache/a100_80.txt")
    for q, (lo, hi) in {"L2 load bandwidth (whole GPU, gpu-l2-cache)": (2000, 16000),
                        "DRAM load bandwidth (gpu-l2-cache, large data set)": (500000, 3e6)}.items():
        v, ln = bw_plateau(l2, lo, hi, col_kb=1)
        out.append(entry("A100-SXM4-80GB", q, v, "GB/s", src(GPU_BENCHES, "gpu-l2-cache/a100_80.txt", ln),
                         "measured", f"total data set {lo:g}-{hi:g} kB, 200000 blocks (gpu-l2-cache/main.cu); "
                         "median over those rows; the file has no clock line: the per-clock figure "
                         "uses the 1410 MHz of gpu-cache/a100_80.txt, run on the same card",
                         bytes_per_clk_per_sm=round(v * 1e9 / 1410e6 / 108, 1)))
    return out


def accel_sim(accel_git, gpgpu_git):
    out = []
    # SASS opcode -> Accel-Sim unit class (ampere_opcode.h), and class -> latency knob (trace_driven.cc)
    op = show(accel_git, ACCEL_SIM_DEV[1], "gpu-simulator/ISA_Def/ampere_opcode.h")
    classes = {}
    for n, ln in enumerate(op, 1):
        for name in ("HMMA", "LDSM", "LDS", "MUFU", "FFMA", "FADD", "FMUL", "FMNMX", "IMAD", "IADD3",
                     "LOP3", "SHF", "MOV", "CS2R", "SHFL", "F2FP", "BAR", "LDGSTS"):
            if f'{{"{name}", OpcodeChar(' in ln:
                classes[name] = {"class": ln.split(",")[2].strip(" )}"), "line": n}
    out.append({"quantity": "SASS opcode -> Accel-Sim unit class", "kind": "simulator mapping",
                "value": {k: v["class"] for k, v in classes.items()},
                "source": src(ACCEL_SIM_DEV, "gpu-simulator/ISA_Def/ampere_opcode.h",
                              sorted(v["line"] for v in classes.values())),
                "note": "trace_driven.cc (same commit, lines 471-494): ALU_OP and INTP_OP take the "
                        "int latency/initiation, SP_OP the sp (fp32) pair, SFU_OP the sfu pair; HMMA "
                        "runs on specialized unit 3 (TENSOR) with its spec_op_3 pair; LOAD_OP (LDS, "
                        "LDSM) takes -gpgpu_smem_latency for shared memory"})
    # trace.config: "<latency>,<initiation interval>" per unit class
    a100_trace = {"int": ("4,2", 1), "sp": ("4,2", 2), "sfu": ("23,8", 4), "tensor": ("12,8", 5),
                  "spec_op_3 (TENSOR unit, HMMA)": ("12,8", 18)}
    rtx = show(accel_git, ACCEL_SIM_DEV[1], "gpu-simulator/configs/tested-cfgs/SM86_RTX3070/trace.config")
    for gpu, cfg in (("A100 (Accel-Sim SM80_A100)", None), ("RTX 3070 (Accel-Sim SM86_RTX3070, GA104)", rtx)):
        for key, knob in (("int", "-trace_opcode_latency_initiation_int"), ("sp", "-trace_opcode_latency_initiation_sp"),
                          ("sfu", "-trace_opcode_latency_initiation_sfu"),
                          ("tensor", "-trace_opcode_latency_initiation_tensor"),
                          ("spec_op_3 (TENSOR unit, HMMA)", "-trace_opcode_latency_initiation_spec_op_3")):
            if cfg is None:
                val, line = a100_trace[key]
                s = src(ACCEL_SIM_A100, "gpu-simulator/configs/tested-cfgs/SM80_A100/trace.config", line, "literal")
            else:
                line = next(n for n, ln in enumerate(cfg, 1) if ln.startswith(knob + " "))
                val = cfg[line - 1].split()[1]
                s = src(ACCEL_SIM_DEV, "gpu-simulator/configs/tested-cfgs/SM86_RTX3070/trace.config", line)
            lat, ii = (int(x) for x in val.split(","))
            out.append(entry(gpu, f"{key}: latency, initiation interval", [lat, ii], "cycles", s,
                             "simulator setting", f"{knob} {val}"))
    # gpgpusim.config: cache/shared latencies and clocks
    a100_cfg = {"-gpgpu_clock_domains": ("1410:1410:1512:6048", 30), "-gpgpu_l1_latency": ("34", 95),
                "-gpgpu_smem_latency": ("28", 105), "-gpgpu_l2_rop_latency": ("200", 139),
                "-dram_latency": ("190", 140), "-ptx_opcode_latency_sfu": ("23", 60),
                "-ptx_opcode_latency_tesnor": ("25", 62), "-ptx_opcode_initiation_tensor": ("16", 63)}
    rtx_cfg = show(gpgpu_git, GPGPU_SIM_DEV[1], "configs/tested-cfgs/SM86_RTX3070/gpgpusim.config")
    for gpu, cfg in (("A100 (Accel-Sim SM80_A100)", None), ("RTX 3070 (Accel-Sim SM86_RTX3070, GA104)", rtx_cfg)):
        for knob in a100_cfg:
            if cfg is None:
                val, line = a100_cfg[knob]
                s = src(GPGPU_SIM_A100, "configs/tested-cfgs/SM80_A100/gpgpusim.config", line, "literal")
            else:
                line = next(n for n, ln in enumerate(cfg, 1) if ln.startswith(knob + " "))
                val = cfg[line - 1].split()[1]
                s = src(GPGPU_SIM_DEV, "configs/tested-cfgs/SM86_RTX3070/gpgpusim.config", line)
            unit = "MHz (core:icnt:L2:DRAM)" if knob == "-gpgpu_clock_domains" else "cycles"
            out.append(entry(gpu, knob.lstrip("-"), val if ":" in val else int(val), unit, s,
                             "simulator setting",
                             "used only in PTX mode (trace mode reads trace.config)" if knob.startswith("-ptx_") else ""))
    return out


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 4:
        print(__doc__)
        return 2
    benches, accel, gpgpu, dst = argv
    data = {"about": "Latencies and bandwidths for the A100 and GA102 with the file, commit and line "
                     "each was read from. 'measured': RRZE-HPC/gpu-benches runs on real cards "
                     "(A40 stands in for the RTX 3090: same GA102 chip). 'simulator setting': "
                     "Accel-Sim's tested configurations, tuned by its authors, not measurements; "
                     "the RTX 3090 has no Accel-Sim config, SM86_RTX3070 (GA104) is the nearest. "
                     "Written by devjobs/series/constant_sources.py.",
            "entries": gpu_benches(benches) + accel_sim(accel, gpgpu)}
    with open(dst, "w") as f:
        json.dump(data, f, indent=1)
        f.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
