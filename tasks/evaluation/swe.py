"""evaluate@swe: measure SWE clarifiers as CLARITI does (clariti.md §7) on incomplete issues.

Each method (``tasks.evaluation.swe_methods``) turns each case's incomplete issue into questions; the ``swe_user``
role answers them from the full issue + hints; judges and the classifier label them (``swe_units``); the metrics
(``swe_metrics``) come with 95% bootstrap intervals over issues. The flow calls, in order::

    settings = section(params_path, SweEvalSettings, cfg.evaluate["swe"], "evaluate.swe")
    inputs = load_swe_inputs(root, settings)              # validates everything; InputError before any work
    summary = evaluate_swe(inputs.cases, settings, cfg.roles, staging_dir, root=root, inputs=inputs,
                           reward=cfg.reward, client=None, progress=None)
    gate("swe_eval_summary", summary_frame(summary), ...); gate("swe_eval_rows", rows_frame(staging_dir), ...)

Outputs in ``out_dir``: ``summary.json`` (byte-stable; the ranked ``methods`` apart from the ``reference_methods``,
see ``swe_methods.REFERENCE``), ``rows.jsonl`` (one row per method x case with questions,
answers and labels), ``questions.eval`` (the rows as an Inspect AI log, ``inspect_log``), ``report.md`` (the report
section), ``category_distribution.png``,
``questions_vs_recovery.png``, and ``bridge/`` (SWE-bench-style JSONL per method + ``manifest.json``; see
``swe_bridge``). Units are cached under ``<root>/.cache/eval/swe/units`` by content, so a rerun recomputes only
units whose case, method, roles, reward settings, weights or code changed.

*Predicted resolution* is the ``shap`` stage's classifier (``data/shap/model.txt``) on the visible + recovered
categories, always labelled a surrogate; harness results listed under ``measured`` replace it with measured
resolution per method.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tasks.cluster import ClusterParams, Runner
from tasks.domains.swe.workbook import PUBLISHED_COLUMNS
from tasks.errors import InputError
from tasks.evaluation.engine import UnitStats
from tasks.evaluation.swe_abstain import AbstainSettings
from tasks.records import SAFE_ID, Case
from tasks.rewards.config import RewardConfig
from tasks.roles.config import RolesParams
from tasks.splits import EvalSplit

WHERE = "params.yaml"
SECTION = "evaluate.swe"
UNIT_STORE = Path(".cache") / "eval" / "swe" / "units"


class SweMethodEntry(BaseModel):
    """One row of ``evaluate.swe.methods``."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=SAFE_ID)
    method: str | None = None
    """The method kind (``no_questions``, ``oracle_template``, ``ask_everything``, ``policy``, ``llm_questioner``,
    ``published``); defaults to ``name``."""
    options: dict[str, Any] = {}

    @property
    def kind(self) -> str:
        return self.method or self.name


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


def _default_methods() -> list[SweMethodEntry]:
    return [SweMethodEntry(name=n) for n in ("no_questions", "oracle_template", "ask_everything")]


class SweEvalSettings(BaseModel):
    """``params.yaml: evaluate.swe``."""

    model_config = ConfigDict(extra="forbid")

    cases: str = "data/cases/swe/cases.jsonl"
    case_source: Literal["cases", "workbook_rewrite3"] = "cases"
    """``cases``: the JSONL written by construct@swe; ``workbook_rewrite3``: the CLARITI workbook's own rewrite-3
    variants (the text its published question sets were written for)."""
    case_ids: list[str] | None = None
    split: EvalSplit = "heldout"
    """The cases evaluated (construct@swe's split by issue; cases without one count as held out). A trained policy
    is never scored on an issue its adapter was trained on: the stage stops instead."""
    limit: int | None = Field(default=None, ge=1)
    seed: int = 0
    bootstrap: int = Field(default=2000, ge=10)
    """Issue-level bootstrap resamples for the 95% intervals."""
    batch_size: int = Field(default=64, ge=1)
    """Cases per batched unit computation (one role call per role per batch)."""
    task_runner: Runner = "serial"
    """serial: the batches one after another in the flow's thread; threads / dask: one Prefect task per batch on
    Prefect's thread pool / the workers of ``params.yaml: cluster`` (``tasks/evaluation/question_batches.py``)."""
    concurrency: int = Field(default=4, ge=1)
    """Batches in flight under ``threads``."""
    weights: str = "data/shap/weights.json"
    """Category weights (weighted recovery, task relevance, template order); CLARITI's published ones if absent."""
    surrogate: str = "data/shap/model.txt"
    """The shap stage's classifier; predicted resolution is left out (and said so) when absent."""
    surrogate_controls: dict[str, str] = {}
    """Fix control levels of the surrogate (e.g. ``{condition: interaction}``); others are averaged over."""
    published: PublishedSettings = PublishedSettings()
    measured: list[MeasuredEntry] = []
    methods: list[SweMethodEntry] = Field(default_factory=_default_methods, min_length=1)
    abstain: AbstainSettings = AbstainSettings()
    """Abstain with warning (``tasks.evaluation.swe_abstain``): off unless a threshold is set."""

    @model_validator(mode="after")
    def _unique(self) -> SweEvalSettings:
        names = [m.name for m in self.methods]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise ValueError(f"method names must be unique; repeated: {', '.join(dupes)}")
        return self


