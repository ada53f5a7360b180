"""Category prototypes: short sentences per category, and the prose of the project's own annotated samples
(``data/samples/swe/issues.jsonl``), against which every prose unit's MiniLM embedding is compared."""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import numpy as np

from tasks.categories import ORDER, Category
from tasks.roles.annotator.records import Unit
from tasks.roles.annotator.rules import E, I, L, R, V, X
from tasks.roles.annotator.segmentation import segment

SAMPLES = Path(__file__).resolve().parents[3] / "data" / "samples" / "swe" / "issues.jsonl"

_WRITTEN_PROTOTYPES: dict[Category, tuple[str, ...]] = {
    E: (
        "Calling the function raises a ValueError with a confusing message.",
        "The result is wrong: it returns an empty list although the input has three items.",
        "The program crashes with a segmentation fault when the file is large.",
        "The option seems to be ignored and the output is unchanged.",
        "Since the last release this no longer works and fails with a TypeError.",
        "The generated output contains duplicated entries.",
        "It hangs forever and never returns.",
        "A spurious warning is emitted every time the object is created.",
        "The plot is drawn at the wrong position.",
        "This silently produces incorrect results for negative numbers.",
    ),
    R: (
        "Run the following script to reproduce the problem.",
        "Steps to reproduce: create a new project, add the model and run the migration.",
        "It only happens when the input contains a unicode character.",
        "Here is a minimal example that triggers the bug.",
        "When I call the method with an empty string, the error appears.",
        "This happens if the setting is enabled and the cache is empty.",
        "Create a model with a foreign key to itself and query it with a filter.",
        "Using a subclass of the class as the argument triggers it.",
    ),
    X: (
        "I would expect the function to return the same value for both inputs.",
        "The correct output should be 42.",
        "It should raise a clear error message instead.",
        "Expected behavior: the file is written with the given encoding.",
        "The method ought to accept None as a valid value.",
        "Ideally the two code paths would produce identical results.",
        "It would be nice if the option were respected by every writer.",
        "The warning should not be shown in this case.",
    ),
    I: (
        "The problem seems to be in the parse method, which ignores the flag.",
        "A possible fix would be to check the type before converting it.",
        "I think the fix is to move the call after the validation step.",
        "The culprit is this line in utils.py, where the default is overwritten.",
        "We could add a keyword argument to make this behaviour configurable.",
        "The function should use the incremental decoder instead of decoding each chunk.",
        "Overriding the method in the subclass would solve it.",
        "I am happy to open a pull request with this change.",
        "This is caused by the cache being keyed on the name only.",
    ),
    L: (
        "See the documentation at the project website for details.",
        "This looks related to issue 1234 and the discussion in that pull request.",
        "The behaviour changed in commit abc1234.",
        "According to the specification this field is optional.",
        "This was originally reported on Stack Overflow.",
        "The upstream library documents this parameter differently.",
    ),
    V: (
        "Python 3.11 on macOS 14 with numpy 1.26.",
        "I am using Django 4.2 with PostgreSQL 15 on Ubuntu 22.04.",
        "Operating system: Windows 10, 64-bit.",
        "This happens on the main branch and in the latest release.",
        "Installed versions: matplotlib 3.8.0, backend Agg.",
        "Tested with the development version.",
    ),
}
_NONE_PROTOTYPES = (
    "Thanks for this great library!",
    "Please let me know if you need more information.",
    "Any help would be appreciated.",
    "Description",
    "Hi all,",
    "Thank you for your time.",
)


@lru_cache(maxsize=1)
def _prototype_texts() -> tuple[tuple[str, ...], tuple[int, ...]]:
    """Prototype sentences and their category index (``len(ORDER)`` for "no category")."""
    texts: list[str] = []
    labels: list[int] = []
    for cat, sentences in _WRITTEN_PROTOTYPES.items():
        texts.extend(sentences)
        labels.extend([ORDER.index(cat)] * len(sentences))
    if SAMPLES.is_file():
        from tasks.swe_samples import load_samples

        for issue in load_samples(SAMPLES):
            for span in issue.spans or []:
                for unit in segment(span.text):
                    if unit.kind in ("prose", "title") and len(unit.text) >= 20:
                        texts.append(unit.text)
                        labels.append(ORDER.index(span.category))
    texts.extend(_NONE_PROTOTYPES)
    labels.extend([len(ORDER)] * len(_NONE_PROTOTYPES))
    return tuple(texts), tuple(labels)


def similarities(unit_vecs: np.ndarray) -> np.ndarray:
    """(n_units, 7): per category the mean of the top-2 prototype cosines (column 6 = "no category")."""
    from tasks.llm.embeddings import encode

    texts, labels = _prototype_texts()
    protos = encode(list(texts))
    sims = unit_vecs @ protos.T
    lab = np.asarray(labels)
    out = np.zeros((len(unit_vecs), len(ORDER) + 1), dtype=np.float32)
    for k in range(len(ORDER) + 1):
        cols = sims[:, lab == k]
        if cols.shape[1] == 0:
            continue
        top = np.sort(cols, axis=1)[:, -2:]
        out[:, k] = top.mean(axis=1)
    return out


def embed_text(unit: Unit) -> str:
    """The text of a unit that is embedded (whitespace folded, at most 200 characters)."""
    return " ".join(unit.text.split())[:200]
