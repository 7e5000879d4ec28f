"""The one sidecar type (flashprof.profiling.sidecar): every committed sidecar reads and
writes back unchanged, old spellings are migrated in from_json, a malformed one is one line."""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from flashprof.kernels.cli import FlashprofError
from flashprof.profiling import sidecar as S
from flashprof.profiling.sidecar import Sidecar, SidecarError

ROOT = Path(__file__).resolve().parents[1]
GEMM = ROOT / "tests" / "data" / "gemm_foreign.ncu-rep"


def _committed_sidecars() -> list[Path]:
    out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "reports/**/*.json"],
                         capture_output=True, text=True, check=True).stdout.split()
    return [ROOT / f for f in out if (ROOT / f).with_suffix(".ncu-rep").is_file()]


SIDECARS = _committed_sidecars()


def test_the_corpus_has_both_spellings():
    # the round trip below covers today's format and the older one (kernel, no target_key)
    docs = [json.loads(p.read_text()) for p in SIDECARS]
    assert len(SIDECARS) >= 10
    assert any("target_key" in d for d in docs) and any("target_key" not in d and "kernel" in d for d in docs)


@pytest.mark.parametrize("path", SIDECARS, ids=[str(p.relative_to(ROOT)) for p in SIDECARS])
def test_committed_sidecar_round_trips(path):
    data = json.loads(path.read_text())
    side = S.load(path)
    out = side.to_json()
    # every key of the file comes back with its value; only a migrated target_key is added
    added = {k: out[k] for k in out.keys() - data.keys()}
    assert {k: out[k] for k in data} == data
    assert added in ({}, {"target_key": data.get("kernel")})
    assert Sidecar.from_json(json.loads(json.dumps(out))) == side
    # the key is what the file says, however it spells it (no stem guessing here)
    expect = data.get("target_key", data.get("kernel"))
    assert side.target_key == (str(expect) if expect else None)


def test_old_spellings_are_migrated():
    old_kernel = Sidecar.from_json({"schema": 1, "kernel": "6", "title": "Kernel 6"})
    assert old_kernel.target_key == "6" and old_kernel.to_json()["target_key"] == "6"
    user = Sidecar.from_json({"kernel": None, "target": {"name": "my_attn-attention", "spec": "x.py:attention"}})
    assert user.target_key == "my_attn-attention"
    assert Sidecar.from_json({"kernel": 4}).target_key == "4"
    from flashprof.kernels.config import VARIANTS
    assert Sidecar.from_json({"config_slug": VARIANTS[3].slug}).target_key == "3"
    assert Sidecar.from_json({"config_slug": "d64_br1_bc1_w1"}).target_key is None
    # today's key wins over the older ones
    assert Sidecar.from_json({"target_key": "ref", "kernel": "ref"}).target_key == "ref"


def test_unknown_keys_are_kept_in_place():
    data = {"schema": 1, "target_key": "5", "kernel": "5", "what": "a note", "extra_block": {"a": [1, 2]}}
    side = Sidecar.from_json(data)
    assert side.extra == {"what": "a note", "extra_block": {"a": [1, 2]}}
    assert side.to_json() == data


def test_a_new_sidecar_writes_todays_keys():
    side = Sidecar(target_key="7", title="Kernel 7", shape={"batch": 16, "seq": 4096}, dtype="fp16",
                   git={"revision": "abc", "dirty": False})
    out = side.to_json()
    assert list(out)[:4] == ["schema", "target_key", "kernel", "title"]
    assert out["schema"] == S.SCHEMA and out["kernel"] == out["target_key"] == "7"
    assert out["target"] is None and out["correctness"] is None  # known keys written even when null
    assert side.shape_field("seq") == 4096.0 and side.shape_field("heads") != side.shape_field("heads")
    # the keys flashprof profile wrote before the Sidecar type, in their order
    assert list(out) == ["schema", "target_key", "kernel", "title", "target", "config", "config_slug", "dispatch",
                         "shape", "dtype", "flops", "gpu", "clocks", "ncu", "correctness", "correctness_where",
                         "software", "git", "command", "created"]


@pytest.mark.parametrize("text, message", [
    ('{"target_key": "6", "shape": [16, 4096, 16, 128]}', "'shape' must be an object, not a list"),
    ('["kernel", "6"]', "must be an object, not a list"),
    ('"6"', "must be an object, not a string"),
    ('{"target_key": "6", "title": 6}', "'title' must be a string, not a number"),
    ('{"kernel": "6", "flops": "many"}', "'flops' must be a number, not a string"),
    ("{not json", "unreadable sidecar JSON"),
])
def test_malformed_sidecar_is_one_line_naming_the_file(tmp_path, text, message):
    path = tmp_path / "kernel6.json"
    path.write_text(text)
    with pytest.raises(SidecarError) as err:
        S.load(path)
    assert isinstance(err.value, FlashprofError)
    line = str(err.value)
    assert "\n" not in line and line.startswith(str(path)) and message in line


def test_malformed_sidecar_through_the_cli(tmp_path):
    shutil.copy(GEMM, tmp_path / "kernel6.ncu-rep")
    (tmp_path / "kernel6.json").write_text(json.dumps({"target_key": "6", "shape": [16, 4096]}))
    proc = subprocess.run([sys.executable, "-P", "-m", "flashprof", "summary", str(tmp_path / "kernel6.ncu-rep")],
                          capture_output=True, text=True, cwd=tmp_path, timeout=300)
    assert proc.returncode != 0
    assert "Traceback" not in proc.stderr
    errors = [ln for ln in proc.stderr.splitlines() if "error:" in ln]
    assert len(errors) == 1, proc.stderr
    assert str(tmp_path / "kernel6.json") in errors[0] and "'shape' must be an object" in errors[0]


def test_read_sidecar_without_a_file_is_empty(tmp_path):
    side = S.read_sidecar(tmp_path / "nothing.ncu-rep")
    assert side == Sidecar.missing() and not side.exists and side.to_json() == {}
    assert side.target_key is None and side.title is None
    assert S.sidecar_path(tmp_path / "a.b.ncu-rep") == tmp_path / "a.b.json"


def test_git_revision_or_a_reason(tmp_path):
    from flashprof.profiling.env import git_info

    here = git_info()  # this checkout
    assert len(here["revision"]) == 40 and isinstance(here["dirty"], bool)
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
    assert here["revision"] == head
    outside = git_info(tmp_path)
    assert outside["revision"] is None and outside["dirty"] is None and outside["reason"]
