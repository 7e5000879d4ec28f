"""reports/sass/series/fa2_toolchain.json (devjobs/series/fa2_toolchain.py): the FA2 reference the
model runs on the A100 built four ways. Checked against the committed SASS itself: its instruction
text hashes to what the record calls the committed build, its KV loop (read here with the model's
loop finder) has the record's counts, and the record's identities follow from its hashes."""
from __future__ import annotations

import hashlib
import json
import re
from collections import Counter

import pytest

from flashprof.analysis.gap.loops import series_loop
from flashprof.paths import ROOT as REPO

REC = REPO / "reports" / "sass" / "series" / "fa2_toolchain.json"
SASS = REPO / "reports" / "sass" / "series" / "fa2_official_sm80.sass"


@pytest.fixture(scope="module")
def rec():
    if not REC.is_file():
        pytest.skip("no fa2_toolchain.json")
    return json.loads(REC.read_text())


def _instruction_sha(text: str) -> str:
    lines = [m.group(1).strip() for m in re.finditer(r"/\*[0-9a-f]{4,}\*/\s+(.*?;)", text)]
    return hashlib.sha256("\n".join(lines).encode()).hexdigest()


def test_the_committed_sass_is_the_record_s_nvcc_build(rec):
    sha = _instruction_sha(SASS.read_text())
    assert rec["committed_sha256_instructions"] == sha
    b = rec["builds"]["nvcc13_ptxas12893"]
    assert b["same_as_committed"] and b["sha256_instructions"] == sha
    loop = series_loop("ref", "fa2_official_sm80")
    ops = Counter(i.base for i in loop.body)
    assert b["loop_instructions"] == len(loop.body)
    assert all(ops[k] == v for k, v in b["loop_opcodes"].items())
    assert b["registers"] == loop.registers


def test_identities_follow_from_the_hashes(rec):
    shas = {n: b["sha256_instructions"] for n, b in rec["builds"].items()}
    for n, b in rec["builds"].items():
        assert b["same_instructions_as"] == sorted(o for o in shas if o != n and shas[o] == shas[n])
        assert b["same_as_committed"] == (shas[n] == rec["committed_sha256_instructions"])


def test_what_the_record_says(rec):
    """ptxas 12.8.61 = 12.8.93 on the committed PTX; the CUDA 12.8 and 13.0 front ends (NVRTC) agree
    with each other; NVRTC's own path (libcu++ for std::) is a different binary, the reason it is
    a control and not a candidate for the series' build."""
    b = rec["builds"]
    assert "12.8" in b["nvcc13_ptxas12861"]["ptxas"] and b["nvcc13_ptxas12861"]["ptxas"] != b["nvcc13_ptxas12893"]["ptxas"]
    assert b["nvcc13_ptxas12861"]["same_instructions_as"] == ["nvcc13_ptxas12893"]
    assert "12.8" in b["nvrtc12893_ptxas12893"]["front_end"] and "13.0" in b["nvrtc13088_ptxas12893"]["front_end"]
    assert b["nvrtc12893_ptxas12893"]["same_instructions_as"] == ["nvrtc13088_ptxas12893"]
    assert not b["nvrtc12893_ptxas12893"]["same_as_committed"]
