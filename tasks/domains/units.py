"""Unit domains: complete free-text records cut into typed units, then filter -> mask -> annotate (OR-Clarify style).

:class:`UnitDomain` implements the stage side of the domain API (``construct``, ``write``, ``validation_table``,
``check_inputs``) once, from the finer hooks a domain overrides:

- ``decompose(record)`` (or ``decompose_many`` for a role-backed decomposer): typed units;
- ``hide_candidates(units)``: the filter (default: a unit is a candidate when its kind is in ``taxonomy.hideable``);
- ``choose_hidden(record_id, eligible, cfg)``: the masking policy (default: about ``hide_fraction`` of the
  candidates, at least ``min_hidden``, at most ``max_hidden``, seeded per record, one case per record);
- ``severity`` / ``reference_questions`` / ``simulated_answer`` / ``slot_name`` / ``hit_rule`` / ``failure_modes``
  (or ``annotate_many`` for a role-backed annotator): each hidden unit's slot rubric;
- ``case_categories(units, hidden_ids)``: the CLARITI categories a question-list domain's case is present, hidden
  and visible in (default: none, for episode domains).

The public brief is rendered by the shared ``rewriter`` role (local: the visible units joined in order). Cases are
the unified ``Case`` records; ``cases.jsonl`` is written and gated by the ``unit_cases`` suite (unique ids, hidden
units exist and are not visible, visible + hidden = all units, severities valid, no hidden unit verbatim in the
brief, rubric fields filled). Chunks of records are built by one Prefect task each, cached by content (the records,
the params, the roles and the source of the domain's modules).
"""

from __future__ import annotations

import sys
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from tasks import caching, records, store
from tasks.caching import RunStats
from tasks.cluster import ClusterParams, fan_out
from tasks.domain_context import JudgeHints
from tasks.domains.api import ConstructResult, Evaluation, Severity, Taxonomy
from tasks.errors import InputError
from tasks.limits import MAX_TEXT_CHARS
from tasks.params import RUNNER_KEYS, SPLIT_KEYS, FanOutParams, SplitParams, check_hidden_range, section
from tasks.records import SAFE_ID, Brief, Case, CaseMetadata, Eligibility, HiddenSlot, NonBlankText, Unit, check_units

SEVERITIES = ("P0", "P1", "P2")


class UnitConstructParams(SplitParams, FanOutParams):
    """``params.yaml: construct.<name>`` of a unit domain."""

    source: Literal["samples"] = "samples"
    samples_path: str | None = None
    """JSON Lines of complete records; default ``data/samples/<name>/records.jsonl``."""
    limit: int | None = Field(default=None, ge=1)
    hide_fraction: float = Field(default=0.5, gt=0.0, le=1.0)
    min_hidden: int = Field(default=1, ge=1)
    max_hidden: int = Field(default=3, ge=1)
    seed: int = 0
    chunk_size: int = Field(default=8, ge=1)

    @model_validator(mode="after")
    def _range(self) -> UnitConstructParams:
        check_hidden_range(self.min_hidden, self.max_hidden)
        return self


class TextRecord(NonBlankText):
    """One complete record of a unit domain (a request, a task, ...): free text, optionally already cut into units."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    id: str = Field(pattern=SAFE_ID)
    title: str = ""
    text: str = Field(max_length=MAX_TEXT_CHARS)
    units: list[Unit] | None = None
    """Already decomposed units; None means ``decompose`` cuts ``text``."""


class SlotRubric(BaseModel):
    """What the annotation step produces for one hidden unit (the slot minus its id and unit ids)."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(pattern=r"^[a-z0-9]+(?:_[a-z0-9]+){0,7}$")
    severity: Severity
    severity_reason: str = Field(min_length=1)
    reference_questions: list[str] = Field(min_length=2)
    semantic_hit_rule: str = Field(min_length=1)
    failure_modes: list[str] = Field(min_length=1)
    simulator_answer: str = Field(min_length=1)


