"""No shared vocabulary between what hides and what finds (issue 40 item 6): the local OR agents read a brief with
their own lexicon (tasks/domains/optimization/gaps.py ``*_CUE``), which shares no term with the decomposer's cue
lists (tasks/domains/optimization/decompose.py ``CUES``) that type the units the construction hides."""

from __future__ import annotations

import re

from tasks.domains.optimization import gaps
from tasks.domains.optimization.decompose import CUES

FUNCTION_WORDS = frozenset({"the", "and", "one", "ing", "not", "are", "can", "any", "all", "has", "have"})
"""Grammar, not vocabulary: articles, auxiliaries, and the suffix group "(?:e|ed|ing)" a regex spells out."""


def terms(pattern: re.Pattern) -> set[str]:
    """The words a regex matches on: its letter runs of 3 or more, escapes (\\b, \\w, \\d) dropped."""
    source = re.sub(r"\\[A-Za-z]", " ", pattern.pattern.lower())
    return set(re.findall(r"[a-z]{3,}", source)) - FUNCTION_WORDS


def agent_cues() -> dict[str, re.Pattern]:
    return {name: value for name, value in vars(gaps).items()
            if name.endswith("_CUE") and isinstance(value, re.Pattern)}


def test_the_agents_brief_cues_share_no_term_with_the_decomposers_cue_lists():
    cues = agent_cues()
    assert {"OBJECTIVE_CUE", "DEMAND_CUE", "DEMAND_POLICY_CUE", "INTEGER_CUE", "SELECTION_CUE"} <= set(cues)
    hiders = {kind: set().union(*(terms(p) for p, _ in table)) for kind, table in CUES.items()}
    shared = {(name, kind): sorted(terms(p) & words) for name, p in cues.items() for kind, words in hiders.items()
              if terms(p) & words}
    assert shared == {}, shared


def test_the_term_check_would_catch_the_old_objective_cue():
    old = re.compile(r"\b(minimi[sz]\w*|maximi[sz]\w*|objective|as (low|high) as possible|goal is)\b")
    hiders = set().union(*(terms(p) for p, _ in CUES["objective"]))
    assert {"minimi", "maximi", "objective", "goal", "possible"} <= terms(old) & hiders


def test_the_orpilot_adapter_uses_the_same_separate_lexicon():
    from tasks.clarifiers import orpilot

    assert orpilot.OBJECTIVE_CUE is gaps.OBJECTIVE_CUE
    assert gaps.OBJECTIVE_CUE.search("Find the cheapest mix of feeds.")
    assert not gaps.OBJECTIVE_CUE.search("Maximise the total profit.")  # the decomposer's words are not the signal