@dataclass
class SweInputs:
    """Everything ``evaluate_swe`` reads, validated by :func:`load_swe_inputs`."""

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
    """Method -> ``swe_bridge.Measured``."""
    case_notes: dict[str, int] = field(default_factory=dict)
    case_source: str = ""
    trained: dict[str, dict[str, int]] = field(default_factory=dict)
    """Trained policy method -> its training source ids and their overlap with the evaluated ones (always 0)."""


def _path(root: Path, value: str) -> Path:
    return Path(value) if Path(value).is_absolute() else root / value


def _load_cases(root: Path, settings: SweEvalSettings) -> tuple[list[Case], dict[str, int], str]:
    from tasks.store import read_jsonl

    if settings.case_source == "workbook_rewrite3":
        from tasks.domains.swe.workbook import rewrite3_cases

        workbook = _path(root, settings.published.workbook)
        cases, notes = rewrite3_cases(workbook)
        source = f"CLARITI workbook rewrite 3 ({workbook.name})"
    else:
        path = _path(root, settings.cases)
        if not path.is_file():
            raise InputError(path, "file not found (run construct@swe first, or set evaluate.swe.cases)")
        cases, notes = read_jsonl(path, Case), {}
        source = settings.cases
        for i, case in enumerate(cases, start=1):
            if case.metadata.domain != "swe":
                raise InputError(path, f"not a SWE case (domain {case.metadata.domain!r})", record=i,
                                 field="metadata.domain")
        seen: set[str] = set()
        for i, case in enumerate(cases, start=1):
            if case.case_id in seen:
                raise InputError(path, f"duplicate case id {case.case_id!r}", record=i, field="metadata.case_id")
            seen.add(case.case_id)
        cases = sorted(cases, key=lambda c: c.case_id)
    from tasks.splits import select

    cases = select(cases, settings.split)
    if settings.case_ids is not None:
        known = {c.case_id for c in cases}
        unknown = [cid for cid in settings.case_ids if cid not in known]
        if unknown:
            raise InputError(WHERE, f"unknown case id {unknown[0]!r} (in split {settings.split!r})",
                             field=f"{SECTION}.case_ids")
        wanted = set(settings.case_ids)
        cases = [c for c in cases if c.case_id in wanted]
    if settings.limit:
        cases = cases[: settings.limit]
    if not cases:
        raise InputError(WHERE, f"no cases to evaluate in split {settings.split!r}", field=f"{SECTION}.cases")
    return cases, notes, source


def _load_weights(root: Path, settings: SweEvalSettings) -> tuple[dict[str, float], str]:
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


def load_swe_inputs(root: Path, settings: SweEvalSettings) -> SweInputs:
    """Read and validate every input (cases, methods and their files, weights, surrogate, workbook, harness
    reports); raises ``InputError(path, message, field=...)`` before any work is done."""
    from tasks.domains.swe.workbook import instance_meta, published_lists
    from tasks.evaluation import swe_methods
    from tasks.evaluation.swe_bridge import merge_measured, read_harness
    from tasks.evaluation.swe_surrogate import load_surrogate

    root = Path(root)
    cases, notes, source = _load_cases(root, settings)
    weights, weights_source = _load_weights(root, settings)

    workbook = _path(root, settings.published.workbook)
    columns: dict[str, str] = {}
    for i, entry in enumerate(settings.methods):
        where = f"{SECTION}.methods.{i}"
        try:
            parsed = swe_methods.parse_options(entry.kind, entry.options)
        except ValueError as err:
            raise InputError(WHERE, str(err), field=where) from None
        swe_methods.check_method_files(entry.kind, parsed, root, where)
        if entry.kind == "published":
            columns[entry.name] = settings.published.columns.get(parsed.column, parsed.column)
    published = {col: published_lists(workbook, col) for col in sorted(set(columns.values()))}
    meta = instance_meta(workbook) if workbook.is_file() else {}

    surrogate, note = None, ""
    model_path = _path(root, settings.surrogate)
    if model_path.is_file():
        surrogate = load_surrogate(model_path)
        surrogate.check_fixed(settings.surrogate_controls, WHERE, f"{SECTION}.surrogate_controls")
    else:
        note = f"no surrogate: {settings.surrogate} not found (run the shap stage)"

    names = {m.name for m in settings.methods}
    parts = []
    for i, entry in enumerate(settings.measured):
        if entry.method not in names:
            raise InputError(WHERE, f"unknown method {entry.method!r}", field=f"{SECTION}.measured.{i}.method")
        part = read_harness(_path(root, entry.export), _path(root, entry.report))
        if part.method != entry.method:
            raise InputError(_path(root, entry.export), f"rows are of method {part.method!r}, not {entry.method!r}",
                             field="clarifyflow_method")
        parts.append(part)
    return SweInputs(cases=cases, weights=weights, weights_source=weights_source, surrogate=surrogate,
                     surrogate_note=note, published=published, columns=columns, meta=meta,
                     measured=merge_measured(parts), case_notes=notes, case_source=source,
                     trained=check_trained_policies(root, settings, cases))


