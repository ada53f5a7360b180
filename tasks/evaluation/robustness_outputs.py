"""The persona outputs of an episode evaluation (``evaluate.<domain>.personas`` beyond the cooperative user).

The main outputs (summary, curves, report table, Inspect log) keep the cooperative episodes only, so adding
personas never changes them; the persona episodes go to ``persona_episodes.jsonl``, one Inspect log per persona
(``persona_<name>.eval``, persona in each sample's metadata) and, with the cooperative ones,
to ``robustness.json`` / ``robustness.png`` and a report section (tasks/evaluation/robustness.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tasks.domain_context import DomainContext
    from tasks.evaluation.runs import EvalSettings, UnitResult
    from tasks.records import Case
    from tasks.roles.config import RolesParams

FILE = "persona_episodes.jsonl"


def split(results: Sequence[UnitResult]) -> tuple[list[UnitResult], list[UnitResult]]:
    """(cooperative results, every other persona's), each in unit order."""
    base = [r for r in results if r.episode.persona == "cooperative"]
    return base, [r for r in results if r.episode.persona != "cooperative"]


def source_line(roles: RolesParams) -> str:
    """Which backends produced the persona rows (local rules or a model), for the report's caution."""
    from tasks.roles.config import describe_roles

    info = describe_roles(roles)
    parts = []
    for name in ("or_open_user", "or_choice_user"):
        role = info.get(name, {})
        backend = role.get("backend", "local")
        parts.append(f"{name}: {'local rules (persona rewrite)' if backend == 'local' else role.get('model', backend)}"
                     f"{'' if backend == 'local' else ' (persona prompt addendum)'}")
    return "simulated user " + "; ".join(parts)


def write_logs(out: Path, records, settings: EvalSettings, *, domain: DomainContext) -> None:
    """One Inspect log per further persona, ``persona_<name>.eval`` (the persona is each sample's metadata)."""
    from tasks.clarifiers.base import reference_of
    from tasks.evaluation import inspect_log, metrics

    for persona in settings.personas[1:]:
        mine = [r for r in records if r.episode.persona == persona.name]
        if not mine:
            continue
        groups = metrics.summarise([r.episode for r in mine], [r.judge for r in mine], n_resamples=settings.bootstrap,
                                   seed=settings.seed)
        summary = metrics.ranked_summary(groups, {m.name: reference_of(m.kind) for m in settings.methods})
        inspect_log.write_episode_log(out / f"persona_{persona.name}.eval", mine, summary,
                                      {"persona": persona.model_dump(mode="json"), "repeats": settings.repeats},
                                      task=f"evaluate@{domain.name}/{persona.name}")


def write(out: Path, results: Sequence[UnitResult], persona_results: Sequence[UnitResult], cases: Sequence[Case],
          settings: EvalSettings, roles: RolesParams, *, domain: DomainContext) -> str:
    """Write the persona outputs when more than one persona played; returns the report section ("" otherwise)."""
    from tasks.evaluation import robustness
    from tasks.evaluation.episodes_jsonl import episode_records, write_episodes
    from tasks.store import atomic_write_json

    if not persona_results:
        return ""
    records = episode_records(persona_results, cases, domain=domain)
    write_episodes(out / FILE, records)
    write_logs(out, records, settings, domain=domain)
    every = [*results, *persona_results]
    table = robustness.robustness_table(
        [r.episode for r in every], [r.judge for r in every], personas=[p.name for p in settings.personas],
        mistaken={p.name for p in settings.personas if p.behaviour == "mistaken"},
        n_resamples=settings.bootstrap, seed=settings.seed)
    table["personas_settings"] = [p.model_dump(mode="json") for p in settings.personas]
    table["source"] = source_line(roles)
    atomic_write_json(out / "robustness.json", table)
    robustness.robustness_plot(table, out / "robustness.png")
    return "\n" + robustness.robustness_markdown(table, source=table["source"])
