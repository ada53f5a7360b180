"""The learned scorer's inputs: hand features of every classified unit (:func:`unit_features`: the rules' tags and
signals, unit kind, heading and lead-in context, neighbours' tags, position, prototype cosines and the MiniLM embedding
of prose units) and a hashed bag of its tokens (:func:`hashed_text`)."""

from __future__ import annotations

import re
import zlib
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from tasks.categories import ORDER, Category
from tasks.roles.annotator.patterns import (
    ASSERT,
    BOILERPLATE,
    CODEISH,
    COMMENT_ERROR,
    COMMENT_EXPECTED,
    ERROR_LINE,
    PATH,
    REF,
    SHELL,
    TRACEBACK_LINE,
    URL,
    VERSION,
    VERSION_LINE,
)
from tasks.roles.annotator.records import Unit
from tasks.roles.annotator.rules import lead_category, rule_tags

FEATURE_VERSION = 3
"""The version of the features built here; a weights file trained on another is refused."""
_KINDS = ("prose", "title", "heading", "code", "output", "exchange", "traceback", "diff", "comment")
_FLAGS: tuple[re.Pattern, ...] = (
    BOILERPLATE, TRACEBACK_LINE, ASSERT, URL, REF, VERSION_LINE, VERSION, PATH, COMMENT_EXPECTED,
    COMMENT_ERROR, CODEISH, ERROR_LINE, SHELL, re.compile(r":\s*$"), re.compile(r"`[^`]+`"),
)


def _cat_vector(cats: set[Category]) -> list[float]:
    return [1.0 if c in cats else 0.0 for c in ORDER]


def _one_hot(cat: Category | None) -> list[float]:
    return [1.0 if cat == c else 0.0 for c in ORDER] + [1.0 if cat is None else 0.0]


def unit_features(units: list[Unit], sims: np.ndarray, vecs: np.ndarray) -> np.ndarray:
    """(n_units, n_features) float32: hand features of each classified unit, its prototype cosines, its embedding.

    ``units`` must have gone through the rules (``unit.cats``, ``section`` and ``context`` set); ``vecs`` holds the
    MiniLM vector of prose and title units (zeros elsewhere).
    """
    n = len(units)
    rule = np.array([_cat_vector(u.cats) for u in units], dtype=np.float32).reshape(n, len(ORDER))
    prev = np.vstack([np.zeros((1, len(ORDER)), np.float32), rule[:-1]]) if n else rule
    nxt = np.vstack([rule[1:], np.zeros((1, len(ORDER)), np.float32)]) if n else rule
    block_any = rule.copy()
    for b in {u.block for u in units if u.block >= 0}:
        members = [k for k, u in enumerate(units) if u.block == b]
        block_any[members] = rule[members].max(axis=0)
    total = max(units[-1].end, 1) if units else 1
    rows = []
    for k, unit in enumerate(units):
        strong, weak = rule_tags(unit)
        lead = lead_category(unit.text) if unit.block < 0 else None
        rows.append(
            [1.0 if unit.kind == kind else 0.0 for kind in _KINDS]
            + _one_hot(unit.section)
            + _one_hot(unit.context)
            + _one_hot(lead)
            + _cat_vector(strong)
            + _cat_vector(weak)
            + [1.0 if pattern.search(unit.text) else 0.0 for pattern in _FLAGS]
            + [k / max(n - 1, 1), 1.0 if k == 0 else 0.0, 1.0 if k < 3 else 0.0, unit.start / total,
               float(np.log1p(len(unit.text))) / 8.0, float(np.log1p(n)) / 6.0, 1.0 if unit.block < 0 else 0.0]
        )
    hand = np.asarray(rows, dtype=np.float32).reshape(n, -1)
    kinds = hand[:, : len(_KINDS)]
    sims = sims.astype(np.float32)
    around = [np.vstack([np.zeros((1, a.shape[1]), np.float32), a[:-1]]) if n else a for a in (kinds, sims)]
    around += [np.vstack([a[1:], np.zeros((1, a.shape[1]), np.float32)]) if n else a for a in (kinds, sims)]
    return np.hstack([hand, rule, prev, nxt, block_any, *around, sims, vecs.astype(np.float32)])


TEXT_BITS = 16
"""The unit text model hashes tokens into ``2 ** TEXT_BITS`` buckets (CRC-32, the same on every run and machine)."""
_WORD = re.compile(r"\w+")


@dataclass(frozen=True)
class HashedText:
    """Hashed bag of tokens of each unit, as CSR arrays: row ``k`` is ``indices/values[indptr[k]:indptr[k + 1]]``."""

    indptr: np.ndarray
    indices: np.ndarray
    values: np.ndarray

    @property
    def rows(self) -> int:
        return len(self.indptr) - 1


def _unit_tokens(units: list[Unit], k: int) -> list[str]:
    """Kind, section, words, word bigrams and character 3- and 4-grams of each word of unit k (lower-cased), and the
    kind and words of its neighbours (prefixed)."""
    unit = units[k]
    text = unit.text[:2000].lower()
    words = _WORD.findall(text)
    tokens = [f"k:{unit.kind}", f"s:{unit.section.key if unit.section else '-'}", *words]
    tokens += [f"{a} {b}" for a, b in pairwise(words)]
    for word in text.split():
        padded = f" {word} "
        for n in (3, 4):
            tokens += [f"c{padded[i : i + n]}" for i in range(len(padded) - n + 1)]
    for prefix, j in (("p:", k - 1), ("n:", k + 1)):
        if 0 <= j < len(units):
            tokens += [prefix + w for w in _WORD.findall(units[j].text[:500].lower())] + [f"k{prefix}{units[j].kind}"]
    return tokens


def hashed_text(units: list[Unit]) -> HashedText:
    """Sublinear term counts (1 + log tf) of :func:`_unit_tokens`, hashed into ``2 ** TEXT_BITS`` buckets, each row
    L2-normalised."""
    mask = (1 << TEXT_BITS) - 1
    indptr, indices, values = [0], [], []
    for k in range(len(units)):
        counts: dict[int, int] = {}
        for token in _unit_tokens(units, k):
            h = zlib.crc32(token.encode("utf-8")) & mask
            counts[h] = counts.get(h, 0) + 1
        idx = np.fromiter(counts.keys(), dtype=np.int32, count=len(counts))
        val = 1.0 + np.log(np.fromiter(counts.values(), dtype=np.float64, count=len(counts)))
        norm = float(np.linalg.norm(val))
        indices.append(idx)
        values.append((val / norm if norm else val).astype(np.float32))
        indptr.append(indptr[-1] + len(counts))
    cat = lambda parts, dtype: np.concatenate(parts).astype(dtype) if parts else np.zeros(0, dtype)  # noqa: E731
    return HashedText(np.asarray(indptr, dtype=np.int64), cat(indices, np.int32), cat(values, np.float32))