def check_trained_policies(root: Path, settings: SweEvalSettings, cases: Sequence[Case]) -> dict[str, dict]:
    """Per policy method with an adapter: its training source ids and the overlap with ``cases`` (raises
    ``InputError`` naming the adapter's record when any evaluated issue was trained on)."""
    from tasks.evaluation.swe_methods import parse_options
    from tasks.splits import check_no_overlap

    evaluated = {c.metadata.source_id for c in cases}
    trained = {}
    for entry in settings.methods:
        if entry.kind == "policy" and (adapter := parse_options(entry.kind, entry.options).adapter) is not None:
            trained[entry.name] = check_no_overlap(entry.name, _path(Path(root), adapter), evaluated)
    return trained


# ---- running -------------------------------------------------------------------------------------------------


def run_units(cases: Sequence[Case], settings: SweEvalSettings, roles: RolesParams, inputs: SweInputs, *,
              root: Path, reward: RewardConfig, client=None, progress: Callable[[int, int], None] | None = None,
              methods: dict | None = None, cluster: ClusterParams | None = None) -> tuple[dict[str, list], UnitStats]:
    """Every (method, case) unit, from the store or computed in batches (on ``settings.task_runner``); per method,
    units in case order."""
    from tasks.caching import code_version
    from tasks.evaluation.engine import UnitStore
    from tasks.evaluation.swe_methods import QuestionContext, build_method
    from tasks.evaluation.swe_units import QUESTION_CODE, SweUnit, unit_key

    store = UnitStore(Path(root) / UNIT_STORE, SweUnit)
    ctx = QuestionContext(roles=roles, weights=inputs.weights, client=client, root=Path(root),
                        published=inputs.published)
    code = code_version(*QUESTION_CODE)
    stats = UnitStats()
    started = time.monotonic()
    total, done = len(cases) * len(settings.methods), 0
    out: dict[str, list] = {}
    for entry in settings.methods:
        options = dict(entry.options)
        if entry.kind == "published":
            options["column"] = inputs.columns[entry.name]
        method = (methods or {}).get(entry.name) or build_method(entry.name, entry.kind, options, ctx)
        fingerprint = method.fingerprint()
        keys = [unit_key(case=c, method=entry.name, fingerprint=fingerprint, case_input=method.case_input(c),
                         roles=roles, reward=reward, weights=inputs.weights, code=code) for c in cases]
        units: list = [store.get(k) for k in keys]
        stats.reused += sum(u is not None for u in units)
        done += sum(u is not None for u in units)
        todo = [k for k, u in enumerate(units) if u is None]
        if progress and not todo:
            progress(done, total)
        batches = [todo[start:start + settings.batch_size] for start in range(0, len(todo), settings.batch_size)]
        chunks = [[cases[k] for k in batch] for batch in batches]
        chunk_keys = [[keys[k] for k in batch] for batch in batches]
        labels = [f"{entry.name}/{n}" for n in range(1, len(batches) + 1)]
        if settings.task_runner == "serial":
            computed = (batch_units(method, chunk, ks, name=entry.name, label=label, roles=roles, reward=reward,
                                    weights=inputs.weights, client=client)
                        for chunk, ks, label in zip(chunks, chunk_keys, labels))
        else:
            from tasks.evaluation.question_batches import batch_spec, run_batches

            if entry.name in (methods or {}):
                raise ValueError(f"method {entry.name!r} was handed in built: it runs with task_runner: serial only")
            spec = batch_spec(entry.name, entry.kind, options, roles, inputs, root=Path(root))
            computed = run_batches(spec, chunks, chunk_keys, labels, reward=reward, runner=settings.task_runner,
                                   concurrency=settings.concurrency, cluster=cluster)
        for n, fresh in enumerate(computed):  # in batch order, whichever finished first
            batch = batches[n]
            for k, unit in zip(batch, fresh):
                store.put(unit)
                units[k] = unit
            stats.computed += len(batch)
            done += len(batch)
            if progress:
                progress(done, total)
        out[entry.name] = units
    stats.seconds = time.monotonic() - started
    return out, stats


def in_flow() -> bool:
    """Whether a Prefect flow run is active in this thread (Prefect is never imported to find out)."""
    if "prefect" not in sys.modules:
        return False
    from prefect.context import FlowRunContext

    return FlowRunContext.get() is not None


