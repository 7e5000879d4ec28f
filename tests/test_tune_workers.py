"""The multi-GPU path of the tuner (one worker process per GPU), without GPUs: a stand-in
torch reports two devices and Popen is recorded instead of run."""
import sys
import types
from argparse import Namespace

from flashprof.profiling import tune


def test_one_worker_per_gpu_splits_the_candidates(tmp_path, monkeypatch):
    fake_torch = types.SimpleNamespace(cuda=types.SimpleNamespace(device_count=lambda: 2))
    monkeypatch.setitem(sys.modules, "torch", fake_torch)
    monkeypatch.delenv("FLASHPROF_TUNE_WORKER", raising=False)
    started = []

    class FakePopen:
        def __init__(self, cmd, env):
            started.append((cmd, env))

        def wait(self):
            return 0

    monkeypatch.setattr(tune.subprocess, "Popen", FakePopen)
    cfgs, _ = tune.space()
    todo = cfgs[:5]
    csv_path = tmp_path / "autotune.csv"
    args = Namespace(dtype="fp16", reps=20, warmup=3)
    tune.run_workers(todo, (1024, 4096), args, csv_path, "h200", say=lambda m: None)

    assert [env["CUDA_VISIBLE_DEVICES"] for _, env in started] == ["0", "1"]
    shares = [env["FLASHPROF_TUNE_SLUGS"].split(",") for _, env in started]
    assert shares[0] == [c.slug for c in todo[0::2]] and shares[1] == [c.slug for c in todo[1::2]]
    assert all(env["FLASHPROF_TUNE_WORKER"] == "1" for _, env in started)
    assert all(cmd[1:5] == ["-P", "-m", "flashprof.profiling.tune", "--dtype"] for cmd, _ in started)
    # workers inherit the timing options and never write kernels/tuned.json themselves
    assert all(cmd[cmd.index("--warmup") + 1] == "3" and "--no-save" in cmd for cmd, _ in started)
    assert all(cmd[cmd.index("--csv") + 1] == str(csv_path) for cmd, _ in started)
    # the header exists before any worker appends, and only once
    assert csv_path.read_text().splitlines() == [",".join(tune.SWEEP_FIELDS)]


def _fake_gpus(monkeypatch, n_gpu, rcs):
    fake_torch = types.SimpleNamespace(cuda=types.SimpleNamespace(device_count=lambda: n_gpu))
    monkeypatch.setitem(sys.modules, "torch", fake_torch)
    monkeypatch.delenv("FLASHPROF_TUNE_WORKER", raising=False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    started = []

    class FakePopen:
        def __init__(self, cmd, env):
            self.rc = rcs[len(started)]
            started.append((cmd, env))

        def wait(self):
            return self.rc

    monkeypatch.setattr(tune.subprocess, "Popen", FakePopen)
    return started


def test_more_workers_than_gpus_share_the_gpu_round_robin(tmp_path, monkeypatch):
    started = _fake_gpus(monkeypatch, 1, [0, 0, 0])
    cfgs, _ = tune.space()
    todo = cfgs[:7]
    args = Namespace(dtype="fp16", reps=5, warmup=1, workers=3)
    said = []
    tune.run_workers(todo, (1024,), args, tmp_path / "a.csv", "h200", say=said.append)
    assert [env["CUDA_VISIBLE_DEVICES"] for _, env in started] == ["0", "0", "0"]
    shares = [env["FLASHPROF_TUNE_SLUGS"].split(",") for _, env in started]
    # every candidate exactly once across the workers
    assert sorted(sum(shares, [])) == sorted(c.slug for c in todo)
    assert [len(x) for x in shares] == [3, 2, 2]
    assert sum("exited with status 0" in m for m in said) == 3


def test_a_failed_worker_is_an_error_not_a_silent_gap(tmp_path, monkeypatch):
    _fake_gpus(monkeypatch, 2, [0, 3])
    cfgs, _ = tune.space()
    args = Namespace(dtype="fp16", reps=5, warmup=1, workers=None)
    try:
        tune.run_workers(cfgs[:4], (1024,), args, tmp_path / "a.csv", "h200", say=lambda m: None)
    except tune.FlashprofError as e:
        assert "worker 1 on GPU 1 (status 3)" in str(e)
    else:
        raise AssertionError("a failing worker must raise")
