"""Test-only import trace: with CLARIFYFLOW_IMPORT_TRACE set, each Python process writes the files it loaded."""
import atexit
import os
import sys

_OUT = os.environ.get("CLARIFYFLOW_IMPORT_TRACE")


def _dump() -> None:
    import json

    files = sorted({m.__file__ for m in list(sys.modules.values()) if getattr(m, "__file__", None)})
    path = os.path.join(_OUT, f"{os.getpid()}.json")
    with open(path, "w") as fh:
        json.dump({"argv": sys.argv, "files": files}, fh)


if _OUT:
    atexit.register(_dump)
