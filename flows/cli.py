"""Shared command-line handling: one clear line and a non-zero exit for every failure.

An error raised inside a flow ends as one ``error:`` line on stderr. Prefect logs the same exception with its
traceback first (``Encountered exception during execution``, ``Task run failed with exception``, ``Finished in state
Failed``); :class:`QuietFailures` keeps those records off the console and the Prefect API unless
``CLARIFYFLOW_DEBUG=1``. An unexpected exception (a bug) is one line too, with the traceback under the same switch.
A failed flow run leaves no raw result files of its exception under ``PREFECT_LOCAL_STORAGE_PATH``
(:func:`drop_failure_results`): Prefect writes a failed flow's exception there with its default (pickle) serializer.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

EXIT_INPUT = 2
EXIT_GATE = 3
EXIT_ERROR = 1
DEBUG_ENV = "CLARIFYFLOW_DEBUG"
"""``CLARIFYFLOW_DEBUG=1``: Prefect's tracebacks and a bug's traceback are shown as they are."""
PREFECT_RUN_LOGGERS = ("prefect.flow_runs", "prefect.task_runs")


def debug() -> bool:
    return os.environ.get(DEBUG_ENV, "").strip().lower() in ("1", "true", "yes", "on")


class QuietFailures(logging.Filter):
    """Drops Prefect's records of a failed run (the exception with its traceback, the failed final state)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if debug() or record.levelno < logging.ERROR:
            return True
        if record.exc_info or record.exc_text:
            return False
        message = str(record.msg)
        return not message.startswith(("Finished in state Failed", "Encountered exception during execution",
                                       "Task run failed with exception"))


def quiet_prefect_failures() -> None:
    """Install :class:`QuietFailures` on Prefect's run loggers (idempotent; works before Prefect is imported)."""
    for name in PREFECT_RUN_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, QuietFailures) for f in logger.filters):
            logger.addFilter(QuietFailures())


def drop_failure_results(since: float) -> list[Path]:
    """Delete the files under ``PREFECT_LOCAL_STORAGE_PATH`` written since ``since`` that are not the plain-JSON
    results clarifyflow's cached tasks write (``tasks.json_results``): the raw exception pickles of a failed run."""
    folder = os.environ.get("PREFECT_LOCAL_STORAGE_PATH")
    if not folder or not Path(folder).is_dir():
        return []
    import json

    dropped = []
    for path in Path(folder).iterdir():
        try:
            if not path.is_file() or path.stat().st_mtime < since - 1:
                continue
            data = json.loads(path.read_bytes())
            if isinstance(data, dict) and ("metadata" in data or "serializer" in data):
                serializer = (data.get("metadata") or {}).get("serializer") or data.get("serializer")
                if isinstance(serializer, dict) and serializer.get("type") == "json":
                    continue
        except (OSError, ValueError):
            pass
        try:
            path.unlink()
            dropped.append(path)
        except OSError:
            pass
    return dropped


class ArgumentParser(argparse.ArgumentParser):
    """argparse with the same contract as every other bad input: one ``error:`` line on stderr, exit code 2."""

    def error(self, message: str):  # type: ignore[override]
        print(f"error: {self.prog}: {message} (see --help)", file=sys.stderr)
        sys.exit(EXIT_INPUT)


def params_args(prog: str, description: str, argv: list[str] | None) -> argparse.Namespace:
    """The arguments of a stage whose one option is ``--params``."""
    parser = ArgumentParser(prog=prog, description=description)
    parser.add_argument("--params", default="params.yaml", help="params file (default: params.yaml)")
    return parser.parse_args(argv)


def run_stage(run: Callable[[], dict], describe: Callable[[dict], str],
              check: Callable[[], object] | None = None) -> int:
    """A stage's ``main`` once its arguments are read: the environment, ``check`` (bad input exits 2 before anything
    runs), then the flow ``run`` starts and its one summary line (``describe``)."""
    from flows import _env

    _env.configure()
    if check is not None and run_main(check):
        return EXIT_INPUT
    return run_main(lambda: print(describe(run())))


def run_main(body: Callable[[], object]) -> int:
    from tasks.errors import ClarifyflowError, GateError

    quiet_prefect_failures()
    started = time.time()
    try:
        body()
    except GateError as err:
        return _failed(f"error: {err}", EXIT_GATE, started)
    except ClarifyflowError as err:
        return _failed(f"error: {err}", EXIT_INPUT, started)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except Exception as err:  # a bug: one line, the traceback only under CLARIFYFLOW_DEBUG=1
        if debug():
            raise
        from tasks.llm.redact import redact

        text = redact(" ".join(str(err).split()))[:500]
        return _failed(f"error: unexpected {type(err).__name__}: {text} (set {DEBUG_ENV}=1 for the traceback)",
                       EXIT_ERROR, started)
    return 0


def _failed(line: str, code: int, started: float) -> int:
    drop_failure_results(started)
    print(line, file=sys.stderr)
    return code
