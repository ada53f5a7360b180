"""Cached task results are stored and loaded as plain JSON only.

A Prefect result file names its own serializer, and Prefect loads it with whatever the file says: a tampered file
under ``.cache/prefect-results`` that claims ``pickle`` would run code at the next cache lookup. Cached tasks write
with :data:`SERIALIZER` (stdlib ``json``, no object hooks), and :class:`JsonOnlyResults` looks at the stored file for
a cache key before Prefect does: a file that does not name exactly that serializer is deleted with one warning line,
so the task recomputes and writes a fresh one. Imported only where Prefect already is (``tasks.caching``).
"""

from __future__ import annotations

import contextlib
import json
import logging
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from prefect.cache_policies import CachePolicy
from prefect.serializers import JSONSerializer

SERIALIZER = JSONSerializer(object_encoder=None, object_decoder=None)
"""stdlib json both ways: no qualified names to import, no classes to build."""
TRUSTED = SERIALIZER.model_dump(mode="json")

log = logging.getLogger("clarifyflow.cache")


def stored_serializer(content: bytes) -> Any:
    """The serializer a stored result names: a record's ``metadata.serializer`` (or, in the pre-3.0 blob layout
    Prefect still reads, the top-level ``serializer``); None when the file is neither."""
    try:
        data = json.loads(content)
    except ValueError:
        return None
    if not isinstance(data, dict):
        return None
    metadata = data.get("metadata")
    return metadata.get("serializer") if isinstance(metadata, dict) else data.get("serializer")


def drop_untrusted(path: Path) -> None:
    """Delete the stored result at ``path`` unless it was written with :data:`SERIALIZER`."""
    try:
        content = path.read_bytes()
    except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
        return
    serializer = stored_serializer(content)
    if serializer == TRUSTED:
        return
    kind = serializer.get("type") if isinstance(serializer, dict) else "none"
    log.warning(f"ignored cached task result {path}: serializer {kind!r} is not the plain JSON serializer "
                f"clarifyflow writes; recomputing")
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


@dataclass
class JsonOnlyResults(CachePolicy):
    """``inner``'s key; the result stored under it in ``storage`` is checked by :func:`drop_untrusted` first."""

    inner: CachePolicy | None = None
    storage: str = ""

    def compute_key(self, task_ctx: Any, inputs: dict[str, Any], flow_parameters: dict[str, Any],
                    **kwargs: Any) -> str | None:
        key = self.inner.compute_key(task_ctx, inputs, flow_parameters, **kwargs) if self.inner else None
        if key:
            drop_untrusted(Path(self.storage) / key)
        return key


def result_options(policy: CachePolicy) -> dict:
    """``task(...)`` options: ``policy`` guarded, plain-JSON results persisted under ``PREFECT_LOCAL_STORAGE_PATH``."""
    from prefect.settings import get_current_settings

    storage = Path(get_current_settings().results.local_storage_path)
    return {"cache_policy": JsonOnlyResults(inner=policy, storage=str(storage)), "persist_result": True,
            "result_serializer": SERIALIZER, "result_storage": storage}
