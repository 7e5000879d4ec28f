"""The static build: kernels 1-7 compiled for sm_80/86/90 without a GPU.

Checks what the series says the compiler does with each step (swizzle arithmetic appears
in kernel 2, the softmax fusion trades FMUL for FFMA in kernel 6), that nothing spills,
and that the committed reports/sass/*.csv are what a fresh build gives.

The CUDA tools come from the cuda-toolkit wheels that `make setup` installs; without them
these tests skip on a developer's machine and fail under CI=true.
"""
from __future__ import annotations

import json
import subprocess
import sys
import warnings

import pytest

from flashprof.kernels.sass import static as sass
from flashprof.paths import ROOT
from flashprof.kernels.sass.command import main as sass_main
from flashprof.kernels.config import VARIANTS
from flashprof.kernels.toolchain import ToolchainError

REPO = sass.REPO
KERNELS = sorted(VARIANTS)


@pytest.fixture(scope="session")
def reports(toolchain):
    """(kernel, arch, dtype) -> static report; one parallel build of all 21 cubins."""
    return {(r["kernel"], r["arch"], r["dtype"]): r for r in sass.collect()}


@pytest.fixture(scope="session")
def tuned_reports(toolchain):
    """Static reports of the tuned kernel-7 configs of kernels/tuned.json."""
    return sass.collect_tuned()


# ------------------------------------------------------------ parsers (no tools)
PTXAS_LOG = """\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_ZN9flashprof16flash_fwd_kernelINS_6ConfigE13__nv_bfloat16EEvPKT0_S5_S5_PS3_iif' for 'sm_80'
ptxas info    : Function properties for _ZN9flashprof16flash_fwd_kernelINS_6ConfigE13__nv_bfloat16EEvPKT0_S5_S5_PS3_iif
    8 bytes stack frame, 12 bytes spill stores, 16 bytes spill loads
ptxas info    : Used 255 registers, used 1 barriers, 8 bytes stack frame, 1024 bytes smem, 400 bytes cmem[0]
ptxas info    : Compile time = 10.0 ms
ptxas info    : Compiling entry function '_ZN9flashprof16flash_fwd_kernelINS_6ConfigE6__halfEEvPKT0_S5_S5_PS3_iif' for 'sm_80'
ptxas info    : Function properties for _ZN9flashprof16flash_fwd_kernelINS_6ConfigE6__halfEEvPKT0_S5_S5_PS3_iif
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 202 registers, used 1 barriers, 400 bytes cmem[0]
"""

SASS_TEXT = """\
\tcode for sm_90
\t\tFunction : _Z1kI6__halfEvv
\t.headerflags\t@"EF_CUDA_SM90 EF_CUDA_VIRTUAL_SM(EF_CUDA_SM90)"
        /*0000*/                   LDC R1, c[0x0][0x28] ;                 /* 0x00000a00ff017b82 */
                                                                          /* 0x000fe20000000800 */
        /*0010*/               @P0 HMMA.16816.F32 R4, R8, R12, R4 ;       /* 0x0000000c0804723c */
        /*0020*/              @!PT LDSM.16.M88.4 R8, [R2] ;               /* 0x000000000208783b */
        /*0030*/                   HMMA.16816.F32.BF16 R4, R8, R12, R4 ;  /* 0x0000000c0804723c */
        /*0040*/                   EXIT ;                                 /* 0x000000000000794d */
\t\t..........
\t\tFunction : _Z1kI13__nv_bfloat16Evv
        /*0000*/                   NOP ;                                  /* 0x0000000000007918 */
"""


def test_ptxas_report_parses_each_entry():
    rep = sass.ptxas_report(PTXAS_LOG)
    bf16 = rep[sass.pick_function(rep, "bf16")]
    fp16 = rep[sass.pick_function(rep, "fp16")]
    assert (bf16.registers, bf16.spill_store_bytes, bf16.spill_load_bytes, bf16.stack_bytes,
            bf16.static_smem_bytes, bf16.arch) == (255, 12, 16, 8, 1024, "sm_80")
    assert (fp16.registers, fp16.spill_store_bytes, fp16.spill_load_bytes,
            fp16.static_smem_bytes) == (202, 0, 0, 0)


def test_parse_sass_strips_predicates_and_modifiers():
    per_fn = sass.parse_sass(SASS_TEXT)
    fp16 = per_fn[sass.pick_function(per_fn, "fp16")]
    assert fp16 == {"LDC": 1, "HMMA": 2, "LDSM": 1, "EXIT": 1}
    assert per_fn[sass.pick_function(per_fn, "bf16")] == {"NOP": 1}


