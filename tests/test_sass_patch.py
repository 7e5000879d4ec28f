"""flashprof.kernels.sass.patch on a real cubin: the yield probe (ceilings/yield_probe.cu)
built by the venv's nvcc, patched, and read back by cuobjdump. The expected bits come from
the disassembly's own 64-bit words (decoded here with the published layout: control code in
bits 41..63 of the high word, yield bit 4, reuse bits 17..20), not from the patcher."""
from __future__ import annotations

import subprocess

import pytest

from conftest import ROOT

SRC = ROOT / "flashprof" / "kernels" / "ceilings" / "yield_probe.cu"


def _words(sass: str, function: str) -> dict[int, tuple[str, int, int]]:
    """{address: (opcode, low word, high word)} of one function of cuobjdump -sass text."""
    out, cur, lines = {}, None, sass.splitlines()
    for k, line in enumerate(lines):
        if "Function :" in line:
            cur = line.split("Function :")[1].strip()
            continue
        if cur != function or not line.strip().startswith("/*") or ";" not in line:
            continue
        addr = int(line.strip()[2:].split("*/")[0], 16)
        text = line.split("*/", 1)[1].split(";")[0].split()
        op = text[1] if text[0].startswith("@") else text[0]
        low = int(line.rsplit("0x", 1)[1].split()[0], 16)
        high = int(lines[k + 1].split("0x", 1)[1].split()[0], 16)
        out[addr] = (op.split(".")[0], low, high)
    return out


@pytest.fixture(scope="module")
def built(toolchain, tmp_path_factory):
    d = tmp_path_factory.mktemp("yield")
    cubin = d / "orig.cubin"
    subprocess.run([str(toolchain.path("nvcc")), "-cubin", "-O3", "-arch=sm_90", "-o", str(cubin), str(SRC)],
                   check=True, capture_output=True)
    return toolchain, cubin


def _dump(toolchain, cubin) -> str:
    return subprocess.run([str(toolchain.path("cuobjdump")), "-sass", str(cubin)], check=True,
                          capture_output=True, text=True).stdout


@pytest.mark.parametrize("function, opcodes, how", [
    ("yield_ffma", "FFMA", "--yield 0"), ("yield_mix", "FMUL", "--yield 0"),
    ("reuse_hmma", "HMMA", "--no-reuse")])
def test_patch_changes_only_the_named_bits_of_the_named_opcodes(built, tmp_path, function, opcodes, how):
    from flashprof.kernels.sass.patch import main

    toolchain, cubin = built
    out = tmp_path / "patched.cubin"
    assert main([str(cubin), str(out), "--function", function, "--opcodes", opcodes, *how.split()]) == 0
    before, after = _words(_dump(toolchain, cubin), function), _words(_dump(toolchain, out), function)
    assert before.keys() == after.keys()
    ops = set(opcodes.split(","))
    bit = (1 << 45) if how.startswith("--yield") else (0xF << 58)
    touched = 0
    for addr, (op, lo, hi) in before.items():
        op2, lo2, hi2 = after[addr]
        assert (op2, lo2) == (op, lo)  # opcode and low word untouched everywhere
        if op in ops:
            assert hi2 & ~bit == hi & ~bit and hi2 & bit == 0
            touched += hi & bit != 0
        else:
            assert hi2 == hi
    assert touched > 0  # the compiler had set them: the patch did something
    # every byte outside the function's code is the same
    a, b = cubin.read_bytes(), out.read_bytes()
    assert len(a) == len(b) and sum(x != y for x, y in zip(a, b)) == touched


def test_patch_sets_the_stall_count_of_the_named_opcodes(built, tmp_path):
    from flashprof.kernels.sass.patch import main

    toolchain, cubin = built
    out = tmp_path / "s2.cubin"
    assert main([str(cubin), str(out), "--function", "yield_ffma", "--opcodes", "FFMA", "--yield", "1", "--stall", "2"]) == 0
    before, after = _words(_dump(toolchain, cubin), "yield_ffma"), _words(_dump(toolchain, out), "yield_ffma")
    stall = lambda hi: hi >> 41 & 0xF
    for addr, (op, lo, hi) in before.items():
        op2, lo2, hi2 = after[addr]
        assert (op2, lo2) == (op, lo)
        if op == "FFMA":
            assert stall(hi2) == 2 and hi2 & ~(0xF << 41) == hi & ~(0xF << 41)
        else:
            assert hi2 == hi


def test_patch_refuses_what_is_not_a_cubin(tmp_path, capsys):
    from flashprof.kernels.sass.patch import PatchError, set_yield

    with pytest.raises(PatchError):
        set_yield(b"not an elf at all", "f", [0], 0)


def _probe_run(mode: str = "yield"):
    import json

    from flashprof.analysis.gap.ceil_run import same_chip_path

    raw = same_chip_path(f"yield/{mode}.raw.jsonl")
    if raw is None:
        pytest.skip("no yield probe run committed")
    recs = [json.loads(x) for x in raw.read_text().splitlines() if x.strip()]
    return raw, {r["name"]: r for r in recs if r.get("record") == "measurement"}


def _cpi(r) -> float:
    """Cycles per instruction per sub-partition: the slowest warp's span, median over launches."""
    import statistics

    return statistics.median(max(s) for s in r["spans"]) / (r["work"] * r["warps_per_scheduler"])


