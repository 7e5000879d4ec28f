"""Parse stage: long-frame contract, identity columns, cache, errors, warnings."""
from __future__ import annotations

import json
import os
import shutil
import struct
import warnings
import zlib

import pandas as pd
import pytest

from flashprof.analysis.report import parse
from flashprof.analysis.report.errors import FlashprofWarning, ReportError
from flashprof.analysis.report.parse import (FRAME_COLUMNS, KEY_COLUMNS, load_frame, load_source_frame, validate_frame)
from conftest import GEMM, KERNELS, REF, ROOT, SOL, raw_metrics, raw_opcodes, sidecar

SIDECAR = {
    "schema": 1, "kernel": "6", "title": "Kernel 6: swizzled", "config": None,
    "shape": {"batch": 16, "seq": 4096, "heads": 16, "d_head": 128}, "dtype": "fp16",
    "gpu": {"name": "NVIDIA H200", "slug": "h200"}, "clocks": {}, "ncu": {"version": "x", "args": []},
    "git": {"revision": "abc"}, "command": "ncu ...", "created": "2026-11-29T00:00:00Z",
}


def _tiny_png() -> bytes:
    """A valid 1x1 grey PNG built by hand (signature, IHDR, IDAT, IEND)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    ihdr = struct.pack(">IIBBBBB", 1, 1, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\x00\x80")) + chunk(b"IEND", b"")


# ----------------------------------------------------------------------------- contract
def test_frame_columns_key_and_units(full_frame):
    assert tuple(full_frame.columns) == FRAME_COLUMNS
    assert not full_frame.duplicated(list(KEY_COLUMNS)).any()
    assert (full_frame.groupby("metric")["unit"].nunique() <= 1).all()
    validate_frame(full_frame)
    assert set(full_frame["report"]) == {"ref", "cudnn"}
    assert full_frame["value"].dtype == "float64"


def test_validator_rejects_duplicate_key(full_frame):
    bad = pd.concat([full_frame.head(3), full_frame.head(1)], ignore_index=True)
    with pytest.raises(ValueError, match="not unique"):
        validate_frame(bad)


def test_identity_columns_from_sidecar(full_frame):
    # ref.ncu-rep now ships with a sidecar (ref.json): identity comes from it.
    side = sidecar(REF)
    ref = full_frame[full_frame["report"] == "ref"].iloc[0]
    assert ref["gpu"] == "NVIDIA H200" == side["gpu"]["name"]
    assert ref["arch"] == "sm_90"
    assert ref["kernel"] == "flash_fwd_kernel"
    assert "pytorch_flash::flash_fwd_kernel<" in ref["kernel_full"]
    assert ref["range_idx"] == 0 and ref["launch"] == 0
    assert ref["variant"] == "ref" == side["kernel"] and ref["title"] == side["title"]
    assert ref["dtype"] == side["dtype"] == "fp16"
    for col in ("batch", "seq", "heads", "d_head"):
        assert ref[col] == side["shape"][col], col
    assert str(REF) == ref["path"]


def test_identity_columns_without_sidecar(tmp_path):
    shutil.copy(REF, tmp_path / "fa2.ncu-rep")  # no fa2.json next to it
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        frame = load_frame(tmp_path / "fa2.ncu-rep", cache=False)
    row = frame.iloc[0]
    assert row["report"] == "fa2" and row["kernel"] == "flash_fwd_kernel" and row["arch"] == "sm_90"
    for col in ("variant", "title", "dtype", "batch", "seq", "heads", "d_head"):
        assert pd.isna(row[col]), col


def test_values_equal_ncu_report(full_frame, raw_ref):
    ref = full_frame[full_frame["report"] == "ref"].set_index("metric")["value"]
    numeric = {k: v for k, v in raw_ref.items() if isinstance(v, (int, float)) and not isinstance(v, bool)}
    assert len(ref) >= len(numeric)
    for name, v in numeric.items():
        assert ref[name] == pytest.approx(float(v), rel=1e-12), name
    # Strings become identity columns, never rows.
    assert "device__attribute_display_name" not in ref.index
    assert ref["gpu__time_duration.sum"] == raw_ref["gpu__time_duration.sum"]
    # Sanity a reader can check: FA2 at this shape takes milliseconds, not micro/seconds.
    assert 1e6 < ref["gpu__time_duration.sum"] < 1e8


def test_opcode_mix_rows(full_frame):
    ncu_report = pytest.importorskip("ncu_report")
    action = ncu_report.load_report(str(REF)).range_by_idx(0).action_by_idx(0)
    m = action.metric_by_name("sass__inst_executed_per_opcode")
    ids = m.correlation_ids()
    expected = {ids.value(i): m.value(i) for i in range(m.num_instances())}
    ref = full_frame[full_frame["report"] == "ref"].set_index("metric")["value"]
    for op, v in expected.items():
        assert ref[f"sass__inst_executed_per_opcode[{op}]"] == pytest.approx(v)


def test_sidecar_identity(tmp_path):
    shutil.copy(GEMM, tmp_path / "kernel6.ncu-rep")
    (tmp_path / "kernel6.json").write_text(json.dumps(SIDECAR))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FlashprofWarning)
        frame = load_frame(tmp_path / "kernel6.ncu-rep", cache=False)
    row = frame.iloc[0]
    assert row["report"] == "kernel6" and row["variant"] == "6"
    assert row["title"] == "Kernel 6: swizzled" and row["dtype"] == "fp16"
    assert (row["batch"], row["seq"], row["heads"], row["d_head"]) == (16, 4096, 16, 128)


def test_broken_sidecar_is_an_error(tmp_path):
    shutil.copy(GEMM, tmp_path / "k.ncu-rep")
    (tmp_path / "k.json").write_text("{not json")
    with pytest.raises(ReportError, match="k.json"):
        load_frame(tmp_path / "k.ncu-rep", cache=False)


def test_same_stem_in_two_folders_stays_unique(tmp_path):
    for d in ("h200", "a100"):
        (tmp_path / d).mkdir()
        shutil.copy(GEMM, tmp_path / d / "x.ncu-rep")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FlashprofWarning)
        frame = load_frame([tmp_path / "h200" / "x.ncu-rep", tmp_path / "a100" / "x.ncu-rep"], cache=False)
    assert set(frame["report"]) == {"h200/x", "a100/x"}


# ----------------------------------------------------------------------------- cache
@pytest.fixture
def xdg(tmp_path, monkeypatch):
    """XDG_CACHE_HOME pointed at a temporary folder: the cache lands there."""
    home = tmp_path / "xdg"
    monkeypatch.setenv("XDG_CACHE_HOME", str(home))
    return home / "flashprof"


@pytest.mark.slow
def test_cache_roundtrip_and_invalidation(tmp_path, xdg):
    report = tmp_path / "g.ncu-rep"
    shutil.copy(GEMM, report)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FlashprofWarning)
        cold = load_frame(report)
        cached = list(xdg.glob("g.*.parquet"))
        assert len(cached) == 1 and len(cached[0].name.split(".")[1]) == 40
        assert not (tmp_path / ".flashprof-cache").exists()  # nothing beside the report
        warm = load_frame(report)
        pd.testing.assert_frame_equal(cold, warm)
        # A new sidecar changes the content hash: a new cache entry.
        (tmp_path / "g.json").write_text(json.dumps(SIDECAR))
        fresh = load_frame(report)
    assert fresh["variant"].iloc[0] == "6"
    again = set(xdg.glob("g.*.parquet"))
    assert len(again) == 2 and set(cached) < again


def test_cache_hit_starts_no_worker(tmp_path, xdg, monkeypatch):
    report = tmp_path / "g.ncu-rep"
    shutil.copy(GEMM, report)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FlashprofWarning)
        load_frame(report)

        def no_worker(*a, **k):
            raise AssertionError("a cached report was read again")
        monkeypatch.setattr(parse, "_run_worker", no_worker)
        assert len(load_frame(report)) > 0


def test_relative_xdg_is_ignored(monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")
    assert parse.cache_dir() == parse.Path.home() / ".cache" / "flashprof"


@pytest.mark.slow
def test_read_only_report_folder_and_cache(tmp_path, xdg):
    """A read-only copy of a report folder parses (cache in XDG); a read-only cache
    folder too (no cache then)."""
    src = tmp_path / "ro"
    src.mkdir()
    shutil.copy(GEMM, src / "g.ncu-rep")
    src.chmod(0o555)
    xdg.mkdir(parents=True)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FlashprofWarning)
            frame = load_frame(src / "g.ncu-rep")
            assert len(frame) > 0 and list(xdg.glob("g.*.parquet"))
            for f in xdg.glob("*"):
                f.unlink()
            xdg.chmod(0o555)
            again = load_frame(src / "g.ncu-rep")
        pd.testing.assert_frame_equal(frame, again)
        if os.geteuid() != 0:  # root writes anywhere; the point is that nothing breaks
            assert not list(xdg.glob("*"))
        assert sorted(p.name for p in src.iterdir()) == ["g.ncu-rep"]
    finally:
        src.chmod(0o755)
        xdg.chmod(0o755)


def test_no_pyarrow_means_no_cache(tmp_path, xdg, monkeypatch):
    monkeypatch.setattr(parse, "_have_pyarrow", lambda: False)
    shutil.copy(GEMM, tmp_path / "g.ncu-rep")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FlashprofWarning)
        frame = load_frame(tmp_path / "g.ncu-rep")
    assert len(frame) > 0
    assert not xdg.exists()


# ----------------------------------------------------------------------------- errors
@pytest.mark.parametrize("case", ["missing", "directory", "empty", "truncated", "png"])
def test_bad_inputs_raise_report_error(tmp_path, case):
    target = tmp_path / f"{case}.ncu-rep"
    if case == "directory":
        target.mkdir()
    elif case == "empty":
        target.write_bytes(b"")
    elif case == "truncated":
        target.write_bytes(REF.read_bytes()[:1000])
    elif case == "png":
        target.write_bytes(_tiny_png())
    with pytest.raises(ReportError) as info:
        load_frame(target, cache=False)
    assert str(target) in str(info.value)


FAKE_NCU_REPORT = """
import os
class _Range:
    def __init__(self, n): self.n = n
    def num_actions(self): return self.n
