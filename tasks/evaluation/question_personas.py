"""evaluate@swe under simulated-user personas, and the SWE questions-vs-recovery frontier (docs/personas.md).

A CLARITI question list is asked at once and the SWE user answers each question on its own, so a persona is a
rewrite of the answers the user already gave: no further role call, the same question lists (a trained policy's
included), every persona scored on the same cases. Per question, in list order (``persona_answers``), with a draw
seeded by case, persona and question position (``tasks.roles.personas.persona_draw``):

- terse: the answer's first line, its qualifiers, clauses and units dropped (``personas.terse``);
- partial: the answer's first line, first sentence (one fact);
- vague: every number approximated (``personas.vague``);
- mistaken: with ``probability``, the answer stated wrongly (``personas.wrong``: its first number doubled, else its
  rule flipped); a later question of the same list that gets the same first line back is the point asked again, and
  that answer carries the correction;
- uncooperative: with ``probability``, "I don't know." (not answered).

What is scored, against the case's true facts, never the persona's version:

- a hidden category is **recovered** when a question classified into it got a *true* answer (answered and not
  misstated): ``weighted_recovery``, ``hidden_recall`` and ``full_coverage`` as in the main table;
- **facts received**: the category-weighted share of hidden slots whose answer key (``simulator_answer``) the true
  answers cover: at least 80 % of its words of three or more characters, and every number it states. Category
  recovery cannot see a terse, partial or vague answer (it still answers); this column can;
- **corrections** (mistaken personas): the share of cases with a misstated answer whose point the list asks again.

Under an LLM ``swe_user`` the rewrite applies to the served user's answers the same way (a departure from the OR
personas, which add a prompt line there: one user call per question serves every persona).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tasks.evaluation.question_metrics import IssueBootstrap
from tasks.evaluation.question_units import QuestionUnit
from tasks.records import Case
from tasks.roles.personas import CORRECTION, DONT_KNOW, Persona, first_sentence, persona_draw, terse, vague, wrong

BUDGET = 20
"""The largest question budget of the SWE frontier."""
FACT_COVERAGE = 0.8
"""Share of an answer key's words the true answers must contain for the slot to count as received (every number
of the key, too)."""
_WORD = re.compile(r"[a-z0-9_]{3,}")
_NUMBER = re.compile(r"\d+(?:\.\d+)*")


@dataclass(frozen=True)
class PersonaAnswer:
    answer: str
    answered: bool
    true: bool
    """Answered and not misstated: what the scoring counts."""
    corrected: bool = False


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), text.strip())


def persona_answers(unit: QuestionUnit, persona: Persona) -> list[PersonaAnswer]:
    """Each question's answer as ``persona`` gives it (the cooperative user's answer rewritten)."""
    kind = persona.behaviour
    misstated: set[str] = set()
    corrected: set[str] = set()
    out: list[PersonaAnswer] = []
    for turn, q in enumerate(unit.questions):
        if not q.answered:
            out.append(PersonaAnswer(q.answer, False, False))
            continue
        draw = persona_draw(unit.case_id, persona.name, 0, turn)
        point = _first_line(q.answer)
        if kind == "uncooperative" and draw < persona.probability:
            out.append(PersonaAnswer(DONT_KNOW, False, False))
        elif kind == "terse":
            out.append(PersonaAnswer(terse(point), True, True))
        elif kind == "partial":
            out.append(PersonaAnswer(first_sentence(point), True, True))
        elif kind == "vague":
            out.append(PersonaAnswer(vague(q.answer), True, True))
        elif kind == "mistaken" and point in misstated and point not in corrected:
            corrected.add(point)
            out.append(PersonaAnswer(CORRECTION + q.answer, True, True, corrected=True))
        elif kind == "mistaken" and point not in misstated and draw < persona.probability:
            misstated.add(point)
            out.append(PersonaAnswer(wrong(q.answer), True, False))
        else:
            out.append(PersonaAnswer(q.answer, True, True))
    return out


def recovered(case: Case, unit: QuestionUnit, answers: Sequence[PersonaAnswer], budget: int | None = None) -> list[str]:
    """Hidden categories with a question classified into them and truly answered (within the first ``budget``)."""
    hidden = [c.key for c in case.hidden_categories]
    pairs = list(zip(unit.questions, answers))[:budget]
    hit = {q.label for q, a in pairs if a.true and q.label in hidden}
    return [h for h in hidden if h in hit]


def facts_received(case: Case, answers: Sequence[PersonaAnswer], weights: Mapping[str, float]) -> float | None:
    """Category-weighted share of hidden slots whose answer key the true answers cover; None without weight."""
    true_text = "\n".join(a.answer.lower() for a in answers if a.true)
    told, numbers = set(_WORD.findall(true_text)), set(_NUMBER.findall(true_text))
    total = got = 0.0
    for slot in case.hidden_slots:
        weight = weights.get(slot.category.key, 0.0) if slot.category else 0.0
        key = slot.simulator_answer.lower()
        words = set(_WORD.findall(key))
        total += weight
        if words and len(words & told) / len(words) >= FACT_COVERAGE and set(_NUMBER.findall(key)) <= numbers:
            got += weight
    return got / total if total > 0 else None


@dataclass(frozen=True)
class PersonaOutcome:
    case_id: str
    source_id: str
    recall: float
    full_coverage: bool
    weighted_recovery: float | None
    facts: float | None
    true_answers: int
    questions: int
    misstated: bool
    corrected: bool


def scored(case: Case, unit: QuestionUnit, answers: Sequence[PersonaAnswer],
           weights: Mapping[str, float]) -> PersonaOutcome:
    """``answers`` (one per question of ``unit``) scored against the case's true facts."""
    from tasks.evaluation.question_metrics import outcome

    base = outcome(case, unit, weights, recovered=recovered(case, unit, answers))
    return PersonaOutcome(
        case_id=case.case_id, source_id=case.metadata.source_id, recall=base.recall,
        full_coverage=base.full_coverage, weighted_recovery=base.weighted_recovery,
        facts=facts_received(case, answers, weights), true_answers=sum(a.true for a in answers),
        questions=len(answers), misstated=any(a.answered and not a.true for a in answers),
        corrected=any(a.corrected for a in answers))


