"""The question table of ``question_analysis``: one row per clarification question of every question set the
pipeline has.

- ``evaluate@swe``: every method and policy of ``data/eval/swe/rows.jsonl`` (held-out cases), with the labels the
  evaluation already gave each question (``answerable`` from the answerability judge, ``category`` from the
  question classifier);
- ``clariti_workbook`` (when the workbook is there): its published CLARITI / GPT-5 / GPT-5-nano lists for rewrite 3,
  judged here with the same two roles (full issue + hints; the rewrite as the classifier's context).

Every question also gets its position in its list, its length, the four strategy tags (``strategy_tagger`` role) and
the syntactic features (``tasks.analysis.features``). Nothing from the workbook is written into the repository.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tasks.analysis.features import QuestionFeatures, features
from tasks.errors import InputError

EVAL_SOURCE = "evaluate@swe"
ABSTAIN_SUFFIX = "+abstain"
"""evaluate@swe's abstaining variants (``tasks.evaluation.abstain.SUFFIX``): a subset of their method's
lists."""
WORKBOOK_SOURCE = "clariti_workbook"
Source = Literal["evaluate@swe", "clariti_workbook"]


class EvalQuestion(BaseModel):
    """The fields of one ``rows.jsonl`` question the analysis reads
    (``tasks.evaluation.question_units.QuestionRecord``)."""

    model_config = ConfigDict(extra="ignore")

    question: str
    label: str | None = None
    answerable: bool | None = None


class EvalRow(BaseModel):
    """The fields of one ``rows.jsonl`` row (one method x case) the analysis reads."""

    model_config = ConfigDict(extra="ignore")

    method: str
    case_id: str
    source_id: str
    skipped: str | None = None
    questions: list[EvalQuestion] = []


class _Placed(BaseModel):
    """Where a question comes from and its position: the fields ``ListedQuestion`` and ``QuestionRow`` share."""

    source: Source
    question_set: str
    case_id: str
    source_id: str
    position: int = Field(ge=1)
    list_length: int = Field(ge=1)


class ListedQuestion(_Placed):
    """One question before tagging: where it comes from, its position and its judged labels."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    question: str = Field(min_length=1)
    answerable: bool | None
    category: str | None
    issue_text: str = ""
    """The (incomplete) issue the question was asked about: the strategy tagger's context; not written out."""


class _Keyed(BaseModel):
    key: str


class _Judged(BaseModel):
    """The judged labels and the strategy tags (``tasks.roles.strategy_tagger.STRATEGIES``) of one row."""

    question: str
    answerable: bool | None
    category: str | None
    evidence_based: bool | None
    specific: bool | None
    scoped: bool | None
    actionable: bool | None


class QuestionRow(QuestionFeatures, _Judged, _Placed, _Keyed):
    """One row of ``questions.csv``: its columns in this order: ``key``, the place (``_Placed``), the labels and tags
    (``_Judged``), then the syntactic features (``QuestionFeatures``); pydantic orders fields base-last-first."""

    model_config = ConfigDict(extra="forbid", frozen=False)


def eval_questions(path: Path) -> list[ListedQuestion]:
    """Every question of every evaluated (not skipped) row of ``rows.jsonl``; InputError naming the line."""
    path = Path(path)
    if not path.is_file():
        raise InputError(path, "file not found (run `dvc repro evaluate@swe`, or set question_analysis.eval_rows)")
    out: list[ListedQuestion] = []
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                row = EvalRow.model_validate(json.loads(line))
            except (ValueError, ValidationError) as err:
                message = err.errors()[0]["msg"] if isinstance(err, ValidationError) else str(err)
                field = ".".join(str(p) for p in err.errors()[0]["loc"]) if isinstance(err, ValidationError) else None
                raise InputError(path, f"line {number}: {message}", field=field) from None
            if row.skipped or row.method.endswith(ABSTAIN_SUFFIX):  # a variant re-asks its method's questions
                continue
            for position, q in enumerate(row.questions, start=1):
                out.append(ListedQuestion(
                    source=EVAL_SOURCE, question_set=row.method, case_id=row.case_id, source_id=row.source_id,
                    position=position, list_length=len(row.questions), question=q.question, answerable=q.answerable,
                    category=q.label))
    return out


