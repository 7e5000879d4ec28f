"""kernels/common.py: the helpers every room shares (one definition each)."""
from __future__ import annotations

import math
import os

import pytest

from flashprof.kernels.common import harmonic_mean, move_to_history, write_atomic


def test_harmonic_mean_by_hand():
    assert harmonic_mean([100.0, 300.0]) == pytest.approx(2 / (1 / 100 + 1 / 300))  # 150
    assert harmonic_mean(iter([4.0])) == 4.0


@pytest.mark.parametrize("values", [[], [100.0, 0.0], [100.0, -3.0], [100.0, None], [100.0, math.nan]])
def test_harmonic_mean_is_nan_when_any_value_is_missing_or_not_positive(values):
    assert math.isnan(harmonic_mean(values))


def test_one_definition_everywhere():
    from flashprof.analysis.stages import bench_tables as analysis_bench
    from flashprof.profiling import bench as profiling_bench
    from flashprof.profiling import tune

    assert analysis_bench.harmonic_mean is harmonic_mean
    assert profiling_bench.harmonic_mean is harmonic_mean
    assert tune.harmonic_mean is harmonic_mean


def test_write_atomic_text_bytes_and_writer(tmp_path):
    p = tmp_path / "a.txt"
    write_atomic(p, "one")
    assert p.read_text() == "one"
    write_atomic(p, b"two")
    assert p.read_bytes() == b"two"
    write_atomic(p, lambda tmp: tmp.write_text("three"))
    assert p.read_text() == "three"
    assert [q.name for q in tmp_path.iterdir()] == ["a.txt"]


def test_write_atomic_failure_keeps_the_old_file_and_leaves_no_temp(tmp_path):
    p = tmp_path / "a.csv"
    p.write_text("old")

    def broken(tmp):
        tmp.write_text("half")
        raise OSError("disk full")

    with pytest.raises(OSError, match="disk full"):
        write_atomic(p, broken)
    assert p.read_text() == "old"
    assert [q.name for q in tmp_path.iterdir()] == ["a.csv"]


def test_move_to_history_double_suffix_sidecar_and_no_clobber(tmp_path):
    rep, side = tmp_path / "kernel6.ncu-rep", tmp_path / "kernel6.json"
    rep.write_text("first")
    side.write_text("{}")
    os.utime(rep, (0, 0))  # mtime 1970-01-01T00:00:00 UTC
    first = move_to_history(rep, suffix=".ncu-rep")
    assert first == tmp_path / "history" / "kernel6.19700101T000000.ncu-rep"
    assert (tmp_path / "history" / "kernel6.19700101T000000.json").read_text() == "{}"
    assert not rep.exists() and not side.exists()
    rep.write_text("second")
    os.utime(rep, (0, 0))
    second = move_to_history(rep, suffix=".ncu-rep")
    assert second.name == "kernel6.19700101T000000-1.ncu-rep"
    assert first.read_text() == "first" and second.read_text() == "second"
    assert move_to_history(rep, suffix=".ncu-rep") is None
    side.write_text("{}")
    with pytest.raises(ValueError):
        move_to_history(side, suffix=".csv")


def test_write_csv_atomic_formats_floats_only_when_asked(tmp_path):
    import csv

    from flashprof.kernels.common import write_csv_atomic

    p = tmp_path / "t.csv"
    write_csv_atomic(p, ["a", "b"], [{"a": 1 / 3, "b": "x"}], float_format="{:.3g}")
    assert list(csv.DictReader(p.open())) == [{"a": "0.333", "b": "x"}]
    write_csv_atomic(p, ("a", "b"), [{"a": 0.5, "b": 2}])
    assert p.read_text().splitlines() == ["a,b", "0.5,2"]