class SlotRequest(BaseModel):
    """One hidden unit to annotate, with the whole record and the brief the agent will see."""

    model_config = ConfigDict(extra="forbid")

    problem_id: str
    unit: Unit
    units: list[Unit]
    visible_brief: str = ""


SKIPPED = "skipped: "
"""Notes keyed ``skipped: <reason>`` count the records or variants left out, by reason (``skipped`` in the metrics)."""
SKIP_NO_UNITS = "no text units (the record is empty or only control characters)"
SKIP_EMPTY_BRIEF = "empty brief (nothing left visible after hiding)"


SKIP_NO_ELIGIBLE = "no unit that may be hidden"


def _has_text(units: list) -> bool:
    """Whether any unit holds a letter or digit (control characters and punctuation alone are no text)."""
    return any(any(ch.isalnum() for ch in u.content) for u in units)


def skipped_reasons(notes: dict) -> dict[str, int]:
    """``{reason: count}`` of the records and variants a construction left out."""
    return {k.removeprefix(SKIPPED): int(v) for k, v in sorted(notes.items()) if k.startswith(SKIPPED) and v}


def _failure(record_id: str, role: str, failure: Any) -> dict:
    return {"problem_id": record_id, "role": role, "kind": failure.kind, "message": failure.message}


FAILURE_KINDS = "failure_kinds"


def sum_usage(usages: Sequence[dict], roles: Sequence[str]) -> dict[str, dict]:
    """The chunks' accounting snapshots (``{role: {requests, failures, ..., failure_kinds: {kind: n}}}``) summed per
    role: every number, and the failed requests by kind under ``failure_kinds``."""
    out: dict[str, dict] = {r: {FAILURE_KINDS: Counter()} for r in roles}
    for usage in usages:
        for role, counts in usage.items():
            row = out.setdefault(role, {FAILURE_KINDS: Counter()})
            for key, value in counts.items():
                if isinstance(value, int | float) and not isinstance(value, bool):
                    row[key] = row.get(key, 0) + value
            row[FAILURE_KINDS].update(counts.get(FAILURE_KINDS) or {})
    return out


# ---- one chunk of records -> cases (JSON in, JSON out: cacheable by content) ----------------------------------------