def batch_units(method, chunk: Sequence[Case], keys: Sequence[str], *, name: str, label: str, roles: RolesParams,
                reward: RewardConfig, weights: dict[str, float], client=None) -> list:
    """One batch's units in this thread: the method's completions, the units and their share of the usage that
    ``client``'s accounting (the process's default one when None) gained meanwhile."""
    from tasks.evaluation.swe_units import compute_units, share_usage, usage_delta
    from tasks.llm.client import default_client

    accounting = (client or default_client()).accounting
    before = accounting.snapshot()
    completions = complete_batch(method, chunk, label=label)
    fresh = compute_units(chunk, completions, method=name, keys=keys, roles=roles, reward=reward,
                          weights=weights, client=client)
    shares = share_usage(usage_delta(before, accounting.snapshot()), [len(u.questions) for u in fresh])
    return [u.model_copy(update={"usage": share}) for u, share in zip(fresh, shares)]


def complete_batch(method, cases: Sequence[Case], *, label: str) -> list:
    """``method.complete(cases)``; for a policy inside a flow, as one Prefect task named ``generate`` (run name
    ``<method>/<batch>``) so the UI shows where generation is. The result is the same either way."""
    if method.kind != "policy" or not in_flow():
        return method.complete(cases)
    from prefect import task
    from prefect.cache_policies import NO_CACHE

    generate = task(name="generate", task_run_name=label, retries=0, log_prints=False, cache_policy=NO_CACHE,
                    persist_result=False)(_complete)
    return generate(method, list(cases))


def _complete(method, cases: list[Case]) -> list:
    """The ``generate`` task body (module level, like ``runs._run_unit``)."""
    return method.complete(cases)


def _predictions(surrogate, presence: list[set[str]], fixed: dict[str, str]) -> list[float | None]:
    if surrogate is None or not presence:
        return [None] * len(presence)
    return [float(p) for p in surrogate.predict(presence, fixed)]


def _row_usage(unit: Any) -> dict[str, Any]:
    """A per-case row's usage: totals (``tokens``, ``cost_usd``, ``latency_s``) and per role."""
    from tasks.evaluation.swe_units import unit_usage

    total = unit_usage([unit])
    return {"prompt_tokens": total["PromptTokens"], "completion_tokens": total["CompletionTokens"],
            "tokens": total["TotalTokens"], "cost_usd": total["EstimatedCostUSD"],
            "latency_s": total["LatencySeconds"],
            "usage": {role: u.model_dump() for role, u in sorted(unit.usage.items())}}


EFFICIENCY_SCORE = "weighted_recovery"
"""The score of the SWE cost and efficiency figures (``efficiency``)."""


def efficiency(units: Sequence[Any], metrics: dict[str, Any]) -> dict[str, Any]:
    """A method row's cost and efficiency figures: tokens, USD (litellm's price; 0 for local backends) and latency
    summed over its units (``SweUnit.usage``), per case, and the score (``weighted_recovery``) per dollar (score /
    cost per case; None at zero cost) and per question (score / questions per case; None without questions)."""
    from tasks.evaluation.swe_units import unit_usage

    n = max(len(units), 1)
    usage = unit_usage(units)
    per_case = usage["EstimatedCostUSD"] / n
    score = metrics.get(EFFICIENCY_SCORE)
    per_question = metrics.get("questions_per_issue")
    return {**usage, "Cases": len(units), "TokensPerCase": usage["TotalTokens"] / n, "CostPerCaseUSD": per_case,
            "LatencyPerCaseSeconds": usage["LatencySeconds"] / n, "Score": score, "ScoreName": EFFICIENCY_SCORE,
            "ScorePerDollar": score / per_case if score is not None and per_case > 0 else None,
            "ScorePerQuestion": score / per_question if score is not None and per_question else None}


