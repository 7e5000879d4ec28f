"""CPU tests of `make bench` and `make tune`: the arithmetic, the tables, the search space,
occupancy, resumable sweeps, the winner file, and the committed H200 tuning data."""
from __future__ import annotations

import csv
import json
import math
import statistics
from pathlib import Path

import pytest

from flashprof.kernels.config import TUNED_FILE, VARIANTS, ConfigError, KernelConfig, load_tuned, variant
from flashprof.profiling import bench, tune

ROOT = Path(__file__).resolve().parents[1]


# -------------------------------------------------------------------- bench
def test_harmonic_mean_by_hand():
    # 3 / (1/100 + 1/200 + 1/400) = 3 / 0.0175
    assert bench.harmonic_mean([100.0, 200.0, 400.0]) == pytest.approx(171.4285714285714)
    assert bench.harmonic_mean([50.0]) == 50.0
    assert math.isnan(bench.harmonic_mean([100.0, 0.0]))  # a failed S is not averaged away
    assert math.isnan(bench.harmonic_mean([]))
    assert bench.harmonic_mean([100.0, 300.0]) == pytest.approx(statistics.harmonic_mean([100.0, 300.0]))


def test_pct():
    assert bench.pct(50.0, 200.0) == 25.0
    assert bench.pct(300.0, 200.0) == 150.0
    assert math.isnan(bench.pct(1.0, 0.0))


def _row(target, seq, tflops, pct):
    return {"target": target, "seq": seq, "tflops": tflops, "pct_of_ref": pct}


def test_table_by_hand():
    rows = [_row("6", 1024, 100.0, 50.0), _row("6", 4096, 300.0, 150.0),
            _row("ref", 1024, 200.0, 100.0), _row("ref", 4096, 200.0, 100.0),
            _row("7", 4096, 250.0, 125.0)]
    lines = bench.table(rows).splitlines()
    head = lines[0]
    assert head.split() == ["kernel", "S=1024", "S=4096", "harmonic", "mean"]
    assert lines[1] == "-" * len(head)
    six, ref, seven = lines[2], lines[3], lines[4]
    # kernel 6: HM(100, 300) = 150 -> 75% of ref's HM(200, 200) = 200
    assert six == "      6 " + " 100.0 ( 50.0%)" + " " + " 300.0 (150.0%)" + "  150.0 ( 75.0%)"
    assert ref.startswith("    ref ") and ref.endswith(" 200.0 (100.0%)")
    # kernel 7 has no S=1024 row: a blank cell, HM over what it has
    assert seven == "      7 " + " " * 15 + " " + " 250.0 (125.0%)" + "  250.0 (125.0%)"
    assert lines[-1].startswith("TFLOP/s (% of FA2")


def test_write_csv_and_retire_never_clobber(tmp_path):
    rows = [{k: 1 for k in bench.FIELDS} | {"tflops": 123.456789, "target": "6"}]
    out = tmp_path / "bench.csv"
    bench.write_csv(rows, out)
    assert list(csv.DictReader(out.open()))[0]["tflops"] == "123.457"
    out.with_suffix(".json").write_text("{}")
    first = bench.retire_file(out)
    bench.write_csv(rows, out)
    import os

    os.utime(out, (first.stat().st_mtime,) * 2)  # same second: same timestamp
    second = bench.retire_file(out)
    assert first != second and first.exists() and second.exists()
    assert second.name.endswith("-1.csv")
    assert sorted(p.name for p in (tmp_path / "history").iterdir()) == sorted(
        [first.name, second.name, first.name[:-4] + ".json"])
    assert bench.retire_file(tmp_path / "absent.csv") is None


