"""The multi-GPU path of the tuner (one worker process per GPU), without GPUs: a stand-in
torch reports two devices and Popen is recorded instead of run."""
import sys
import types
from argparse import Namespace

from profiling import tune


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
    assert all(cmd[1:4] == ["-m", "profiling.tune", "--dtype"] for cmd, _ in started)
    # the header exists before any worker appends, and only once
    assert csv_path.read_text().splitlines() == [",".join(tune.SWEEP_FIELDS)]
