"""`flashprof gap` killed with SIGKILL leaves no model workers behind: its pool's workers
are started with die_with_parent (PR_SET_PDEATHSIG), so the kernel ends them with their parent."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

PARENT = r'''
import os, sys, time
from concurrent.futures import ProcessPoolExecutor
from flashprof.analysis.gap.issue_report import die_with_parent

def busy(_):
    time.sleep(60)
    return os.getpid()

def pid(_):
    return os.getpid()

pool = ProcessPoolExecutor(2, initializer=die_with_parent)
pids = sorted(set(pool.map(pid, range(8))))
print(" ".join(map(str, pids)), flush=True)
for _ in pool.map(busy, range(2)):
    pass
'''


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_workers_die_with_a_killed_parent():
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True)
    try:
        workers = [int(p) for p in parent.stdout.readline().split()]
        assert workers and all(_alive(p) for p in workers)
        parent.send_signal(signal.SIGKILL)
        parent.wait(10)
        deadline = time.time() + 10
        while time.time() < deadline and any(_alive(p) for p in workers):
            time.sleep(0.1)
        assert not [p for p in workers if _alive(p)], "workers outlived their killed parent"
    finally:
        if parent.poll() is None:
            parent.kill()
        for p in workers if "workers" in dir() else ():
            try:
                os.kill(p, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
