"""Evaluation runs: the episode units of one evaluation, their resumable store, and the per-run artifacts.

An episode **unit** is one case x method x protocol x repeat. Running a unit plays the episode and judges it; the
result (:class:`UnitResult`) goes to the engine's store (``tasks.evaluation.engine``, :func:`episode_store`) under a
key that hashes everything that determines it: the case's content, the method's settings, the protocol, the repeat,
the seed, the turn limit, the settings of every role, and the source of the code that plays and judges episodes
(:data:`EPISODE_CODE`). A run that is killed at any point therefore resumes by skipping the units whose file exists;
the units that were cut off replay their finished model calls from the LLM call cache, so no provider call is
repeated.

Run artifacts (or-clarify.md §9) are written per unit under
``runs/<protocol>/<method>/run_<KK>/<case_id>/`` by :func:`write_run_dir`.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from tasks.cluster import ClusterParams, fan_out
from tasks.episodes.records import PROTOCOLS, Episode, JudgeResult, Protocol
from tasks.evaluation import engine
from tasks.evaluation.engine import UnitStore
from tasks.evaluation.sanity import SanitySettings
from tasks.evaluation.settings import EvaluationSettings, MethodRow
from tasks.records import Case
from tasks.roles.personas import Persona
from tasks.store import atomic_write_json, atomic_write_text


class MethodEntry(MethodRow):
    """One row of ``params.yaml: evaluate.<domain>.methods`` of an episode evaluation."""

    protocols: list[Protocol] | None = None
    """Protocols to run it under; defaults to every protocol the method supports."""


class EvalSettings(EvaluationSettings):
    """``params.yaml: evaluate.<domain>`` of an episode evaluation (the shared fields: ``EvaluationSettings``)."""

    cases: str = "data/cases/optimization/cases.jsonl"
    """A cases JSONL (one Case per line) or a folder of OR-Clarify TOML files (e.g. ../shared/data/or-clarify)."""
    methods: list[MethodEntry] = Field(min_length=1)
    repeats: int = Field(default=3, ge=1)
    max_turns: int = Field(default=20, ge=1)
    dask_address: str | None = Field(default=None, exclude=True)
    """Moved to ``cluster.address`` (one cluster for every fan-out); only ``null`` is accepted here."""
    over_questioning_after: int = Field(default=4, ge=1)
    """Judge: question turns after the last P0/P1 hit that make a stop ``over_questioning``."""
    run_folders: bool = False
    """Also write one folder of files per episode under ``runs/`` (transcript, judge input, events, ...); the default
    packs them into ``episodes.jsonl`` and the Inspect log, which hold the same records."""
    persona_repeats: int | None = Field(default=None, ge=1)
    """Repeats the non-first personas play (the first N); None: all ``repeats``."""
    sanity: SanitySettings = SanitySettings()
    """The sanity ladder (``tasks/evaluation/sanity.py``), checked when ``oracle`` and ``ready_now`` both run."""

    @field_validator("dask_address")
    @classmethod
    def _moved(cls, value: str | None) -> None:
        if value is not None:
            raise ValueError(f"moved to cluster.address (params.yaml: cluster: {{address: {value}}})")
        return None


class Unit(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    case_id: str
    method: str
    protocol: Protocol
    repeat: int
    persona: str = "cooperative"

    @property
    def rel_dir(self) -> str:
        tail = "" if self.persona == "cooperative" else f"/{self.persona}"
        return f"runs/{self.protocol}/{self.method}/run_{self.repeat:02d}/{self.case_id}{tail}"


class UnitResult(BaseModel):
    model_config = ConfigDict(extra="forbid")

    key: str
    episode: Episode
    judge: JudgeResult

    @property
    def role_failed(self) -> bool:
        """A judge or any role of the episode failed for good (the unit is then never stored)."""
        return self.judge.judge_failed or any(u.failures for u in self.episode.usage.values())


def is_policy(entry: MethodEntry) -> bool:
    return entry.kind == "policy"


def cases_for(entry: MethodEntry, cases: Sequence[Case]) -> list[Case]:
    """The cases ``entry`` plays: a policy row only held-out cases (or cases with no split), every other row all."""
    from tasks.splits import select

    return select(cases, "heldout") if is_policy(entry) else list(cases)


def check_policies(cases: Sequence[Case], settings: EvalSettings) -> dict[str, dict[str, Any]]:
    """Per method row: the split it plays and its case / source-id counts; trained policies (an ``adapter``) also
    the source ids they were trained on and the overlap, which must be 0 (else ``InputError`` naming the record)."""
    from tasks.splits import check_no_overlap

    rows: dict[str, dict[str, Any]] = {}
    for entry in settings.methods:
        played = cases_for(entry, cases)
        row: dict[str, Any] = {"split": "heldout" if is_policy(entry) else "all", "cases": len(played),
                               "source_ids": len({c.metadata.source_id for c in played})}
        if is_policy(entry) and not played:
            from tasks.errors import InputError

            raise InputError("params.yaml", f"policy row {entry.name!r} has no held-out case to play (raise "
                             "construct.<domain>.heldout_fraction or drop evaluate.<domain>.limit / case_ids)",
                             field="methods")
        if is_policy(entry) and entry.options.get("adapter"):
            row.update(check_no_overlap(entry.name, entry.options["adapter"], {c.metadata.source_id for c in played}))
        rows[entry.name] = row
    return rows


def plan_units(cases: Sequence[Case], settings: EvalSettings) -> list[Unit]:
    """Every unit in a fixed order: method, protocol, repeat, case (the order of the report's rows). Policy rows
    play the held-out cases only (:func:`cases_for`)."""
    from tasks.clarifiers.base import get_method

    units: list[Unit] = []
    for entry in settings.methods:
        played = cases_for(entry, cases)
        method = get_method(entry.name, entry.kind, entry.options)
        protocols = entry.protocols or list(method.protocols)
        for protocol in protocols:
            if protocol not in method.protocols:
                raise ValueError(f"method {entry.name!r} does not support protocol {protocol!r} "
                                 f"(supports: {', '.join(method.protocols)})")
        for protocol in [p for p in PROTOCOLS if p in protocols]:
            for repeat in range(1, settings.repeats + 1):
                units += [Unit(case_id=c.case_id, method=entry.name, protocol=protocol, repeat=repeat) for c in played]
    return units + persona_units(units, settings)


def persona_units(units: Sequence[Unit], settings: EvalSettings) -> list[Unit]:
    """The cooperative units replayed under every further persona (``persona_methods`` rows, the first
    ``persona_repeats`` repeats)."""
    rows = set(settings.persona_methods) if settings.persona_methods is not None else None
    repeats = settings.persona_repeats or settings.repeats
    return [u.model_copy(update={"persona": p.name}) for p in settings.personas[1:] for u in units
            if (rows is None or u.method in rows) and u.repeat <= repeats]


def persona_of(settings: EvalSettings, name: str) -> Persona:
    return next(p for p in settings.personas if p.name == name)


EPISODE_CODE = ("episodes", "evaluation/episode_loop.py", "clarifiers", "roles", "llm", "domains", "domain_context.py",
                "evaluation/judge.py", "records.py", "text.py", "training/policy.py", "training/prompts.py")
"""The code that plays and judges episodes (``tasks.caching.code_version`` of it keys the units): the episode records
and loop, the methods, the roles, the LLM layer, the domains' gap inventories and hints (and the records they share,
``domain_context.py``), the judge, the text helpers the roles and domains share, and how a policy method generates;
not the metrics, plots or report."""


def unit_key(unit: Unit, case: Case, entry: MethodEntry, settings: EvalSettings, roles: BaseModel, code: str) -> str:
    persona = {} if unit.persona == "cooperative" else {"persona": persona_of(settings, unit.persona).model_dump()}
    return engine.unit_key({
        "unit": unit.model_dump(exclude={"persona"}),
        **persona,
        "case": case.model_dump(mode="json", exclude={"metadata": {"split"}}),  # the split never changes a result
        "method": entry.model_dump(mode="json"),
        "seed": settings.seed,
        "max_turns": settings.max_turns,
        "over_questioning_after": settings.over_questioning_after,
        "roles": roles.model_dump(mode="json", exclude={"max_failure_rate"}),  # a threshold never changes a result
        "code": code,
    })


def episode_store(folder: Path, *, refresh: bool = False) -> UnitStore[UnitResult]:
    """The store of finished episode units (``tasks.evaluation.engine.UnitStore``)."""
    return UnitStore(folder, UnitResult, refresh=refresh)


# ---- run artifacts (or-clarify.md §9) ----------------------------------------------------------------------------


def transcript_markdown(episode: Episode) -> str:
    lines = [f"# {episode.case_id} — {episode.protocol}::{episode.method} run {episode.repeat:02d}", ""]
    for row in episode.transcript:
        who = "Generic Agent" if row.speaker == "agent" else "User Simulator"
        lines += [f"## Turn {row.turn} - {who}", ""]
        if row.structured:
            lines += ["```json", json.dumps(row.structured, indent=2, ensure_ascii=False, sort_keys=True), "```", ""]
        lines += [row.content, ""]
    if episode.protocol_failure:
        lines += [f"**Protocol failure** at turn {episode.protocol_failure.turn}: {episode.protocol_failure.type}", ""]
    return "\n".join(lines).rstrip() + "\n"


def statistics(episode: Episode, judge: JudgeResult) -> dict[str, Any]:
    hits = [s.hit for s in judge.slot_scores]
    return {
        "case_id": episode.case_id,
        "method": episode.method,
        "protocol": episode.protocol,
        "repeat": episode.repeat,
        "all_slot_exact_restore": judge.all_slot_exact,
        "core_exact_restore": judge.core_exact,
        "core_eligible": judge.core_eligible,
        "weighted_slot_score": judge.weighted_slot_score,
        "hit_counts": {h: hits.count(h) for h in ("yes", "partial", "no")},
        "turn_count": episode.turn_count,
        "attempted_turns": episode.attempted_turns,
        "atomic_questions": episode.atomic_questions,
        "question_turns": len(episode.question_turns),
        "ready": episode.ready,
        "stopping_status": judge.stopping_behavior.status,
        "rule_based_stopping_status": judge.rule_based_status,
        "silent_assumption_count": len(judge.silent_assumptions),
        "protocol_failed": episode.protocol_failed,
        "protocol_failure_type": episode.protocol_failure.type if episode.protocol_failure else None,
        "choice_counts": {c: sum(t.choice == c for t in episode.question_turns) for c in "ABCD"}
        if episode.protocol != "open" else None,
    }


def run_health(episode: Episode, judge: JudgeResult) -> dict[str, Any]:
    return {
        "counters": dict(sorted(episode.counters.items())),
        "usage": {role: u.model_dump() for role, u in sorted(episode.usage.items())},
        "detector_checks": len(episode.detector_events),
        "judge_failed": judge.judge_failed,
        "protocol_failure": episode.protocol_failure.model_dump() if episode.protocol_failure else None,
    }


def write_run_dir(folder: Path, episode: Episode, judge: JudgeResult, judge_input: str) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    atomic_write_text(folder / "initial_brief.txt", episode.brief.rstrip() + "\n")
    atomic_write_json(folder / "transcript.json", [r.model_dump(mode="json") for r in episode.transcript])
    atomic_write_text(folder / "transcript.md", transcript_markdown(episode))
    atomic_write_json(folder / "detector_events.json", episode.detector_events)
    if episode.protocol == "open":
        audit = [{"turn": t.turn, "question": t.question, "reply": t.reply, "disclosed_slot_ids": t.disclosed_slot_ids}
                 for t in episode.question_turns]
        atomic_write_json(folder / "answer_scope_events.json", audit)
    else:
        audit = [{"turn": t.turn, "choice": t.choice, "comment": t.comment, "rationale": t.user_rationale,
                  "match_status": t.match_status, "agent_visible_text": t.reply} for t in episode.question_turns]
        atomic_write_json(folder / "user_choice_audit_events.json", audit)
    for stem, events in sorted(episode.method_events.items()):
        atomic_write_json(folder / f"{stem}.json", events)
    atomic_write_text(folder / "judge_prompt_user_message.md", judge_input.rstrip() + "\n")
    atomic_write_json(folder / "judge_result.json", judge.model_dump(mode="json"))
    atomic_write_json(folder / "statistics.json", statistics(episode, judge))
    atomic_write_json(folder / "run_health.json", run_health(episode, judge))


# ---- executing units ----------------------------------------------------------------------------------------------


def execute(units: Sequence[Unit], work: Callable[[Unit], Any], *, concurrency: int,
            runner: str = "threads", cluster: ClusterParams | None = None,
            progress: Callable[[int, int], None] | None = None) -> list[Any]:
    """Run ``work`` over ``units`` with at most ``concurrency`` at a time; results in unit order.

    ``threads`` and ``dask`` submit one Prefect task per unit to Prefect's ThreadPoolTaskRunner or prefect-dask's
    DaskTaskRunner (they need to run inside a flow); ``serial`` runs them in order without Prefect (tests, and
    benchmarks that measure the loop itself).
    """
    totals = Counter(_group(u) for u in units)
    seen: Counter = Counter()

    def tick(i: int, unit: Unit) -> None:
        if progress:
            group = _group(unit)
            seen[group] += 1
            progress(i, len(units), group, seen[group], totals[group])

    if runner == "serial" or not units:
        out = []
        for i, unit in enumerate(units, 1):
            out.append(work(unit))
            tick(i, unit)
        return out
    from prefect import task
    from prefect.cache_policies import NO_CACHE

    play = task(name="episode", task_run_name="{unit.protocol}::{unit.method}/{unit.case_id}#{unit.repeat}",
                retries=0, log_prints=False, cache_policy=NO_CACHE)(_run_unit)
    calls = [{"work": work, "unit": u} for u in units]
    outcomes = fan_out(play, calls, runner=runner, concurrency=concurrency, cluster=cluster)  # type: ignore[arg-type]
    results: list[Any] = []
    for i, ((result, _), unit) in enumerate(zip(outcomes, units), 1):
        results.append(result)
        tick(i, unit)
    return results


def _group(unit: Unit) -> str:
    """The progress line's group of a unit: its method under its protocol."""
    return f"{unit.protocol}::{unit.method}"


def _run_unit(work: Callable[[Unit], Any], unit: Unit) -> Any:
    """The Prefect task body: module-level, so a Dask worker can unpickle it (``work`` must be picklable)."""
    return work(unit)


def load_cases(path: Path, *, case_ids: Sequence[str] | None = None, limit: int | None = None,
               section: str = "evaluate") -> list[Case]:
    """Cases from a JSONL file of Case records or a folder of OR-Clarify TOML files, then ``case_ids`` and ``limit``
    (``tasks.case_files``; ``section``: the params section named in errors)."""
    from tasks.case_files import read_cases, select_cases

    if path.is_dir():
        from tasks.domains.optimization.or_toml import read_cases as read_toml_cases

        cases = read_toml_cases(path)
    else:
        cases = read_cases(path, missing="cases not found (a cases .jsonl file or a folder of OR-Clarify .toml files)")
    return select_cases(cases, case_ids=case_ids, limit=limit, where=path, section=section)
