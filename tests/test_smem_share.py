"""Does cp.async take the shared-memory data path (ceilings smemshare, analysis/gap/smem_share.py):
the share is the readers' loss over the fillers' bytes, Nsight Compute's shared wavefronts per
LDGSTS are read as the profiler counts them, and the scheduler charges LDGSTS wavefronts in
proportion to Machine.ldgsts_smem_share."""
from __future__ import annotations

import dataclasses
import json
import statistics

import pytest

from conftest import KERNELS, REF, raw_metrics
from flashprof.analysis.gap import smem_share as ss
from flashprof.analysis.gap.constants import machine
from flashprof.analysis.gap import controls
from flashprof.analysis.gap.scheduler import simulate


def _record(name, work, cycles):
    return json.dumps({"record": "measurement", "name": name, "kind": "smem_share", "unit": "B/clk/SM",
                       "basis": "cycles", "warps_per_scheduler": 2, "work": work, "n": 0, "cycles": cycles,
                       "cycles_max": [], "cycles_2n": [], "ms": [], "check": "ok"})


def test_the_share_is_the_readers_loss_over_the_fillers_bytes(tmp_path):
    w, g = 4.0e6, 8192.0
    alone, beside = [31250.0, 31000.0, 31500.0], [38000.0, 37000.0, 39000.0]
    fill_alone, fill_beside = [230.0, 225.0, 235.0], [300.0, 290.0, 310.0]
    raw = tmp_path / "smemshare.raw.jsonl"
    raw.write_text("\n".join([json.dumps({"record": "device", "name": "X"}),
                              _record("smem_share_ldsm_alone", w, alone), _record("smem_share_ldsm_with_cp", w, beside),
                              _record("smem_share_cp_alone", g, fill_alone), _record("smem_share_cp_with_ldsm", g, fill_beside)]))
    got = ss.share(ss.rates(raw))
    lost = statistics.median(w / c for c in alone) - statistics.median(w / c for c in beside)
    written = statistics.median(g / c for c in fill_beside)
    assert got["share"] == pytest.approx(lost / written, rel=1e-12)
    assert 0.75 < got["share"] < 0.9  # 128 - 105 B/clk lost over 27 B/clk written
    # the sidecar of that folder: the device, the clocks, the runs beside the raw file, the same share
    (tmp_path / "smemshare.run1.raw.jsonl").write_text(raw.read_text())
    (tmp_path / "smemshare_clocks.txt").write_text("X, 1, 1980 MHz, 1980 MHz\n")
    side = json.loads(ss.write_sidecar(tmp_path).read_text())
    assert side["gpu"] == "X" and side["runs"] == ["smemshare.run1.raw.jsonl"] and side["clocks"].endswith("MHz")
    assert side["result"]["share"] == side["per_run"][0]["share"] == got["share"]
    # a missing record or a failed self-check gives no share, and says why
    raw.write_text(raw.read_text().replace('"check": "ok"}', '"check": "bad"}', 1))
    assert ss.share(ss.rates(raw))["share"] is None and "missing" in ss.share(ss.rates(raw))["why"]


@pytest.mark.parametrize("path", [KERNELS["6"], REF], ids=["kernel6", "ref"])
def test_report_wavefronts_per_ldgsts_as_nsight_counts_them(path):
    if not path.is_file():
        pytest.skip(f"{path} not here")
    raw = raw_metrics(path)
    want = ((raw["l1tex__data_pipe_lsu_wavefronts_mem_shared.sum"]
             - raw["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"]
             - raw["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum"]) / raw["smsp__inst_executed_op_ldgsts.sum"])
    got = ss.report_wavefronts([path])
    assert got[0]["per_ldgsts"] == pytest.approx(want, rel=1e-9)
    assert got[0]["per_ldgsts"] < 4  # fewer than the four 128 B wavefronts an LDGSTS.128 writes


LOOP = ("LDGSTS.E.BYPASS.LTC128B.128 [R2], desc[UR4][R4.64]", "LDGSTS.E.BYPASS.LTC128B.128 [R2+0x200], desc[UR4][R6.64]",
        "LDSM.16.M88.4 R8, [R3]", "LDSM.16.M88.4 R12, [R3+0x200]")


def _body(texts):
    """Instructions with a stall count of 1 and no dependency barrier (control bits: stall 1,
    yield, write / read barrier 7 = none, wait mask 0)."""
    hi = (1 | 1 << 4 | 7 << 5 | 7 << 8) << 41
    lines = ["Function : f"]
    for k, text in enumerate(texts):
        lines += [f"/*{k * 16:04x}*/ {text} ; /* 0x0000000000000000 */", f"/* 0x{hi:016x} */"]
    return next(iter(controls.parse("\n".join(lines)).values()))


def test_the_scheduler_charges_ldgsts_wavefronts_by_the_share():
    """Eight warps that only copy and read: the data path binds, so each pass costs 4 cycles per
    LDSM.x4 and 4 x share per LDGSTS.128, for all warps together."""
    body = _body(LOOP)
    m0 = machine("h200_sxm")
    per = {}
    for s in (1.0, 0.5, 0.0):
        m = dataclasses.replace(m0, ldgsts_smem_share=s, l2_bytes_per_clk_sm=None)
        per[s] = simulate(body, m, 1, 8, 64, 1.0, 1)["cycles_per_iter"]
    for s, c in per.items():
        assert c == pytest.approx(8 * (2 * 4 + 2 * 4 * s), rel=0.1), (s, per)
    assert per[1.0] > per[0.5] > per[0.0]


def test_the_committed_run_judges_the_share():
    folder = ss.run_folder()
    if folder is None or not ss.RESULT.is_file():
        pytest.skip("ceilings smemshare has not been run and committed yet")
    rec = json.loads((folder / "smemshare.json").read_text())
    again = ss.share(ss.rates(folder / rec["raw"]))
    assert again["share"] == pytest.approx(rec["result"]["share"], rel=1e-12)
    judged = json.loads(ss.RESULT.read_text())["ldgsts_smem_share"]
    assert judged == round(min(1.0, max(0.0, again["share"])), 2)
    assert machine("h200_sxm").ldgsts_smem_share == judged


def test_nsight_counts_on_the_benchmark_itself():
    """The committed run's Nsight Compute counts: the readers' ldmatrix.x4 is four 128-byte load
    wavefronts (512 bytes, no conflicts), the readers-only launches execute no LDGSTS and the
    fillers-only launches no LDSM; whatever Nsight counts per LDGSTS is below the four
    wavefronts its 512 bytes would take, so the share is measured by time, not read off it."""
    folder = ss.run_folder()
    if folder is None or not (folder / "smemshare_ncu.csv").is_file():
        pytest.skip("ceilings smemshare has not been run and committed yet")
    got = ss.ncu_counts(folder / "smemshare_ncu.csv")
    assert got["1"]["ld_per_ldsm"] == pytest.approx(4.0, rel=1e-6) and got["1"]["per_ldgsts"] is None
    assert got["2"]["ld_per_ldsm"] is None and 0 < got["2"]["per_ldgsts"] < 4
    assert got["3"]["launches"] >= 1 and got["3"]["per_ldgsts"] is not None
