"""Atomic reads and writes, content hashes and repository paths: the one place that touches artifact files."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import hashlib
import json
import os
import re
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from tasks.errors import InputError, validation_message
from tasks.limits import MAX_FILE_BYTES, MAX_RECORD_BYTES, MAX_RECORDS, size_text

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


def atomic_write_bytes(path: Path, data: bytes, *, durable: bool = True) -> None:
    """Write ``data`` to a temporary file beside ``path`` and rename it over ``path``: a reader sees the old file or
    the whole new one. ``durable`` also syncs the data to disk before the rename (an artifact); a cache entry that a
    power loss may leave empty skips it, and its reader treats an unreadable entry as missing."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, _default_mode())
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if durable:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


def atomic_write_text(path: Path, text: str, *, durable: bool = True) -> None:
    atomic_write_bytes(path, text.encode("utf-8"), durable=durable)


def atomic_write_json(path: Path, obj: Any) -> None:
    if isinstance(obj, BaseModel):
        obj = obj.model_dump(mode="json")
    atomic_write_text(path, json.dumps(obj, indent=2, sort_keys=True, ensure_ascii=False) + "\n")


def jsonl_text(rows: list[BaseModel] | list[dict]) -> str:
    return "".join(canonical_json(r) + "\n" for r in rows)


ARTIFACT_MARKER = ".clarifyflow-artifact"
"""Written into every folder :func:`staged_dir` hands out: :func:`publish_dir` only replaces folders that carry it."""


def contained_dir(root: Path, stage_root: str, requested: str | Path | None, *, flag: str) -> Path:
    """The output folder ``requested`` (default: ``stage_root``), which must resolve to ``root/stage_root`` or below.

    Symlinks and ``..`` are resolved before the check; anything else is an InputError naming ``flag``. The result is
    spelled under ``root/stage_root`` (not resolved), so it stays relative to ``root``.
    """
    base = root / stage_root
    if not requested:
        return base
    target = (root / requested).resolve()
    resolved_base = base.resolve()
    if target != resolved_base and resolved_base not in target.parents:
        shown = target.relative_to(root.resolve()) if target.is_relative_to(root.resolve()) else target
        raise InputError(flag, f"{str(requested)!r} resolves to {shown}, outside {stage_root}/ (this stage's output "
                         f"root); give a folder at or below it")
    return base / target.relative_to(resolved_base)


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _clean_stale(final: Path) -> None:
    """Remove staging and ``.old-`` folders of ``final`` left by runs that were killed (their pid is gone)."""
    pattern = re.compile(rf"\.{re.escape(final.name)}\.(?:staging-(\d+)-.+|old-(\d+))")
    for sibling in final.parent.iterdir():
        match = pattern.fullmatch(sibling.name)
        if not match or sibling.is_symlink() or not sibling.is_dir():
            continue
        pid = int(match.group(1) or match.group(2))
        if pid != os.getpid() and not _pid_alive(pid):
            shutil.rmtree(sibling, ignore_errors=True)


@contextlib.contextmanager
def staged_dir(final: Path) -> Iterator[Path]:
    """Yield an empty sibling folder to fill; nothing is visible at ``final`` until :func:`publish_dir`.

    If the body raises, the staging folder is removed and ``final`` is untouched. Staging and ``.old-`` folders of
    ``final`` left by killed runs are removed first.
    """
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    _clean_stale(final)
    staging = Path(tempfile.mkdtemp(prefix=f".{final.name}.staging-{os.getpid()}-", dir=final.parent))
    staging.chmod(0o777 & ~_umask())  # as mkdir would; mkdtemp makes it 0700
    try:
        (staging / ARTIFACT_MARKER).write_text("published by a clarifyflow stage; replaced on its next run\n",
                                               encoding="utf-8")
        yield staging
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)


def _replaceable(staging: Path, final: Path) -> bool:
    """Whether ``final`` is a previous artifact of the stage filling ``staging``: it carries the marker, or (written
    before the marker existed) holds nothing but names the stage writes again now."""
    if final.is_symlink() or not final.is_dir():
        return False
    if (final / ARTIFACT_MARKER).is_file():
        return True
    return {p.name for p in final.iterdir()} <= {p.name for p in staging.iterdir()}


