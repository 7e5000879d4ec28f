"""The one command-line contract of every entry point (``flashprof <verb>``,
flashprof/verbs.py, and the modules behind each verb): a failure the user can fix is one line on stderr,
``<prog>: error: <message>``, and a non-zero exit; never a traceback, never a usage block.

* ``FlashprofError``: the base of every such failure (ConfigError, BuildError,
  ToolchainError, ReportError, ... subclass it). ``exit_code`` says the exit status (2
  unless a subclass says otherwise).
* ``ArgumentParser``: argparse whose usage errors are that one line too.
* ``run_cli(prog, main)``: runs ``main()`` and turns a ``FlashprofError`` (or Ctrl-C) into
  the line and the exit status.
"""
from __future__ import annotations

import argparse
import sys
from typing import Callable


class FlashprofError(Exception):
    """A failure with a message meant for the user."""

    exit_code = 2


class ArgumentParser(argparse.ArgumentParser):
    """argparse whose usage errors are one line (the usage block stays behind --help)."""

    def error(self, message: str):
        name = verb_of(self.prog)
        self.exit(2, f"{name}: error: {message} (see --help)\n")


def doc_summary(doc: str | None) -> str:
    """A module docstring's first paragraph on one line: a verb's --help description, whole
    (its first line alone cuts sentences that go on)."""
    para = (doc or "").strip().split("\n\n", 1)[0]
    return " ".join(para.split())


def verb_of(prog: str) -> str:
    """The command's short name for error lines: "flashprof sass diff" -> "sass",
    "python -m flashprof.kernels.build" -> "build"."""
    words = prog.split()
    if "flashprof" in words[:-1]:
        return words[words.index("flashprof") + 1]
    return prog.rsplit(".", 1)[-1].split()[0]


def run_cli(prog: str, main: Callable[[], int]) -> int:
    try:
        return main()
    except FlashprofError as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
