"""Does the FA2 rebuild the model runs on the A100 depend on which CUDA 12.8 toolchain built it?

The series built its reference (the fork's FlashAttention-2 forward, sm_80) with "CUDA 12.8";
reports/sass/series/fa2_official_sm80.sass was built with the nvcc 13.0 C++ front end and ptxas
12.8.93 (CHECK.md section 1: PyPI has no CUDA 12.8 nvcc driver). This script builds the same
kernel four ways and records whether the SASS changes (CPU only, about 3 minutes):

  nvcc13_ptxas12893     the committed build: nvcc 13.0 front end -> PTX -> ptxas 12.8.93
  nvcc13_ptxas12861     the same PTX through ptxas 12.8.61 (CUDA 12.8's first release)
  nvrtc12893_ptxas12893 NVRTC 12.8.93 (CUDA 12.8's own C++ front end and NVVM) -> ptxas 12.8.93
  nvrtc13088_ptxas12893 NVRTC 13.0.88 -> ptxas 12.8.93: the control, the same path as the one
                        above with the 13.0 front end, so that a difference between the two
                        NVRTC builds is the front end's version and not NVRTC's own code path
                        (NVRTC compiles CUTLASS with libcu++ for std::, rtc/fa2_rtc.cu)

    python3 devjobs/series/fa2_toolchain.py --fa2 FA2_SRC --cutlass CUTLASS_INCLUDE \\
        --venv /work/venv128 --ptxas-12861 PTXAS --out reports/sass/series/fa2_toolchain.json

FA2_SRC: the fork's csrc/flash_attn/src at the commit of fa2_provenance.json; CUTLASS_INCLUDE:
the include/ of the CUTLASS it pins (devjobs/series_fa2_sass.sh extracts both). --venv: the venv
of CHECK.md's reproduce line plus nvidia-cuda-nvrtc-cu12==12.8.93 and nvidia-cuda-nvrtc==13.0.88.
"""
from __future__ import annotations

import argparse
import ctypes
import hashlib
import json
import re
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(REPO))
from flashprof.analysis.gap.controls import parse  # noqa: E402
from flashprof.analysis.gap.loops import main_loop, with_out_of_line  # noqa: E402
from flashprof.analysis.gap.scheduler import pipe  # noqa: E402

COMMITTED = REPO / "reports" / "sass" / "series" / "fa2_official_sm80.sass"
PTX_ISA = "8.7"  # the newest ISA ptxas 12.8 reads (CHECK.md section 1)
DEFINES = ["-U__CUDA_NO_HALF_OPERATORS__", "-U__CUDA_NO_HALF_CONVERSIONS__", "-U__CUDA_NO_HALF2_OPERATORS__",
           "-U__CUDA_NO_BFLOAT16_CONVERSIONS__", "-DFLASHATTENTION_DISABLE_BACKWARD", "-DFLASHATTENTION_DISABLE_DROPOUT",
           "-DFLASHATTENTION_DISABLE_ALIBI", "-DFLASHATTENTION_DISABLE_SOFTCAP", "-DFLASHATTENTION_DISABLE_UNEVEN_K",
           "-DFLASHATTENTION_DISABLE_LOCAL", "-DFA2_BLOCK_N=64"]
# nvcc: the fork's setup.py flags as devjobs/series_fa2_sass.sh passes them
NVCC_FLAGS = ["-O3", "-std=c++17", *DEFINES[:4], "--expt-relaxed-constexpr", "--expt-extended-lambda",
              "--use_fast_math", "-lineinfo", *DEFINES[4:], "-arch=compute_80", "-ptx"]
# NVRTC takes the same language flags where it has them; it has no relaxed-constexpr or
# extended-lambda switch and treats unannotated functions (CuTe's lambdas) as host code unless
# told -default-device.
NVRTC_FLAGS = ["--gpu-architecture=compute_80", "--std=c++17", *DEFINES[:4], "--use_fast_math", "-default-device",
               "--generate-line-info", *DEFINES[4:]]
PTXAS_FLAGS = ["-arch=sm_80", "-O3", "--generate-line-info", "-v"]