def summarise(cases: Sequence[Case], units_by_method: dict[str, list], settings: SweEvalSettings, roles: RolesParams,
              inputs: SweInputs, reward: RewardConfig) -> tuple[dict[str, Any], list[dict]]:
    """The summary (deterministic) and the per-case rows. The ranked methods are ``methods`` (in ``method_order``);
    the reference methods (``swe_methods.REFERENCE``: the oracle template, the no-questions floor) are
    ``reference_methods`` (in ``reference_order``), each with its ``reference`` (kind, what it reads)."""
    from tasks.evaluation.metrics import tidy
    from tasks.evaluation.swe_methods import reference_of
    from tasks.evaluation.swe_metrics import (
        distinct_intents,
        measured_metrics,
        method_metrics,
        outcome,
        presence_after,
    )
    from tasks.evaluation.swe_surrogate import LABEL
    from tasks.evaluation.swe_units import UNIT_ROLES, evaluation_reward
    from tasks.roles.config import describe_roles

    by_id = {c.case_id: c for c in cases}
    fixed = settings.surrogate_controls
    methods: dict[str, Any] = {}
    rows: list[dict] = []
    for entry in settings.methods:
        units = units_by_method[entry.name]
        evaluated = [u for u in units if u.skipped is None]
        preds = _predictions(inputs.surrogate, [presence_after(by_id[u.case_id], u) for u in evaluated], fixed)
        outcomes = [outcome(by_id[u.case_id], u, inputs.weights, p) for u, p in zip(evaluated, preds)]
        m = method_metrics(by_id, evaluated, outcomes, n_resamples=settings.bootstrap, seed=settings.seed) \
            if evaluated else {"cases": 0, "issues": 0, "questions": 0}
        skipped: dict[str, int] = {}
        for u in units:
            if u.skipped:
                skipped[u.skipped] = skipped.get(u.skipped, 0) + 1
        m.update({"kind": entry.kind, "options": entry.options, "skipped": skipped,
                  "skipped_cases": sum(skipped.values())})
        if entry.kind == "published":
            m["column"] = inputs.columns[entry.name]
        if entry.name in inputs.trained:
            m["trained_on_source_ids"] = inputs.trained[entry.name]["trained_on_source_ids"]
            m["training_overlap"] = inputs.trained[entry.name]["overlap"]
        m["predicted_resolution_label"] = LABEL if inputs.surrogate is not None else inputs.surrogate_note
        measured = inputs.measured.get(entry.name)
        if measured is not None:
            m["measured_resolution"] = measured_metrics(measured.resolved, evaluated, source=measured.source,
                                                        n_resamples=settings.bootstrap, seed=settings.seed)
            mr = m["measured_resolution"]
            m["resolution"] = {"kind": "measured", "value": mr["value"], "CI95": mr["CI95"], "source": mr["source"]}
        elif evaluated and inputs.surrogate is not None:
            m["resolution"] = {"kind": "surrogate", "value": m["predicted_resolution"],
                               "CI95": m["CI95"]["predicted_resolution"], "source": LABEL}
        m["efficiency"] = efficiency(units, m)
        methods[entry.name] = m
        outcome_of = {o.case_id: o for o in outcomes}
        for u in units:
            case = by_id[u.case_id]
            o = outcome_of.get(u.case_id)
            rows.append({
                "key": f"{entry.name}::{u.case_id}", "method": entry.name, "case_id": u.case_id,
                "source_id": u.source_id, "skipped": u.skipped, "failure": u.failure,
                "hidden": [c.key for c in case.hidden_categories], "visible": [c.key for c in case.visible_categories],
                "recovered": list(o.recovered) if o else [], "recall": o.recall if o else None,
                "full_coverage": o.full_coverage if o else None,
                "weighted_recovery": o.weighted_recovery if o else None,
                "predicted_resolution": o.predicted_resolution if o else None,
                "measured_resolved": measured.resolved.get(u.case_id) if measured is not None else None,
                "n_questions": len(u.questions), "distinct_intents": distinct_intents(u), "completion": u.completion,
                "information_insufficient": u.information_insufficient,
                "questions": [q.model_dump() for q in u.questions],
                "reward": u.reward.model_dump() if u.reward else None,
                **_row_usage(u),
            })
    reference = {}
    if inputs.surrogate is not None:
        visible = _predictions(inputs.surrogate, [{c.key for c in case.visible_categories} for case in cases], fixed)
        full = _predictions(inputs.surrogate, [{c.key for c in case.present_categories} for case in cases], fixed)
        reference = {"incomplete_issue": sum(visible) / len(visible), "full_issue": sum(full) / len(full)}
    described = describe_roles(roles)
    from tasks.splits import split_counts

    references = {e.name: reference_of(e.kind) for e in settings.methods}
    reference_methods = {name: {**methods.pop(name), "reference": ref.model_dump()}
                         for name, ref in references.items() if ref is not None}
    summary = {
        "cases": len(cases),
        "issues": len({c.metadata.source_id for c in cases}),
        "split": {"evaluated": settings.split, **split_counts(cases)},
        "case_source": inputs.case_source,
        "case_notes": inputs.case_notes,
        "methods": methods,
        "method_order": [m.name for m in settings.methods if references[m.name] is None],
        "reference_methods": reference_methods,
        "reference_order": [m.name for m in settings.methods if references[m.name] is not None],
        "weights": {"source": inputs.weights_source, "values": inputs.weights},
        "surrogate": ({"label": LABEL, "model": settings.surrogate, "trained_on": inputs.surrogate.source,
                       "controls_fixed": fixed, "controls": "averaged over the runs table's control profiles",
                       "reference": reference}
                      if inputs.surrogate is not None else {"label": inputs.surrogate_note}),
        "reward": evaluation_reward(reward, roles).model_dump(mode="json", exclude={"judges"}),
        "bootstrap": {"resamples": settings.bootstrap, "seed": settings.seed, "unit": "issue (source_id)",
                      "method": "percentile, paired ratio"},
        "roles": {name: described[name] for name in (*UNIT_ROLES, "question_writer")},
    }
    if any(e.kind == "published" for e in settings.methods) and settings.case_source != "workbook_rewrite3":
        summary["published_note"] = ("the published lists were written for the workbook's rewrite 3, not for these "
                                     "variants; they are matched by instance id")
    return tidy(summary), [tidy(r) for r in rows]


