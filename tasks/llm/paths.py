"""Where the persistent model caches live. They sit outside DVC's outs so stage reruns never delete them."""

from __future__ import annotations

import os
from pathlib import Path

from tasks.store import repo_root


def cache_dir() -> Path:
    """``$CLARIFYFLOW_CACHE_DIR`` or ``<repo>/.cache``; created on first use."""
    configured = os.environ.get("CLARIFYFLOW_CACHE_DIR")
    folder = Path(configured) if configured else repo_root() / ".cache"
    folder.mkdir(parents=True, exist_ok=True)
    return folder