def test_a_cleared_yield_bit_costs_a_lone_warp_one_issue_cycle():
    """What docs/METHOD.md says of the probe, from the raw spans: a lone warp pays one cycle per
    instruction whose yield bit is cleared (all 128 FFMAs; 32 FMULs of 160), a second warp on the
    sub-partition takes the slot (within 4 %), and clearing HMMA's reuse flags costs nothing."""
    _raw, rec = _probe_run()
    r = lambda k, v, w: _cpi(rec[f"yield_{k}_{v}_w{w}"])
    assert r("yield_ffma", "y0", 1) - r("yield_ffma", "orig", 1) == pytest.approx(1.0, abs=0.1)
    extra_fmul = (r("yield_mix", "y0fmul", 1) - r("yield_mix", "orig", 1)) * 160 / 32
    assert extra_fmul == pytest.approx(1.0, abs=0.1)
    for w in (2, 4):
        assert r("yield_ffma", "y0", w) / r("yield_ffma", "orig", w) < 1.04
    for w in (1, 2, 4):
        assert r("reuse_hmma", "noreuse", w) == pytest.approx(r("reuse_hmma", "orig", w), rel=0.005)


def test_a_cleared_yield_bit_adds_nothing_to_a_stall_count_of_two():
    """The probe's second call (docs/METHOD.md), from the raw spans: FFMA at stall count 2 costs a
    lone warp the same with its yield bit set or cleared, and as much as stall 1 with it cleared;
    stall 2 is one cycle over stall 1 with the bit set (the lone warp's fixed wait is the count)."""
    _raw, rec = _probe_run("yield2")
    r = lambda v, w: _cpi(rec[f"yield_yield_ffma_{v}_w{w}"])
    for w in (1, 2, 4):
        assert r("s2y0", w) == pytest.approx(r("s2y1", w), rel=0.005)
    assert r("s2y1", 1) == pytest.approx(r("y0", 1), rel=0.005)
    assert r("s2y1", 1) - r("orig", 1) == pytest.approx(1.0, abs=0.05)


def test_ex2_in_the_softmax_mix_runs_at_the_xu_pipe_rate():
    """The XU probe (ceilings/xu_probe.cu, docs/METHOD.md), from the raw spans: with 2 and 4 warps
    a sub-partition, MUFU.EX2 with 1, 2 or 3 FP32 instructions per exponential takes the XU
    pipe's own interval (the ceilings' mufu_ex2 rate on the same SM: 32 lanes over its per-
    sub-partition lanes a cycle) within 2 %: the FP32 work around it does not hold the pipe."""
    import json

    from flashprof.analysis.gap.constants import CEILINGS

    _raw, rec = _probe_run("xu")
    if not CEILINGS.is_file():
        pytest.skip(f"{CEILINGS} absent")
    rate = next(m["value"] for m in json.loads(CEILINGS.read_text())["measurements"]
                if m["name"] == "mufu_ex2" and m["kind"] == "throughput")
    interval = 32 / (rate / 4)  # 4 sub-partitions an SM
    for k in ("xu_soft1", "xu_soft2", "xu_soft3"):
        for w in (2, 4):
            assert _cpi(rec[f"yield_{k}_orig_w{w}"]) == pytest.approx(interval, rel=0.02)


def test_a_stall_count_costs_its_count_with_other_warps_there():
    """The stall-count probe (docs/METHOD.md), from the raw spans: every FFMA at stall count S
    (2-10) costs a lone warp S cycles, and 2 or 4 warps a sub-partition share them: S / warps
    cycles an instruction (at least one), within 0.1 cycle (the loop counter and branch of each
    128-FFMA pass). No extra fixed cycle with others there."""
    _raw, rec = _probe_run("stall")
    from flashprof.analysis.gap.yield_probe import STALLS

    for s in STALLS:
        for w in (1, 2, 4):
            assert _cpi(rec[f"yield_yield_ffma_s{s}_w{w}"]) == pytest.approx(max(1.0, s / w), abs=0.1)


@pytest.mark.parametrize("mode", ["yield", "yield2", "xu", "mix", "mix2", "stall"])
def test_each_probe_sidecar_is_its_raw_run_and_was_predicted_first(mode):
    """Every probe call (yield, yield2, the XU probe, FA2's compute skeleton with and without the
    exponential): its sidecar is its raw run (cycles per instruction recomputed here from the
    spans), two runs within 0.5 % of each other, predictions committed before it ran; the
    skeleton never beats the tensor pipe alone (6 cycles an HMMA.16816.F32 a sub-partition)."""
    import json

    raw, rec = _probe_run(mode)
    side = json.loads(raw.with_name(f"{mode}.json").read_text())
    assert side["raw"] == f"{mode}.raw.jsonl" and len(side["runs"]) == 2 and side["gpu"]
    assert side["predicted_before"]["created"] < side["created"]
    assert side.get("runs_max_difference_pct", 0.0) < 0.5
    for name, r in rec.items():
        assert side["per_record"][name]["cycles_per_inst_sp"] == pytest.approx(_cpi(r))
        assert side["per_record"][name]["predicted"] is not None
        if mode.startswith("mix"):
            assert _cpi(r) > 6.0
