"""The one YAML loader of params files: safe, strict and bounded.

``yaml.safe_load`` lets a second key of the same name silently replace the first (a second ``evaluate:`` block drops
the whole first one) and expands aliases without bound (an alias bomb of a few hundred bytes exhausts memory once
the mapping is walked). :func:`load_yaml_text` refuses, each with one line naming the file and the key or line:

- a document over :data:`MAX_PARAMS_BYTES`;
- a duplicate key in any mapping, at any depth;
- more than :data:`MAX_ALIASES` aliases, or a document whose aliases expand to more than :data:`MAX_NODES` nodes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from tasks.errors import InputError
from tasks.limits import size_text

MAX_PARAMS_BYTES = 1024 * 1024
"""A params file is a few kilobytes; anything over a MiB is not one."""
MAX_ALIASES = 64
"""Aliases (``*name``) in one document; params.yaml uses none."""
MAX_NODES = 200_000
"""Nodes of the document with every alias expanded (what a reader walking it would visit)."""


class _StrictLoader(yaml.SafeLoader):
    """SafeLoader that counts aliases and refuses duplicate keys."""

    def __init__(self, stream: str):
        super().__init__(stream)
        self.aliases = 0

    def compose_node(self, parent, index):  # type: ignore[override]
        if self.check_event(yaml.AliasEvent):
            self.aliases += 1
            if self.aliases > MAX_ALIASES:
                mark = self.peek_event().start_mark
                raise _Refused(f"more than {MAX_ALIASES} YAML aliases (line {mark.line + 1}); write the values out")
        return super().compose_node(parent, index)

    def construct_mapping(self, node, deep=False):  # type: ignore[override]
        seen: set[Any] = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=True)
            try:
                duplicate = key in seen
            except TypeError:  # an unhashable key; SafeLoader reports it itself
                duplicate = False
            if duplicate:
                raise _Refused(f"duplicate key {key!r} (line {key_node.start_mark.line + 1}); the second would "
                               "silently replace the first", field=str(key))
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


class _Refused(Exception):
    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.message = message
        self.field = field


def _expanded_size(node: yaml.Node, memo: dict[int, int]) -> int:
    """Nodes under ``node`` with every alias expanded, computed once per distinct node (capped at MAX_NODES + 1)."""
    known = memo.get(id(node))
    if known is not None:
        return known
    memo[id(node)] = MAX_NODES + 1  # a recursive alias counts as too big
    total = 1
    if isinstance(node, yaml.MappingNode):
        children = [n for pair in node.value for n in pair]
    elif isinstance(node, yaml.SequenceNode):
        children = list(node.value)
    else:
        children = []
    for child in children:
        total += _expanded_size(child, memo)
        if total > MAX_NODES:
            break
    memo[id(node)] = min(total, MAX_NODES + 1)
    return memo[id(node)]


def load_yaml_text(text: str, path: Path | str) -> Any:
    """The one document in ``text`` (from ``path``, named in every error), or an InputError."""
    size = len(text.encode("utf-8"))
    if size > MAX_PARAMS_BYTES:
        raise InputError(path, f"params file is {size_text(size)}, over the {size_text(MAX_PARAMS_BYTES)} limit")
    loader = _StrictLoader(text)
    try:
        node = loader.get_single_node()
        if node is None:
            return None
        if _expanded_size(node, {}) > MAX_NODES:
            raise _Refused(f"YAML aliases expand to more than {MAX_NODES} nodes; write the values out")
        return loader.construct_document(node)
    except _Refused as err:
        raise InputError(path, err.message, field=err.field) from None
    except yaml.YAMLError as err:
        raise InputError(path, f"malformed YAML: {err}".replace("\n", " ")) from None
    except RecursionError:
        raise InputError(path, "YAML nested too deeply") from None
    finally:
        loader.dispose()


def load_yaml_file(path: Path | str) -> Any:
    """:func:`load_yaml_text` of a UTF-8 file (size checked before reading)."""
    from tasks.store import read_text_utf8

    path = Path(path)
    if path.is_file() and path.stat().st_size > MAX_PARAMS_BYTES:
        raise InputError(path, f"params file is {size_text(path.stat().st_size)}, over the "
                         f"{size_text(MAX_PARAMS_BYTES)} limit")
    return load_yaml_text(read_text_utf8(path), path)
