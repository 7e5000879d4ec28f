"""The GPU session's plan (pure): what runs, in which order, with which arguments."""
import sys

from flashprof.profiling.session import steps


def test_session_plan_without_tuning():
    names = [n for n, _ in steps(False, 4096, "fp16")]
    assert names == ["build", "gpu_tests", "bench", "profile"]
    plan = dict(steps(False, 2048, "bf16"))
    assert plan["profile"] == [sys.executable, "-P", "-m", "flashprof.profiling.profile", "all", "--seq", "2048", "--dtype", "bf16"]
    assert plan["bench"][-2:] == ["--dtype", "bf16"]


def test_session_plan_with_tuning_rebuilds_kernel7_before_bench():
    names = [n for n, _ in steps(True, 4096, "fp16")]
    assert names.index("tune") < names.index("build_tuned") < names.index("bench") < names.index("profile")