# --------------------------------------------------------------------- tune
def test_space_size_and_reasons():
    ok, rejected = tune.space()
    assert len(ok) + len(rejected) == 9 * 2 ** 5 == 288
    assert len({c.slug for c in ok}) == len(ok)  # distinct candidates
    for fields, why in rejected:
        assert why and isinstance(why, str)
        with pytest.raises(ConfigError):
            KernelConfig(**fields)
    for c in ok:
        c.validate()
        assert KernelConfig.from_dict(c.to_dict()) == c
    # the docstring's example: Q fragments without K fragments is invalid
    assert any(f["Q_mma_load_K_fragments"] == 2 and f["K_mma_load_K_fragments"] == 0 for f, _ in rejected)
    assert all(not (c.Q_mma_load_K_fragments == 2 and c.K_mma_load_K_fragments == 0) for c in ok)
    # kernel 7's seed config and the H200 winner are in the space
    slugs = {c.slug for c in ok}
    assert VARIANTS[7].slug in slugs
    # the H200's kernel 7 (the persistent warp-specialised wgmma config) and the default it
    # replaced are in the hopper space, which adds the Hopper techniques; the one before
    # (plain wgmma) in the extended space
    entry = json.loads(TUNED_FILE.read_text())["h200"]
    hopper = {c.slug for c in tune.hopper_space()[0]}
    assert load_tuned()["h200"].slug in hopper and entry["previous_default"]["slug"] in hopper
    assert entry["earlier_defaults"][0]["slug"] in {c.slug for c in tune.extended_space()[0]}


@pytest.mark.parametrize("regs,threads,smem,ctas", [
    (237, 128, 49152, 2),    # 237*32 -> 7680 regs/warp (256 granules); 4 warps = 30720 -> 65536 // 30720
    (255, 256, 49152, 1),    # 8192 regs/warp x 8 warps = 65536: exactly one CTA
    (64, 128, 100 * 1024, 2),  # registers allow 8; smem: 233472 // (102400 + 1024) = 2
    (16, 512, 0, 4),         # warp limit: 64 // 16
    (1, 32, 0, 32),          # the hardware cap of 32 CTAs per SM
    (255, 512, 0, 0),        # 8192 x 16 warps = 131072 > 65536: does not fit at all
])
def test_occupancy_by_hand(regs, threads, smem, ctas):
    assert tune.occupancy(regs, threads, smem) == ctas


SWEEP = [
    # slug, dtype, seq, tflops, ref_tflops
    ("A", "fp16", 1024, 200.0, 250.0), ("A", "fp16", 4096, 300.0, 300.0), ("A", "fp16", 16384, 300.0, 300.0),
    ("B", "fp16", 1024, 100.0, 250.0), ("B", "fp16", 4096, 300.0, 300.0), ("B", "fp16", 16384, 300.0, 300.0),
    ("C", "fp16", 1024, 500.0, 250.0), ("C", "fp16", 4096, 500.0, 300.0),  # interrupted: no 16384 row
    ("D", "bf16", 1024, 900.0, 250.0), ("D", "bf16", 4096, 900.0, 300.0), ("D", "bf16", 16384, 900.0, 300.0),
    ("E", "fp16", 1024, math.nan, 250.0), ("E", "fp16", 4096, math.nan, 300.0),  # failed the gate
    ("E", "fp16", 16384, math.nan, 300.0),
]


@pytest.fixture
def sweep_csv(tmp_path) -> Path:
    path = tmp_path / "autotune.csv"
    rows = []
    for slug, dtype, seq, tf, ref in SWEEP:
        cfg = {"slug_marker": slug}
        rows.append({"gpu": "h200", "slug": slug, "dtype": dtype, "seq": seq, "batch": 16, "heads": 16,
                     "median_ms": 1.0, "tflops": tf, "ref_tflops": ref, "pct_of_ref": 100 * tf / ref,
                     "max_err": 1e-4, "ref_err": 5e-4, "config": json.dumps(cfg)})
    tune.append_rows(path, rows[:5])  # two appends, one header: as the sweep writes it
    tune.append_rows(path, rows[5:])
    assert path.read_text().count("gpu,slug") == 1
    return path


def test_finished_skips_complete_reruns_partial(sweep_csv, tmp_path):
    seqs = (1024, 4096, 16384)
    assert tune.finished(sweep_csv, "fp16", seqs) == {"A", "B", "E"}  # C partial: re-run; D other dtype
    assert tune.finished(sweep_csv, "bf16", seqs) == {"D"}
    assert tune.finished(sweep_csv, "fp16", (1024, 4096)) == {"A", "B", "C", "E"}
    assert tune.finished(tmp_path / "none.csv", "fp16", seqs) == set()


