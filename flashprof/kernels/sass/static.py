"""Static build: what the compiler made of each variant, without a GPU or torch.

Input: a ``KernelConfig`` and a target arch. Output: a cached cubin of
``kernels/csrc/flash_fwd.cu`` with its ``ptxas -v`` log, and from those the register /
spill / stack / shared-memory figures and the SASS opcode histogram of the fp16 or bf16
instantiation (whole function and main loop). ``flashprof sass data`` writes them for kernels 1-7 to
``reports/sass/*.csv`` so that figures never need a compiler.

    flashprof sass 6 [--arch sm_90] [--dtype fp16|bf16] [--format table|json]
    flashprof sass diff 5 6 [--arch sm_90]
    flashprof sass data [--check]        (the CLI: kernels/sass/command.py)

The text parsing (ptxas logs, SASS) is kernels/sass/text.py; nvcc runs through
kernels/nvcc.py. Besides the whole-function histogram, each kernel's main loop (the KV-block loop: the
backward branch whose range holds the most HMMA) is counted on its own, [branch target,
branch] inclusive: ``loop_opcodes`` in the JSON, ``reports/sass/opcodes_loop.csv``.
"""
from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
import subprocess
import sys
from collections import Counter
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Iterable, Sequence

from flashprof.kernels.common import write_atomic
from flashprof.kernels.config import KERNEL_IDS, ConfigError, KernelConfig, load_tuned, tuned_configs, variant
from flashprof.kernels.nvcc import BuildError, arch_flags, build_file, nvcc_path
from flashprof.kernels.sass.text import (DTYPES, FunctionStats, Insn, branch_target, find_main_loop, loop_opcode_counts, parse_insns, parse_sass, pick_function, ptxas_report, RE_FUNC, RE_INSN)  # noqa: F401 (public names)
from flashprof.kernels.toolchain import find_toolchain

from flashprof.paths import BUILD, CSRC, REPORTS, ROOT as REPO  # noqa: E402
PKG_DIR = CSRC.parent  # flashprof/kernels/
ENTRY = CSRC / "flash_fwd.cu"
BUILD_DIR = BUILD / "static"
DATA_DIR = REPORTS / "sass"

ARCHS = ("sm_80", "sm_86", "sm_90")
NVCC_FLAGS = ("-cubin", "-O3", "-lineinfo", "-std=c++17", "-Xptxas", "-v")
_ARCH_RE = re.compile(r"^sm_(\d{2,3})[af]?$")


# ----------------------------------------------------------------------- build
def check_arch(arch: str) -> str:
    m = _ARCH_RE.match(arch)
    if not m:
        raise ConfigError(f"bad arch {arch!r}: expected sm_XY, e.g. sm_80, sm_86, sm_90")
    if int(m.group(1)) < 80:
        raise ConfigError(f"bad arch {arch!r}: kernels use cp.async and bf16 mma.sync, "
                          "which need sm_80 or newer")
    return arch


def _sources() -> list[Path]:
    if not ENTRY.exists():
        raise BuildError(f"kernel source {ENTRY.relative_to(REPO)} does not exist yet")
    # The entry file and every header it may include; other .cu/.cpp files (the torch
    # binding, host drivers) never reach the cubin, so editing them must not rebuild it.
    headers = (p for p in CSRC.rglob("*") if p.is_file() and p.suffix in (".cuh", ".h", ".hpp"))
    return [ENTRY, *sorted(headers)]


def nvcc_command(cfg: KernelConfig, arch: str, out: Path) -> list[str]:
    return [nvcc_path(), *NVCC_FLAGS, *arch_flags(arch), *cfg.nvcc_flags(),
            f"-I{CSRC}", "-o", str(out), str(ENTRY)]


def cache_key(cfg: KernelConfig, arch: str) -> str:
    """Hash of every kernel source, the flags and the compiler version."""
    h = hashlib.sha256()
    for p in _sources():
        h.update(p.relative_to(CSRC).as_posix().encode() + b"\0" + p.read_bytes() + b"\0")
    h.update(" ".join([*NVCC_FLAGS, arch, *cfg.nvcc_flags()]).encode())
    h.update(find_toolchain("nvcc").nvcc_version.encode())
    return h.hexdigest()[:16]


def cubin_path(cfg: KernelConfig, arch: str) -> Path:
    return BUILD_DIR / arch / f"{cfg.slug}-{cache_key(cfg, arch)}.cubin"


def log_path(cubin: Path) -> Path:
    return cubin.with_suffix(".ptxas.log")


def opcodes_path(cubin: Path) -> Path:
    return cubin.with_suffix(".opcodes.json")


