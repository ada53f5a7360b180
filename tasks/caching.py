"""Content-keyed Prefect task caching.

Prefect's ``INPUTS`` policy hashes a path argument as a string; here a ``Path`` argument is hashed by the content
of the file (or of every file below a folder), pydantic records by their JSON, and the key also covers the source
files of the modules that do the work, so editing the masker invalidates the masking cache but nothing else.
Results are persisted as plain JSON under ``PREFECT_LOCAL_STORAGE_PATH`` (``.cache/prefect-results`` in the repo) and
loaded only if the stored file names that serializer (``tasks/json_results.py``).
"""

from __future__ import annotations

import hashlib
import inspect
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType
from typing import Any

from pydantic import BaseModel

from tasks.store import canonical_json, sha256_file, sha256_tree


def _fingerprint(value: Any) -> Any:
    if isinstance(value, Path):
        return {"path-content": sha256_tree(value) if value.exists() else "missing"}
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if isinstance(value, dict):
        return {str(k): _fingerprint(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_fingerprint(v) for v in value]
    return value


def code_fingerprint(modules: Iterable[ModuleType | Path], root: Path | None = None) -> str:
    """Hash of the source files of ``modules`` (file objects such as prompt templates and weights are hashed as they
    are). With ``root``, each file's path relative to it is hashed too, so a moved file changes the hash."""
    digest = hashlib.sha256()
    for module in modules:
        source = module if isinstance(module, Path) else inspect.getsourcefile(module)
        if source:
            if root is not None:
                digest.update(Path(source).relative_to(root).as_posix().encode())
            digest.update(sha256_file(Path(source)).encode())
    return digest.hexdigest()


def package_modules(module: ModuleType) -> list[ModuleType]:
    """``module`` and, when it is a package, every module in it, imported and in name order, so that a key over their
    source never depends on what happened to be imported first."""
    import importlib
    import pkgutil

    mods = [module]
    if hasattr(module, "__path__"):
        mods += [importlib.import_module(f"{module.__name__}.{m.name}")
                 for m in sorted(pkgutil.iter_modules(module.__path__), key=lambda m: m.name)]
    return mods


TASKS = Path(__file__).resolve().parent
CODE_SUFFIXES = (".py", ".j2", ".npz")
"""What counts as code: modules, prompt templates and weight files."""


def code_version(*parts: str) -> str:
    """Hash of the project code under ``parts`` (files or folders, relative to ``tasks/``): every module, prompt
    template and weight file there, by path and content, in path order. A store that keys its results with it
    computes them again after any edit there."""
    files: set[Path] = set()
    for part in parts:
        path = TASKS / part
        files |= set(path.rglob("*")) if path.is_dir() else {path}
    return code_fingerprint(sorted(p for p in files if p.is_file() and p.suffix in CODE_SUFFIXES), root=TASKS)


def content_key(parameters: dict[str, Any], *, task_name: str, modules: Iterable[ModuleType]) -> str:
    payload = {
        "task": task_name,
        "code": code_fingerprint(modules),
        "params": {k: _fingerprint(v) for k, v in sorted(parameters.items())},
    }
    return hashlib.sha256(canonical_json(payload).encode()).hexdigest()


def content_cache_policy(task_name: str, modules: Iterable[ModuleType]) -> Any:
    """A Prefect cache policy keyed by argument contents and the source of ``modules`` (plus the task's own)."""
    from prefect.cache_policies import TASK_SOURCE, CachePolicy

    modules = tuple(modules)

    def key_fn(context: Any, parameters: dict[str, Any]) -> str:
        return content_key(parameters, task_name=task_name, modules=modules)

    return CachePolicy.from_cache_key_fn(key_fn) + TASK_SOURCE


def cached_task(name: str, modules: Iterable[ModuleType], **options: Any) -> Callable[[Callable], Any]:
    """``@task`` with the content policy, persisted plain-JSON results (``tasks.json_results``: a stored result
    naming any other serializer is deleted, never loaded) and retries left to the caller."""
    from prefect import task

    from tasks.json_results import result_options

    return task(name=name, **result_options(content_cache_policy(name, modules)), **options)


def forget_result(state: Any) -> bool:
    """Delete the persisted result of a finished task run, so its cache key misses next time: a chunk in which a role
    call failed for good (a rewriter or annotator outage) is never served from the cache, its rerun retries the calls.
    Whether a stored file was removed."""
    import os

    record = getattr(state, "data", None)
    key = getattr(getattr(record, "metadata", None), "storage_key", None)
    if not key:
        return False
    path = Path(key)
    if not path.is_absolute():
        path = Path(os.environ.get("PREFECT_LOCAL_STORAGE_PATH", ".")) / key
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    return True


class RunStats(BaseModel):
    """How many task bodies ran and how many were served from the cache in one flow run."""

    submitted: int = 0
    executed: int = 0
    cached: int = 0

    def add_state(self, state: Any) -> None:
        self.submitted += 1
        if state.name == "Cached":
            self.cached += 1
        else:
            self.executed += 1