class _Report:
    def __init__(self, ranges): self.ranges = ranges
    def num_ranges(self): return len(self.ranges)
    def range_by_idx(self, i): return _Range(self.ranges[i])
def load_report(path):
    return _Report([int(x) for x in os.environ["FAKE_RANGES"].split(",") if x])
"""


@pytest.mark.parametrize("ranges, words", [("", "no profiled ranges"), ("0,0", "no profiled kernel launches")])
def test_zero_ranges_or_actions(tmp_path, monkeypatch, ranges, words):
    """The worker process imports a stand-in ncu_report (first on PYTHONPATH) whose
    report has no ranges / no actions."""
    fake = tmp_path / "fake"
    fake.mkdir()
    (fake / "ncu_report.py").write_text(FAKE_NCU_REPORT)
    monkeypatch.setenv("PYTHONPATH", str(fake))
    monkeypatch.setenv("FAKE_RANGES", ranges)
    target = tmp_path / "z.ncu-rep"
    shutil.copy(GEMM, target)
    with pytest.raises(ReportError, match=words) as info:
        load_frame(target, cache=False)
    assert str(target) in str(info.value)


def test_no_paths_is_an_error():
    with pytest.raises(ReportError):
        load_frame([], cache=False)


# ----------------------------------------------------------------------------- warnings
def test_smaller_section_set_warns_once(sol_load):
    frame, caught = sol_load
    ours = [w for w in caught if issubclass(w.category, FlashprofWarning)]
    assert len(ours) == 1
    text = str(ours[0].message)
    assert "fa2_sol_only" in text and "WarpStateStats" in text and "SpeedOfLight_HierarchicalTensorRooflineChart" in text
    assert frame["gpu__time_duration.sum" == frame["metric"]]["value"].iloc[0] == \
        raw_metrics(SOL)["gpu__time_duration.sum"]


def test_foreign_report_parses(gemm_load):
    frame, caught = gemm_load
    assert frame["kernel"].iloc[0].startswith("nvjet_sm90")
    assert len([w for w in caught if issubclass(w.category, FlashprofWarning)]) == 1


# ----------------------------------------------------------------------------- per-PC
def test_source_frame(ref_source):
    raw = raw_metrics(REF)
    src = ref_source
    for col in ("pc", "sass", "file", "line", "inst_executed", "samples", "function",
                "stall_math_pipe_throttle", "stall_short_scoreboard", "stall_no_instruction",
                "stall_math_pipe_throttle_not_issued"):
        assert col in src.columns, col
    assert src["pc"].is_unique and src["function"].iloc[0] == "flash_fwd_kernel"
    # Per-PC totals add up to the report's own aggregates.
    assert src["inst_executed"].sum() == pytest.approx(raw["inst_executed"])
    assert src["stall_math_pipe_throttle"].sum() == pytest.approx(
        raw["smsp__pcsamp_warps_issue_stalled_math_pipe_throttle"])
    assert src["samples"].sum() == pytest.approx(raw["smsp__pcsamp_sample_count"])
    assert src["sass"].str.contains("HMMA").any()
    # PyTorch's kernel was not built with -lineinfo: no file/line.
    assert (src["file"] == "").all() and src["line"].isna().all()


@pytest.fixture(scope="module")
def mma_source():
    return load_source_frame(KERNELS["6"])


def test_kernel_source_frame_has_lineinfo(mma_source):
    """Kernels are built with -lineinfo and profiled with --import-source yes: most SASS
    instructions map to a CUDA line of kernels/csrc/*.cuh."""
    src = mma_source
    assert src["function"].iloc[0] == "flash_fwd_kernel" and src["pc"].is_unique
    ours = src["file"].str.contains("kernels/csrc/") & src["file"].str.endswith(".cuh")
    assert ours.mean() > 0.8, ours.mean()
    assert (src.loc[ours, "line"] >= 1).all()
    # Weighted by what ran, our sources dominate even more (headers are cuda_fp16 etc.).
    assert src.loc[ours, "inst_executed"].sum() / src["inst_executed"].sum() > 0.8
    names = {p.rsplit("/", 1)[-1] for p in src.loc[ours, "file"]}
    assert {"mma.cuh", "softmax.cuh", "flash_fwd.cuh"} <= names


def test_kernel_source_frame_sums_to_report_totals(mma_source):
    raw = raw_metrics(KERNELS["6"])
    src = mma_source
    assert src["samples"].sum() == pytest.approx(raw["smsp__pcsamp_sample_count"])
    assert src["inst_executed"].sum() == pytest.approx(raw["inst_executed"])
    # Every sample is attributed to exactly one reason (the issuing warp counts as
    # "selected"): per-reason columns add up to the total sample count.
    reasons = [c for c in src.columns if c.startswith("stall_") and not c.endswith("_not_issued")]
    assert src[reasons].to_numpy().sum() == pytest.approx(raw["smsp__pcsamp_sample_count"])
    # And each reason column equals that reason's report-level aggregate.
    for col in reasons:
        name = "smsp__pcsamp_warps_issue_stalled_" + col[len("stall_"):]
        if col == "stall_no_instruction":
            name = "smsp__pcsamp_warps_issue_stalled_no_instructions"
        assert src[col].sum() == pytest.approx(raw[name]), col


def test_kernel_opcode_rows_equal_ncu_report(kernel_frame):
    for k in ("5", "6"):
        expected = raw_opcodes(KERNELS[k])
        got = kernel_frame[kernel_frame["report"] == f"kernel{k}"].set_index("metric")["value"]
        for op, v in expected.items():
            assert got[f"sass__inst_executed_per_opcode[{op}]"] == v, (k, op)


def test_kernel_sidecars_give_identity(kernel_frame):
    ident = kernel_frame.drop_duplicates("report").set_index("report")
    assert set(ident.index) == {f"kernel{i}" for i in range(1, 8)} | {"kernel7mma", "ref", "cudnn"}
    assert ident.loc["kernel7mma", "variant"] == "7mma"
    for k, path in KERNELS.items():
        side = sidecar(path)
        row = ident.loc[f"kernel{k}"]
        assert row["variant"] == k == side["kernel"] and row["title"] == side["title"]
        assert (row["batch"], row["seq"], row["heads"], row["d_head"]) == tuple(
            side["shape"][f] for f in ("batch", "seq", "heads", "d_head"))


def test_source_frame_bad_launch():
    with pytest.raises(ReportError, match="no launch 5"):
        load_source_frame(GEMM, launch=5)


def test_source_frame_without_source_counters():
    src = load_source_frame(SOL)
    assert "stall_math_pipe_throttle" not in src.columns
    assert list(src.columns[:4]) == ["report", "launch", "function", "pc"]


def test_pivot_metrics(full_frame, raw_ref, raw_cudnn):
    from flashprof.analysis.report.parse import pivot_metrics
    wide = pivot_metrics(full_frame, ["gpu__time_duration.sum", "not_a_metric"])
    assert len(wide) == 2 and wide["not_a_metric"].isna().all()
    dur = wide.set_index("report")["gpu__time_duration.sum"]
    assert dur["ref"] == raw_ref["gpu__time_duration.sum"]
    assert dur["cudnn"] == raw_cudnn["gpu__time_duration.sum"]


@pytest.mark.slow
def test_source_frames_prefetched_into_the_cache(tmp_path, xdg, monkeypatch):
    """The long-frame worker of a report with PC sampling also caches its per-PC frame, so
    the stall-line figures start no second worker; the result equals a fresh read."""
    report = ROOT / "tests" / "data" / "kinds" / "h200_hfma2_full.ncu-rep"
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "other"))
    fresh = load_source_frame(report)  # empty cache: read by a worker
    monkeypatch.setenv("XDG_CACHE_HOME", str(xdg.parent))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FlashprofWarning)
        load_frame(report)
    assert len(list(xdg.glob("h200_hfma2_full.*.src0.pkl"))) == 1

    def no_worker(*a, **k):
        raise AssertionError("the prefetched frame was not used")
    monkeypatch.setattr(parse, "_run_worker", no_worker)
    pd.testing.assert_frame_equal(load_source_frame(report), fresh)
    assert fresh["samples"].sum() > 0 and fresh["sass"].str.contains("HFMA2").any()
