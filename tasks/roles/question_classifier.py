"""Question classifier: which CLARITI information category a clarification question asks for (or ``irrelevant``).

Local backend: keyword cues plus MiniLM similarity to hand-written prototype questions. The optional issue text
only feeds one weak signal (a question semantically unrelated to the issue leans towards ``irrelevant``).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from tasks.categories import Category
from tasks.llm.embeddings import encode, encode_prototypes
from tasks.roles.base import QuestionInput, RoleSpec
from tasks.roles.registry import ROLES
from tasks.text import cue_scores as text_cue_scores

IRRELEVANT = "irrelevant"
Label = Category | Literal["irrelevant"]
LABELS: tuple[str, ...] = tuple(c.value for c in Category) + (IRRELEVANT,)



class ClassifierOutput(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    label: Label
    confidence: float = Field(ge=0.0, le=1.0)


# ---- cues --------------------------------------------------------------------------------------------------------

_E, _R, _X, _I, _F, _V = (Category.ERROR, Category.REPRODUCTION, Category.EXPECTED, Category.IMPLEMENTATION,
                          Category.EXTERNAL_REFS, Category.VERSION_ENV)

CUES: dict[str, list[tuple[str, float]]] = {
    _E.value: [
        (r"\berror (message|output|text|string)s?\b", 1.0),
        (r"\b(full |complete )?(traceback|stack ?trace|backtrace)s?\b", 1.0),
        (r"\bwhat (exactly |actually )?(happens|goes wrong|went wrong|is wrong|breaks|fails)\b", 0.9),
        (r"\b(exception|crash(es|ed)?|segfault|warning message)s?\b", 0.6),
        (r"\b(actual|observed|current|wrong|incorrect|unexpected) (output|result|behaviou?r|value)s?\b", 0.7),
        (r"\b(raised?|throws?|thrown)\b", 0.5),
        (r"\berrors?\b", 0.4),
        (r"\bhow do (you|we) know\b", 0.5),
        (r"\bsymptoms?\b", 0.6),
        (r"\b(bug|problem|failure|regression|misbehaviou?r|inconsisten(t|cy)|misleading|broken|incorrect(ly)?|wrong(ly)?)\b",
         0.35),
    ],
    _R.value: [
        (r"\b(steps|how) to reproduce\b", 1.0),
        (r"\breproduc(e|es|ed|ing|ible|tion)\b", 0.8),
        (r"\bminimal\b.{0,25}\b(example|snippet|case|script|input|program)s?\b", 1.0),
        (r"\b(code|snippet|script|command|commands)\b.{0,30}\b(trigger|reproduce|run|show)", 0.8),
        (r"\b(code snippet|sample code|example code|test case|sample (data|input)|cli command)s?\b", 0.7),
        (r"\bsteps\b", 0.6),
        (r"\bunder what (conditions|circumstances)\b", 0.9),
        (r"\b(trigger|triggers|triggered)\b", 0.5),
        (r"\b(input|inputs|data) (that|which) (cause|causes|trigger|triggers)\b", 0.8),
    ],
    _X.value: [
        (r"\bexpect(ed|ing|ation|ations)?\b", 1.0),
        (r"\b(desired|intended|correct|right|ideal) (output|result|behaviou?r|value|return|outcome|state|format)s?\b",
         1.0),
        (r"\bshould (it|this|the (function|method|call|output|result)) (return|produce|output|behave|do|be)\b", 0.8),
        (r"\bwhat should (happen|be (returned|displayed|printed|shown))\b", 1.0),
        (r"\binstead\b", 0.5),
        (r"\bwhat would you like\b", 0.6),
        (r"\bdesired\b", 0.6),
    ],
    _I.value: [
        (r"\bwhich (file|files|function|functions|module|modules|class|classes|method|methods|component)\b", 1.0),
        (r"\bwhere in the (code|codebase|source|repo|repository)\b", 1.0),
        (r"\b(approach|strategy|design|refactor(ing)?)\b", 0.7),
        (r"\bshould (the|we|this) (fix|patch|change|solution|implementation)\b", 1.0),
        (r"\bshould we (add|change|keep|introduce|modify|remove|deprecate|raise|use|implement|support)\b", 0.8),
        (r"\b(implement(ed|ing|ation)?|fix(ed|es|ing)?|patch(es|ed)?|solution)\b", 0.5),
        (r"\b(backward(s)?[- ]compat(ible|ibility)?|deprecat(e|ed|ion))\b", 0.6),
        (r"\b(constraint|constraints|api (surface|change))\b", 0.6),
        (r"\bcode (location|path)s?\b", 0.8),
    ],
    _F.value: [
        (r"\b(link|links|url|urls|hyperlink)\b", 1.0),
        (r"\brelated (issue|issues|pr|prs|pull requests?|tickets?|discussions?|bug reports?)\b", 1.0),
        (r"\b(pull request|pr|prs|ticket|tickets|commit|commits|changeset|upstream)\b", 0.7),
        (r"\b(documentation|docs|docstring|spec|specification|rfc|pep|mailing list|forum)\b", 0.6),
        (r"\b(reference|references|referenced|cite|cited)\b", 0.3),
        (r"#\d+", 0.8),
    ],
    _V.value: [
        (r"\bversions?\b", 1.0),
        (r"\b(operating system|os|platform|windows|linux|macos|mac os|ubuntu|debian)\b", 0.9),
        (r"\bpython (version|3|2|interpreter)\b", 1.0),
        (r"\benvironment\b", 0.8),
        (r"\b(installed|install|pip|conda|virtualenv|dependency|dependencies|requirements\.txt)\b", 0.6),
        (r"\b(config|configuration|settings?|flags?|backend|gpu|cpu|browser|locale)\b", 0.4),
        (r"\brelease\b", 0.4),
    ],
    IRRELEVANT: [
        (r"\bfavou?rite\b", 1.0),
        (r"\b(weather|lunch|dinner|weekend|holiday|vacation|hobby|hobbies|pet|pets|music|movie)\b", 1.0),
        (r"^\s*(hi|hello|hey|thanks|thank you)\b", 0.8),
        (r"^\W*(hi|hello|hey)?\W*how are you( doing)?( today)?\W*$", 1.0),
        (r"\byour (name|age|job|company|salary|team|mood)\b", 0.8),
        (r"^\s*(can|could) you (provide|give|share) (more|any|additional|some) "
         r"(details|information|info|context)\s*\??\s*$", 1.0),
        (r"^\s*(can|could) you (clarify|explain|elaborate)( (the|this) (issue|problem))?( more| further)?\s*\??\s*$",
         1.0),
        (r"^\s*(is there )?anything else\b", 0.8),
    ],
}

_COMPILED = {label: [(re.compile(p, re.IGNORECASE), w) for p, w in cues] for label, cues in CUES.items()}

# ---- prototypes (hand-written) -------------------------------------------------------------------------------------

PROTOTYPES: dict[str, list[str]] = {
    _E.value: [
        "What is the exact error message you get?",
        "Can you paste the full traceback?",
        "What goes wrong when you run it, and how can you tell the result is incorrect?",
        "Which exception is raised and what does its message say?",
        "What output do you currently see that you consider wrong?",
        "Does the program crash, hang, or silently return a bad value?",
    ],
    _R.value: [
        "Could you share a minimal code example that reproduces the problem?",
        "What are the steps to reproduce this bug?",
        "Which command do you run to trigger the failure?",
        "What input data causes the problem to appear?",
        "Under which conditions does the failure occur?",
        "Can you give a small script that shows the behaviour?",
    ],
    _X.value: [
        "What did you expect to happen instead?",
        "What would the correct output look like?",
        "What value should the function return in this case?",
        "What is the desired behaviour after the fix?",
        "How should the result be formatted when it works properly?",
        "What state should the object be in afterwards?",
    ],
    _I.value: [
        "Which file or function should be changed to fix this?",
        "Where in the codebase does this behaviour originate?",
        "What approach should the fix take?",
        "Should we add a new parameter or change the existing default?",
        "Are there constraints on the solution, such as keeping backward compatibility?",
        "Should the fix raise an exception or emit a deprecation warning?",
    ],
    _F.value: [
        "Can you post the link to the pull request?",
        "Which page of the official documentation covers this option?",
        "What is the hash of the commit that introduced the change?",
        "Is there an upstream ticket or mailing-list thread about it?",
        "Do you have a URL for the specification you mentioned?",
        "Which other ticket number is this a duplicate of?",
    ],
    _V.value: [
        "Which version of the library are you using?",
        "What operating system and Python version do you run?",
        "Can you describe your environment and installed dependencies?",
        "Which database backend or configuration settings are enabled?",
        "Does this happen on the latest release or only an older version?",
        "What platform and hardware are you running on?",
    ],
    IRRELEVANT: [
        "What is your favourite colour?",
        "How is the weather where you are?",
        "Can you provide more details?",
        "Could you clarify the issue?",
        "Hi, how are you doing today?",
        "What did you have for lunch?",
        "Is there anything else you want to tell me?",
        "What is the capital of France?",
    ],
}

CUE_WEIGHT = 0.22
"""Keyword evidence (capped at 1 per label) is scaled by this before it is added to the prototype similarity."""
TOP_K = 2
"""Similarity to a label = mean of its top-k prototype cosines."""
IRRELEVANT_MARGIN = 0.05
"""``irrelevant`` must beat the best category by this much (a real question without cues stays a category)."""
OFF_ISSUE_COSINE = 0.12
OFF_ISSUE_BONUS = 0.08
"""A question whose cosine with the given issue text is below OFF_ISSUE_COSINE gets this bonus towards irrelevant."""
SOFTMAX_TEMPERATURE = 0.1


@dataclass(frozen=True)
class Scored:
    label: str
    confidence: float
    scores: dict[str, float]


def cue_scores(question: str) -> dict[str, float]:
    """Per label, the summed weight of the keyword cues found in ``question`` (capped at 1)."""
    return {label: min(total, 1.0) for label, total in text_cue_scores(question, _COMPILED, _COMPILED).items()}


@lru_cache(maxsize=1)
def _prototype_matrix() -> tuple[tuple[str, ...], np.ndarray]:
    return encode_prototypes(PROTOTYPES, LABELS)


def prototype_scores(qvecs: np.ndarray) -> list[dict[str, float]]:
    owners, protos = _prototype_matrix()
    sims = qvecs @ protos.T
    owner_arr = np.array(owners)
    out: list[dict[str, float]] = []
    for row in sims:
        per: dict[str, float] = {}
        for label in LABELS:
            vals = np.sort(row[owner_arr == label])[::-1][:TOP_K]
            per[label] = float(vals.mean())
        out.append(per)
    return out


def decide(question: str, proto: dict[str, float], issue_cosine: float | None) -> Scored:
    """Combine prototype similarity, keyword cues and the off-issue signal into one label and a confidence."""
    cues = cue_scores(question)
    scores = {label: proto[label] + CUE_WEIGHT * cues[label] for label in LABELS}
    if issue_cosine is not None and issue_cosine < OFF_ISSUE_COSINE:
        scores[IRRELEVANT] += OFF_ISSUE_BONUS
    best_cat = max((c.value for c in Category), key=lambda lab: (scores[lab], -LABELS.index(lab)))
    label = IRRELEVANT if scores[IRRELEVANT] > scores[best_cat] + IRRELEVANT_MARGIN else best_cat
    values = np.array([scores[lab] for lab in LABELS], dtype=np.float64)
    if label == best_cat:
        values[LABELS.index(IRRELEVANT)] -= IRRELEVANT_MARGIN
    weights = np.exp((values - values.max()) / SOFTMAX_TEMPERATURE)
    confidence = float(weights[LABELS.index(label)] / weights.sum())
    return Scored(label=label, confidence=round(confidence, 4), scores={k: round(v, 4) for k, v in scores.items()})


def classify_with_vectors(
    questions: Sequence[str], qvecs: np.ndarray, issue_cosines: Sequence[float | None] | None = None
) -> list[Scored]:
    """Classify questions whose embeddings are already computed (used by the simulated user and the judges)."""
    protos = prototype_scores(qvecs)
    cosines = list(issue_cosines) if issue_cosines is not None else [None] * len(questions)
    return [decide(q, p, c) for q, p, c in zip(questions, protos, cosines)]


def _to_output(scored: Scored) -> ClassifierOutput:
    label: Label = IRRELEVANT if scored.label == IRRELEVANT else Category(scored.label)
    return ClassifierOutput(label=label, confidence=scored.confidence)


def local_batch(inputs: Sequence[QuestionInput]) -> list[ClassifierOutput]:
    """One embedding call for every question and every distinct issue text."""
    if not inputs:
        return []
    issues = list(dict.fromkeys(i.issue_text for i in inputs if i.issue_text.strip()))
    vecs = encode([i.question for i in inputs] + issues)
    qvecs, ivecs = vecs[: len(inputs)], vecs[len(inputs):]
    issue_index = {text: k for k, text in enumerate(issues)}
    cosines = [
        float(qv @ ivecs[issue_index[i.issue_text]]) if i.issue_text.strip() else None for qv, i in zip(qvecs, inputs)
    ]
    return [_to_output(s) for s in classify_with_vectors([i.question for i in inputs], qvecs, cosines)]


def local(inp: QuestionInput) -> ClassifierOutput:
    return local_batch([inp])[0]


_ITEM = re.compile(r"^\s*(?:[*_]{1,2})?(\d{1,3})[.)]\s*(.*)$")
_THINK = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
MIN_QUESTION_CHARS = 10
"""CLARITI's parser keeps numbered items longer than 10 characters (else non-empty lines longer than 10)."""


def split_questions(text: str | None) -> list[str]:
    """A numbered question list -> its questions; continuation lines join the item above them."""
    if not isinstance(text, str):
        return []
    text = _THINK.sub("", text)
    items: list[str] = []
    current: str | None = None
    for line in text.splitlines():
        match = _ITEM.match(line)
        if match:
            if current is not None:
                items.append(current)
            current = match.group(2).strip()
        elif current is not None and line.strip():
            current = f"{current} {line.strip()}"
    if current is not None:
        items.append(current)
    questions = [q for q in items if len(q) > MIN_QUESTION_CHARS]
    if not questions:
        questions = [line.strip() for line in text.splitlines() if len(line.strip()) > MIN_QUESTION_CHARS]
    return questions


def classify(questions: Sequence[str], issue_text: str = "") -> list[ClassifierOutput]:
    """Convenience: classify many questions about one issue."""
    return local_batch([QuestionInput(question=q, issue_text=issue_text) for q in questions])


SPEC = RoleSpec(name="question_classifier", input_model=QuestionInput, output_model=ClassifierOutput, local=local,
                local_batch=local_batch)
ROLES.add(SPEC.name, SPEC)
