"""Shared fixtures: real reports, parsed once per session, plus raw ncu_report values.

Expected values in the tests come from ``raw_metrics`` (read straight through
ncu_report, not through the analysis package), so the tests check our arithmetic
against Nsight Compute's own counters rather than against itself.
"""
from __future__ import annotations

import json
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
REF = ROOT / "reports" / "h200" / "ref.ncu-rep"
CUDNN = ROOT / "reports" / "h200" / "cudnn.ncu-rep"
SOL = ROOT / "tests" / "data" / "fa2_sol_only.ncu-rep"
GEMM = ROOT / "tests" / "data" / "gemm_foreign.ncu-rep"
H200 = ROOT / "reports" / "h200"
KERNELS = {str(i): H200 / f"kernel{i}.ncu-rep" for i in range(1, 8)}
# Kernel 7's mma.sync form (target 7mma): the kernel 7 the gap models simulate.
KERNEL7_MMA = H200 / "kernel7mma.ncu-rep"


def raw_metrics(path: Path, launch: int = 0) -> dict:
    """{metric: value} for one action, straight from ncu_report (scalar values only)."""
    ncu_report = pytest.importorskip("ncu_report")
    report = ncu_report.load_report(str(path))
    action = report.range_by_idx(0).action_by_idx(launch)
    out = {}
    for name in action.metric_names():
        m = action.metric_by_name(name)
        out[name] = m.value()
    return out


def raw_opcodes(path: Path, launch: int = 0) -> dict:
    """{opcode: warp instructions executed} from sass__inst_executed_per_opcode instances,
    straight from ncu_report."""
    ncu_report = pytest.importorskip("ncu_report")
    action = ncu_report.load_report(str(path)).range_by_idx(0).action_by_idx(launch)
    m = action.metric_by_name("sass__inst_executed_per_opcode")
    ids = m.correlation_ids()
    return {ids.value(i): m.value(i) for i in range(m.num_instances())}


def sidecar(path: Path) -> dict:
    return json.loads(path.with_suffix(".json").read_text())


def stored_rule(section: str) -> dict:
    """A judged rule's record, wgmma_interplay.json's ``section`` (xu_rule, dispatch_rule); skips
    the test where the file or the section is absent."""
    from flashprof.analysis.gap.wgmma_interplay import RESULT

    if not RESULT.is_file():
        pytest.skip(f"{RESULT} absent")
    rule = json.loads(RESULT.read_text()).get(section)
    if not rule:
        pytest.skip(f"no {section} judged")
    return rule


@pytest.fixture(scope="session")
def raw_kernels() -> dict:
    """{"1".."7": raw metrics of reports/h200/kernel<i>.ncu-rep}."""
    return {k: raw_metrics(p) for k, p in KERNELS.items()}


@pytest.fixture(scope="session")
def kernel_frame():
    """All ten H200 series reports (kernels 1-7, kernel 7's mma.sync form 7mma, FA2, cuDNN), parsed without the cache."""
    from flashprof.analysis.report.parse import load_frame
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        series = {f"kernel{i}" for i in range(1, 8)} | {"kernel7mma", "ref", "cudnn"}
        # reports/h200 also holds user targets (examples/): this fixture is the series only.
        return load_frame(sorted(p for p in H200.glob("*.ncu-rep") if p.name[:-8] in series), cache=False)


@pytest.fixture(scope="session")
def raw_ref() -> dict:
    return raw_metrics(REF)


@pytest.fixture(scope="session")
def raw_cudnn() -> dict:
    return raw_metrics(CUDNN)


@pytest.fixture(scope="session")
def full_frame():
    """ref + cudnn, parsed without the cache so the parser itself is exercised."""
    from flashprof.analysis.report.parse import load_frame
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # full-set reports must not warn
        return load_frame([REF, CUDNN], cache=False)


def _load_recording(paths):
    from flashprof.analysis.report.parse import load_frame
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        frame = load_frame(paths, cache=False)
    return frame, caught


@pytest.fixture(scope="session")
def sol_load():
    """(frame, warnings) for the SpeedOfLight+LaunchStats-only FA2 report."""
    return _load_recording([SOL])


@pytest.fixture(scope="session")
def gemm_load():
    """(frame, warnings) for the foreign cuBLAS GEMM report (SpeedOfLight only)."""
    return _load_recording([GEMM])


@pytest.fixture(scope="session")
def ref_source():
    from flashprof.analysis.report.parse import load_source_frame
    return load_source_frame(REF)


@pytest.fixture(scope="session")
def toolchain():
    """nvcc, ptxas and cuobjdump (the venv's CUDA wheels): the static-build tests skip
    without them on a developer's machine and fail under CI=true."""
    import os

    from flashprof.kernels.toolchain import ToolchainError, find_toolchain

    try:
        return find_toolchain("nvcc", "ptxas", "cuobjdump")
    except ToolchainError as e:
        if os.environ.get("CI"):
            pytest.fail(f"CUDA toolchain missing in CI: {e}", pytrace=False)
        pytest.skip(str(e))