def build_unit_chunk(domain: str, records_in: list[dict], cfg: dict, roles: dict) -> dict:
    """Decompose, filter, mask and annotate a chunk of records of ``domain``; the cases plus notes and failures."""
    from tasks.construction import brief
    from tasks.domains import get_domain
    from tasks.llm.client import LLMClient
    from tasks.llm.records import RoleFailure
    from tasks.roles.config import RolesParams

    dom: UnitDomain = get_domain(domain)  # type: ignore[assignment]
    params = dom.params_model.model_validate(cfg)
    role_cfg = RolesParams.model_validate(roles)
    client = LLMClient()
    items = [dom.record_model.model_validate(r) for r in records_in]
    notes: Counter = Counter()
    units_of, failures = dom.decompose_many(items, role_cfg, client)
    failed_ids = {f["problem_id"] for f in failures}

    # filter + mask
    plans: list[dict] = []
    for record in items:
        rid = dom.record_id(record)
        units = units_of.get(rid)
        if not units or not _has_text(units):
            if rid not in failed_ids:  # a decomposer failure is counted as a role failure instead
                notes[SKIPPED + SKIP_NO_UNITS] += 1
            continue
        decisions = dom.hide_candidates(units)
        eligible = [d.unit_id for d in decisions if d.eligible]
        notes["units"] += len(units)
        notes["eligible_units"] += len(eligible)
        notes["dropped_as_implied"] += sum(1 for d in decisions if not d.eligible and d.reason.startswith("implied"))
        candidates = [u for u in units if u.id in set(eligible)]
        variants = [list(v) for v in dom.choose_hidden(rid, candidates, params, units=units) if v]
        if not variants:
            notes["records_without_eligible_unit"] += 1
            notes[SKIPPED + SKIP_NO_ELIGIBLE] += 1
            continue
        for n, hidden_ids in enumerate(variants, start=1):
            if not _has_text([u for u in units if u.id not in set(hidden_ids)]):
                notes[SKIPPED + SKIP_EMPTY_BRIEF] += 1  # e.g. "Minimise cost.": its only unit was hidden
                continue
            case_id = rid if len(variants) == 1 else f"{rid}__v{n}"
            plans.append({"record": record, "case_id": case_id, "units": units, "decisions": decisions,
                          "hidden": hidden_ids})

    # brief
    requests = []
    for plan in plans:
        visible = [u for u in plan["units"] if u.id not in plan["hidden"]]
        hidden = [u for u in plan["units"] if u.id in plan["hidden"]]
        requests.append((brief.RewriteInput(problem_id=dom.record_id(plan["record"]), units=visible), hidden))
    briefs, brief_notes = brief.render_briefs(requests, role_cfg.rewriter, client=client)
    notes.update(brief_notes)

    # annotate every hidden slot
    slot_inputs, owners = [], []
    for n, (plan, text) in enumerate(zip(plans, briefs)):
        for uid in plan["hidden"]:
            unit = next(u for u in plan["units"] if u.id == uid)
            slot_inputs.append(SlotRequest(problem_id=dom.record_id(plan["record"]), unit=unit, units=plan["units"],
                                           visible_brief=text))
            owners.append(n)
    annotations = dom.annotate_many(slot_inputs, role_cfg, client) if slot_inputs else []
    per_plan: dict[int, list] = {}
    for owner, inp, out in zip(owners, slot_inputs, annotations):
        per_plan.setdefault(owner, []).append((inp.unit, out))

    cases: list[dict] = []
    for n, (plan, text) in enumerate(zip(plans, briefs)):
        record = plan["record"]
        rid = dom.record_id(record)
        bad = [out for _, out in per_plan.get(n, []) if isinstance(out, RoleFailure)]
        if bad:
            failures.extend(_failure(rid, dom.annotator_role, b) for b in bad)
            continue
        slots = [
            HiddenSlot(
                slot_id=f"H{k}", name=ann.name, severity=ann.severity, severity_reason=ann.severity_reason,
                unit_ids=[unit.id], simulator_answer=ann.simulator_answer, reference_questions=ann.reference_questions,
                semantic_hit_rule=ann.semantic_hit_rule, failure_modes=ann.failure_modes,
            )
            for k, (unit, ann) in enumerate(per_plan[n], start=1)
        ]
        case = Case(
            metadata=CaseMetadata(benchmark=dom.benchmark, case_id=plan["case_id"], domain=dom.name, source_id=rid,
                                  seed=params.seed),
            units=plan["units"],
            hidden_slots=slots,
            brief=Brief(content=text, visible_unit_ids=[u.id for u in plan["units"] if u.id not in plan["hidden"]]),
            full_text="\n\n".join(u.content for u in plan["units"]),
            extra=dom.case_extra(record, plan["decisions"]),
            **dom.case_categories(plan["units"], plan["hidden"]),
        )
        cases.append(case.model_dump(mode="json"))
    usage = client.accounting.snapshot()
    return {"cases": cases, "notes": dict(notes), "failures": failures,
            "usage": {r: usage.get(r, {}) for r in dom.roles_used}}


def _load_for_cache(domain: str, source: Path, cfg: dict, root: str) -> list[dict]:
    # ``source`` is only here so the cache key covers the source's content.
    from tasks.domains import get_domain

    dom: UnitDomain = get_domain(domain)  # type: ignore[assignment]
    return [r.model_dump(mode="json") for r in dom.load_records(dom.params_model.model_validate(cfg), Path(root))]


# ---- the base class ----------------------------------------------------------------------------------------------