def loop_path(cubin: Path) -> Path:
    return cubin.with_suffix(".loop.json")


def _outputs(cubin: Path) -> tuple[Path, ...]:
    return cubin, log_path(cubin), opcodes_path(cubin), loop_path(cubin)


def compile_cubin(cfg: KernelConfig, arch: str = "sm_90", *, force: bool = False) -> Path:
    """Compile (or reuse) the cubin of ``cfg`` for ``arch``; the ptxas log lies beside it.
    A wgmma config asked for sm_90 compiles for sm_90a (``KernelConfig.target_arch``)."""
    check_arch(arch)
    target = cfg.target_arch(arch)
    if target is None:
        raise ConfigError(f"{cfg.slug} cannot be built for {arch}: wgmma configs are sm_90a (Hopper) only")
    arch = target
    out = cubin_path(cfg, arch)
    if out.exists() and log_path(out).exists() and not force:
        return out
    opcodes_path(out).unlink(missing_ok=True)  # disassembly of the old cubin, if any
    loop_path(out).unlink(missing_ok=True)
    _, log = build_file(lambda tmp: nvcc_command(cfg, arch, tmp), out, f"kernel {cfg.slug} ({arch})")
    log_path(out).write_text(log)
    return out


def _compile_job(job: tuple[KernelConfig, str]) -> Path:
    cubin = compile_cubin(*job)
    function_opcodes(cubin)  # disassemble in the worker too: cuobjdump is the slow half
    function_loops(cubin)
    return cubin


def build_many(jobs: Iterable[tuple[KernelConfig, str]],
               workers: int | None = None) -> dict[tuple[KernelConfig, str], Path]:
    """Compile many (config, arch) pairs, one process per core; nvcc is single-threaded."""
    jobs = list(dict.fromkeys(jobs))
    todo = [j for j in jobs if not all(p.exists() for p in _outputs(cubin_path(*j)))]
    workers = max(1, min(workers or os.cpu_count() or 1, len(todo) or 1))
    if len(todo) > 1 and workers > 1:
        with ProcessPoolExecutor(max_workers=workers) as pool:
            list(pool.map(_compile_job, todo))
    else:
        for j in todo:
            _compile_job(j)
    return {j: compile_cubin(*j) for j in jobs}


def dump_sass(cubin: Path) -> str:
    exe = find_toolchain("cuobjdump").path("cuobjdump")
    proc = subprocess.run([str(exe), "--dump-sass", str(cubin)], capture_output=True,
                          text=True)
    if proc.returncode != 0:
        raise BuildError(f"cuobjdump failed on {cubin}: {proc.stderr.strip()}")
    return proc.stdout


def _disassemble(cubin: Path) -> None:
    """One cuobjdump run -> both sidecars: whole-function and main-loop opcode histograms."""
    per_fn = parse_insns(dump_sass(cubin))
    kernel = {fn: Counter(i.opcode for i in insns) for fn, insns in per_fn.items()}
    loop = {}
    for fn, insns in per_fn.items():
        counts, span = loop_opcode_counts(insns)
        loop[fn] = None if span is None else {"start": span[0], "end": span[1],
                                              "opcodes": dict(counts)}
    for side, data in ((loop_path(cubin), loop), (opcodes_path(cubin), kernel)):
        write_atomic(side, json.dumps(data, sort_keys=True))


def function_opcodes(cubin: Path) -> dict[str, Counter]:
    """Opcode histogram per function of ``cubin``, cached in a JSON file beside it."""
    side = opcodes_path(cubin)
    if not side.exists() or not loop_path(cubin).exists():
        _disassemble(cubin)
    return {fn: Counter(c) for fn, c in json.loads(side.read_text()).items()}


def function_loops(cubin: Path) -> dict[str, dict | None]:
    """Per function of ``cubin``: {"start", "end", "opcodes"} of its main loop (None if it
    has none), cached in a JSON file beside it."""
    side = loop_path(cubin)
    if not side.exists() or not opcodes_path(cubin).exists():
        _disassemble(cubin)
    return json.loads(side.read_text())


def opcode_counts(cubin: Path, dtype: str = "fp16") -> Counter:
    """SASS opcode -> count for the ``dtype`` kernel of ``cubin``."""
    per_fn = function_opcodes(cubin)
    return per_fn[pick_function(per_fn, dtype)]


def loop_info(cubin: Path, dtype: str = "fp16") -> dict:
    """Main loop of the ``dtype`` kernel of ``cubin``: {"start", "end", "opcodes"}."""
    per_fn = function_loops(cubin)
    fn = pick_function(per_fn, dtype)
    info = per_fn[fn]
    if info is None:
        raise BuildError(f"{cubin.name}: no backward branch encloses an HMMA or HGMMA in {fn}")
    return info