def evaluate_swe(cases: Sequence[Case], settings: SweEvalSettings, roles: RolesParams, out_dir: Path, *, root: Path,
                 client=None, progress: Callable[[int, int], None] | None = None, reward: RewardConfig | None = None,
                 inputs: SweInputs | None = None, methods: dict | None = None,
                 cluster: ClusterParams | None = None) -> dict[str, Any]:
    """Run every method on ``cases``, write the outputs into ``out_dir`` and return the summary.

    ``reward``: the staged reward settings (``params.yaml: reward``; default ``RewardConfig()``), judged by
    ``roles``. ``inputs``: from :func:`load_swe_inputs` (loaded here when None; its cases are replaced by
    ``cases``). ``methods``: name -> a prepared ``SweMethod`` (tests inject fake policies; serial runner only).
    ``cluster``: where the batches run under ``settings.task_runner: dask``. The returned summary
    equals ``summary.json`` plus a ``run`` entry (units computed / reused, seconds) that is not written.
    """
    from tasks.evaluation import swe_plots
    from tasks.evaluation.swe_bridge import export_clarified
    from tasks.store import atomic_write_json, atomic_write_text

    root, out_dir = Path(root), Path(out_dir)
    reward = reward or RewardConfig()
    inputs = inputs or load_swe_inputs(root, settings)
    cases = sorted(cases, key=lambda c: c.case_id)
    inputs.trained = check_trained_policies(root, settings, cases)  # the cases given here, not only the loaded ones
    units, stats = run_units(cases, settings, roles, inputs, root=root, reward=reward, client=client,
                             progress=progress, methods=methods, cluster=cluster)
    abstaining: list[str] = []
    if settings.abstain.threshold is not None:
        from tasks.evaluation.swe_abstain import add_abstaining

        settings, units, abstaining = add_abstaining(settings, units)
        inputs.columns.update({f"{n}+abstain": inputs.columns[n] for n in abstaining if n in inputs.columns})
    summary, rows = summarise(cases, units, settings, roles, inputs, reward)
    if abstaining:
        from tasks.evaluation.metrics import tidy
        from tasks.evaluation.swe_abstain import abstention_block

        summary["abstention"] = tidy(abstention_block(summary, units, abstaining, settings.abstain.threshold))
    out_dir.mkdir(parents=True, exist_ok=True)
    atomic_write_json(out_dir / "summary.json", summary)
    atomic_write_text(out_dir / "rows.jsonl", "".join(json.dumps(r, sort_keys=True, ensure_ascii=False) + "\n"
                                                      for r in rows))
    atomic_write_text(out_dir / "report.md", report_markdown(summary))
    from tasks.evaluation import inspect_log

    inspect_log.write_swe_log(out_dir / inspect_log.SWE_LOG, rows, summary, {c.case_id: c.brief.content for c in cases})
    ordered = plotted_methods(summary)
    swe_plots.category_plot(ordered, out_dir / "category_distribution.png")
    swe_plots.recovery_plot(ordered, out_dir / "questions_vs_recovery.png")
    export_clarified([u for name in units for u in units[name]], {c.case_id: c for c in cases}, out_dir / "bridge",
                     inputs.meta)
    return {**summary, "run": {"computed": stats.computed, "reused": stats.reused,
                               "seconds": round(stats.seconds, 2)}}


