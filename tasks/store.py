"""Atomic reads and writes, content hashes and repository paths: the one place that touches artifact files."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from tasks.errors import InputError

M = TypeVar("M", bound=BaseModel)


def repo_root(start: Path | None = None) -> Path:
    """The nearest folder at or above ``start`` (default: the working directory) holding ``dvc.yaml``."""
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "dvc.yaml").is_file():
            return folder
    return here


def canonical_json(obj: Any) -> str:
    """Key-sorted, compact JSON: the same value always gives the same bytes."""
    if isinstance(obj, BaseModel):
        obj = obj.model_dump(mode="json")
    return json.dumps(obj, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def sha256_tree(path: Path) -> str:
    """Hash of a file, or of every file below a folder (relative names and contents)."""
    path = Path(path)
    if path.is_file():
        return sha256_file(path)
    digest = hashlib.sha256()
    for file in sorted(p for p in path.rglob("*") if p.is_file()):
        digest.update(file.relative_to(path).as_posix().encode())
        digest.update(sha256_file(file).encode())
    return digest.hexdigest()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _default_mode() -> int:
    """What a plain ``open(..., "w")`` would give; mkstemp makes files 0600."""
    return 0o666 & ~_umask()


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, _default_mode())
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_text(path: Path, text: str) -> None:
    atomic_write_bytes(path, text.encode("utf-8"))


def atomic_write_json(path: Path, obj: Any) -> None:
    if isinstance(obj, BaseModel):
        obj = obj.model_dump(mode="json")
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def jsonl_text(rows: list[BaseModel] | list[dict]) -> str:
    return "".join(canonical_json(r) + "\n" for r in rows)


@contextlib.contextmanager
def staged_dir(final: Path) -> Iterator[Path]:
    """Yield an empty sibling folder to fill; nothing is visible at ``final`` until :func:`publish_dir`.

    If the body raises, the staging folder is removed and ``final`` is untouched.
    """
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{final.name}.staging-", dir=final.parent))
    staging.chmod(0o777 & ~_umask())  # as mkdir would; mkdtemp makes it 0700
    try:
        yield staging
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def publish_dir(staging: Path, final: Path) -> None:
    """Swap a filled staging folder into place with renames, so readers see the old or the new folder."""
    staging, final = Path(staging), Path(final)
    old = None
    if final.exists():
        old = final.parent / f".{final.name}.old-{os.getpid()}"
        if old.exists():
            shutil.rmtree(old)
        os.replace(final, old)
    try:
        os.replace(staging, final)
    except BaseException:
        if old is not None:
            os.replace(old, final)
        raise
    if old is not None:
        shutil.rmtree(old, ignore_errors=True)


def read_text_utf8(path: Path) -> str:
    """Read a text file, rejecting bad encodings with the byte offset of the first bad byte."""
    path = Path(path)
    if not path.is_file():
        raise InputError(path, "file not found")
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise InputError(path, f"not valid UTF-8 (bad byte at offset {err.start}, line {line})") from None


def _first_error(err: ValidationError) -> tuple[str, str]:
    first = err.errors()[0]
    field = ".".join(str(part) for part in first["loc"]) or "(record)"
    return field, first["msg"]


def parse_record(model: type[M], data: Any, *, path: Path, record: object) -> M:
    """Validate one record, turning a pydantic error into a one-line InputError naming the field."""
    try:
        return model.model_validate(data)
    except ValidationError as err:
        field, msg = _first_error(err)
        raise InputError(path, msg, record=record, field=field) from None


def read_jsonl(path: Path, model: type[M]) -> list[M]:
    """Read a JSON Lines file into typed records; blank lines are skipped, anything else must parse."""
    path = Path(path)
    rows: list[M] = []
    for lineno, line in enumerate(read_text_utf8(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
        except json.JSONDecodeError as err:
            raise InputError(path, f"malformed JSON ({err.msg} at column {err.colno})",
                             record=f"line {lineno}") from None
        if not isinstance(data, dict):
            raise InputError(path, "expected a JSON object", record=f"line {lineno}")
        rows.append(parse_record(model, data, path=path, record=f"line {lineno}"))
    if not rows:
        raise InputError(path, "no records")
    return rows