# --------------------------------------------------------------------- report
# SASS tensor-core opcodes (the mnemonic before the first '.'): mma.sync (HMMA, IMMA, DMMA,
# sparse HMMA shows as HMMA.SP), Hopper's warpgroup MMA (HGMMA, IGMMA, QGMMA for fp8, BGMMA), and
# Blackwell's tcgen05 (UTCHMMA, UTCQMMA, UTCIMMA, UTCOMMA...).
TENSOR_OPCODES = ("HMMA", "IMMA", "DMMA", "BMMA", "HGMMA", "IGMMA", "QGMMA", "BGMMA")


def is_tensor_opcode(op: str) -> bool:
    return op in TENSOR_OPCODES or op.startswith("UTC") and op.endswith("MMA")


def static_report(n: int | str, arch: str = "sm_90", dtype: str = "fp16", gpu: str | None = None) -> dict:
    """Everything ``flashprof sass N`` prints, as a dict (JSON shape). ``gpu`` (a slug of
    kernels/gpus.py) picks kernel 7's tuned config for that GPU; kernels 1-6 have one config."""
    cfg = variant(n, gpu)
    if cfg.wgmma and arch == "sm_90":
        arch = "sm_90a"  # the wgmma form builds for sm_90a only (KernelConfig.target_arch)
    check_arch(arch)
    if dtype not in DTYPES:
        raise ConfigError(f"bad dtype {dtype!r}: expected one of {', '.join(DTYPES)}")
    find_toolchain("nvcc", "ptxas", "cuobjdump")
    return _report_from(int(n), cfg, arch, dtype, compile_cubin(cfg, arch))


def _report_from(n: int, cfg: KernelConfig, arch: str, dtype: str, cubin: Path) -> dict:
    stats = ptxas_report(log_path(cubin))
    fn = pick_function(stats, dtype)
    s = stats[fn]
    ops = opcode_counts(cubin, dtype)
    loop = loop_info(cubin, dtype)
    return {
        "kernel": n,
        "arch": arch,
        "registers": s.registers,
        "spill_bytes": s.spill_store_bytes + s.spill_load_bytes,
        "smem_bytes": cfg.smem_bytes + s.static_smem_bytes,
        "opcodes": dict(sorted(ops.items(), key=lambda kv: (-kv[1], kv[0]))),
        "dtype": dtype,
        "slug": cfg.slug,
        "function": fn,
        "spill_store_bytes": s.spill_store_bytes,
        "spill_load_bytes": s.spill_load_bytes,
        "stack_bytes": s.stack_bytes,
        "dynamic_smem_bytes": cfg.smem_bytes,
        "static_smem_bytes": s.static_smem_bytes,
        "instructions": sum(ops.values()),
        # The main (KV-block) loop body, [target, backward branch] inclusive: the code that
        # runs seq/B_c times and dominates the executed count; prologue/epilogue excluded.
        "loop_opcodes": dict(sorted(loop["opcodes"].items(), key=lambda kv: (-kv[1], kv[0]))),
        "loop_start": f"{loop['start']:#06x}",
        "loop_end": f"{loop['end']:#06x}",
        "loop_instructions": sum(loop["opcodes"].values()),
        # tensor-core instructions per pass of the main loop (one KV block of B_c columns)
        "loop_tensor_opcodes": {op: c for op, c in loop["opcodes"].items() if is_tensor_opcode(op)},
        "B_c": cfg.B_c,
        "cubin": str(cubin),
    }


def collect(kernels: Sequence[int] = KERNEL_IDS, archs: Sequence[str] = ARCHS,
            dtypes: Sequence[str] = DTYPES) -> list[dict]:
    """Static reports of every (kernel, arch, dtype); builds in parallel first."""
    for a in archs:
        check_arch(a)
    find_toolchain("nvcc", "ptxas", "cuobjdump")
    cubins = build_many((variant(k), a) for k in kernels for a in archs)
    return [_report_from(k, variant(k), a, d, cubins[(variant(k), a)])
            for k in kernels for a in archs for d in dtypes]