def persona_outcome(case: Case, unit: QuestionUnit, persona: Persona, weights: Mapping[str, float]) -> PersonaOutcome:
    return scored(case, unit, persona_answers(unit, persona), weights)


def persona_row(row: Mapping[str, Any], case: Case, unit: QuestionUnit, persona: Persona,
                weights: Mapping[str, float]) -> dict[str, Any]:
    """A ``rows.jsonl`` row as ``persona`` answered it: its answers rewritten, its scores recomputed against the true
    facts, ``persona`` set (the Inspect log's sample metadata); no predicted resolution (the main table's only)."""
    answers = persona_answers(unit, persona)
    got = scored(case, unit, answers, weights)
    questions = [{**q, "answer": a.answer, "answered": a.answered, "true_answer": a.true}
                 for q, a in zip(row.get("questions") or [], answers)]
    return {**row, "key": f"{row['key']}::{persona.name}", "persona": persona.name, "questions": questions,
            "recovered": recovered(case, unit, answers), "recall": got.recall, "full_coverage": got.full_coverage,
            "weighted_recovery": got.weighted_recovery, "facts_received": got.facts, "predicted_resolution": None}


COLUMNS = ("weighted_recovery", "hidden_recall", "full_coverage_rate", "true_answer_rate", "facts_received")


def robustness_table(cases: Mapping[str, Case], units_by_method: Mapping[str, Sequence[QuestionUnit]],
                     personas: Sequence[Persona], weights: Mapping[str, float], *, n_resamples: int,
                     seed: int) -> dict[str, Any]:
    """``{"personas": [...], "rows": {method: {persona: {column: value, "CI95": {...}, "drop": x, "drop_CI95": [..],
    "cases": n, "correction_rate": r (mistaken only)}}}}``: intervals by the issue bootstrap of the main table; the
    drop is cooperative weighted recovery minus the persona's, paired over the same cases."""
    rows: dict[str, dict[str, Any]] = {}
    for method, units in units_by_method.items():
        evaluated = [u for u in units if u.skipped is None]
        if not evaluated:
            continue
        boot = IssueBootstrap([u.source_id for u in evaluated], n_resamples=n_resamples, seed=seed)
        outcomes = {p.name: [persona_outcome(cases[u.case_id], u, p, weights) for u in evaluated] for p in personas}
        base = outcomes[personas[0].name]
        cells: dict[str, Any] = {}
        for p in personas:
            got = outcomes[p.name]
            values = {
                "weighted_recovery": boot.mean([o.weighted_recovery for o in got]),
                "hidden_recall": boot.mean([o.recall for o in got]),
                "full_coverage_rate": boot.mean([float(o.full_coverage) for o in got]),
                "true_answer_rate": boot.ratio([o.true_answers for o in got], [o.questions for o in got]),
                "facts_received": boot.mean([o.facts for o in got]),
            }
            cell: dict[str, Any] = {k: v[0] for k, v in values.items()}
            cell["CI95"] = {k: v[1] for k, v in values.items()}
            cell["cases"] = len(got)
            if p.name != personas[0].name:
                diffs = [None if b.weighted_recovery is None else b.weighted_recovery - o.weighted_recovery
                         for b, o in zip(base, got)]
                cell["drop"], cell["drop_CI95"] = boot.mean(diffs)
            if p.behaviour == "mistaken":
                wrong_cases = [o for o in got if o.misstated or o.corrected]
                cell["correction_rate"] = (sum(o.corrected for o in wrong_cases) / len(wrong_cases)
                                           if wrong_cases else None)
            cells[p.name] = cell
        rows[method] = cells
    return {"personas": [p.name for p in personas], "rows": rows}


