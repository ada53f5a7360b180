"""Slot names, shared by every unit domain: a hidden unit's snake_case name from its own words.

The name keeps the unit's content words (grammar, modal and bound words left out, a negation kept as ``no``), at most
:data:`MAX_NAME_WORDS` of them; an objective whose words name no optimising verb is prefixed ``objective``. The
optimisation domain's ``slot_annotator`` (``tasks.domains.optimization.annotate``) names its slots with it too.
"""

from __future__ import annotations

import re

from tasks.records import Unit

MAX_NAME_WORDS = 6

FILLER = frozenset([
    "a", "an", "the", "of", "to", "in", "on", "at", "for", "by", "with", "and", "or", "is", "are", "be", "been",
    "being", "was", "were", "do", "does", "did", "can", "could", "should", "would", "will", "shall", "may", "might",
    "must", "there", "their", "them", "they", "this", "that", "these", "those", "it", "its", "we", "our", "us", "you",
    "your", "any", "some", "each", "every", "all", "also", "just", "only", "such", "other", "another", "both", "either",
    "neither", "so", "too", "very", "as", "from", "into", "onto", "about", "per", "than", "then", "which", "who",
    "whom", "whose", "what", "when", "where", "how", "if", "whether", "has", "have", "had", "not", "no", "nor", "never",
    "cannot", "can't", "won't", "must't", "up", "down", "more", "less", "most", "least", "exceed", "exceeds",
    "exceeded", "exceeding", "maximum", "minimum", "max", "min", "exactly", "equal", "equals", "total", "overall",
    "allowed", "permitted", "required", "requirement", "requirements", "need", "needs", "given", "following", "same",
    "own", "one", "two", "three", "during", "within", "while", "decide", "decides", "decided", "make", "makes", "made",
    "minimize", "minimise", "maximize", "maximise", "minimized", "minimised", "maximized", "maximised", "minimizing",
    "maximizing",
])
"""Words a topic leaves out: grammar, modal and bound words (the direction of the bound stays hidden)."""
NAME_FILLER = FILLER - {"no", "not", "one", "two", "three", "total", "maximum", "minimum", "exactly", "max", "min",
                        "minimize", "minimise", "maximize", "maximise"}
OBJECTIVE_VERB = re.compile(r"\b(minimi[sz]\w*|maximi[sz]\w*|optimi[sz]\w*|reduc\w*|increas\w*|lowest|highest|"
                            r"smallest|largest|as (low|high|little|much|few|many) as possible)\b", re.IGNORECASE)


def _tokens(text: str) -> list[str]:
    text = re.sub(r"\$[^$]*\$", " ", text)
    return re.findall(r"[a-z][a-z0-9'’\-]*|\d[\d,.]*", text.lower())


def slot_name(unit: Unit) -> str:
    words = []
    for word in _tokens(unit.content):
        word = re.sub(r"[^a-z0-9]+", "_", word).strip("_")
        if not word or word in NAME_FILLER or (word[0].isdigit() and len(words) == 0):
            continue
        if word in ("not", "cannot", "never"):
            word = "no"
        words.extend(p for p in word.split("_") if p)
    words = list(dict.fromkeys(words))[:MAX_NAME_WORDS] or [unit.kind, unit.id.lower()]
    if unit.kind == "objective" and not any(OBJECTIVE_VERB.match(w) for w in words):
        words = (["objective"] + words)[:MAX_NAME_WORDS]
    return "_".join(words)