def nvrtc_ptx(lib: Path, src: Path, includes: list[Path], out: Path) -> str:
    """Compile ``src`` with the NVRTC library ``lib``; write the PTX; return NVRTC's version."""
    # NVRTC dlopens its builtins library by name; load the one beside it first (the loader's
    # search path is fixed when the process starts)
    for b in sorted(lib.parent.glob("libnvrtc-builtins.so.*")):
        ctypes.CDLL(str(b), mode=ctypes.RTLD_GLOBAL)
    n = ctypes.CDLL(str(lib))
    major, minor = ctypes.c_int(), ctypes.c_int()
    n.nvrtcVersion(ctypes.byref(major), ctypes.byref(minor))
    prog = ctypes.c_void_p()
    if n.nvrtcCreateProgram(ctypes.byref(prog), src.read_bytes(), src.name.encode(), 0, None, None):
        raise SystemExit(f"nvrtcCreateProgram failed ({lib})")
    opts = [o.encode() for o in NVRTC_FLAGS + [f"-I{p}" for p in includes]]
    rc = n.nvrtcCompileProgram(prog, len(opts), (ctypes.c_char_p * len(opts))(*opts))
    size = ctypes.c_size_t()
    n.nvrtcGetProgramLogSize(prog, ctypes.byref(size))
    log = ctypes.create_string_buffer(size.value)
    n.nvrtcGetProgramLog(prog, log)
    if rc:
        raise SystemExit(f"NVRTC {major.value}.{minor.value} failed:\n{log.value.decode(errors='replace')[:4000]}")
    n.nvrtcGetPTXSize(prog, ctypes.byref(size))
    ptx = ctypes.create_string_buffer(size.value)
    n.nvrtcGetPTX(prog, ptx)
    out.write_bytes(ptx.value)
    return f"NVRTC {major.value}.{minor.value} ({lib.name})"


def lower_isa(ptx: Path) -> str:
    text = ptx.read_text()
    isa = re.search(r"^\.version (\S+)", text, re.M).group(1)
    ptx.write_text(re.sub(r"^\.version \S+", f".version {PTX_ISA}", text, count=1, flags=re.M))
    return isa


def tool_version(tool: Path) -> str:
    return subprocess.run([str(tool), "--version"], capture_output=True, text=True).stdout.strip().splitlines()[-1]


def instruction_text(sass: str) -> str:
    """The disassembly's instructions, addresses and encodings dropped, one per line (the cubin's
    other bytes name a temporary folder; the instructions do not)."""
    return "\n".join(m.group(1).strip() for m in re.finditer(r"/\*[0-9a-f]{4,}\*/\s+(.*?;)", sass))


