"""Shared command-line handling: one clear line and a non-zero exit for every expected failure."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

EXIT_INPUT = 2
EXIT_GATE = 3


class ArgumentParser(argparse.ArgumentParser):
    """argparse with the same contract as every other bad input: one ``error:`` line on stderr, exit code 2."""

    def error(self, message: str):  # type: ignore[override]
        print(f"error: {self.prog}: {message} (see --help)", file=sys.stderr)
        sys.exit(EXIT_INPUT)


def run_main(body: Callable[[], object]) -> int:
    from tasks.errors import ClarifyflowError, GateError

    try:
        body()
    except GateError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_GATE
    except ClarifyflowError as err:
        print(f"error: {err}", file=sys.stderr)
        return EXIT_INPUT
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    return 0
