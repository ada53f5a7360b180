"""SFT data from the SWE cases: prompt = the incomplete issue, target = numbered questions for what it hides.

Questions are written by the ``question_writer`` role, one per hidden category, most valuable first (category
weights from the ``shap`` stage, else CLARITI's published weights). Each row keeps the split construct@swe gave its
case (by source issue id, ``tasks/splits.py``), so no issue contributes to both train and held-out rows.

With published targets (:func:`choose_published`), a case whose source issue has a published question list
(the CLARITI workbook's GPT-5 questions) gets that list instead, cut to the questions the ``question_classifier``
role puts in one of the case's hidden categories (the list was asked about another variant of the issue) and kept
only when its staged reward reaches a minimum; every other case keeps the writer's target.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from tasks import store
from tasks.errors import InputError
from tasks.records import Case


class SftRow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    case_id: str
    instance_id: str
    split: str = Field(pattern="^(train|heldout)$")
    prompt: list[dict]
    completion: list[dict]
    messages: list[dict]
    incomplete_issue: str = Field(min_length=1)
    full_issue: str = Field(min_length=1)
    hints: str = ""
    hidden_categories: list[str] = Field(min_length=1)
    n_questions: int = Field(ge=1)
    target_source: Literal["writer", "published"] = "writer"
    target_categories: list[str] = []
    """The hidden category each target question asks for, in order (writer: the hidden categories themselves;
    published: the classifier's labels). Empty in rows written before this field existed."""
    published_reward: float | None = None
    """Staged reward of the published list considered for this case (kept or not); None when there was none."""


class PublishedChoice(BaseModel):
    """What became of one case's published question list."""

    model_config = ConfigDict(extra="forbid")

    case_id: str
    questions: list[str]
    """The published questions in the case's hidden categories, most valuable category first (at most the cap)."""
    categories: list[str]
    reward: float | None
    """Staged reward of ``questions`` as a numbered list; None when no question fell in a hidden category."""
    kept: bool


def load_weights(path: Path) -> tuple[dict[str, float], str]:
    """The shap stage's weights when the file exists, else CLARITI's published ones; plus where they came from."""
    from tasks.rewards.weights import CLARITI_WEIGHTS
    from tasks.rewards.weights import load_weights as load_relevance

    if not path.is_file():
        return dict(CLARITI_WEIGHTS), "CLARITI published weights"
    weights = load_relevance(path).weights
    source = json.loads(store.read_text_utf8(path)).get("source", "unknown source")
    return weights, f"shap stage ({source})"


def check_splits(cases: list[Case], path: Path | str) -> None:
    """Every case must carry the split construct@swe gave it (cases written before the split existed do not)."""
    for i, case in enumerate(cases, start=1):
        if case.metadata.split is None:
            raise InputError(path, "case has no split (rerun construct@swe)", record=f"{i} ({case.case_id})",
                             field="metadata.split")


def load_published(path: Path, column: str) -> dict[str, str]:
    """Instance id -> its published numbered question list, from a workbook with ``instance_id`` and ``column``."""
    import pandas as pd

    if not path.is_file():
        raise InputError(path, "file not found (set sft_data.published.workbook)")
    try:
        frame = pd.read_excel(path, dtype=str, usecols=lambda name: name in ("instance_id", column))
    except Exception as err:  # noqa: BLE001 (openpyxl raises many types for a damaged workbook)
        raise InputError(path, f"cannot read workbook: {err}") from None
    for name in ("instance_id", column):
        if name not in frame.columns:
            raise InputError(path, "missing column", field=name)
    return {
        iid.strip(): text
        for iid, text in zip(frame["instance_id"], frame[column])
        if isinstance(iid, str) and iid.strip() and isinstance(text, str) and text.strip()
    }


def choose_published(cases: list[Case], published: dict[str, str], weights: dict[str, float], staged, *,
                     min_reward: float, max_questions: int = 6) -> dict[str, PublishedChoice]:
    """For each case whose source issue has a published list: that list's questions in the case's hidden categories
    (labels from ``staged``'s question classifier, against the incomplete issue), most valuable category first,
    scored as one numbered list by ``staged`` (a ``StagedReward``) against the case's incomplete and full issue;
    kept when the reward is at least ``min_reward``. All lists are scored in one batch with no siblings, so no
    list's diversity depends on another's."""
    from tasks.rewards.parse import parse_questions
    from tasks.roles.question_writer import numbered

    todo = [(c, parse_questions(published[c.metadata.source_id])) for c in cases if c.metadata.source_id in published]
    flat = [(k, q) for k, (_, questions) in enumerate(todo) for q in questions]
    labels = staged.judges.classify([q for _, q in flat], [todo[k][0].brief.content for k, _ in flat]) if flat else []
    picked: list[list[tuple[str, str]]] = [[] for _ in todo]
    for (k, question), label in zip(flat, labels):
        if label in {cat.key for cat in todo[k][0].hidden_categories}:
            picked[k].append((question, label))
    for pairs in picked:
        pairs.sort(key=lambda pair: (-weights[pair[1]], pair[1]))  # stable: published order within a category
        del pairs[max_questions:]
    scored = [k for k, pairs in enumerate(picked) if pairs]
    samples = [{"completion": numbered([q for q, _ in picked[k]]), "incomplete_issue": todo[k][0].brief.content,
                "full_issue": todo[k][0].full_text, "hints": todo[k][0].hints} for k in scored]
    rewards = dict(zip(scored, (b.total for b in staged.score(samples)))) if samples else {}
    choices = {}
    for k, (case, _) in enumerate(todo):
        reward = rewards.get(k)
        choices[case.case_id] = PublishedChoice(
            case_id=case.case_id, questions=[q for q, _ in picked[k]], categories=[lab for _, lab in picked[k]],
            reward=reward, kept=reward is not None and reward >= min_reward,
        )
    return choices


def build_rows(cases: list[Case], weights: dict[str, float], role_cfg, *, client=None,
               published: dict[str, PublishedChoice] | None = None) -> tuple[list[SftRow], int]:
    """SFT rows for every case, each in its case's split (plus how many cases the question writer failed on).
    ``published`` (from :func:`choose_published`) gives the cases whose kept published list is the target; the
    writer does the rest."""
    from tasks.llm.records import RoleFailure
    from tasks.roles.base import run_role
    from tasks.roles.question_writer import SPEC, QuestionWriterInput, numbered
    from tasks.training.prompts import prompt_messages

    check_splits(cases, "cases")
    published = published or {}
    ordered = [sorted(c.hidden_categories, key=lambda cat: (-weights[cat.key], cat.key)) for c in cases]
    kept = {cid: choice for cid, choice in published.items() if choice.kept}
    writing = [k for k, c in enumerate(cases) if c.case_id not in kept]
    inputs = [
        QuestionWriterInput(incomplete_issue=cases[k].brief.content, hidden_categories=ordered[k],
                            repo=str(cases[k].extra.get("repo", "")))
        for k in writing
    ]
    outputs = dict(zip(writing, run_role(SPEC, inputs, role_cfg, client=client))) if inputs else {}
    rows, failed = [], 0
    for k, (case, cats) in enumerate(zip(cases, ordered)):
        choice = published.get(case.case_id)
        if choice is not None and choice.kept:
            questions, source, asked = choice.questions, "published", choice.categories
        elif isinstance(outputs[k], RoleFailure):
            failed += 1
            continue
        else:
            questions, source, asked = outputs[k].questions, "writer", [c.key for c in cats]
        prompt = prompt_messages(case.brief.content)
        completion = [{"role": "assistant", "content": numbered(questions)}]
        rows.append(SftRow(
            case_id=case.case_id, instance_id=case.metadata.source_id,
            split=case.metadata.split,
            prompt=prompt, completion=completion, messages=prompt + completion,
            incomplete_issue=case.brief.content, full_issue=case.full_text, hints=case.hints,
            hidden_categories=[c.key for c in cats], n_questions=len(questions), target_source=source,
            target_categories=asked, published_reward=None if choice is None else choice.reward,
        ))
    return rows, failed


def published_metrics(choices: dict[str, PublishedChoice], n_cases: int) -> dict:
    """Counts of kept / rejected published lists and the mean staged reward of each group."""
    kept = [c.reward for c in choices.values() if c.kept]
    rejected = [c.reward for c in choices.values() if not c.kept and c.reward is not None]

    def mean(values: list) -> float | None:
        return round(sum(values) / len(values), 4) if values else None

    return {
        "cases_with_published": len(choices),
        "cases_without_published": n_cases - len(choices),
        "kept": len(kept),
        "rejected_reward": len(rejected),
        "rejected_no_hidden_question": sum(1 for c in choices.values() if c.reward is None),
        "mean_reward_kept": mean(kept),
        "mean_reward_rejected": mean(rejected),
    }


def validation_frame(rows: list[SftRow]):
    import pandas as pd

    train_ids = {r.instance_id for r in rows if r.split == "train"}
    return pd.DataFrame([
        {
            "case_id": r.case_id,
            "split": r.split,
            "prompt_chars": len(r.incomplete_issue),
            "target_chars": len(r.completion[0]["content"]),
            "n_questions": r.n_questions,
            # each question asks for a hidden category; the writer's ask for each one once, in order
            "questions_match_hidden": len(r.target_categories) == r.n_questions
            and set(r.target_categories) <= set(r.hidden_categories)
            and (r.target_source == "published" or r.target_categories == r.hidden_categories),
            "split_by_instance": r.split == "train" or r.instance_id not in train_ids,
        }
        for r in rows
    ])