class UnitDomain:
    """A domain of free-text records cut into typed units; subclasses set the class attributes and the hooks."""

    name: ClassVar[str]
    benchmark: ClassVar[str] = "clarifyflow"
    evaluation: ClassVar[Evaluation] = "episodes"
    taxonomy: ClassVar[Taxonomy]
    judge_hints: ClassVar[JudgeHints]
    params_model: ClassVar[type[BaseModel]] = UnitConstructParams
    record_model: ClassVar[type[BaseModel]] = TextRecord
    default_samples: ClassVar[str] = "records.jsonl"
    """File name under ``data/samples/<name>/`` when ``samples_path`` is not set."""
    roles_used: ClassVar[tuple[str, ...]] = ("rewriter",)
    annotator_role: ClassVar[str] = "annotator"
    """The name failures of ``annotate_many`` are recorded under."""
    construction_backend: ClassVar[str] = ("rules: domain decomposer, kind filter, seeded unit choice, rubric "
                                           "templates (roles.rewriter renders the brief)")
    record_label: ClassVar[str] = "records"
    suite: ClassVar[str] = "unit_cases"
    simulator: ClassVar[dict[str, str]] = {}
    """``extra.simulator`` of every case (who the simulated user is; optional)."""
    user_aspects: ClassVar[dict[str, list[str]]] = {}
    """Per hideable kind, how questions about it are usually put: the simulated user's local backend matches a
    question against them as well as against the fact (``tasks/roles/or_user.py``). Empty: facts only."""

    # ---- params and inputs -------------------------------------------------------------------------------------

    def parse_params(self, params_path: Path, data: Any) -> Any:
        return section(params_path, self.params_model, data, f"construct.{self.name}")

    def source_path(self, cfg: Any, root: Path) -> Path:
        return root / (cfg.samples_path or f"data/samples/{self.name}/{self.default_samples}")

    def record_id(self, record: Any) -> str:
        return record.id

    def load_records(self, cfg: Any, root: Path) -> list[Any]:
        path = self.source_path(cfg, root)
        if not path.is_file():
            raise InputError(path, f"file not found (set construct.{self.name}.samples_path)")
        items = store.read_jsonl(path, self.record_model)
        seen: dict[str, int] = {}
        for i, item in enumerate(items, start=1):
            rid = self.record_id(item)
            if rid in seen:
                raise InputError(path, f"duplicate id {rid!r} (first at record {seen[rid]})", record=i, field="id")
            seen[rid] = i
            check_units(getattr(item, "units", None), kinds=self.taxonomy.kinds, path=path, record=f"{i} ({rid})")
        return items[: cfg.limit] if cfg.limit else items

    def check_inputs(self, cfg: Any, root: Path) -> None:
        if not self.load_records(cfg, root):
            raise InputError(self.source_path(cfg, root), "no records")

    # ---- decompose -------------------------------------------------------------------------------------------

    def decompose(self, record: Any) -> list[Unit]:
        raise NotImplementedError(f"{type(self).__name__}.decompose")

    def decompose_many(self, items: Sequence[Any], roles: Any, client: Any) -> tuple[dict[str, list[Unit]], list[dict]]:
        """Units per record id, and failures (a record that cannot be decomposed is left out and reported)."""
        units_of: dict[str, list[Unit]] = {}
        for item in items:
            given = getattr(item, "units", None)
            units_of[self.record_id(item)] = list(given) if given is not None else self.decompose(item)
        return units_of, []

    # ---- filter and mask ---------------------------------------------------------------------------------------

    def hide_candidates(self, units: Sequence[Unit]) -> list[Eligibility]:
        hideable = set(self.taxonomy.hideable)
        return [Eligibility(unit_id=u.id, eligible=u.kind in hideable, reason=u.kind) for u in units]

    def choose_hidden(self, record_id: str, candidates: Sequence[Unit], cfg: Any,
                      units: Sequence[Unit] = ()) -> list[list[str]]:
        from tasks.construction.brief import choose_hidden

        return [choose_hidden(record_id, cfg.seed, [u.id for u in candidates], fraction=cfg.hide_fraction,
                              min_hidden=cfg.min_hidden, max_hidden=cfg.max_hidden)]

    # ---- annotate ----------------------------------------------------------------------------------------------

    def slot_name(self, unit: Unit, units: Sequence[Unit]) -> str:
        from tasks.construction.slot_names import slot_name

        return slot_name(unit)

    def severity(self, hidden: Sequence[Unit], units: Sequence[Unit]) -> tuple[Severity | None, str]:
        return "P1", "Without it the deliverable is materially incomplete."

    def reference_questions(self, hidden: Sequence[Unit], units: Sequence[Unit]) -> list[str]:
        raise NotImplementedError(f"{type(self).__name__}.reference_questions")

    def hit_rule(self, unit: Unit, units: Sequence[Unit]) -> str:
        return f"The agent asks specifically about the {unit.kind.replace('_', ' ')} this request leaves open."

    def failure_modes(self, unit: Unit, units: Sequence[Unit]) -> list[str]:
        return [f"Guessing the {unit.kind.replace('_', ' ')} instead of asking"]

    def simulated_answer(self, hidden: Sequence[Unit], units: Sequence[Unit]) -> str:
        return " ".join(" ".join(u.content.split()) for u in hidden)

    def annotate(self, request: SlotRequest) -> SlotRubric:
        unit, units = request.unit, request.units
        level, reason = self.severity([unit], units)
        return SlotRubric(name=self.slot_name(unit, units), severity=level or "P1", severity_reason=reason,
                          reference_questions=self.reference_questions([unit], units),
                          semantic_hit_rule=self.hit_rule(unit, units), failure_modes=self.failure_modes(unit, units),
                          simulator_answer=self.simulated_answer([unit], units))

    def annotate_many(self, requests: Sequence[SlotRequest], roles: Any, client: Any) -> list[Any]:
        """One rubric (or RoleFailure) per request, aligned."""
        return [self.annotate(r) for r in requests]

    def case_extra(self, record: Any, decisions: Sequence[Eligibility]) -> dict[str, Any]:
        extra: dict[str, Any] = {"construction": {"eligibility": [d.model_dump(mode="json") for d in decisions],
                                                  "title": getattr(record, "title", "")}}
        if self.simulator:
            extra["simulator"] = dict(self.simulator)
        return extra

    def case_categories(self, units: Sequence[Unit], hidden_ids: Sequence[str]) -> dict[str, Any]:
        """Case fields a question-list evaluation reads (``present_categories``, ``hidden_categories``,
        ``visible_categories``: CLARITI categories) for a case of ``units`` hiding ``hidden_ids``; empty (the fields'
        defaults) for an episode domain."""
        return {}

    # ---- evaluation hooks ----------------------------------------------------------------------------------------

    @property
    def gap_inventory(self):
        return None

    # ---- the stage ---------------------------------------------------------------------------------------------

    def code_modules(self) -> tuple:
        """Modules whose source keys the construction cache: the shared machinery and the domain's own modules."""
        import importlib

        from tasks.construction import brief, segment, slot_names
        from tasks.domains import module_name

        own = importlib.import_module(module_name(self.name) or type(self).__module__)
        return (records, store, brief, segment, slot_names, sys.modules[__name__], *caching.package_modules(own))

    def _prefect_tasks(self):
        load_task = caching.cached_task(f"{self.name}-load", modules=(store, records, *self.code_modules()),
                                        retries=0)(_load_for_cache)
        build_task = caching.cached_task(f"{self.name}-build-chunk", modules=self.code_modules(),
                                         retries=0)(build_unit_chunk)
        return load_task, build_task

    def construct(self, cfg: Any, root: Path, *, roles: Any = None, refresh_cache: bool = False,
                  cluster: ClusterParams | None = None) -> ConstructResult:
        from tqdm import tqdm

        from tasks.roles.config import RolesParams

        load_task, build_task = self._prefect_tasks()
        if refresh_cache:
            load_task = load_task.with_options(refresh_cache=True)
            build_task = build_task.with_options(refresh_cache=True)
        roles = roles or RolesParams()
        stats = RunStats()
        cfg_json = cfg.model_dump(mode="json", exclude=SPLIT_KEYS | RUNNER_KEYS)  # the split comes after the tasks
        roles_json = {name: roles.get(name).model_dump(mode="json") for name in self.roles_used}
        load_state = load_task(self.name, self.source_path(cfg, root), cfg_json, str(root), return_state=True)
        stats.add_state(load_state)
        items = load_state.result()
        chunks = [items[i : i + cfg.chunk_size] for i in range(0, len(items), cfg.chunk_size)]
        calls = [{"domain": self.name, "records_in": chunk, "cfg": cfg_json, "roles": roles_json} for chunk in chunks]
        built = fan_out(build_task, calls, runner=cfg.task_runner, concurrency=cfg.concurrency, cluster=cluster)
        cases: list[Case] = []
        notes: Counter = Counter()
        failures: list[dict] = []
        usages: list[dict] = []
        for part, state in tqdm(built, total=len(calls), desc=f"construct {self.name}", unit="chunk", leave=False):
            stats.add_state(state)
            if part["failures"]:  # only successes stay cached: a rerun retries this chunk's failed calls
                caching.forget_result(state)
            cases.extend(Case.model_validate(c) for c in part["cases"])
            notes.update(part["notes"])
            failures.extend(part["failures"])
            usages.append(part["usage"])
        cases.sort(key=lambda c: c.case_id)
        metrics = self.metrics(cfg, items, cases, notes, failures, sum_usage(usages, self.roles_used), roles)
        return ConstructResult(cases=cases, metrics=metrics, stats=stats)

    def metrics(self, cfg, items, cases, notes, failures, usage, roles) -> dict:
        from tasks.roles.config import describe_roles

        severities = Counter(s.severity for c in cases for s in c.hidden_slots)
        hidden_kinds = Counter(u.kind for c in cases for s in c.hidden_slots for u in c.units if u.id in s.unit_ids)
        described = describe_roles(roles)
        units = notes.get("units", 0)
        fallbacks = notes.get("rewriter_failures", 0) + notes.get("rewriter_leak_fallbacks", 0)
        return {
            "backend": self.construction_backend,
            "source": cfg.source,
            self.record_label: len(items),
            "cases": len(cases),
            "units": units,
            "eligible_units": notes.get("eligible_units", 0),
            "eligible_share": round(notes.get("eligible_units", 0) / units, 4) if units else 0.0,
            "dropped_as_implied": notes.get("dropped_as_implied", 0),
            f"{self.record_label}_without_eligible_unit": notes.get("records_without_eligible_unit", 0),
            "hidden_slots": sum(len(c.hidden_slots) for c in cases),
            "hidden_per_severity": {s: severities.get(s, 0) for s in SEVERITIES},
            "hidden_per_kind": dict(sorted(hidden_kinds.items())),
            "role_failures": len(failures),
            "skipped": skipped_reasons(notes),
            "rewriter_leak_fallbacks": notes.get("rewriter_leak_fallbacks", 0),
            # briefs rendered by the local join instead of the LLM rewriter (a failed call or a leaking brief)
            "fallbacks": {"rewriter": fallbacks},
            "roles": {r: {**described[r], **{k: round(v, 4) for k, v in usage[r].items() if k != FAILURE_KINDS},
                          **({"fallbacks": fallbacks} if r == "rewriter" and described[r]["backend"] == "llm" else {}),
                          # an LLM role's failed requests by kind (provider, invalid_output, truncated, transient)
                          **({"failures_by_kind": dict(sorted(usage[r].get(FAILURE_KINDS, {}).items()))}
                             if described[r]["backend"] == "llm" else {})}
                      for r in self.roles_used},
        }

    def write(self, result: ConstructResult, folder: Path) -> None:
        store.atomic_write_text(folder / "cases.jsonl", store.jsonl_text(result.cases))

    def validation_table(self, result: ConstructResult):
        import pandas as pd

        from tasks.text import normalise_ws

        rows = []
        for case in result.cases:
            ids = [u.id for u in case.units]
            hidden = [uid for s in case.hidden_slots for uid in s.unit_ids]
            visible = case.brief.visible_unit_ids
            brief_norm = normalise_ws(case.brief.content)
            required = [case.brief.content] + [
                v for s in case.hidden_slots
                for v in (s.name, s.severity_reason, s.simulator_answer, s.semantic_hit_rule)
            ]
            rows.append({
                "case_id": case.case_id,
                "n_hidden": len(case.hidden_slots),
                "hidden_units_exist": set(hidden) <= set(ids),
                "hidden_not_visible": not (set(hidden) & set(visible)),
                "units_partitioned": sorted(set(hidden) | set(visible)) == sorted(ids) and len(set(ids)) == len(ids),
                "severity": ",".join(sorted({str(s.severity) for s in case.hidden_slots})),
                "severities_valid": all(s.severity in SEVERITIES for s in case.hidden_slots),
                "leak_free": not any(normalise_ws(u.content) in brief_norm
                                     for u in case.units if u.id in hidden),
                "slot_ids_unique": len({s.slot_id for s in case.hidden_slots}) == len(case.hidden_slots),
                "required_fields_filled": all(str(v).strip() for v in required)
                and all(len(s.reference_questions) >= 2 and s.failure_modes for s in case.hidden_slots),
            })
        return self.suite, pd.DataFrame(rows)


