"""The benchmarks' shared input data (outside the repository, in ``../shared/data``), its check, and result files."""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CLARITI_WORKBOOK = ROOT.parent / "shared" / "data" / "clariti" / "data.xlsx"
OR_CLARIFY_FOLDER = ROOT.parent / "shared" / "data" / "or-clarify"


def input_exists(path: Path, what: str = "workbook", *, folder: bool = False) -> bool:
    """True when ``path`` is a file (a folder with ``folder``); else ``<what> not found: <path>`` on stderr."""
    if path.is_dir() if folder else path.is_file():
        return True
    print(f"{what} not found: {path}", file=sys.stderr)
    return False


def write_json(path: Path, data: object) -> None:
    """``data`` as indented JSON with a final newline at ``path``, its folder made first."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=2) + "\n")
