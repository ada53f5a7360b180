"""Answer-gap alignment, locally: does the user's public reply settle the gap that was asked?

The local backend of ``or_gap_alignment`` (our aligned InterOPT variant) and the transcript reading of the InterOPT
ablation without a ledger share this judgement. It reads only the public brief (for its entity names), the question
with its options, and the reply exactly as the agent saw it. A reply settles the gap when it commits to an answer
on the asked subject:

- a picked option A-C that was offered (the options are hypotheses about the asked subject);
- a clear yes or no to a yes/no question, unless it goes on about another of the brief's entities;
- a free-text reply (an Open answer, a D comment, or the brief sentence the user points back to) that names the
  asked subject, when the question is about one or two of the brief's entities (a question over a longer list may
  be answered about the list as a whole), and states a goal (objective gaps) or a value, rule or choice (every
  other gap).

It stays open after "I don't have that information" and its paraphrases, a D comment that states nothing on the
point, or a reply about another entity than the one asked (the question is about Product 2, the reply about
Product 1).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from functools import lru_cache
from typing import Literal

from pydantic import BaseModel, ConfigDict

from tasks.domain_context import GapInventory

NON_ANSWER = re.compile(
    r"still needs? (internal )?confirm|needs? (internal )?confirmation|(can't|cannot|can not) (give|say|tell)|"
    r"firm answer|not (yet )?(sure|decided|confirmed|certain)|(don'?t|do not) know|unknown to me|no idea|"
    r"(don'?t|do not) have (that|this|the|any|such) (information|info|data|details?|figures?|numbers?)|"
    r"no information|to be confirmed|\btbd\b|unclear|undecided", re.I)
"""A reply that leaves the point open (the simulated users' "still needs internal confirmation" and paraphrases)."""
CHOICE_PICK = re.compile(r"selected option ([ABC])\b", re.I)
D_REPLY = re.compile(r"none of the offered options match\.?\s*(.*)", re.I | re.S)
USER_PREFIX_RE = re.compile(r"^\s*business user response:\s*", re.I)
AS_IN_REQUEST = re.compile(r"^\s*as (stated )?in the request\s*:?\s*", re.I)
YES_NO_QUESTION = re.compile(r"^\s*(is|are|do|does|did|must|can|could|may|should|will|would|has|have|shall)\b", re.I)
YES_NO_REPLY = re.compile(r"^\s*(yes|no|correct|right|exactly|not at all|never)\b", re.I)
GOAL_CUE = re.compile(r"\b(minimi[sz]\w*|maximi[sz]\w*|goal|objective|aim|cost\w*|profit\w*|margin\w*|revenue\w*|"
                      r"income|lowest|highest|largest|smallest|least|most|cheapest|shortest|fewest|output)\b", re.I)
RULE_CUE = re.compile(
    r"\d|\b(must|mustn't|need\w*|has to|have to|required?|requires|only|cannot|can't|can|may|allowed|not allowed|"
    r"forbidden|prohibited|limit\w*|max\w*|min\w*|at (most|least)|up to|no more than|no less than|exactly|always|"
    r"never|every|each|all|none|no|fixed|penalt\w*|whole|integer\w*|fraction\w*|before|after|start\w*|end\w*|"
    r"first|last|until|within|per|independent\w*|together|exclud\w*|both|either|neither|lost|late|backlog\w*|"
    r"in full|unmet|strict\w*|preference|prefer\w*|ok|fine|free)\b", re.I)

Reason = Literal["option", "yes_no", "states_answer", "not_offered", "non_answer", "other_entity", "no_subject",
                 "no_content"]


class Verdict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    settled: bool
    reason: Reason
    rationale: str


def reply_text(reply: str) -> tuple[str | None, str]:
    """(picked letter or None, the reply's words): a D comment without its preamble, an Open reply without the
    user prefix."""
    reply = reply.strip()
    if m := CHOICE_PICK.search(reply):
        return m.group(1).upper(), ""
    if m := D_REPLY.search(reply):
        return None, m.group(1).strip()
    return None, USER_PREFIX_RE.sub("", reply).strip()


def is_non_answer(text: str) -> bool:
    return bool(NON_ANSWER.search(text)) or not re.search(r"[A-Za-z0-9]", text)


@lru_cache(maxsize=1024)
def _entities(inventory: GapInventory, brief: str) -> tuple[str, ...]:
    facts = inventory.facts(brief)
    names = [*facts.entities, *(n for group in facts.groups for n in group)]
    seen: set[str] = set()
    return tuple(n for n in names if n.strip() and not (n.lower() in seen or seen.add(n.lower())))


def _names_in(text: str, names: tuple[str, ...]) -> set[str]:
    """The names that occur in ``text`` as whole words (a plural "s"/"es" allowed), longest first so that "Dry
    cider" is not also read as "cider"."""
    found: set[str] = set()
    taken: list[tuple[int, int]] = []
    for name in sorted(names, key=len, reverse=True):
        for m in re.finditer(rf"(?<![\w-]){re.escape(name)}(e?s)?(?![\w-])", text, re.I):
            if not any(a < m.end() and m.start() < b for a, b in taken):
                taken.append(m.span())
                found.add(name.lower())
    return found


def _without_names(text: str, names: tuple[str, ...]) -> str:
    for name in sorted(names, key=len, reverse=True):
        text = re.sub(rf"(?<![\w-]){re.escape(name)}(e?s)?(?![\w-])", " ", text, flags=re.I)
    return text


def subjects(inventory: GapInventory, brief: str, text: str) -> set[str]:
    """The brief's entities (lowercased, as ``inventory`` reads them) that ``text`` names."""
    return _names_in(text, _entities(inventory, brief))


def judge(*, inventory: GapInventory, brief: str, category: str, description: str, question: str,
          options: Mapping[str, str], reply: str) -> Verdict:
    """Whether ``reply`` settles the gap (``category``, ``description``) that ``question`` asked about (the brief's
    entities as ``inventory`` reads them)."""
    letter, text = reply_text(reply)
    if letter is not None:
        if options and letter not in options:
            return Verdict(settled=False, reason="not_offered", rationale=f"Option {letter} was not offered.")
        return Verdict(settled=True, reason="option", rationale=f"The user picked option {letter}, a definite answer.")
    text = AS_IN_REQUEST.sub("", text)
    if is_non_answer(text):
        return Verdict(settled=False, reason="non_answer",
                       rationale="The reply does not commit to an answer; the point still needs confirmation.")
    asked = subjects(inventory, brief, f"{question} {description}")
    named = subjects(inventory, brief, text)
    if asked and named and not named & asked:
        return Verdict(settled=False, reason="other_entity",
                       rationale=f"The reply is about {', '.join(sorted(named))}, not about "
                                 f"{', '.join(sorted(asked))}.")
    if YES_NO_QUESTION.match(question) and YES_NO_REPLY.match(text):
        return Verdict(settled=True, reason="yes_no", rationale="A clear yes or no to a yes/no question.")
    if 0 < len(asked) <= 2 and not named:  # a question over a whole list may be answered about the list
        return Verdict(settled=False, reason="no_subject",
                       rationale=f"The reply never names {', '.join(sorted(asked))}, the subject asked about.")
    cue = GOAL_CUE if category == "objective" else RULE_CUE
    if not cue.search(_without_names(text, _entities(inventory, brief))):  # "Product 2" alone states no value
        what = "a goal" if category == "objective" else "a value, rule or choice"
        return Verdict(settled=False, reason="no_content", rationale=f"The reply states no {what} on the asked point.")
    return Verdict(settled=True, reason="states_answer", rationale="The reply states a definite answer on the asked "
                                                                   "subject.")