# Two loops: an HMMA-free one (0x0030-0x0050) and the HMMA loop (0x0070-0x00c0), with a
# forward branch inside it and the trap branch to itself after EXIT.
LOOP_SASS = """\
\t\tFunction : _Z1kI6__halfEvv
        /*0000*/                   MOV R1, c[0x0][0x28] ;
        /*0010*/                   IMAD R2, R0, 0x4, RZ ;
        /*0020*/                   IMAD R3, R0, 0x8, RZ ;
        /*0030*/                   IADD3 R4, R4, 0x1, RZ ;
        /*0040*/                   ISETP.GE.AND P0, PT, R4, 0x10, PT ;
        /*0050*/              @!P0 BRA 0x30 ;
        /*0060*/                   LDSM.16.M88.4 R8, [R2] ;
        /*0070*/                   LDSM.16.M88.4 R12, [R3] ;
        /*0080*/                   HMMA.16816.F32 R16, R8, R12, R16 ;
        /*0090*/               @P1 BRA 0xb0 ;
        /*00a0*/                   FMUL R16, R16, 0.5 ;
        /*00b0*/                   HMMA.16816.F32 R20, R8, R14, R20 ;
        /*00c0*/              @!P2 BRA `(.L_x_1) 0x70 ;
        /*00d0*/                   STG.E [R6], R16 ;
        /*00e0*/                   EXIT ;
        /*00f0*/                   BRA 0xf0;
"""


def test_find_main_loop_takes_the_hmma_loop():
    insns = sass.parse_insns(LOOP_SASS)["_Z1kI6__halfEvv"]
    assert [i.opcode for i in insns[:3]] == ["MOV", "IMAD", "IMAD"]
    assert sass.branch_target(insns[5]) == 0x30 and sass.branch_target(insns[0]) is None
    assert sass.find_main_loop(insns) == (0x70, 0xC0)
    counts, span = sass.loop_opcode_counts(insns)
    assert span == (0x70, 0xC0)
    assert counts == {"LDSM": 1, "HMMA": 2, "BRA": 2, "FMUL": 1}
    # The HMMA-free loop alone is not a main loop; nor is the trap branch to itself.
    no_mma = [i for i in insns if i.opcode != "HMMA"]
    assert sass.find_main_loop(no_mma) is None
    # parse_sass still gives the whole-function histogram from the same parser.
    assert sass.parse_sass(LOOP_SASS)["_Z1kI6__halfEvv"]["IMAD"] == 2


def test_find_main_loop_prefers_most_hmma_then_the_outer_loop():
    def ins(addr, op, operands=""):
        return sass.Insn(addr, op, operands)
    inner = [ins(0x00, "MOV"), ins(0x10, "HMMA"), ins(0x20, "HMMA"), ins(0x30, "BRA", "0x10"),
             ins(0x40, "HMMA"), ins(0x50, "BRA", "0x40"), ins(0x60, "BRA", "0x0"), ins(0x70, "EXIT")]
    # 0x10-0x30 holds 2 HMMA, 0x40-0x50 one, the outer 0x00-0x60 all three.
    assert sass.find_main_loop(inner) == (0x00, 0x60)
    tie = [ins(0x00, "MOV"), ins(0x10, "HMMA"), ins(0x20, "BRA", "0x10"), ins(0x30, "BRA", "0x0")]
    assert sass.find_main_loop(tie) == (0x00, 0x30)  # same HMMA: the wider (outer) range


def test_find_main_loop_passes_over_a_persistent_kernels_tile_loop():
    """The tile loop of a persistent kernel encloses the KV loop and holds the same MMAs plus
    the O stores; the KV loop is the one without a global store, in both loop finders."""
    from flashprof.analysis.gap import controls

    def ins(addr, op, operands=""):
        return sass.Insn(addr, op, operands)
    code = [ins(0x00, "MOV"), ins(0x10, "HGMMA"), ins(0x20, "HGMMA"), ins(0x30, "BRA", "0x10"),
            ins(0x40, "STG", "[R2], R4"), ins(0x50, "BRA", "0x0"), ins(0x60, "EXIT")]
    assert sass.find_main_loop(code) == (0x10, 0x30)
    # without the store the wider range wins the tie, as for any outer loop
    assert sass.find_main_loop([i for i in code if i.opcode != "STG"]) == (0x00, 0x50)
    # a tile loop is still taken when it is the only loop holding the markers
    only_outer = [ins(0x00, "HGMMA"), ins(0x10, "STG"), ins(0x20, "BRA", "0x0"), ins(0x30, "EXIT")]
    assert sass.find_main_loop(only_outer) == (0x00, 0x20)
    # gap/controls.py's finder (on the loop files' instructions) agrees, by index
    text = "\n".join(["Function : k"] + [
        f"/*{i.addr:04x}*/ {i.opcode} {i.operands} ; /* 0x{0:016x} */\n/* 0x{0:016x} */" for i in code])
    insts = next(iter(controls.parse(text).values()))
    lo, hi = controls.main_loop(insts, "HGMMA")
    assert (insts[lo].addr, insts[hi].addr) == (0x10, 0x30)


