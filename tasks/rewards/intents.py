"""Question intents: what the diversity stage and the SWE evaluation count instead of question strings.

An intent is a question's target category (the ``question_classifier``'s label) plus its embedding. Two questions
share an intent when they have the same label and a cosine >= ``intent_threshold``, or a cosine >=
``similarity_threshold`` whatever their labels (a question whose label is unknown, ``None``, only by the latter).
Intents are the connected components of that relation, so three rephrasings of one ask form one intent even when
only neighbouring rephrasings are close.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

Label = str | None


def same_intent(labels_a: Sequence[Label], vectors_a: np.ndarray, labels_b: Sequence[Label], vectors_b: np.ndarray,
                *, intent_threshold: float, similarity_threshold: float) -> np.ndarray:
    """(len(a), len(b)) booleans: does question i of ``a`` share an intent with question j of ``b``?
    Vectors are L2-normalised rows."""
    if not len(labels_a) or not len(labels_b):
        return np.zeros((len(labels_a), len(labels_b)), dtype=bool)
    cosine = np.asarray(vectors_a) @ np.asarray(vectors_b).T
    a = np.array(labels_a, dtype=object)[:, None]
    b = np.array(labels_b, dtype=object)[None, :]
    labelled = (a == b) & (a != None)  # noqa: E711 (elementwise on an object array)
    return (cosine >= similarity_threshold) | (labelled & (cosine >= intent_threshold))


def intent_clusters(labels: Sequence[Label], vectors: np.ndarray, *, intent_threshold: float,
                    similarity_threshold: float) -> list[int]:
    """Each question's intent, numbered 0, 1, … in order of first appearance."""
    linked = same_intent(labels, vectors, labels, vectors, intent_threshold=intent_threshold,
                         similarity_threshold=similarity_threshold)
    parent = list(range(len(labels)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i, j in zip(*np.nonzero(np.triu(linked, k=1))):
        parent[root(int(j))] = root(int(i))
    ids: dict[int, int] = {}
    return [ids.setdefault(root(i), len(ids)) for i in range(len(labels))]


def distinct_ratio(intents: Sequence[int]) -> float | None:
    """Distinct intents / questions; None without questions."""
    return len(set(intents)) / len(intents) if intents else None