def _profiled_kernel7() -> list[tuple[str, KernelConfig]]:
    """(GPU folder, config) of each kernel-7 report shipped in reports/<gpu>/ (its sidecar's
    config): the analysis reads those configs' loop counts, also after tuned.json moved on."""
    out = []
    # kernel 7 and its mma.sync form (7mma: the kernel 7 profiled before the wgmma switch)
    for side in sorted([*REPO.glob("reports/*/kernel7.json"), *REPO.glob("reports/*/kernel7mma.json")]):
        try:
            cfg = json.loads(side.read_text()).get("config")
            if cfg:
                out.append((side.parent.name, KernelConfig.from_dict(cfg)))
        except (OSError, ValueError, TypeError):
            continue  # an unreadable sidecar: the analysis says so when it reads the report
    return out


def collect_tuned(archs: Sequence[str] = ARCHS, dtypes: Sequence[str] = DTYPES) -> list[dict]:
    """Static reports of every tuned kernel-7 config of kernels/tuned.json (each GPU's default
    and its per-S buckets' configs) and of each shipped kernel-7 report's config (what the
    GPU reports of kernel 7 actually ran), each once, with ``tuned_gpu`` set to its GPU slug."""
    tuned = list(dict.fromkeys([*((gpu, cfg) for gpu, _, cfg in tuned_configs()), *_profiled_kernel7()]))
    if not tuned:
        return []
    find_toolchain("nvcc", "ptxas", "cuobjdump")
    # A config compiles for the arch it can run on (wgmma: sm_90a, asked as sm_90) and is left
    # out where it cannot run at all (wgmma on sm_80/sm_86).
    jobs = [(gpu, cfg, a, cfg.target_arch(a)) for gpu, cfg in tuned for a in archs]
    jobs = [j for j in jobs if j[3] is not None]
    cubins = build_many((cfg, a) for _, cfg, a, _ in jobs)
    return [{**_report_from(7, cfg, target, d, cubins[(cfg, a)]), "tuned_gpu": gpu}
            for gpu, cfg, a, target in jobs for d in dtypes]


OPCODE_COLUMNS = ("kernel", "arch", "dtype", "opcode", "count")
# The loop table also names the config: kernel 7 has one row set per tuned GPU
# (``tuned_gpu``, e.g. "h200") besides the seed config (``tuned_gpu`` empty).
LOOP_COLUMNS = ("kernel", "arch", "dtype", "config", "tuned_gpu", "opcode", "count")
PTXAS_COLUMNS = ("kernel", "arch", "dtype", "registers", "spill_store_bytes",
                 "spill_load_bytes", "stack_bytes", "smem_bytes", "static_smem_bytes")


def data_tables(reports: Sequence[dict]) -> dict[str, str]:
    """CSV text of reports/sass/opcodes.csv, opcodes_loop.csv and ptxas.csv, in a stable order.

    opcodes_loop.csv counts only the main-loop body, for the seed configs and (rows with
    ``tuned_gpu`` set) the tuned kernel-7 configs; opcodes.csv / ptxas.csv keep the seed
    configs only. It is a separate file rather than a ``scope`` column so that every reader
    of opcodes.csv (which sums or indexes counts per kernel/arch/dtype/opcode) keeps
    working unchanged."""
    def render(columns: Sequence[str], rows: Iterable[Sequence]) -> str:
        buf = io.StringIO()
        w = csv.writer(buf, lineterminator="\n")
        w.writerow(columns)
        w.writerows(rows)
        return buf.getvalue()

    every = sorted(reports, key=lambda r: (r["kernel"], r.get("tuned_gpu", ""), r["arch"], r["dtype"]))
    reports = [r for r in every if not r.get("tuned_gpu")]
    ops = render(OPCODE_COLUMNS, ((r["kernel"], r["arch"], r["dtype"], op, c)
                                  for r in reports for op, c in sorted(r["opcodes"].items())))
    loop = render(LOOP_COLUMNS, ((r["kernel"], r["arch"], r["dtype"], r["slug"], r.get("tuned_gpu", ""),
                                  op, c) for r in every for op, c in sorted(r["loop_opcodes"].items())))
    ptx = render(PTXAS_COLUMNS, ([r[c] for c in PTXAS_COLUMNS] for r in reports))
    return {"opcodes.csv": ops, "opcodes_loop.csv": loop, "ptxas.csv": ptx}


def write_data(out_dir: Path = DATA_DIR, *, check: bool = False) -> list[Path]:
    """Write (or with ``check``, compare against) the committed static data.

    Returns the files that differ (check) or were written."""
    tables = data_tables(collect() + collect_tuned())
    if not check:
        out_dir.mkdir(parents=True, exist_ok=True)
    touched = []
    for name, text in tables.items():
        p = out_dir / name
        if check:
            if not p.exists() or p.read_text() != text:
                touched.append(p)
        else:
            p.write_text(text)
            touched.append(p)
    return touched


# ------------------------------------------------------------------------ CLI