def plotted_methods(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The summary's methods in report order, the reference methods after them as ``<name> (reference)``: what the
    plots show (the PNGs and ``swe_plots.recovery_rows``)."""
    ordered = {name: summary["methods"][name] for name in summary["method_order"]}
    return ordered | {f"{name} (reference)": summary["reference_methods"][name] for name in summary["reference_order"]}


# ---- report and validation frames ------------------------------------------------------------------------------


def _fmt(value: Any, ci: Any = None, pct: bool = False) -> str:
    if value is None:
        return "–"
    scale, unit = (100.0, "%") if pct else (1.0, "")
    text = f"{value * scale:.1f}{unit}" if pct else f"{value:.2f}"
    if ci:
        text += f" [{ci[0] * scale:.1f}, {ci[1] * scale:.1f}]" if pct else f" [{ci[0]:.2f}, {ci[1]:.2f}]"
    return text


SWE_HEADER = ("| method | kind | cases | questions / issue | redundancy | answerability | distinct intents "
              "| hidden recall | full coverage | weighted recovery | staged reward | resolution |")
REFERENCE_TITLE = "Reference rows (not ranked)"
REFERENCE_NOTE = ("Reference rows read what a method may not (privileged: the hidden categories) or nothing at all "
                  "(a bound): they bracket the methods above and are never ranked with them.")


def _method_cells(name: str, m: dict[str, Any]) -> list[str]:
    if not m.get("cases"):
        return [name, m["kind"], "0", *["–"] * 9]
    ci = m["CI95"]
    res = m.get("resolution")
    res_text = f"{_fmt(res['value'], res['CI95'], True)} ({res['kind']})" if res else "–"
    return [name, m["kind"], str(m["cases"]), _fmt(m["questions_per_issue"], ci["questions_per_issue"]),
            _fmt(m["redundancy_rate"], ci["redundancy_rate"], True),
            _fmt(m["answerability_rate"], ci["answerability_rate"], True),
            _fmt(m["distinct_intents"], ci["distinct_intents"], True),
            _fmt(m["hidden_recall"], ci["hidden_recall"], True),
            _fmt(m["full_coverage_rate"], ci["full_coverage_rate"], True),
            _fmt(m["weighted_recovery"], ci["weighted_recovery"], True), _fmt(m["reward_mean"], ci["reward_mean"]),
            res_text]


EFFICIENCY_COLUMNS = ("TotalTokens", "EstimatedCostUSD", "CostPerCaseUSD", "LatencySeconds", "ScorePerDollar",
                      "ScorePerQuestion")
"""The cost and efficiency figures of ``summary_frame`` (checked by the ``swe_eval_summary`` suite)."""


def efficiency_lines(every: dict[str, dict[str, Any]]) -> list[str]:
    from tasks.evaluation.cost_table import SWE_HEADER as EFFICIENCY_HEADER
    from tasks.evaluation.cost_table import SWE_NOTE as EFFICIENCY_NOTE
    from tasks.evaluation.cost_table import swe_cost_rows

    rows = swe_cost_rows(every)
    if not rows:
        return []
    return ["", "Cost and efficiency:", "", _line(EFFICIENCY_HEADER), "|---" * len(EFFICIENCY_HEADER) + "|",
            *[_line(r) for r in rows], "", EFFICIENCY_NOTE]


def _line(cells: list[str]) -> str:
    return "| " + " | ".join(cells) + " |"


def report_markdown(summary: dict[str, Any]) -> str:
    """The report section for evaluate@swe (markdown, no images): the ranked methods' table, then the reference
    rows apart (each with what it reads)."""
    from tasks.evaluation.swe_metrics import LABELS
    from tasks.evaluation.swe_plots import NAMES

    order = summary["method_order"]
    methods = summary["methods"]
    reference = summary["reference_methods"]
    lines = ["## SWE clarification (evaluate@swe)", "",
             (f"{summary['cases']} cases from {summary['issues']} issues ({summary['case_source']}, split "
              f"{summary['split']['evaluated']}). Values are means with 95% percentile-bootstrap intervals over "
              "issues."), "",
             SWE_HEADER, "|---" * SWE_HEADER.count(" | ") + "|---|"]
    lines += [_line(_method_cells(name, methods[name])) for name in order]
    if summary["reference_order"]:
        header = SWE_HEADER.replace("| kind |", "| kind | reference | reads |")
        lines += ["", f"### {REFERENCE_TITLE}", "", REFERENCE_NOTE, "", header, "|---" * header.count(" | ") + "|---|"]
        for name in summary["reference_order"]:
            cells = _method_cells(name, reference[name])
            lines.append(_line([*cells[:2], reference[name]["reference"]["kind"],
                                reference[name]["reference"]["reads"], *cells[2:]]))
    # the per-method detail tables list every row; a reference row is labelled as such
    every = {**{name: methods[name] for name in order},
             **{f"{name} (reference)": reference[name] for name in summary["reference_order"]}}
    lines += ["", "Question categories (share of each method's questions):", "",
              "| method | " + " | ".join(NAMES[label] for label in LABELS) + " |",
              "|---|" + "---|" * len(LABELS)]
    for name, m in every.items():
        shares = m.get("category_share")
        if shares and m.get("questions"):
            lines.append(f"| {name} | " + " | ".join(_fmt(shares.get(label), pct=True) for label in LABELS) + " |")
    stages = [k for k in next((m for m in every.values() if m.get("cases")), {}) if k.startswith("reward_")
              and k.endswith("_mean") and k != "reward_mean"]
    if stages:
        lines += ["", "Staged reward by stage (mean over cases):", "",
                  "| method | " + " | ".join(s[len("reward_"):-len("_mean")] for s in stages) + " |",
                  "|---|" + "---|" * len(stages)]
        for name, m in every.items():
            if m.get("cases"):
                lines.append(f"| {name} | " + " | ".join(_fmt(m[s]) for s in stages) + " |")
    lines += efficiency_lines(every)
    trained = [f"{n} trained on {methods[n]['trained_on_source_ids']} issues (overlap with the evaluated ones: "
               f"{methods[n]['training_overlap']})" for n in order if "trained_on_source_ids" in methods[n]]
    notes = [f"- Split: {_split_line(summary['split'])}" + (f"; {'; '.join(trained)}." if trained else "."),
             f"- Category weights: {summary['weights']['source']}.",
             f"- Resolution: {summary['surrogate'].get('label')}" + (
                 f" (model trained on {summary['surrogate']['trained_on']}; reference: incomplete issue "
                 f"{_fmt(summary['surrogate']['reference'].get('incomplete_issue'), pct=True)}, full issue "
                 f"{_fmt(summary['surrogate']['reference'].get('full_issue'), pct=True)})."
                 if summary["surrogate"].get("reference") else "."),
             ("- A hidden category is recovered when a question classified into it was answered by the simulated "
              "user.")]
    for name, m in every.items():
        if m.get("measured_resolution"):
            notes.append(f"- {name}: measured resolution from {m['measured_resolution']['source']}.")
    for name, m in every.items():
        if m.get("skipped_cases"):
            reasons = ", ".join(f"{k}: {v}" for k, v in m["skipped"].items())
            notes.append(f"- {name}: {m['skipped_cases']} cases skipped ({reasons}).")
    if summary.get("published_note"):
        notes.append(f"- Published sets: {summary['published_note']}.")
    backends = "; ".join(f"{name}: {d.get('model') or d.get('implementation')} ({d['backend']})"
                         for name, d in summary["roles"].items())
    notes.append(f"- Roles: {backends}.")
    if summary.get("abstention"):
        from tasks.evaluation.swe_abstain import abstention_lines

        lines += ["", *abstention_lines(summary["abstention"])]
    return "\n".join(lines + ["", *notes]) + "\n"


def split_metrics(summary: dict[str, Any], inputs: SweInputs, settings: SweEvalSettings) -> dict[str, Any]:
    """The stage metrics' ``split``: the split evaluated, its counts, and each trained policy's training ids."""
    cases = {k: v for k, v in summary["split"].items() if k != "evaluated"}
    policies = {name: {"split": settings.split, "cases": summary["cases"], "source_ids": summary["issues"], **row}
                for name, row in inputs.trained.items()}
    return {"evaluated": settings.split, "cases": cases, "policies": policies}


def _split_line(split: dict[str, Any]) -> str:
    counts = ", ".join(f"{v['cases']} {k} cases from {v['source_ids']} issues" for k, v in split.items()
                       if isinstance(v, dict) and v["cases"])
    return f"{split['evaluated']} evaluated ({counts or 'no cases'})"


def summary_frame(summary: dict[str, Any]):
    """One row per method, ranked and reference alike, for the ``swe_eval_summary`` suite: metrics and each CI's
    bounds."""
    import pandas as pd

    from tasks.evaluation.swe_metrics import ISSUE_METRICS, QUESTION_METRICS

    names = (*ISSUE_METRICS, *QUESTION_METRICS)
    every = {**summary["methods"], **summary["reference_methods"]}
    rows = []
    for key in [*summary["method_order"], *summary["reference_order"]]:
        m = every[key]
        row: dict[str, Any] = {"key": key, "cases": m.get("cases", 0), "skipped_cases": m.get("skipped_cases", 0)}
        for name in names:
            row[name] = m.get(name)
            bounds = (m.get("CI95") or {}).get(name)
            row[f"{name}_low"], row[f"{name}_high"] = bounds if bounds else (None, None)
        shares = [v for v in (m.get("category_share") or {}).values() if v is not None]
        row["category_share_sum"] = sum(shares) if shares else None
        eff = m.get("efficiency") or {}
        for name in EFFICIENCY_COLUMNS:
            row[name] = eff.get(name)
        rows.append(row)
    frame = pd.DataFrame(rows)
    return frame.astype({c: "float64" for c in frame.columns if c not in ("key", "cases", "skipped_cases")})


def rows_frame(rows_or_dir: Sequence[dict] | Path):
    """One row per (method, case) for the ``swe_eval_rows`` suite (from the rows or the output folder)."""
    import pandas as pd

    from tasks.evaluation.swe_metrics import LABELS

    if isinstance(rows_or_dir, Path | str):
        text = (Path(rows_or_dir) / "rows.jsonl").read_text(encoding="utf-8")
        rows = [json.loads(line) for line in text.splitlines() if line.strip()]
    else:
        rows = list(rows_or_dir)
    frame = pd.DataFrame([{
        "key": r["key"], "method": r["method"], "case_id": r["case_id"], "skipped": r["skipped"] is not None,
        "n_questions": r["n_questions"], "recall": r["recall"], "weighted_recovery": r["weighted_recovery"],
        "predicted_resolution": r["predicted_resolution"],
        "recovered_within_hidden": set(r["recovered"]) <= set(r["hidden"]),
        "labels_known": all(q["label"] is None or q["label"] in LABELS for q in r["questions"]),
        "n_hidden": len(r["hidden"]),
    } for r in rows], columns=["key", "method", "case_id", "skipped", "n_questions", "recall", "weighted_recovery",
                               "predicted_resolution", "recovered_within_hidden", "labels_known", "n_hidden"])
    return frame.astype(dict.fromkeys(("recall", "weighted_recovery", "predicted_resolution"), "float64"))