def workbook_questions(path: Path, columns: dict[str, str], roles, *, limit: int | None = None, client=None,
                       batch_size: int = 256, progress: bool = True) -> list[ListedQuestion]:
    """The published lists (``columns``: set name -> workbook column) of the first ``limit`` rows, each question
    judged by ``roles.answerability_judge`` (full issue + hints) and ``roles.question_classifier`` (rewrite 3)."""
    from tasks.domains.swe.workbook import read_workbook
    from tasks.rewards.parse import parse_questions
    from tasks.roles.base import QuestionInput
    from tasks.roles.question_classifier import SPEC as CLASSIFIER_SPEC
    from tasks.roles.swe_judges import ANSWERABILITY_SPEC, AnswerabilityInput

    frame = read_workbook(path, ["instance_id", "original issue", "hints_text", "rewrite_3", *columns.values()])
    records = frame.to_dict("records")[:limit] if limit else frame.to_dict("records")
    pending: list[tuple[dict, str, int, int, str]] = []  # row, set, position, length, question
    for row in records:
        iid = row["instance_id"].strip()
        if not (iid and row["original issue"].strip()):
            continue
        for name, column in columns.items():
            asked = parse_questions(row[column])
            pending += [(row, name, k, len(asked), q) for k, q in enumerate(asked, start=1)]
    answerable = _run_batched(ANSWERABILITY_SPEC, [
        AnswerabilityInput(text=row["original issue"], question=q, hints=row["hints_text"])
        for row, _, _, _, q in pending], roles, client, batch_size, progress)
    labels = _run_batched(CLASSIFIER_SPEC, [
        QuestionInput(question=q, issue_text=row["rewrite_3"]) for row, _, _, _, q in pending],
        roles, client, batch_size, progress)
    return [ListedQuestion(
        source=WORKBOOK_SOURCE, question_set=name, case_id=f"{row['instance_id'].strip()}__rewrite3",
        source_id=row["instance_id"].strip(), position=position, list_length=length, question=q,
        answerable=None if ans is None else bool(ans.answerable), category=_label(lab), issue_text=row["rewrite_3"])
        for (row, name, position, length, q), ans, lab in zip(pending, answerable, labels)]


def _label(output) -> str | None:
    from tasks.categories import Category

    if output is None:
        return None
    return output.label.key if isinstance(output.label, Category) else "irrelevant"


def _run_batched(spec, inputs: Sequence, roles, client, batch_size: int, progress: bool) -> list:
    """``run_role`` of role ``spec`` over ``inputs`` in batches (a progress bar on stderr); None for a failed call."""
    from tqdm import tqdm

    from tasks.llm.records import RoleFailure
    from tasks.roles.base import run_role

    name, cfg = spec.name, roles.get(spec.name)
    out: list = []
    starts = range(0, len(inputs), batch_size)
    for start in tqdm(starts, desc=name, unit="batch", leave=False, disable=not progress or len(starts) < 2):
        outputs = run_role(spec, list(inputs[start:start + batch_size]), cfg, client=client)
        out += [None if isinstance(o, RoleFailure) else o for o in outputs]
    return out


def tag_questions(listed: Sequence[ListedQuestion], roles, *, client=None, batch_size: int = 256,
                  progress: bool = True) -> list[QuestionRow]:
    """The rows of ``questions.csv``: each question with its strategy tags (None where the tagger failed) and
    syntactic features."""
    from tasks.roles.base import QuestionInput
    from tasks.roles.strategy_tagger import SPEC, STRATEGIES

    tags = _run_batched(SPEC, [QuestionInput(question=q.question, issue_text=q.issue_text)
                                            for q in listed], roles, client, batch_size, progress)
    rows = []
    for q, t in zip(listed, tags):
        feats: QuestionFeatures = features(q.question)
        rows.append(QuestionRow(
            key=f"{q.question_set}::{q.case_id}::{q.position}", **q.model_dump(exclude={"issue_text"}),
            **{s: None if t is None else bool(getattr(t, s)) for s in STRATEGIES}, **feats.model_dump()))
    return rows


def rows_frame(rows: Sequence[QuestionRow]):
    import pandas as pd

    columns = list(QuestionRow.model_fields)
    return pd.DataFrame([r.model_dump() for r in rows], columns=columns)
