"""Optimisation domain (OR-Clarify construction): complete problems -> decompose -> filter -> mask -> annotate.

Per problem: units come from the source (TOML) or the ``decomposer`` role; ``eligibility`` marks the hide
candidates (and why every unit was kept or dropped); ``choose_hidden`` picks about ``hide_fraction`` of them,
seeded per problem; the ``rewriter`` role renders the public brief from the visible units; the ``slot_annotator``
role writes each hidden slot's rubric. Output: one OR-Clarify 0.3 TOML per case plus a JSONL index in the unified
schema (whose ``extra.construction`` keeps the eligibility decisions).
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path
from typing import Any

from tqdm import tqdm

from tasks import caching, records, store
from tasks.caching import RunStats
from tasks.domains import ConstructResult
from tasks.errors import InputError
from tasks.orclarify import SEVERITIES
from tasks.orclarify.problems import ProblemRecord, load_problem_samples, load_problems_from_toml
from tasks.params import OptimizationConstructParams, section
from tasks.records import Brief, Case, CaseMetadata, HiddenSlot, Unit
from tasks.roles.config import RolesParams, describe_roles

BENCHMARK = "OR-Clarify"
CONSTRUCTION_BACKEND = "rules: eligibility filter + seeded unit choice (roles named under roles.*)"
FORMAT_TABLES = ("simulator", "solver_verification")
SIMULATOR = {
    "business_role": "the manager who owns this planning problem and knows its business facts",
    "knowledge_boundary": (
        "Knows every hidden-slot answer when asked, answers only the current question, and never invents facts "
        "beyond the problem units."
    ),
}
SOLVER_VERIFICATION = {
    "status": "not_run",
    "solver_script": "",
    "verified_at": "",
    "objective_value": "",
    "solution": "",
    "notes": "No solver run has been recorded for this case.",
}
ROLES_USED = ("decomposer", "slot_annotator", "rewriter")


def source_path(cfg: OptimizationConstructParams, root: Path) -> Path:
    return root / (cfg.samples_path if cfg.source == "samples" else cfg.orclarify_path)


def load_problems(cfg: OptimizationConstructParams, root: Path) -> list[ProblemRecord]:
    path = source_path(cfg, root)
    if cfg.source == "samples":
        if not path.is_file():
            raise InputError(path, "file not found (set construct.optimization.samples_path)")
        problems = load_problem_samples(path)
    else:
        problems = load_problems_from_toml(path)
    return problems[: cfg.limit] if cfg.limit else problems


# ---- one chunk of problems -> cases (JSON in, JSON out: cacheable by content) ----------------------------------------


def _failure(problem_id: str, role: str, failure) -> dict:
    return {"problem_id": problem_id, "role": role, "kind": failure.kind, "message": failure.message}


def build_chunk(problems: list[dict], cfg: dict, roles: dict) -> dict:
    from tasks.llm.client import LLMClient
    from tasks.orclarify import annotate, brief, decompose
    from tasks.orclarify.eligibility import eligibility
    from tasks.roles.base import RoleFailure, run_role

    params = OptimizationConstructParams.model_validate(cfg)
    role_cfg = RolesParams.model_validate(roles)
    client = LLMClient()
    records_in = [ProblemRecord.model_validate(p) for p in problems]
    notes: Counter = Counter()
    failures: list[dict] = []

    # decompose (only problems given as free text)
    to_split = [p for p in records_in if p.units is None]
    split = run_role(decompose.SPEC, [decompose.DecomposeInput(problem_id=p.problem_id, text=p.text) for p in to_split],
                     role_cfg.decomposer, client=client)
    units_of: dict[str, list[Unit]] = {p.problem_id: list(p.units) for p in records_in if p.units is not None}
    for problem, out in zip(to_split, split):
        if isinstance(out, RoleFailure):
            failures.append(_failure(problem.problem_id, "decomposer", out))
            continue
        units_of[problem.problem_id] = decompose.to_units(out)

    # filter + mask
    plans: list[dict] = []
    for problem in records_in:
        units = units_of.get(problem.problem_id)
        if not units:
            continue
        decisions = eligibility(units)
        eligible = [d.unit_id for d in decisions if d.eligible]
        notes["units"] += len(units)
        notes["eligible_units"] += len(eligible)
        notes["dropped_as_implied"] += sum(1 for d in decisions if not d.eligible and d.reason.startswith("implied"))
        hidden_ids = brief.choose_hidden(problem.problem_id, params.seed, eligible, fraction=params.hide_fraction,
                                         min_hidden=params.min_hidden, max_hidden=params.max_hidden)
        if not hidden_ids:
            notes["problems_without_eligible_unit"] += 1
            continue
        plans.append({"problem": problem, "units": units, "decisions": decisions, "hidden": hidden_ids})

    # brief
    requests = []
    for plan in plans:
        visible = [u for u in plan["units"] if u.id not in plan["hidden"]]
        hidden = [u for u in plan["units"] if u.id in plan["hidden"]]
        requests.append((brief.RewriteInput(problem_id=plan["problem"].problem_id, units=visible), hidden))
    briefs, brief_notes = brief.render_briefs(requests, role_cfg.rewriter, client=client)
    notes.update(brief_notes)

    # annotate every hidden slot
    slot_inputs, owners = [], []
    for n, (plan, text) in enumerate(zip(plans, briefs)):
        for uid in plan["hidden"]:
            unit = next(u for u in plan["units"] if u.id == uid)
            slot_inputs.append(annotate.SlotAnnotateInput(problem_id=plan["problem"].problem_id, unit=unit,
                                                          units=plan["units"], visible_brief=text))
            owners.append(n)
    annotations = run_role(annotate.SPEC, slot_inputs, role_cfg.slot_annotator, client=client)
    per_plan: dict[int, list] = {}
    for owner, inp, out in zip(owners, slot_inputs, annotations):
        per_plan.setdefault(owner, []).append((inp.unit, out))

    cases: list[dict] = []
    for n, (plan, text) in enumerate(zip(plans, briefs)):
        problem = plan["problem"]
        bad = [out for _, out in per_plan.get(n, []) if isinstance(out, RoleFailure)]
        if bad:
            failures.extend(_failure(problem.problem_id, "slot_annotator", b) for b in bad)
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
            metadata=CaseMetadata(benchmark=BENCHMARK, case_id=problem.problem_id, domain="optimization",
                                  source_id=problem.problem_id, seed=params.seed),
            units=plan["units"],
            hidden_slots=slots,
            brief=Brief(content=text, visible_unit_ids=[u.id for u in plan["units"] if u.id not in plan["hidden"]]),
            full_text="\n\n".join(u.content for u in plan["units"]),
            extra={
                "simulator": SIMULATOR,
                "solver_verification": SOLVER_VERIFICATION,
                "construction": {
                    "eligibility": [d.model_dump(mode="json") for d in plan["decisions"]],
                    "title": problem.title,
                },
            },
        )
        cases.append(case.model_dump(mode="json"))
    usage = client.accounting.snapshot()
    return {"cases": cases, "notes": dict(notes), "failures": failures,
            "usage": {r: usage.get(r, {}) for r in ROLES_USED}}


def _prefect_tasks():
    from tasks.orclarify import annotate, brief, decompose, eligibility
    from tasks.roles import base, slot_hit

    modules = (records, store, base, slot_hit, annotate, brief, decompose, eligibility, sys.modules[__name__])
    load_task = caching.cached_task("optimization-load", modules=(store, records, sys.modules[__name__]), retries=0)(
        _load_for_cache
    )
    build_task = caching.cached_task("optimization-build-chunk", modules=modules, retries=0)(build_chunk)
    return load_task, build_task


def _load_for_cache(source: Path, cfg: dict, root: str) -> list[dict]:
    # ``source`` is only here so the cache key covers the source's content.
    problems = load_problems(OptimizationConstructParams.model_validate(cfg), Path(root))
    return [p.model_dump(mode="json") for p in problems]


# ---- the domain ------------------------------------------------------------------------------------------------------


class OptimizationDomain:
    name = "optimization"

    def parse_params(self, params_path: Path, data: Any) -> OptimizationConstructParams:
        return section(params_path, OptimizationConstructParams, data, "construct.optimization")

    def check_inputs(self, cfg: OptimizationConstructParams, root: Path) -> None:
        if not load_problems(cfg, root):
            raise InputError(source_path(cfg, root), "no problems")

    def construct(
        self, cfg: OptimizationConstructParams, root: Path, *, roles: RolesParams | None = None,
        refresh_cache: bool = False,
    ) -> ConstructResult:
        load_task, build_task = _prefect_tasks()
        if refresh_cache:
            load_task = load_task.with_options(refresh_cache=True)
            build_task = build_task.with_options(refresh_cache=True)
        roles = roles or RolesParams()
        stats = RunStats()
        cfg_json = cfg.model_dump(mode="json")
        roles_json = {name: roles.get(name).model_dump(mode="json") for name in ROLES_USED}
        load_state = load_task(source_path(cfg, root), cfg_json, str(root), return_state=True)
        stats.add_state(load_state)
        problems = load_state.result()
        chunks = [problems[i : i + cfg.chunk_size] for i in range(0, len(problems), cfg.chunk_size)]
        futures = [build_task.submit(chunk, cfg_json, roles_json) for chunk in chunks]
        cases: list[Case] = []
        notes: Counter = Counter()
        failures: list[dict] = []
        usage: dict[str, Counter] = {r: Counter() for r in ROLES_USED}
        for future in tqdm(futures, desc="construct optimization", unit="chunk", leave=False):
            part = future.result()  # wait for the final state (Cached or Completed) before reading it
            stats.add_state(future.state)
            cases.extend(Case.model_validate(c) for c in part["cases"])
            notes.update(part["notes"])
            failures.extend(part["failures"])
            for role, counts in part["usage"].items():
                usage[role].update({k: v for k, v in counts.items() if isinstance(v, int | float)})
        cases.sort(key=lambda c: c.case_id)
        return ConstructResult(cases=cases, metrics=self._metrics(cfg, problems, cases, notes, failures, usage, roles),
                               stats=stats)

    def _metrics(self, cfg, problems, cases, notes, failures, usage, roles) -> dict:
        severities = Counter(s.severity for c in cases for s in c.hidden_slots)
        hidden_kinds = Counter(u.kind for c in cases for s in c.hidden_slots for u in c.units if u.id in s.unit_ids)
        described = describe_roles(roles)
        units = notes.get("units", 0)
        return {
            "backend": CONSTRUCTION_BACKEND,
            "source": cfg.source,
            "problems": len(problems),
            "cases": len(cases),
            "units": units,
            "eligible_units": notes.get("eligible_units", 0),
            "eligible_share": round(notes.get("eligible_units", 0) / units, 4) if units else 0.0,
            "dropped_as_implied": notes.get("dropped_as_implied", 0),
            "problems_without_eligible_unit": notes.get("problems_without_eligible_unit", 0),
            "hidden_slots": sum(len(c.hidden_slots) for c in cases),
            "hidden_per_severity": {s: severities.get(s, 0) for s in SEVERITIES},
            "hidden_per_kind": dict(sorted(hidden_kinds.items())),
            "role_failures": len(failures),
            "rewriter_leak_fallbacks": notes.get("rewriter_leak_fallbacks", 0),
            "roles": {r: {**described[r], **{k: round(v, 4) for k, v in usage[r].items()}} for r in ROLES_USED},
        }

    def write(self, result: ConstructResult, folder: Path) -> None:
        from tasks.domains.or_toml import write_case

        for case in result.cases:
            # the published layout: only the format's own tables, no seed in [metadata] (both stay in cases.jsonl)
            published = case.model_copy(update={
                "extra": {k: case.extra[k] for k in FORMAT_TABLES if k in case.extra},
                "metadata": case.metadata.model_copy(update={"seed": None}),
            })
            write_case(published, folder / "toml")
        store.atomic_write_text(folder / "cases.jsonl", store.jsonl_text(result.cases))

    def validation_table(self, result: ConstructResult):
        import pandas as pd

        from tasks import masking

        rows = []
        for case in result.cases:
            ids = [u.id for u in case.units]
            hidden = [uid for s in case.hidden_slots for uid in s.unit_ids]
            visible = case.brief.visible_unit_ids
            brief_norm = masking.normalise_ws(case.brief.content)
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
                "leak_free": not any(masking.normalise_ws(u.content) in brief_norm
                                     for u in case.units if u.id in hidden),
                "slot_ids_unique": len({s.slot_id for s in case.hidden_slots}) == len(case.hidden_slots),
                "required_fields_filled": all(str(v).strip() for v in required)
                and all(len(s.reference_questions) >= 2 and s.failure_modes for s in case.hidden_slots),
            })
        return "optimization_cases", pd.DataFrame(rows)


DOMAIN = OptimizationDomain()
