"""Empirical ceilings without a GPU: deriving rates from the binary's raw output, the files
the runner writes, the loader, and the theoretical-peak table against the H200 report.

tests/data/ceilings/*.raw.jsonl are SYNTHETIC outputs shaped exactly like the binary's
(written for these tests, not measured): every per-SM run was built as cycles = work /
rate x jitter with jitter (1.0, 1.01, 0.995, 1.002, 1.0) and event times from a 1.98 GHz
clock; memory runs as ms = bytes / (GB/s) x (1.0, 1.02, 0.99, 1.0, 1.01); latency chains
as 1000 + latency x links + a few cycles. The expected values below come from those
design numbers, not from the code under test.
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest

from flashprof.analysis.stages import measured_roofs as loader
from flashprof.analysis.report.errors import ReportError
from flashprof.kernels import ceilings as bench
from flashprof.profiling import ceiling_rates as ceil
from flashprof.profiling import ceilings_run
from flashprof.profiling.ceilings_run import cli
from flashprof.kernels.cli import FlashprofError

DATA = Path(__file__).parent / "data" / "ceilings"
EXAMPLE = DATA / "h200_example.raw.jsonl"
FAILED = DATA / "failed_check.raw.jsonl"
H200_REPORT = Path(__file__).resolve().parents[1] / "reports" / "h200" / "kernel6.ncu-rep"
CLOCK = 1.98e9
SMS = 132
# The names the issue fixes (other code reads them), per kind.
REQUIRED = {
    "throughput": {"mma_f16_f32", "mma_bf16_f32", "ffma", "hfma2", "mufu_ex2", "ldsm_x4", "smem_ld",
                   "smem_st", "cp_async", "l2_read", "dram_copy"},
    "latency": {"hmma_16816_f32", "ldsm_x4", "lds_32", "mufu_ex2", "ffma", "bar_sync_128",
                "bar_sync_256", "cp_async_wait"},
    "scaling": {"hmma_16816_f32", "ldsm_x4"},
}
JITTER = (1.0, 1.01, 0.995, 1.002, 1.0)


@pytest.fixture(scope="module")
def doc():
    device, records = ceil.parse_output(EXAMPLE.read_text())
    return ceil.derive(device, records, smi_sm_mhz=[1980.0, 1980.0, 1965.0])


def _m(doc, name, kind="throughput", wps=None):
    hits = [m for m in doc["measurements"] if m["name"] == name and m["kind"] == kind
            and (wps is None or m["warps_per_scheduler"] == wps)]
    assert len(hits) == 1, (name, kind, wps)
    return hits[0]


# ------------------------------------------------------------------ deriving
def test_run_facts_and_measured_clock(doc):
    assert (doc["gpu"], doc["arch"], doc["sm_count"]) == ("NVIDIA H200", "sm_90", SMS)
    assert doc["sm_clock_hz"] == pytest.approx(CLOCK, rel=1e-9)  # cycles / event time
    assert doc["sm_clock_hz_nvidia_smi"] == pytest.approx(1980e6)  # median of the samples
    assert ceil.clock_warning(doc) is None
    assert "differs" in ceil.clock_warning({**doc, "sm_clock_hz_nvidia_smi": 1.6e9})


def test_values_above_their_peak_are_flagged(doc):
    assert ceil.over_peak(doc) == []  # the example sits at 69-98 %
    hot = {**doc, "measurements": [{**_m(doc, "ffma"), "pct_of_theoretical": 103.0}]}
    assert ceil.over_peak(hot) == ["ffma (throughput) at 103.0 % of its theoretical peak"]


def test_per_sm_throughput_rates(doc):
    mma = _m(doc, "mma_f16_f32")
    assert mma["unit"] == "FLOP/clk/SM" and mma["value"] == pytest.approx(2650.0)
    assert mma["per_second"] == pytest.approx(2650.0 * SMS * CLOCK)
    assert mma["theoretical"] == pytest.approx(360448 / SMS)
    assert mma["pct_of_theoretical"] == pytest.approx(100 * 2650 / (360448 / SMS))
    assert mma["repeats"] == 5 and mma["warps_per_scheduler"] == 4
    # per-repeat values are rate / jitter: spread = (1/min - 1/max) jitter over the median
    assert mma["spread_pct"] == pytest.approx(100 * (1 / min(JITTER) - 1 / max(JITTER)))
    assert _m(doc, "ffma")["pct_of_theoretical"] == pytest.approx(100 * 250 / 256)
    assert _m(doc, "hfma2")["theoretical"] == 512 and _m(doc, "mufu_ex2")["theoretical"] == 16
    ld = _m(doc, "ldsm_x4")
    assert ld["unit"] == "warp-inst/clk/SM" and ld["theoretical"] == pytest.approx(128 / 512)
    assert _m(doc, "ldsm_x4_bytes")["theoretical"] == 128 and _m(doc, "smem_st")["unit"] == "B/clk/SM"


def test_memory_rates_and_missing_peak(doc):
    l2, dram = _m(doc, "l2_read"), _m(doc, "dram_copy")
    assert l2["value"] == pytest.approx(7100.0) and l2["per_second"] == pytest.approx(7100e9)
    assert dram["pct_of_theoretical"] == pytest.approx(100 * 4300 / (1504 * 3.1994886713e9 / 1e9), rel=1e-6)
    cp = _m(doc, "cp_async")
    assert cp["theoretical"] is None and cp["pct_of_theoretical"] is None
    assert cp["source_of_theoretical"].startswith("none:")


def test_latencies_are_per_link_differences(doc):
    for name, cycles in (("hmma_16816_f32", 33), ("mufu_ex2", 18), ("ffma", 4), ("cp_async_wait", 650)):
        m = _m(doc, name, "latency")
        assert m["unit"] == "cycles" and m["value"] == pytest.approx(cycles, abs=0.01)
        assert m["theoretical"] is None and m["per_second"] is None and m["source_of_theoretical"] is None


def test_scaling_rows_use_the_throughput_peak(doc):
    for wps, rate in ((1, 1900.0), (2, 2500.0), (4, 2650.0), (8, 2660.0)):
        m = _m(doc, "hmma_16816_f32", "scaling", wps)
        assert m["value"] == pytest.approx(rate)
        assert m["pct_of_theoretical"] == pytest.approx(100 * rate / (360448 / SMS))
    assert _m(doc, "ldsm_x4", "scaling", 1)["pct_of_theoretical"] == pytest.approx(100 * 0.1 / 0.25)


def test_every_required_name_is_present(doc):
    got = {k: {m["name"] for m in doc["measurements"] if m["kind"] == k} for k in REQUIRED}
    for kind, names in REQUIRED.items():
        assert names <= got[kind], kind
    assert {m["warps_per_scheduler"] for m in doc["measurements"] if m["kind"] == "scaling"} == {1, 2, 4, 8}


def test_the_binary_emits_the_required_names():
    """The names live in the CUDA driver, which only a GPU runs: read them from the source."""
    src = "\n".join(p.read_text() for p in bench.SRC_DIR.glob("*.cu*"))
    quoted = set(re.findall(r'"([a-z0-9_]+)"', src))
    for kind, names in REQUIRED.items():
        assert names <= quoted, names - quoted


# ------------------------------------------------------------------- writing
def test_cli_writes_strict_json_csv_and_sidecar(tmp_path, capsys):
    assert cli(["--from-output", str(EXAMPLE), "--out", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "mma_f16_f32" in out and "1980 MHz" in out
    text = (tmp_path / "ceilings.json").read_text()
    written = json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} in JSON"))
    assert written["measurements"][0].keys() >= set(loader.ROW_COLUMNS)
    frame = pd.read_csv(tmp_path / "ceilings.csv")
    assert len(frame) == len(written["measurements"]) == 28
    assert frame.loc[frame["name"] == "cp_async", "theoretical"].isna().all()
    meta = json.loads((tmp_path / "ceilings.meta.json").read_text())
    assert meta["gpu"]["slug"] == "h200" and meta["rederived_from"] == str(EXAMPLE)
    assert (tmp_path / "ceilings.raw.jsonl").read_text() == EXAMPLE.read_text()


def test_failed_self_check_is_null_with_reason_and_exit_1(tmp_path, capsys):
    assert cli(["--from-output", str(FAILED), "--out", str(tmp_path)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["ceilings: error: self-check failed for smem_st (values null in the report)"]
    st = _m(json.loads((tmp_path / "ceilings.json").read_text()), "smem_st")
    assert st["value"] is None and st["pct_of_theoretical"] is None and st["per_second"] is None
    assert "does not hold the last value" in st["check"]


@pytest.mark.parametrize("text, says", [
    ("", "no device record"),
    ("not json\n", "not JSON"),
    ('{"record": "device", "name": "X", "arch": "sm_90", "sm_count": 1}\n', "no measurement records"),
    ('{"record": "other"}\n', "neither"),
])
def test_bad_raw_output_is_one_line(tmp_path, capsys, text, says):
    raw = tmp_path / "raw.jsonl"
    raw.write_text(text)
    assert cli(["--from-output", str(raw), "--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err and "Traceback" not in err
    assert not (tmp_path / "o").exists()


def _fake_binary(tmp_path, monkeypatch, main_rc=0, wgmma="fault"):
    """A stand-in for the built binary: prints the example output; `wgmma` faults or prints
    a record (exercising the runner's process split without a GPU)."""
    wg = {"fault": "echo \"ceilings: CUDA error 'an illegal instruction was encountered'\" >&2; exit 3",
          "ok": "echo '" + json.dumps({**json.loads(EXAMPLE.read_text().splitlines()[1]),
                                         "name": "wgmma_f16_f32", "warps_per_scheduler": 2}) + "'; exit 0"}[wgmma]
    fake = tmp_path / "ceilings"
    fake.write_text(f"#!/bin/sh\nif [ \"$1\" = wgmma ]; then {wg}; fi\n"
                    f"cat '{EXAMPLE}'\necho 'ceilings: a note on stderr' >&2\nexit {main_rc}\n")
    fake.chmod(0o755)
    monkeypatch.setattr(bench, "build", lambda arch, **kw: fake)
    monkeypatch.setattr(ceilings_run, "gpu_arch", lambda: "sm_90")
    return fake


def test_run_path_keeps_results_when_wgmma_faults(tmp_path, monkeypatch, capsys):
    _fake_binary(tmp_path, monkeypatch)
    assert cli(["--out", str(tmp_path / "o")]) == 1
    err = capsys.readouterr().err
    assert "a note on stderr" in err and "the wgmma run failed" in err
    doc = json.loads((tmp_path / "o" / "ceilings.json").read_text())
    wg = _m(doc, "wgmma_f16_f32")
    assert wg["value"] is None and "illegal instruction" in wg["check"] and wg["repeats"] == 0
    assert _m(doc, "mma_f16_f32")["value"] == pytest.approx(2650.0)
    meta = json.loads((tmp_path / "o" / "ceilings.meta.json").read_text())
    assert meta["build"]["arch"] == "sm_90" and meta["rederived_from"] is None
    assert (tmp_path / "o" / "ceilings.raw.jsonl").read_text().count("wgmma_f16_f32") == 1


def test_run_path_with_wgmma(tmp_path, monkeypatch, capsys):
    _fake_binary(tmp_path, monkeypatch, wgmma="ok")
    assert cli(["--out", str(tmp_path / "o")]) == 0
    wg = _m(json.loads((tmp_path / "o" / "ceilings.json").read_text()), "wgmma_f16_f32")
    assert wg["value"] == pytest.approx(2650.0) and wg["theoretical"] == 4096.0


def test_run_path_binary_fault_is_one_line(tmp_path, monkeypatch, capsys):
    fake = _fake_binary(tmp_path, monkeypatch)
    fake.write_text("#!/bin/sh\necho \"ceilings: CUDA error 'out of memory' in x\" >&2\nexit 3\n")
    assert cli(["--out", str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "out of memory" in err and not (tmp_path / "o").exists()


def test_raw_record_with_missing_key_or_bad_kind():
    device = EXAMPLE.read_text().splitlines()[0]
    rec = json.loads(EXAMPLE.read_text().splitlines()[1])
    with pytest.raises(FlashprofError, match="lacks cycles_2n"):
        ceil.parse_output(device + "\n" + json.dumps({k: v for k, v in rec.items() if k != "cycles_2n"}))
    with pytest.raises(FlashprofError, match="unknown kind 'bogus'"):
        ceil.parse_output(device + "\n" + json.dumps({**rec, "kind": "bogus"}))


def test_zero_times_give_null_not_a_crash():
    device, records = ceil.parse_output(EXAMPLE.read_text())
    zero = {**records[0], "cycles": [0.0] * 5}
    m = ceil.derive(device, [zero] + records[1:])["measurements"][0]
    assert m["value"] is None and m["check"] == "no positive finite value"


def test_unreadable_raw_file(tmp_path, capsys):
    assert cli(["--from-output", str(tmp_path / "absent.jsonl")]) == 2
    assert "cannot read" in capsys.readouterr().err


# -------------------------------------------------------------------- loader
@pytest.fixture(scope="module")
def frame(tmp_path_factory, doc):
    d = tmp_path_factory.mktemp("ceil")
    (d / "ceilings.json").write_text(json.dumps(doc))
    return loader.load(d)


def test_loader_frame(frame):
    assert tuple(frame.columns) == loader.COLUMNS and len(frame) == 28
    assert frame["sm_clock_hz"].tolist() == pytest.approx([CLOCK] * 28)
    assert loader.value(frame, "lds_32", "latency") == pytest.approx(29, abs=0.01)
    assert loader.value(frame, "hmma_16816_f32", "scaling", 2) == pytest.approx(2500)
    assert math.isnan(loader.value(frame, "wgmma_f16_f32"))  # not measured: NaN, not 0


def test_measured_peaks_and_pct(frame):
    assert loader.measured_peak(frame, "mma_f16_f32") == pytest.approx(2650 * SMS * CLOCK)
    # at a profiled kernel's clock: the per-clock rate times that clock
    assert loader.measured_peak(frame, "mma_f16_f32", 1.789e9) == pytest.approx(2650 * SMS * 1.789e9)
    assert loader.measured_peak(frame, "dram_copy", 1.789e9) == pytest.approx(4300e9)  # clock-free
    assert loader.pct_of_measured_peak(340e12, frame, "bf16") == pytest.approx(100 * 340e12 / (2640 * SMS * CLOCK))
    roofs = loader.measured_roofs(frame).set_index("roof")
    assert set(roofs.index) == {"mma.sync fp16", "mma.sync bf16", "FFMA", "shared memory", "L2", "DRAM"}
    assert roofs.loc["L2", "per_second"] == pytest.approx(7100e9) and roofs.loc["L2", "unit"] == "B/s"
    with pytest.raises(ValueError, match="fp8"):
        loader.pct_of_measured_peak(1.0, frame, "fp8")


def test_loader_failed_measurement_is_nan(tmp_path):
    device, records = ceil.parse_output(FAILED.read_text())
    (tmp_path / "ceilings.json").write_text(json.dumps(ceil.derive(device, records)))
    f = loader.load(tmp_path / "ceilings.json")
    row = f[f["name"] == "smem_st"].iloc[0]
    assert math.isnan(row["value"]) and "last value" in row["check"]
    assert "shared memory" in set(loader.measured_roofs(f)["roof"])  # smem_ld still passed


@pytest.mark.parametrize("content, says", [
    ("{", "not JSON"),
    ('{"gpu": "x"}', "no 'measurements'"),
    ('{"measurements": []}', "lacks gpu"),
    ('{"gpu": "x", "arch": "sm_90", "sm_count": 1, "sm_clock_hz": 1, "measurements": [{"name": "a"}]}', "lacks kind"),
])
def test_loader_rejects_bad_files(tmp_path, content, says):
    p = tmp_path / "ceilings.json"
    p.write_text(content)
    with pytest.raises(ReportError, match=says):
        loader.load(p)


def test_loader_rejects_duplicates_and_missing(tmp_path, doc):
    bad = {**doc, "measurements": doc["measurements"] + doc["measurements"][:1]}
    (tmp_path / "ceilings.json").write_text(json.dumps(bad))
    with pytest.raises(ReportError, match="duplicate"):
        loader.load(tmp_path)
    with pytest.raises(ReportError, match="no such file"):
        loader.load(tmp_path / "absent")


# ------------------------------------------------------- theoretical peaks
def test_peak_units_match_the_measurements(doc):
    peaks = ceil.load_peaks("sm_90")
    for m in doc["measurements"]:
        if m["kind"] == "throughput":
            assert peaks[m["name"]]["unit"] == m["unit"], m["name"]
    assert ceil.load_peaks("sm_86") == {}


def test_peaks_match_the_h200_report():
    """Every peak that names an Nsight Compute metric, re-read from the H200 report."""
    if not H200_REPORT.exists():
        pytest.skip(f"{H200_REPORT} absent")
    from flashprof.analysis.report.ncu_import import ncu_report

    try:
        action = ncu_report().load_report(str(H200_REPORT)).range_by_idx(0).action_by_idx(0)
    except Exception as e:  # no usable ncu_report in this environment
        pytest.skip(f"ncu_report cannot read the report: {e}")
    table = json.loads(bench.PEAKS_FILE.read_text())["sm_90"]
    sms = action["device__attribute_multiprocessor_count"].value()
    assert sms == table["sm_count"]
    checked = 0
    for name, peak in table["peaks"].items():
        if "metric" not in peak:
            continue
        raw = action[peak["metric"]].value()
        if peak["per_sm"]:
            want = raw / sms * peak["scale"]
        else:
            want = raw * action[peak["clock"]].value() / 1e9
        assert peak["value"] == pytest.approx(want, rel=1e-5), name
        checked += 1
    assert checked >= 9