# ---- a gap inventory from the taxonomy (for domains without a hand-written one) -----------------------------------


class KindGapInventory:
    """Gaps = the hideable kinds the brief does not state, each asked with its template question.

    ``classify(text, first=..., structured=...)`` types one segment of the brief (the domain's own rules);
    ``questions`` maps a hideable kind to ``(InterOPT gap category, question, {A, B, C} hypotheses)``. Kinds come in
    the order of ``questions``, so the first one is asked first.
    """

    def __init__(self, name: str, classify: Any, questions: dict[str, tuple[str, str, dict[str, str]]],
                 goal_kind: str | None = None):
        self.name = name
        self.classify = classify
        self.questions = questions
        self.goal_kind = goal_kind
        self.goal_placeholder = f"the {goal_kind.replace('_', ' ')}" if goal_kind else "the goal of the request"

    def stated(self, brief: str) -> list[tuple[str, str]]:
        """``(kind, text)`` of every segment of the brief."""
        from tasks.construction.segment import segment

        return [(self.classify(s.content, first=i == 0, structured=s.structured), s.content)
                for i, s in enumerate(segment(brief))] if brief.strip() else []

    def gaps(self, brief: str):
        from tasks.domain_context import GapCandidate

        stated = {kind for kind, _ in self.stated(brief)}
        first = brief.strip().splitlines()[0][:200] if brief.strip() else ""
        return tuple(
            GapCandidate(key=kind, category=category, description=f"The {kind.replace('_', ' ')} is not stated.",
                         evidence_quote=first, question=question, options=dict(options), priority=rank)
            for rank, (kind, (category, question, options)) in enumerate(self.questions.items())
            if kind not in stated
        )

    def facts(self, brief: str):
        from tasks.domain_context import BriefFacts

        stated = {kind for kind, _ in self.stated(brief)}
        return BriefFacts(entities=[], time_unit=None, has_objective=self.goal_kind in stated, objective_hint="output",
                          has_demand=False, has_demand_policy=False, mentions_integrality=False)

    def interview(self, brief: str) -> list[str] | None:
        return [question for _, question, _ in self.questions.values()]

    def goal(self, brief: str) -> str:
        return next((text[:200] for kind, text in self.stated(brief) if kind == self.goal_kind), "")
