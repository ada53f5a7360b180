"""The analytics domain object: construction hooks (decomposer, slot rubrics) and the evaluation's gap inventory."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tasks.domain_context import JudgeHints
from tasks.domains.analytics import decompose, slots
from tasks.domains.api import Severity
from tasks.domains.units import UnitConstructParams, UnitDomain
from tasks.records import Unit

BENCHMARK = "clarifyflow-analytics"
SIMULATOR = {
    "business_role": "the person who asked for the analysis and knows exactly what they need from it",
    "knowledge_boundary": ("Knows every hidden detail of the request when asked, answers only the current question, "
                           "and never invents tables, numbers or rules beyond the request."),
}


class AnalyticsConstructParams(UnitConstructParams):
    samples_path: str | None = "data/samples/analytics/requests.jsonl"


class AnalyticsDomain(UnitDomain):
    name = "analytics"
    benchmark = BENCHMARK
    evaluation = "episodes"
    taxonomy = decompose.TAXONOMY
    judge_hints = JudgeHints(
        subject="a data-analysis request (text to SQL)", deliverable="a SQL query and the table or chart it returns",
        analyst="a data analyst",
        core="P0 changes what number is computed (metric, period, source); P1 makes it materially wrong or unusable "
             "(population, breakdown, top-N).",
    )
    params_model = AnalyticsConstructParams
    default_samples = "requests.jsonl"
    construction_backend = ("rules: analytics decomposer (cue words), kind filter, seeded unit choice, rubric "
                            "templates (roles.rewriter renders the brief)")
    record_label = "requests"
    simulator = SIMULATOR
    user_aspects = slots.ASPECTS

    def decompose(self, record: Any) -> list[Unit]:
        return decompose.decompose_text(record.text)

    def slot_name(self, unit: Unit, units: Sequence[Unit]) -> str:
        return slots.slot_name(unit)

    def severity(self, hidden: Sequence[Unit], units: Sequence[Unit]) -> tuple[Severity | None, str]:
        return slots.severity(hidden, units)

    def reference_questions(self, hidden: Sequence[Unit], units: Sequence[Unit]) -> list[str]:
        return slots.reference_questions(hidden, units)

    def hit_rule(self, unit: Unit, units: Sequence[Unit]) -> str:
        return slots.hit_rule(unit, units)

    def failure_modes(self, unit: Unit, units: Sequence[Unit]) -> list[str]:
        return slots.failure_modes(unit, units)

    def simulated_answer(self, hidden: Sequence[Unit], units: Sequence[Unit]) -> str:
        return slots.simulated_answer(hidden, units)

    @property
    def gap_inventory(self):
        from tasks.domains.analytics.gaps import INVENTORY

        return INVENTORY


DOMAIN = AnalyticsDomain()