_AT_FDCWD = -100
_RENAME_EXCHANGE = 2


@functools.cache
def _renameat2():
    if not sys.platform.startswith("linux"):
        return None
    try:
        fn = ctypes.CDLL(None, use_errno=True).renameat2
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
    fn.restype = ctypes.c_int
    return fn


def _exchange(a: Path, b: Path) -> bool:
    """Swap two paths in one step (Linux ``renameat2(RENAME_EXCHANGE)``); False where the system cannot."""
    fn = _renameat2()
    if fn is None:
        return False
    if fn(_AT_FDCWD, os.fsencode(a), _AT_FDCWD, os.fsencode(b), _RENAME_EXCHANGE) == 0:
        return True
    err = ctypes.get_errno()
    if err in (errno.EINVAL, errno.ENOSYS, errno.EOPNOTSUPP):
        return False
    raise OSError(err, os.strerror(err), str(b))


def publish_dir(staging: Path, final: Path) -> None:
    """Swap a filled staging folder into place, so readers see the old or the new folder and never neither.

    An existing ``final`` is replaced only if it is a previous artifact of this stage (see :func:`_replaceable`);
    anything else is an InputError and nothing moves. On Linux the two folders are exchanged in one rename; elsewhere
    the old folder is renamed aside first.
    """
    staging, final = Path(staging), Path(final)
    if not (final.exists() or final.is_symlink()):
        os.replace(staging, final)
        return
    if not _replaceable(staging, final):
        raise InputError(final, f"refusing to replace a folder that is not an artifact of this stage (no "
                         f"{ARTIFACT_MARKER} in it); move it away or pick another output folder")
    if _exchange(staging, final):
        shutil.rmtree(staging, ignore_errors=True)  # it now holds the previous artifact
        return
    old = final.parent / f".{final.name}.old-{os.getpid()}"
    if old.exists():
        shutil.rmtree(old)
    os.replace(final, old)
    try:
        os.replace(staging, final)
    except BaseException:
        os.replace(old, final)
        raise
    shutil.rmtree(old, ignore_errors=True)


def check_file_size(path: Path) -> None:
    """Refuse a file over ``MAX_FILE_BYTES`` before reading it."""
    size = Path(path).stat().st_size
    if size > MAX_FILE_BYTES:
        raise InputError(path, f"file is {size_text(size)}, over the {size_text(MAX_FILE_BYTES)} limit on input files")


def read_text_utf8(path: Path) -> str:
    """Read a text file, rejecting bad encodings with the byte offset of the first bad byte."""
    path = Path(path)
    if not path.is_file():
        raise InputError(path, "file not found")
    check_file_size(path)
    data = path.read_bytes()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise InputError(path, f"not valid UTF-8 (bad byte at offset {err.start}, line {line})") from None


def read_json_object(path: Path) -> dict[str, Any]:
    """A UTF-8 JSON file holding one object, or an InputError naming the file (malformed JSON, another type)."""
    try:
        data = json.loads(read_text_utf8(path))
    except json.JSONDecodeError as err:
        raise InputError(path, f"malformed JSON ({err.msg} at line {err.lineno})") from None
    if not isinstance(data, dict):
        raise InputError(path, "expected a JSON object")
    return data


def _first_error(err: ValidationError) -> tuple[str, str]:
    first = err.errors()[0]
    field = ".".join(str(part) for part in first["loc"]) or "(record)"
    return field, validation_message(first)


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
        size = len(line.encode("utf-8")) if len(line) > MAX_RECORD_BYTES // 4 else 0  # a char is 4 bytes at most
        if size > MAX_RECORD_BYTES:
            raise InputError(path, f"record is {size_text(size)}, over the {size_text(MAX_RECORD_BYTES)} limit on one "
                             "record", record=f"line {lineno}", field="(record)")
        if len(rows) >= MAX_RECORDS:
            raise InputError(path, f"more than {MAX_RECORDS} records (the limit on one input file)",
                             record=f"line {lineno}")
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