def test_rank_by_hand(sweep_csv):
    seqs = (1024, 4096, 16384)
    ranked = tune.rank(sweep_csv, "fp16", seqs)
    assert [slug for _, slug, _, _ in ranked] == ["A", "B"]  # C incomplete, E NaN, D bf16
    hm_a = 3 / (1 / 200 + 1 / 300 + 1 / 300)   # 257.142857...
    hm_b = 3 / (1 / 100 + 1 / 300 + 1 / 300)   # 180.0
    ref_hm = 3 / (1 / 250 + 1 / 300 + 1 / 300)
    (ha, _, cfg_a, pct_a), (hb, _, _, _) = ranked
    assert ha == pytest.approx(hm_a) and hb == pytest.approx(hm_b)
    assert cfg_a == {"slug_marker": "A"}
    assert pct_a[1024] == pytest.approx(80.0) and pct_a["hm_pct"] == pytest.approx(100 * hm_a / ref_hm)


def test_save_winner_atomic(tmp_path, monkeypatch):
    path = tmp_path / "tuned.json"
    path.write_text(json.dumps({"a100": {"keep": "me"}}))
    cfg = VARIANTS[7].to_dict()
    tune.save_winner("h200", 331.234, cfg, {1024: 94.01, "hm_pct": 97.844}, "fp16", (1024, 4096), path=path)
    data = json.loads(path.read_text())
    assert data["a100"] == {"keep": "me"}
    entry = data["h200"]
    assert entry["slug"] == VARIANTS[7].slug and entry["harmonic_mean_tflops"] == 331.23
    assert entry["pct_of_ref"] == {"1024": 94.01, "hm_pct": 97.84} and entry["seqs"] == [1024, 4096]
    assert KernelConfig.from_dict(entry["config"]) == VARIANTS[7]
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tuned.json"]  # no temp file left
    # A failure half-way leaves the previous file intact.
    before = path.read_text()

    def boom(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(tune.os, "replace", boom)
    with pytest.raises(OSError):
        tune.save_winner("h100", 1.0, cfg, {"hm_pct": 1.0}, "fp16", (1024,), path=path)
    assert path.read_text() == before


def test_save_winner_keeps_every_replaced_default_and_a_repo_relative_source(tmp_path, monkeypatch):
    """Three winners in a row: each replaced default moves to previous_default, the one
    before it to the front of earlier_defaults; a --csv given relative to the working
    directory is recorded relative to the repository (what the tests and pages open)."""
    path = tmp_path / "tuned.json"
    cfgs = [VARIANTS[5].to_dict(), VARIANTS[6].to_dict(), VARIANTS[7].to_dict()]
    monkeypatch.chdir(ROOT / "reports")
    for i, cfg in enumerate(cfgs):
        tune.save_winner("h200", 100.0 + i, cfg, {"hm_pct": 90.0 + i}, "fp16", (1024,), path=path,
                         source=Path(f"h200/autotune_{i}.csv"))
    entry = json.loads(path.read_text())["h200"]
    assert entry["slug"] == VARIANTS[7].slug and entry["source"] == "reports/h200/autotune_2.csv"
    assert entry["previous_default"]["slug"] == VARIANTS[6].slug
    assert entry["previous_default"]["source"] == "reports/h200/autotune_1.csv"
    assert [e["slug"] for e in entry["earlier_defaults"]] == [VARIANTS[5].slug]
    assert entry["earlier_defaults"][0]["harmonic_mean_tflops"] == 100.0
    # the same winner again replaces nothing: the history stays as it was
    tune.save_winner("h200", 103.0, cfgs[2], {"hm_pct": 93.0}, "fp16", (1024,), path=path)
    again = json.loads(path.read_text())["h200"]
    assert again["previous_default"] == entry["previous_default"]
    assert again["earlier_defaults"] == entry["earlier_defaults"]


def test_committed_tuned_json_is_kernel7_on_h200():
    raw = json.loads(TUNED_FILE.read_text())
    cfg = KernelConfig.from_dict(raw["h200"]["config"])
    assert cfg.slug == raw["h200"]["slug"]
    assert variant(7, gpu="h200") == cfg == load_tuned()["h200"]
    assert variant(7) == VARIANTS[7] != cfg           # no GPU given: the seed's winner
    assert variant(7, gpu="rtx3090") == VARIANTS[7]   # a GPU without an entry: the seed's winner
    assert variant(6, gpu="h200") == VARIANTS[6]      # only kernel 7 is tuned


def test_autotune_csv_best_is_tuned_json():
    """Independent recomputation from the committed measurements (csv + statistics, not
    tune.rank): the default is the best harmonic % of FA2 over S >= 4096 in both dtypes of the
    first kernel-7 run; each bucket is the best candidate of the second run at its S and
    dtype and beats the default there; the previous default is the sweep's winner."""
    top = json.loads(TUNED_FILE.read_text())["h200"]

    def best_two(source, dtype, seqs):
        by_slug: dict[str, dict[int, float]] = {}
        with (ROOT / source).open() as f:
            for r in csv.DictReader(f):
                if r["dtype"] == dtype and int(r["seq"]) in seqs:
                    by_slug.setdefault(r["slug"], {})[int(r["seq"])] = float(r["tflops"])
        return sorted(((statistics.harmonic_mean(list(by.values())), slug) for slug, by in by_slug.items()
                       if set(by) == set(seqs)), reverse=True)

    # Today's default: the rounds sweep's best harmonic-mean TFLOP/s over its S in fp16 (the
    # tuner's rule, recomputed from the CSV), the second best recorded as the runner-up.
    assert top["source"] == "reports/h200/autotune_hopper_rounds.csv"
    hms = best_two(top["source"], top["dtype"], top["seqs"])
    assert [slug for _, slug in hms[:2]] == [top["slug"], top["runner_up"]["slug"]]
    assert hms[0][0] == pytest.approx(top["harmonic_mean_tflops"], abs=0.01)
    assert KernelConfig.from_dict(top["config"]).slug == top["slug"]
    # The default it replaced: the first hopper sweep's winner, kept as previous_default.
    prev_hop = top["previous_default"]
    assert prev_hop["source"] == "reports/h200/autotune_hopper.csv"
    hms = best_two(prev_hop["source"], prev_hop["dtype"], prev_hop["seqs"])
    assert hms[0][1] == prev_hop["slug"] == KernelConfig.from_dict(prev_hop["config"]).slug
    assert hms[0][0] == pytest.approx(prev_hop["harmonic_mean_tflops"], abs=0.01)
    # The one before it, from the kernel-7 runs (below), first of the earlier defaults.
    entry = top["earlier_defaults"][0]
    logs = ROOT / "reports" / "h200" / "logs" / "k7"

    def pct(path):
        out: dict[str, dict[tuple[str, int], float]] = {}
        with path.open() as f:
            for r in csv.DictReader(f):
                if r["name"] != "ref":
                    out.setdefault(r["slug"], {})[(r["dtype"], int(r["seq"]))] = float(r["pct_of_ref"])
        return out

    long_keys = {(dt, s) for dt in ("fp16", "bf16") for s in (4096, 8192, 16384)}

    def long_winner(run):
        scores = {slug: statistics.harmonic_mean([by[k] for k in long_keys]) for slug, by in run.items()
                  if long_keys <= set(by)}
        return max(scores, key=scores.get)

    # Today's table (run 3, with the wgmma candidates): the default wins S >= 4096, and no
    # short S has a candidate more than 1 pp (inside the spread) ahead of it: no bucket.
    run3 = pct(logs / "run3_k7_short_s.csv")
    assert entry["source"].endswith("run3_k7_short_s.csv")
    assert long_winner(run3) == entry["slug"] == KernelConfig.from_dict(entry["config"]).slug
    assert top.get("buckets", []) == [] and "buckets" not in entry
    for key in {(dt, s) for dt in ("fp16", "bf16") for s in (512, 1024, 2048)}:
        here = {slug: by[key] for slug, by in run3.items() if key in by}
        assert max(here.values()) - here[entry["slug"]] < 1.0, key
    # The table it replaced (runs 1 and 2, mma.sync only), kept as previous_dispatch.
    prev_table = top["previous_dispatch"]
    run1 = pct(logs / "run1_k7_short_s.csv")
    assert long_winner(run1) == prev_table["slug"] == KernelConfig.from_dict(prev_table["config"]).slug
    run2 = pct(logs / "run2_k7_short_s.csv")
    assert prev_table["buckets"]
    for b in prev_table["buckets"]:
        key = (b["dtype"], b["max_seq"])
        here = {slug: by[key] for slug, by in run2.items() if key in by}
        best = max(here, key=here.get)
        assert KernelConfig.from_dict(b["config"]).slug == best
        assert here[best] > here[prev_table["slug"]]
    # the sweep's winner, kept as the previous default
    prev = top["previous_sweep_winner"]
    seqs = set(prev["seqs"])
    tf: dict[str, dict[int, float]] = {}
    with (ROOT / "reports" / "h200" / "autotune.csv").open() as f:
        for r in csv.DictReader(f):
            if r["dtype"] == prev["dtype"] and int(r["seq"]) in seqs:
                tf.setdefault(r["slug"], {})[int(r["seq"])] = float(r["tflops"])
    sweep = {slug: statistics.harmonic_mean([by[s] for s in seqs]) for slug, by in tf.items()
             if set(by) == seqs and all(math.isfinite(x) and x > 0 for x in by.values())}
    assert max(sweep, key=sweep.get) == prev["slug"]


def test_shared_lib_build_failure_is_one_line(tmp_path, monkeypatch):
    from flashprof.kernels.config import variant
    from flashprof.profiling import shared_lib
    from flashprof.kernels.cli import FlashprofError

    monkeypatch.setattr(shared_lib, "nvcc_path", lambda: "false")  # `false` exits 1 and writes nothing
    with pytest.raises(FlashprofError) as exc:
        shared_lib.build_shared_lib(variant(7), "sm_90", tmp_path)
    msg = str(exc.value)
    assert "\n" not in msg and msg.startswith(f"nvcc failed for {variant(7).slug} (sm_90), exit 1: ")
    assert list(tmp_path.iterdir()) == []  # no half-written library left behind


def test_bench_rounds_interleave_every_target_and_pool_the_medians(monkeypatch):
    """run_bench(rounds=3): the order is round-major (each round times every S and target once),
    and each row's median is over all rounds' launches; rounds=1 keeps one pass. A stub stands
    in for torch and the kernels: what is checked is the loop and the statistics."""
    import sys
    import types

    from flashprof.profiling import correctness, targets

    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(empty_like=lambda x: x))
    monkeypatch.setattr(bench, "l2_flush_buffer", lambda: None)
    monkeypatch.setattr(bench, "make_inputs", lambda shape, dtype: (shape, shape, shape))
    monkeypatch.setattr(correctness, "require", lambda *a, **k: None)

    class T:
        def __init__(self, name):
            self.name, self.title, self.config = name, name, None

        def callable(self):
            return self.name

    monkeypatch.setattr(targets, "resolve", lambda n, **kw: T(n))
    calls = []
    # launch times by (target, round): "a" drifts from 1.0 to 3.0 ms over the rounds, "ref" stays 2.0
    def time_fn(fn, args, kwargs, reps, warmup, flush):
        rnd = sum(1 for c in calls if c[1:] == (args[0].seq, fn)) + 1
        calls.append((rnd, args[0].seq, fn))
        return [float(rnd) if fn == "a" else 2.0] * reps

    monkeypatch.setattr(bench, "time_fn", time_fn)
    rows = bench.run_bench(["a", "ref"], [512, 1024], "fp16", 20, 0, rounds=3, progress=lambda m: None)
    assert calls == [(r, s, t) for r in (1, 2, 3) for s in (512, 1024) for t in ("a", "ref")]
    by = {(r["target"], r["seq"]): r for r in rows}
    assert by["a", 512]["reps"] == 60 and by["a", 512]["median_ms"] == 2.0  # median of 20x1, 20x2, 20x3
    assert by["a", 512]["p10_ms"] == 1.0 and by["a", 512]["p90_ms"] == 3.0
    assert by["a", 1024]["pct_of_ref"] == pytest.approx(100.0)
    calls.clear()
    one = bench.run_bench(["a", "ref"], [512], "fp16", 20, 0, progress=lambda m: None)
    assert len(calls) == 2 and {r["reps"] for r in one} == {20}
    assert next(r for r in one if r["target"] == "a")["median_ms"] == 1.0