# --------------------------------------------------------------- static build
@pytest.mark.slow
@pytest.mark.parametrize("arch", sass.ARCHS)
@pytest.mark.parametrize("kernel", KERNELS)
def test_builds_without_spills(reports, kernel, arch):
    for dtype in sass.DTYPES:
        r = reports[(kernel, arch, dtype)]
        assert 0 < r["registers"] <= 255
        assert r["smem_bytes"] == VARIANTS[kernel].smem_bytes + r["static_smem_bytes"]
        if kernel == 7:  # the tuned variant may trade spills for speed: report, don't fail
            if r["spill_bytes"] or r["stack_bytes"]:
                warnings.warn(f"kernel 7 {arch} {dtype}: {r['spill_store_bytes']} B spill "
                              f"stores, {r['spill_load_bytes']} B spill loads, "
                              f"{r['stack_bytes']} B stack")
            continue
        assert r["spill_store_bytes"] == r["spill_load_bytes"] == 0, (kernel, arch, dtype)


@pytest.mark.slow
@pytest.mark.parametrize("arch", sass.ARCHS)
@pytest.mark.parametrize("kernel", KERNELS)
def test_core_instructions_present(reports, kernel, arch):
    for dtype in sass.DTYPES:
        ops = reports[(kernel, arch, dtype)]["opcodes"]
        for op in ("HMMA", "LDSM", "LDGSTS"):  # mma.sync, ldmatrix, cp.async
            assert ops.get(op, 0) > 0, (kernel, arch, dtype, op)


@pytest.mark.slow
@pytest.mark.parametrize("arch", sass.ARCHS)
@pytest.mark.parametrize("kernel", KERNELS)
def test_main_loop_holds_every_hmma(reports, kernel, arch):
    for dtype in sass.DTYPES:
        r = reports[(kernel, arch, dtype)]
        loop, ops = r["loop_opcodes"], r["opcodes"]
        assert loop["HMMA"] == ops["HMMA"], (kernel, arch, dtype)  # the KV loop does all mma
        assert all(0 < c <= ops[op] for op, c in loop.items())
        assert 0 < r["loop_instructions"] < r["instructions"]
        assert int(r["loop_start"], 16) < int(r["loop_end"], 16)


@pytest.mark.slow
def test_loop_x_trips_is_the_executed_count(reports):
    """Independent check of the loop finder against Nsight Compute: kernel 6's executed HMMA
    (sm_90) = HMMA in the loop body x KV blocks (S / B_c) x CTAs x warps per CTA; and the
    loop body x those trips accounts for nearly every executed instruction."""
    from flashprof.analysis.report.parse import load_frame
    rep = REPO / "reports" / "h200" / "kernel6.ncu-rep"
    if not rep.is_file():
        pytest.skip(f"{rep} not present")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        frame = load_frame([rep], cache=False)
    m = dict(zip(frame["metric"], frame["value"]))
    pre = "sass__inst_executed_per_opcode["
    dyn = {k[len(pre):-1]: v for k, v in m.items() if k.startswith(pre)}
    cfg, seq = VARIANTS[6], int(frame["seq"].iloc[0])
    assert m["launch__block_size"] == 32 * cfg.n_warps
    trips = seq // cfg.B_c * m["launch__grid_size"] * cfg.n_warps
    loop = reports[(6, "sm_90", "fp16")]["loop_opcodes"]
    assert loop["HMMA"] * trips == pytest.approx(dyn["HMMA"], rel=0.02)
    assert sum(loop.values()) * trips == pytest.approx(sum(dyn.values()), rel=0.05)
    for op in ("LDSM", "MUFU", "FMNMX", "FFMA"):  # loop-only opcodes: executed = loop x trips
        assert loop[op] * trips == pytest.approx(dyn[op], rel=0.03), op


