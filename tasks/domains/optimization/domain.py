"""Optimisation domain (OR-Clarify construction): complete problems -> decompose -> filter -> mask -> annotate.

A :class:`~tasks.domains.units.UnitDomain` whose decomposition and annotation go through model roles
(``decomposer``, ``slot_annotator``; local backends by default) and whose cases are also written as OR-Clarify TOML.
Evaluated by the episode loop with the optimisation gap inventory (:mod:`tasks.domains.optimization.gaps`).

Per problem: units come from the source (TOML) or the ``decomposer`` role; ``eligibility`` marks the hide
candidates (and why every unit was kept or dropped); ``choose_hidden`` draws OR-Clarify's shape (``hidden_counts``
slots per case, units weighted towards ``severity_mix`` by their estimated severity) or about ``hide_fraction`` of
them, seeded per problem; the ``rewriter`` role renders the public brief from the visible units; the ``slot_annotator``
role writes each hidden slot's rubric. Output: one OR-Clarify 0.3 TOML per case plus a JSONL index in the unified
schema (whose ``extra.construction`` keeps the eligibility decisions).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from tasks import records, store
from tasks.domains.api import ConstructResult, Severity, Taxonomy
from tasks.domains.optimization.problems import ProblemRecord, load_problem_samples
from tasks.domains.optimization.vocabulary import HIDEABLE_KINDS, OPTIMIZATION_HINTS, UNIT_KINDS
from tasks.domains.units import SlotRequest, UnitDomain, build_unit_chunk
from tasks.errors import InputError
from tasks.params import OptimizationConstructParams
from tasks.records import Eligibility, Unit

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
        from tasks.domains.optimization.or_toml import load_problems_from_toml

        problems = load_problems_from_toml(path)
    return problems[: cfg.limit] if cfg.limit else problems


# ---- one chunk of problems -> cases (JSON in, JSON out: cacheable by content) ----------------------------------------


def build_chunk(problems: list[dict], cfg: dict, roles: dict) -> dict:
    """Decompose, filter, mask and annotate a chunk of problems (see ``tasks.domains.units.build_unit_chunk``)."""
    return build_unit_chunk("optimization", problems, cfg, roles)


# ---- the domain ------------------------------------------------------------------------------------------------------


class OptimizationDomain(UnitDomain):
    name = "optimization"
    benchmark = BENCHMARK
    evaluation = "episodes"
    taxonomy = Taxonomy(
        kinds=UNIT_KINDS, hideable=HIDEABLE_KINDS,
        descriptions={"context": "who asks and what plan is needed", "data": "parameters, tables, amounts",
                      "constraint": "a rule the plan must respect", "objective": "what the plan optimises",
                      "assumption": "a modelling or boundary assumption"},
    )
    judge_hints = OPTIMIZATION_HINTS
    params_model = OptimizationConstructParams
    record_model = ProblemRecord
    roles_used = ROLES_USED
    annotator_role = "slot_annotator"
    construction_backend = CONSTRUCTION_BACKEND
    record_label = "problems"
    suite = "optimization_cases"

    # ---- inputs ------------------------------------------------------------------------------------------------

    def source_path(self, cfg: OptimizationConstructParams, root: Path) -> Path:
        return source_path(cfg, root)

    def record_id(self, record: ProblemRecord) -> str:
        return record.problem_id

    def load_records(self, cfg: OptimizationConstructParams, root: Path) -> list[ProblemRecord]:
        return load_problems(cfg, root)

    def check_inputs(self, cfg: OptimizationConstructParams, root: Path) -> None:
        if not load_problems(cfg, root):
            raise InputError(source_path(cfg, root), "no problems")

    # ---- decompose: the decomposer role ---------------------------------------------------------------------------

    def decompose(self, record: ProblemRecord) -> list[Unit]:
        from tasks.domains.optimization import decompose

        if record.units is not None:
            return list(record.units)
        return decompose.to_units(decompose.local(decompose.DecomposeInput(problem_id=record.problem_id,
                                                                           text=record.text)))

    def decompose_many(self, items, roles, client):
        from tasks.domains.optimization import decompose
        from tasks.llm.records import RoleFailure
        from tasks.roles.base import run_role

        to_split = [p for p in items if p.units is None]
        split = run_role(decompose.SPEC, [decompose.DecomposeInput(problem_id=p.problem_id, text=p.text)
                                          for p in to_split], roles.decomposer, client=client)
        units_of: dict[str, list[Unit]] = {p.problem_id: list(p.units) for p in items if p.units is not None}
        failures: list[dict] = []
        for problem, out in zip(to_split, split):
            if isinstance(out, RoleFailure):
                failures.append({"problem_id": problem.problem_id, "role": "decomposer", "kind": out.kind,
                                 "message": out.message})
                continue
            units_of[problem.problem_id] = decompose.to_units(out)
        return units_of, failures

    # ---- filter: formulation-critical kinds, minus the implied and restated ones ------------------------------------

    def hide_candidates(self, units: Sequence[Unit]) -> list[Eligibility]:
        from tasks.domains.optimization.eligibility import eligibility

        return eligibility(list(units))

    # ---- mask: OR-Clarify's shape (slots per case, severity mix), or a share of the candidates --------------------

    def choose_hidden(self, record_id: str, candidates: Sequence[Unit], cfg: OptimizationConstructParams,
                      units: Sequence[Unit] = ()) -> list[list[str]]:
        from tasks.construction.brief import choose_hidden, choose_hidden_shaped

        if cfg.hidden_counts is None:
            return [choose_hidden(record_id, cfg.seed, [u.id for u in candidates], fraction=cfg.hide_fraction,
                                  min_hidden=cfg.min_hidden, max_hidden=cfg.max_hidden)]
        context = list(units) or list(candidates)
        rated = [(u.id, self.severity([u], context)[0] or "P1") for u in candidates]
        return [choose_hidden_shaped(record_id, cfg.seed, rated, counts=cfg.hidden_counts,
                                     severity_mix=cfg.severity_mix or {}, min_hidden=cfg.min_hidden,
                                     max_hidden=cfg.max_hidden)]

    # ---- annotate: the slot_annotator role ----------------------------------------------------------------------

    def severity(self, hidden: Sequence[Unit], units: Sequence[Unit]) -> tuple[Severity | None, str]:
        from tasks.domains.optimization import annotate

        inp = annotate.SlotAnnotateInput(problem_id="", unit=hidden[0], units=list(units))
        return annotate.severity(hidden[0], list(units), annotate._implied(inp))

    def reference_questions(self, hidden: Sequence[Unit], units: Sequence[Unit]) -> list[str]:
        from tasks.domains.optimization import annotate

        return annotate.questions(hidden[0], annotate.shape(hidden[0]))

    def simulated_answer(self, hidden: Sequence[Unit], units: Sequence[Unit]) -> str:
        from tasks.domains.optimization import annotate

        return " ".join(annotate.simulator_answer(u) for u in hidden)

    def annotate_many(self, requests: Sequence[SlotRequest], roles, client) -> list[Any]:
        from tasks.domains.optimization import annotate
        from tasks.roles.base import run_role

        inputs = [annotate.SlotAnnotateInput(problem_id=r.problem_id, unit=r.unit, units=r.units,
                                             visible_brief=r.visible_brief) for r in requests]
        return run_role(annotate.SPEC, inputs, roles.slot_annotator, client=client)

    def case_extra(self, record: ProblemRecord, decisions: Sequence[Eligibility]) -> dict[str, Any]:
        return {
            "simulator": SIMULATOR,
            "solver_verification": SOLVER_VERIFICATION,
            "construction": {"eligibility": [d.model_dump(mode="json") for d in decisions], "title": record.title},
        }

    # ---- evaluation ---------------------------------------------------------------------------------------------

    @property
    def gap_inventory(self):
        from tasks.domains.optimization.gaps import OPTIMIZATION

        return OPTIMIZATION

    def code_modules(self) -> tuple:
        from tasks.construction import brief, segment, slot_names
        from tasks.domains import units
        from tasks.domains.optimization import annotate, decompose, eligibility
        from tasks.roles import base, slot_hit

        return (records, store, base, slot_hit, annotate, brief, decompose, eligibility, segment, slot_names, units,
                sys.modules[__name__])

    # ---- outputs ------------------------------------------------------------------------------------------------

    def write(self, result: ConstructResult, folder: Path) -> None:
        from tasks.domains.optimization.or_toml import write_case

        for case in result.cases:
            # the published layout: only the format's own tables, no seed in [metadata] (both stay in cases.jsonl)
            published = case.model_copy(update={
                "extra": {k: case.extra[k] for k in FORMAT_TABLES if k in case.extra},
                "metadata": case.metadata.model_copy(update={"seed": None}),
            })
            write_case(published, folder / "toml")
        store.atomic_write_text(folder / "cases.jsonl", store.jsonl_text(result.cases))


DOMAIN = OptimizationDomain()