def robustness_markdown(table: Mapping[str, Any], *, source: str) -> str:
    from tasks.evaluation.robustness import fmt_ci

    lines = ["## Robustness to simulated-user personas", "",
             f"Source: {source}. Each persona rewrites the answers the user gave to the same question lists "
             "(docs/personas.md); a category counts as recovered only through a true answer (not refused, not "
             "misstated). Terse, partial and vague answers still answer, so category recovery cannot see them: "
             "facts received (the category-weighted share of hidden answer keys the true answers cover) can. "
             "Intervals: 95% bootstrap over issues; drop: cooperative weighted recovery minus the persona's, paired "
             "over cases. Corrections: share of cases with a misstated answer whose point the list asks again.", "",
             "| Method | Persona | Weighted recovery | Hidden recall | Full coverage | True answers | Facts received "
             "| Drop | Corrections |",
             "|---|---|---|---|---|---|---|---|---|"]
    for method, cells in table["rows"].items():
        for persona in table["personas"]:
            cell = cells.get(persona)
            if cell is None:
                continue
            ci = cell["CI95"]
            drop = fmt_ci(cell.get("drop"), cell.get("drop_CI95"))
            lines.append(f"| {method} | {persona} | " + " | ".join(fmt_ci(cell[c], ci.get(c)) for c in COLUMNS)
                         + f" | {drop} | {fmt_ci(cell.get('correction_rate'))} |")
    return "\n".join(lines) + "\n"


# ---- the frontier ---------------------------------------------------------------------------------------------


def frontier_table(cases: Mapping[str, Case], units_by_method: Mapping[str, Sequence[QuestionUnit]], *,
                   references: set[str], budget: int = BUDGET, n_resamples: int, seed: int) -> dict[str, Any]:
    """Hidden-category recall when every list is cut after its first q questions (q = 0..``budget``), per method:
    ``{"questions": grid, "rows": {method: {"recall", "low", "high", "area", "area_ci", "questions", "cases",
    "reference"}}}`` (cooperative user; intervals by the issue bootstrap)."""
    from tasks.roles.personas import COOPERATIVE

    grid = list(range(budget + 1))
    rows: dict[str, Any] = {}
    for method, units in units_by_method.items():
        evaluated = [u for u in units if u.skipped is None]
        if not evaluated:
            continue
        boot = IssueBootstrap([u.source_id for u in evaluated], n_resamples=n_resamples, seed=seed)
        curves = []
        for u in evaluated:
            case, answers = cases[u.case_id], persona_answers(u, COOPERATIVE)
            n_hidden = len(case.hidden_categories)
            curves.append([len(recovered(case, u, answers, q)) / n_hidden for q in grid])
        points = [boot.mean([c[q] for c in curves]) for q in grid]
        area = boot.mean([float(np.mean(c)) for c in curves])
        rows[method] = {"recall": [round(p[0], 6) for p in points],
                        "low": [round(p[1][0], 6) for p in points], "high": [round(p[1][1], 6) for p in points],
                        "area": round(area[0], 6), "area_ci": [round(v, 6) for v in area[1]],
                        "questions": round(float(np.mean([len(u.questions) for u in evaluated])), 6),
                        "cases": len(evaluated), "reference": method in references}
    return {"questions": grid, "y": "hidden-category recall", "rows": rows}


SWE_INTRO = ("Hidden-category recall when every question list is cut after its first q questions (q = 0..{last}, "
             "cooperative user); area = mean recall over that grid (95% bootstrap over issues); reference rows (†) "
             "are not ranked.")


def frontier_markdown(table: Mapping[str, Any]) -> str:
    from tasks.evaluation.frontier import frontier_markdown as markdown

    references = {name for name, row in table["rows"].items() if row["reference"]}
    return markdown(dict(table), references=references, y="recall", name="Recall", intro=SWE_INTRO, head="Method")
