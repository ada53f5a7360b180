"""Process set-up shared by every flow entry point: repo-local Prefect state and quiet, offline libraries.

Imported before Prefect, so the defaults below are what Prefect's settings see. Values already set in the
environment always win.
"""

from __future__ import annotations

import os
from pathlib import Path

from tasks.prefect_server import local_server_url
from tasks.store import repo_root


def configure(root: Path | None = None) -> Path:
    """Under ``dvc repro`` (``$DVC_STAGE`` names the stage) the stage's start and end are stamped on stdout and its
    time recorded (``tasks.stage_times``), for the table ``make run`` prints."""
    root = root or repo_root()
    env = os.environ
    env.setdefault("PREFECT_HOME", str(root / ".prefect"))
    env.setdefault("PREFECT_LOCAL_STORAGE_PATH", str(root / ".cache" / "prefect-results"))
    env.setdefault("PREFECT_SERVER_ANALYTICS_ENABLED", "false")
    env.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "180")
    env.setdefault("PREFECT_LOGGING_LEVEL", "WARNING")
    env.setdefault("DO_NOT_TRACK", "1")
    env.setdefault("GX_ANALYTICS_ENABLED", "false")
    env.setdefault("LITELLM_OFFLINE_MODE", "true")
    env.setdefault("HF_HUB_OFFLINE", "1")
    env.setdefault("HF_DATASETS_OFFLINE", "1")
    env.setdefault("TOKENIZERS_PARALLELISM", "false")
    if "PREFECT_API_URL" not in env:
        # Use the repo's own server (make ui / make run) when it is up; otherwise Prefect starts an ephemeral one.
        url = local_server_url(root)
        if url:
            env["PREFECT_API_URL"] = url
    if env.get("DVC_STAGE"):
        from tasks import stage_times

        stage_times.begin(root, env["DVC_STAGE"])
    return root
