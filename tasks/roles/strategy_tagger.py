"""Strategy tagger: which of CLARITI's four answerability strategies (RQ2, clariti.md §4) a clarification question
follows.

- ``evidence_based``: it asks for an observable artefact the user holds (the full traceback, the error text, a
  minimal snippet, a log, the output of a command);
- ``specific``: it asks for an exact value or identifier (a version number, a file, function, option or commit),
  often with an example of the form wanted ("e.g. 3.9.1");
- ``scoped``: it asks about one small unit (one ask, one function, one case), not "anything else" or a list of asks;
- ``actionable``: the user can answer it now by running, opening or looking at something (run this command, check
  that file, paste the output), not by deciding how a fix should be designed.

Local backend: keyword and pattern rules (below; no model). The four tags are independent: a question can follow
all of them or none. The optional issue text is used by the LLM backend only.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict

from tasks.roles.base import QuestionInput, RoleSpec
from tasks.roles.registry import ROLES

STRATEGIES = ("evidence_based", "specific", "scoped", "actionable")
"""The four strategy tags, in the paper's order."""



class TaggerOutput(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    evidence_based: bool
    specific: bool
    scoped: bool
    actionable: bool


def _any(patterns: list[str]) -> re.Pattern:
    return re.compile("|".join(f"(?:{p})" for p in patterns), re.IGNORECASE)


EVIDENCE = _any([
    r"\b(full|complete|exact|entire|whole) (error|traceback|stack ?trace|output|log|message|command)",
    r"\b(traceback|stack ?trace|backtrace|core dump)s?\b",
    r"\berror (message|output|text|string|log)s?\b",
    r"\b(log|logs|log file|console output|terminal output|screenshot)\b",
    r"\b(minimal|small|short|self-contained|runnable)\b.{0,30}\b(example|snippet|script|reproducer|test case|program)",
    r"\b(code snippet|sample code|example code|reproducer|test case)s?\b",
    r"\b(paste|attach|post|copy)\b",
    r"\b(the )?output of\b",
    r"\bwhat (does|do) (it|the \w+|you) (print|output|show|log|raise|return)\b",
    r"\bwhat (exactly )?(do you see|is printed|is shown|gets printed)\b",
    r"\b(pip freeze|pip show|conda list|--version)\b",
])
SPECIFIC = _any([
    r"\bexact(ly)?\b",
    r"\bwhich (version|release|file|function|method|class|module|parameter|argument|option|flag|setting|line|commit|"
    r"backend|operating system|os|python|value|key|column|field|command|browser|dtype|type)s?\b",
    r"\bwhat (version|value|dtype|type|name|path|setting|flag|commit|line|number|python version|operating system|os|"
    r"platform)\b",
    r"\b(version number|name of the|the name of|hash of)\b",
    r"\be\.g\.|\bfor example\b|\bsuch as\b",
    r"\b\d+\.\d+(\.\d+)?\b",
    r"`[^`]+`",
    r"\b[\w-]+\.(py|cfg|toml|ya?ml|json|ini|txt|rst|lock|c|h|js|ts)\b",
])
IDENTIFIER = re.compile(r"\b[a-z]+_[a-z0-9_]+\b|\b[a-z]+[A-Z]\w*\b|\b\w+\(\)|\b[a-z_]+\.[a-z_]+\b")
"""snake_case, camelCase, ``call()`` or ``module.attr`` (case-sensitive, unlike the cue patterns)."""
BROAD = _any([
    r"\b(any|more|additional|further|other|extra) (details?|information|info|context|specifics|thoughts|"
    r"requirements|constraints)\b",
    r"\banything else\b",
    r"\bin general\b|\boverall\b|\bgenerally\b|\bbroad(er|ly)?\b",
    r"\b(everything|all (the )?(details|information|cases|scenarios|steps|aspects))\b",
    r"\b(describe|explain|elaborate|tell me about)\b.{0,20}\b(problem|issue|situation|context|use case|setup|"
    r"workflow|scenario)\b",
    r"\bclarify (the|this) (issue|problem)\b",
])
ACTIONABLE = _any([
    r"\b(run|rerun|execute|try|print|check|look at|open|inspect|grep|paste|attach|post|copy|share|send|upload|"
    r"enable|set|install|upgrade|downgrade|call|import|type)\b",
    r"\b(are you (running|using|on)|do you (use|run|see|get|have installed))\b",
    r"\bwhat (happens|do you see|does it (print|output|show|return|raise)) (when|if)\b",
    r"\b(pip freeze|pip show|conda list|--version|python -c)\b",
    r"\bdoes (it|this|the \w+) (still )?(happen|fail|occur|work|crash|reproduce) (with|on|in|when|if|after|"
    r"without)\b",
])
DESIGN = _any([
    r"\bshould (we|i|the fix|the (new )?(api|implementation|function|method|solution))\b",
    r"\bwould you (prefer|like|rather|want)\b",
    r"\b(what|which) (approach|design|strategy|solution)\b",
    r"\b(opinion|preference|think about|in your view)\b",
    r"\bwhy (do|did|does|would) (you|they|the)\b",
])
_ASK_JOIN = re.compile(r"\?\s*\S|[,;] (and|or) (what|which|how|where|when|why|is|are|does|do|can|could|should)\b|"
                       r"\b(and|or) also\b|\bas well as\b", re.IGNORECASE)
MAX_SCOPED_WORDS = 30
"""A scoped question is one ask of at most this many words."""


def asks(question: str) -> int:
    """How many asks the question holds: joined question marks and coordinated wh-clauses, at least 1."""
    return 1 + len(_ASK_JOIN.findall(question.strip()))


def tag(question: str) -> TaggerOutput:
    """The four tags of one question by the local rules."""
    text = " ".join(question.split())
    words = len(text.split())
    evidence = bool(EVIDENCE.search(text))
    specific = bool(SPECIFIC.search(text) or IDENTIFIER.search(text)) and not BROAD.search(text)
    scoped = asks(text) == 1 and words <= MAX_SCOPED_WORDS and not BROAD.search(text)
    actionable = (bool(ACTIONABLE.search(text)) or evidence) and not DESIGN.search(text)
    return TaggerOutput(evidence_based=evidence, specific=specific, scoped=scoped, actionable=actionable)


def local(inp: QuestionInput) -> TaggerOutput:
    return tag(inp.question)


SPEC = RoleSpec(name="strategy_tagger", input_model=QuestionInput, output_model=TaggerOutput, local=local)
ROLES.add(SPEC.name, SPEC)
