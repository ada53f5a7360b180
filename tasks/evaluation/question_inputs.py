"""A question-list evaluation's settings (``params.yaml: evaluate.<domain>``, e.g. evaluate@swe) and everything it
reads, validated before any work: the cases (``tasks.case_files``, or the CLARITI workbook's rewrite 3), the
methods and their files, the category weights, the surrogate, the workbook's published lists and the harness
reports."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from tasks.cluster import Runner
from tasks.domains.swe.workbook import PUBLISHED_COLUMNS
from tasks.errors import InputError
from tasks.evaluation.abstain import AbstainSettings
from tasks.evaluation.settings import EvaluationSettings, MethodRow
from tasks.records import Case
from tasks.splits import EvalSplit

WHERE = "params.yaml"


class PublishedSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    workbook: str = "../shared/data/clariti/data.xlsx"
    """The CLARITI workbook: published question lists, rewrite-3 cases and SWE-bench fields (base_commit)."""
    columns: dict[str, str] = Field(default_factory=lambda: dict(PUBLISHED_COLUMNS))
    """Short names of the published sets -> workbook columns; a ``published`` method's ``column`` option may name
    either."""


class MeasuredEntry(BaseModel):
    """A SWE-bench harness report for one exported file of a method."""

    model_config = ConfigDict(extra="forbid")

    method: str
    export: str
    """The exported JSONL the agent ran on (e.g. ``data/eval/swe/bridge/grpo_policy.jsonl``)."""
    report: str
    """The harness report JSON for that run."""


def _default_methods() -> list[MethodRow]:
    return [MethodRow(name=n) for n in ("no_questions", "oracle_template", "ask_everything")]


class QuestionSettings(EvaluationSettings):
    """``params.yaml: evaluate.<domain>`` of a question-list evaluation such as evaluate@swe (the shared fields:
    ``EvaluationSettings``)."""

    cases: str = "data/cases/swe/cases.jsonl"
    case_source: Literal["cases", "workbook_rewrite3"] = "cases"
    """``cases``: the JSONL written by construct@<domain>; ``workbook_rewrite3``: the CLARITI workbook's own rewrite-3
    variants (the text its published question sets were written for; SWE only)."""
    split: EvalSplit = "heldout"
    """The cases evaluated (construct's split by source; cases without one count as held out). A trained policy
    is never scored on a source its adapter was trained on: the stage stops instead."""
    task_runner: Runner = "serial"
    """serial: the batches one after another in the flow's thread; threads / dask: one Prefect task per batch on
    Prefect's thread pool / the workers of ``params.yaml: cluster`` (``tasks/evaluation/question_batches.py``)."""
    concurrency: int = Field(default=4, ge=1)
    """Batches in flight under ``threads``."""
    batch_size: int = Field(default=64, ge=1)
    """Cases per batched unit computation (one role call per role per batch)."""
    weights: str = "data/shap/weights.json"
    """Category weights (weighted recovery, task relevance, template order); CLARITI's published ones if absent."""
    surrogate: str = "data/shap/model.txt"
    """The shap stage's classifier; predicted resolution is left out (and said so) when absent."""
    surrogate_controls: dict[str, str] = Field(default_factory=dict)
    """Fix control levels of the surrogate (e.g. ``{condition: interaction}``); others are averaged over."""
    published: PublishedSettings = PublishedSettings()
    measured: list[MeasuredEntry] = Field(default_factory=list)
    methods: list[MethodRow] = Field(default_factory=_default_methods, min_length=1)
    compare: list[tuple[str, str]] = Field(default_factory=list)
    """Pairs ``[a, b]`` of methods compared case by case: the mean staged reward of a − b over the cases both
    scored, with a paired bootstrap interval (``summary.json: paired``), e.g. ``[grpo_policy, sft_policy]``: GRPO
    against the SFT policy it continued from, on the same held-out issues. A pair naming a method that did not run is
    skipped and said so."""
    abstain: AbstainSettings = AbstainSettings()
    """Abstain with warning (``tasks.evaluation.abstain``): off unless a threshold is set."""


@dataclass
class QuestionInputs:
    """Everything ``evaluate_questions`` reads, validated by :func:`load_question_inputs`."""

    cases: list[Case]
    weights: dict[str, float]
    weights_source: str
    surrogate: Any | None
    surrogate_note: str
    published: dict[str, dict[str, str]]
    """Workbook column -> instance id -> numbered list."""
    columns: dict[str, str]
    """Method name -> its workbook column (published methods)."""
    meta: dict[str, dict[str, str]]
    measured: dict[str, Any]
    """Method -> ``questions.bridge.Measured``."""
    domain: str = ""
    """The domain evaluated (its cases, its section ``evaluate.<domain>``, its unit store)."""
    case_notes: dict[str, int] = field(default_factory=dict)
    case_source: str = ""
    trained: dict[str, dict[str, int]] = field(default_factory=dict)
    """Trained policy method -> its training source ids and their overlap with the evaluated ones (always 0)."""


def _path(root: Path, value: str) -> Path:
    return Path(value) if Path(value).is_absolute() else root / value


def _load_cases(root: Path, settings: QuestionSettings, domain: str) -> tuple[list[Case], dict[str, int], str]:
    """The cases evaluated (``tasks.case_files``): construct@<domain>'s JSONL (the domain's cases, by case id)
    or the workbook's rewrite-3 cases, then the split, ``case_ids`` and ``limit``."""
    from tasks.case_files import read_cases, select_cases
    from tasks.splits import select

    if settings.case_source == "workbook_rewrite3":
        from tasks.domains.swe.workbook import rewrite3_cases

        workbook = _path(root, settings.published.workbook)
        cases, notes = rewrite3_cases(workbook)
        source = f"CLARITI workbook rewrite 3 ({workbook.name})"
    else:
        cases = read_cases(_path(root, settings.cases), domain=domain,
                           missing=f"file not found (run construct@{domain} first, or set evaluate.{domain}.cases)")
        cases, notes, source = sorted(cases, key=lambda c: c.case_id), {}, settings.cases
    cases = select_cases(select(cases, settings.split), case_ids=settings.case_ids, limit=settings.limit, where=WHERE,
                         section=f"evaluate.{domain}", among=f" in split {settings.split!r}")
    return cases, notes, source


def _load_weights(root: Path, settings: QuestionSettings) -> tuple[dict[str, float], str]:
    from tasks.rewards.weights import CLARITI_WEIGHTS, load_weights

    path = _path(root, settings.weights)
    if not path.is_file():
        return dict(CLARITI_WEIGHTS), f"CLARITI published weights ({settings.weights} absent)"
    weights = load_weights(path).weights
    try:
        origin = json.loads(path.read_text(encoding="utf-8")).get("source", "unknown source")
    except (OSError, json.JSONDecodeError):
        origin = "unknown source"
    return dict(weights), f"shap stage weights {settings.weights} ({origin})"


def load_question_inputs(root: Path, settings: QuestionSettings, *, domain: str) -> QuestionInputs:
    """Read and validate every input of ``evaluate.<domain>`` (cases, methods and their files, weights, surrogate,
    workbook, harness reports); raises ``InputError(path, message, field=...)`` before any work is done."""
    from tasks.clarifiers.question_methods import check_method_files, parse_options
    from tasks.domains.swe.workbook import instance_meta, published_lists
    from tasks.evaluation.bridge import merge_measured, read_harness
    from tasks.evaluation.surrogate import load_surrogate

    root = Path(root)
    section = f"evaluate.{domain}"
    cases, notes, source = _load_cases(root, settings, domain)
    weights, weights_source = _load_weights(root, settings)

    workbook = _path(root, settings.published.workbook)
    columns: dict[str, str] = {}
    for i, entry in enumerate(settings.methods):
        where = f"{section}.methods.{i}"
        try:
            parsed = parse_options(entry.kind, entry.options)
        except ValueError as err:
            raise InputError(WHERE, str(err), field=where) from None
        check_method_files(entry.kind, parsed, root, where)
        if entry.kind == "published":
            columns[entry.name] = settings.published.columns.get(parsed.column, parsed.column)
    published = {col: published_lists(workbook, col) for col in sorted(set(columns.values()))}
    meta = instance_meta(workbook) if workbook.is_file() else {}

    surrogate, note = None, ""
    model_path = _path(root, settings.surrogate)
    if model_path.is_file():
        surrogate = load_surrogate(model_path)
        surrogate.check_fixed(settings.surrogate_controls, WHERE, f"{section}.surrogate_controls")
    else:
        note = f"no surrogate: {settings.surrogate} not found (run the shap stage)"

    names = {m.name for m in settings.methods}
    parts = []
    for i, entry in enumerate(settings.measured):
        if entry.method not in names:
            raise InputError(WHERE, f"unknown method {entry.method!r}", field=f"{section}.measured.{i}.method")
        part = read_harness(_path(root, entry.export), _path(root, entry.report))
        if part.method != entry.method:
            raise InputError(_path(root, entry.export), f"rows are of method {part.method!r}, not {entry.method!r}",
                             field="clarifyflow_method")
        parts.append(part)
    return QuestionInputs(cases=cases, weights=weights, weights_source=weights_source, surrogate=surrogate,
                     surrogate_note=note, published=published, columns=columns, meta=meta, domain=domain,
                     measured=merge_measured(parts), case_notes=notes, case_source=source,
                     trained=check_trained_policies(root, settings, cases))


def check_trained_policies(root: Path, settings: QuestionSettings, cases: Sequence[Case]) -> dict[str, dict]:
    """Per policy method with an adapter: its training source ids and the overlap with ``cases`` (raises
    ``InputError`` naming the adapter's record when any evaluated issue was trained on)."""
    from tasks.clarifiers.question_methods import parse_options
    from tasks.splits import check_no_overlap

    evaluated = {c.metadata.source_id for c in cases}
    trained = {}
    for entry in settings.methods:
        if entry.kind == "policy" and (adapter := parse_options(entry.kind, entry.options).adapter) is not None:
            trained[entry.name] = check_no_overlap(entry.name, _path(Path(root), adapter), evaluated)
    return trained