@pytest.mark.slow
def test_tuned_configs_have_loop_counts(tuned_reports):
    from flashprof.kernels.config import KernelConfig, tuned_configs

    by_slug = {c.slug: c for _, _, c in tuned_configs()}
    for side in ROOT.glob("reports/*/kernel7*.json"):  # the configs the shipped reports ran
        cfg = json.loads(side.read_text()).get("config")
        if cfg:
            by_slug.setdefault(KernelConfig.from_dict(cfg).slug, KernelConfig.from_dict(cfg))
    for r in tuned_reports:
        assert r["kernel"] == 7 and r["tuned_gpu"]
        cfg = by_slug[r["slug"]]
        mma = "HGMMA" if cfg.wgmma else "HMMA"  # wgmma configs: sm_90a only
        assert r["arch"] == "sm_90a" or mma == "HMMA"
        # the overlapped warp-specialised loop peels one block's products: S_0 before it,
        # the last P V after it (flash_fwd_ws.cuh)
        peel = (128 // 16 + cfg.B_c // 16) if cfg.intra_wg_overlap else 0
        assert r["loop_opcodes"][mma] + peel == r["opcodes"][mma]


@pytest.mark.slow
@pytest.mark.parametrize("arch", sass.ARCHS)
def test_swizzle_adds_lop3(reports, arch):
    # Kernel 1 -> 2 adds the XOR swizzle arithmetic (~95 LOP3 in the series' sm_86 dump).
    k1, k2 = reports[(1, arch, "fp16")], reports[(2, arch, "fp16")]
    assert k2["opcodes"].get("LOP3", 0) > k1["opcodes"].get("LOP3", 0)


@pytest.mark.slow
@pytest.mark.parametrize("arch", sass.ARCHS)
def test_softmax_fusion_trades_fmul_for_ffma(reports, arch):
    # Kernel 5 -> 6 folds the softmax scale into FFMA (series: FMUL 194 -> 132, FFMA 2 -> 34).
    k5, k6 = reports[(5, arch, "fp16")]["opcodes"], reports[(6, arch, "fp16")]["opcodes"]
    assert k6.get("FMUL", 0) < k5.get("FMUL", 0)
    assert k6.get("FFMA", 0) > k5.get("FFMA", 0)


@pytest.mark.slow
def test_committed_data_is_fresh(reports, tuned_reports):
    tables = sass.data_tables(list(reports.values()) + tuned_reports)
    assert set(tables) == {"opcodes.csv", "opcodes_loop.csv", "ptxas.csv"}
    for name, text in tables.items():
        path = sass.DATA_DIR / name
        assert path.exists(), f"{path} missing: run `make sass-data` and commit it"
        assert path.read_text() == text, f"{path} is stale: run `make sass-data` and commit it"


# ------------------------------------------------------------------------ CLI
def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flashprof.kernels.sass", *args], cwd=REPO,
                          capture_output=True, text=True, timeout=600)


@pytest.mark.slow
def test_cli_json(reports):
    proc = _cli("6", "--arch", "sm_90", "--format", "json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert {"kernel", "arch", "registers", "spill_bytes", "smem_bytes", "opcodes"} <= set(out)
    assert out["kernel"] == 6 and out["arch"] == "sm_90"
    want = reports[(6, "sm_90", "fp16")]
    assert out["registers"] == want["registers"]
    assert out["opcodes"] == want["opcodes"]
    assert out["loop_opcodes"] == want["loop_opcodes"] and out["loop_opcodes"]["HMMA"] > 0
    counts = list(out["opcodes"].values())
    assert counts == sorted(counts, reverse=True)


@pytest.mark.slow
def test_cli_table_and_diff(reports):
    proc = _cli("1", "--arch", "sm_80", "--dtype", "bf16")
    assert proc.returncode == 0, proc.stderr
    assert "HMMA" in proc.stdout and "registers" in proc.stdout
    proc = _cli("diff", "5", "6", "--arch", "sm_90")
    assert proc.returncode == 0, proc.stderr
    rows = [ln.split() for ln in proc.stdout.splitlines()[3:]]
    deltas = [abs(int(r[3])) for r in rows]
    assert deltas == sorted(deltas, reverse=True) and deltas
    assert "FMUL" in {r[0] for r in rows}


@pytest.mark.parametrize("args", [
    ("9",), ("0",), ("x",), ("6", "--arch", "sm_75"), ("6", "--arch", "hopper"),
    ("6", "--dtype", "fp8"), ("diff", "1", "8"), ("diff", "1"), (),
])
def test_cli_errors_are_one_line(args):
    proc = _cli(*args)
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("sass: error: "), proc.stderr


def test_cli_missing_toolchain(monkeypatch, capsys):
    def missing(*names):
        raise ToolchainError("CUDA tool(s) not found: nvcc; run `make setup`")
    monkeypatch.setattr(sass, "find_toolchain", missing)
    assert sass_main(["6"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("sass: error: ") and "make setup" in err[0]
