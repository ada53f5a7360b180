"""Syntactic features of one clarification question (CLARITI RQ2's lexical and syntactic level): interrogative
form, imperative form, code identifiers, file names, version patterns, hedges, and length.

Pure regular expressions: no model, deterministic, cheap enough for every question of every list.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict

WH_OR_AUX = re.compile(
    r"^\s*(what|which|how|where|when|why|who|whose|whom|is|are|was|were|does|do|did|can|could|would|should|will|"
    r"have|has|had|may|might|shall|am)\b", re.IGNORECASE)
IMPERATIVE = re.compile(
    r"^\s*(please\b|kindly\b)?\s*(provide|share|paste|describe|explain|list|specify|clarify|confirm|give|show|tell|send|"
    r"include|attach|post|run|check|try|let|point|indicate|elaborate|identify|state|add|mention|upload|copy)\b",
    re.IGNORECASE)
CODE_IDENTIFIER = re.compile(r"`[^`]+`|\b[a-z]+_[a-z0-9_]+\b|\b[a-z]+[A-Z]\w*\b|\b\w+\(\)|\b[a-z_]+\.[a-z_]+\(?")
"""Back-quoted code, snake_case, camelCase, ``call()`` or ``module.attr`` (case-sensitive)."""
FILE_NAME = re.compile(r"\b[\w./-]*\w\.(py|pyx|cfg|toml|ya?ml|json|ini|txt|rst|md|lock|c|h|cpp|js|ts|html|css|csv|"
                       r"sh|ipynb|xml|sql)\b", re.IGNORECASE)
VERSION = re.compile(r"\bv?\d+\.\d+(\.\d+)*([a-z]+\d*)?\b|\b(py|python)\s?3(\.\d+)?\b", re.IGNORECASE)
HEDGE = re.compile(r"\b(maybe|perhaps|possibly|might|probably|likely|roughly|approximately|somewhat|sort of|kind of|"
                   r"i (think|guess|assume|suppose)|it seems|seems to|any chance|if possible|if you can|by any chance|"
                   r"would it be possible|do you happen to)\b", re.IGNORECASE)

FEATURES = ("interrogative", "imperative", "code_identifier", "file_name", "version_pattern", "hedge")
"""The boolean features, in table order (lengths are ``n_chars`` and ``n_words``)."""


class QuestionFeatures(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    interrogative: bool
    """Ends with a question mark, or opens with a wh-word or an auxiliary verb."""
    imperative: bool
    """Opens with a request verb ("Please share ...", "Provide ...")."""
    code_identifier: bool
    file_name: bool
    version_pattern: bool
    hedge: bool
    n_chars: int
    n_words: int


def features(question: str) -> QuestionFeatures:
    text = " ".join(question.split())
    return QuestionFeatures(
        interrogative=text.endswith("?") or bool(WH_OR_AUX.match(text)),
        imperative=bool(IMPERATIVE.match(text)),
        code_identifier=bool(CODE_IDENTIFIER.search(text)),
        file_name=bool(FILE_NAME.search(text)),
        version_pattern=bool(VERSION.search(text)),
        hedge=bool(HEDGE.search(text)),
        n_chars=len(text),
        n_words=len(text.split()),
    )
