"""The command speaks with one voice: every verb's --help has a whole description and a help
line for every option; summary, compare and gap call themselves `flashprof <verb>`."""
from __future__ import annotations

import contextlib
import io
import re

import pytest

from flashprof.verbs import VERBS, main

VERB_NAMES = sorted(VERBS)


def _help(verb: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        try:
            rc = main([verb, "--help"])
        except SystemExit as e:
            rc = e.code
    assert rc in (0, None), (verb, rc)
    return out.getvalue()


def _options_without_help(text: str) -> list[str]:
    """Option entries of argparse's 'options:' block with no text after them (an entry whose
    text starts on its own next line counts as helped)."""
    lines = text.split("options:", 1)[1].splitlines()[1:]
    bad = []
    for i, line in enumerate(lines):
        m = re.match(r"^  (-[^ ].*?)(\s{2,}(\S.*))?$", line)
        if not m:
            continue
        helped = m.group(3) or (i + 1 < len(lines) and re.match(r"^ {6,}\S", lines[i + 1]))
        if not helped:
            bad.append(m.group(1).split(",")[0].split()[0])
    return bad


@pytest.mark.parametrize("verb", VERB_NAMES)
def test_every_option_has_a_help_line(verb):
    text = _help(verb)
    assert "options:" in text
    assert _options_without_help(text) == [], verb


@pytest.mark.parametrize("verb", VERB_NAMES)
def test_description_is_whole(verb):
    text = _help(verb)
    body = text.split("\n\n", 2)
    desc = " ".join(body[1].split()) if len(body) > 1 else ""
    assert desc and not desc.endswith(","), (verb, desc)


@pytest.mark.parametrize("verb", ["summary", "compare", "gap"])
def test_analysis_verbs_call_themselves_flashprof_verb(verb):
    assert _help(verb).startswith(f"usage: flashprof {verb}")


def test_the_scan_finds_an_unhelped_option():
    text = "usage: x\n\noptions:\n  -h, --help  show this\n  --seq SEQ\n  --dtype D   fp16 or bf16\n"
    assert _options_without_help(text) == ["--seq"]
