"""One error type for every user-facing failure of the profiling commands, and a wrapper
that turns it into one line on stderr and a non-zero exit (never a traceback)."""
from __future__ import annotations

import argparse
import sys
from typing import Callable


class FlashprofError(Exception):
    """A failure with a message meant for the user."""


class ArgumentParser(argparse.ArgumentParser):
    """argparse whose usage errors are one line too (the usage block stays behind --help)."""

    def error(self, message: str):
        name = self.prog.rsplit(".", 1)[-1]  # "python -m profiling.profile" -> "profile"
        self.exit(2, f"{name}: error: {message} (see --help)\n")


def run_cli(prog: str, main: Callable[[], int]) -> int:
    from kernels.config import ConfigError

    try:
        return main()
    except (FlashprofError, ConfigError) as e:
        print(f"{prog}: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