def summary(sass: str, ptxas_log: str) -> dict:
    fns = parse(sass)
    insts = max(fns.values(), key=lambda v: sum(1 for i in v if i.base == "HMMA"))
    lo, hi = main_loop(insts)
    body = with_out_of_line(insts, lo, hi)
    ops, pipes = Counter(i.base for i in body), Counter(pipe(i) for i in body)
    res = re.search(r"Used (\d+) registers.*?(\d+) bytes cumulative stack", ptxas_log, re.S)
    spill = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", ptxas_log)
    return {"registers": int(res.group(1)), "stack_bytes": int(res.group(2)),
            "spill_store_bytes": int(spill.group(1)), "spill_load_bytes": int(spill.group(2)),
            "function_instructions": len(insts), "loop_instructions": len(body),
            "loop_opcodes": {k: ops[k] for k in ("HMMA", "LDSM", "LDGSTS", "MUFU", "MOV", "IMAD", "LDL", "STL")},
            "loop_pipes": dict(sorted(pipes.items())),
            "sha256_instructions": hashlib.sha256(instruction_text(sass).encode()).hexdigest()}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fa2", type=Path, required=True, help="the fork's csrc/flash_attn/src")
    ap.add_argument("--cutlass", type=Path, required=True, help="CUTLASS include/")
    ap.add_argument("--venv", type=Path, required=True)
    ap.add_argument("--ptxas-12861", type=Path, required=True)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    sp = next(a.venv.glob("lib/python3*/site-packages"))
    cu13, cu12 = sp / "nvidia" / "cu13", sp / "nvidia"
    nvcc, cuobjdump = cu13 / "bin" / "nvcc", cu13 / "bin" / "cuobjdump"
    ptxas = {"12.8.93": cu12 / "cuda_nvcc" / "bin" / "ptxas", "12.8.61": a.ptxas_12861}
    rtc = HERE / "fa2" / "rtc"
    builds = {}
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        ptx = {}
        cmd = [str(nvcc), *NVCC_FLAGS, f"-I{HERE / 'fa2' / 'torch_stub'}", f"-I{a.fa2}", f"-I{a.cutlass}",
               str(HERE / "fa2" / "instantiate_fa2.cu"), "-o", str(t / "nvcc13.ptx")]
        subprocess.run(cmd, check=True, capture_output=True)
        ptx["nvcc13"] = (t / "nvcc13.ptx", tool_version(nvcc) + " (nvcc front end)", lower_isa(t / "nvcc13.ptx"))
        for name, lib, inc in (("nvrtc12893", cu12 / "cuda_nvrtc" / "lib" / "libnvrtc.so.12",
                                [cu12 / "cuda_runtime" / "include", cu12 / "cuda_cccl" / "include"]),
                               ("nvrtc13088", cu13 / "lib" / "libnvrtc.so.13", [cu13 / "include", cu13 / "include" / "cccl"])):
            p = t / f"{name}.ptx"
            # rtc/stub first: its <cstdint> / <tuple> are libcu++'s, which torch_stub's PyTorch stand-ins then include
            version = nvrtc_ptx(lib, rtc / "fa2_rtc.cu", [rtc / "stub", HERE / "fa2" / "torch_stub", a.fa2, a.cutlass, *inc], p)
            ptx[name] = (p, version, lower_isa(p))
        for name, pv in (("nvcc13_ptxas12893", ("nvcc13", "12.8.93")), ("nvcc13_ptxas12861", ("nvcc13", "12.8.61")),
                         ("nvrtc12893_ptxas12893", ("nvrtc12893", "12.8.93")),
                         ("nvrtc13088_ptxas12893", ("nvrtc13088", "12.8.93"))):
            src, front, isa = ptx[pv[0]]
            cubin = t / f"{name}.cubin"
            log = subprocess.run([str(ptxas[pv[1]]), *PTXAS_FLAGS, str(src), "-o", str(cubin)],
                                 check=True, capture_output=True, text=True)
            sass = subprocess.run([str(cuobjdump), "-sass", str(cubin)], check=True, capture_output=True, text=True).stdout
            builds[name] = {"front_end": front, "ptx_isa_emitted": isa, "ptx_isa_given_to_ptxas": PTX_ISA,
                            "ptxas": tool_version(ptxas[pv[1]]), **summary(sass, log.stdout + log.stderr)}
    committed = hashlib.sha256(instruction_text(COMMITTED.read_text()).encode()).hexdigest()
    shas = {n: b["sha256_instructions"] for n, b in builds.items()}
    for n, b in builds.items():
        b["same_instructions_as"] = sorted(o for o, s in shas.items() if o != n and s == b["sha256_instructions"])
        b["same_as_committed"] = b["sha256_instructions"] == committed
    rec = {"what": "FA2 forward (Flash_fwd_kernel_traits<128,128,64,4>, sm_80: the series' A100 reference) built "
                   "four ways; which builds give the same instructions",
           "script": "devjobs/series/fa2_toolchain.py", "committed_sass": str(COMMITTED.relative_to(REPO)),
           "committed_sha256_instructions": committed, "nvcc_flags": NVCC_FLAGS, "nvrtc_flags": NVRTC_FLAGS,
           "ptxas_flags": PTXAS_FLAGS, "builds": builds}
    a.out.write_text(json.dumps(rec, indent=1) + "\n")
    print(json.dumps({n: (b["loop_instructions"], b["same_instructions_as"], b["same_as_committed"]) for n, b in builds.items()}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
