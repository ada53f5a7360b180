"""Play and judge every unit of an evaluation (resumably), then build its outputs in a folder.

``play`` returns one :class:`UnitResult` per unit, taking finished units from the store; ``write_outputs`` writes
the episodes (``episodes.jsonl``, the Inspect log, run directories on request), the summary, the recovery curves and
the report into a (staging) folder and returns the summary. The engine (``tasks/evaluation/stage.py``) gates and
publishes that folder.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tasks.caching import code_version
from tasks.clarifiers.base import Method, MethodContext, get_method
from tasks.evaluation.engine import UnitStats, UnitStore
from tasks.evaluation.runs import (
    EPISODE_CODE,
    EvalSettings,
    MethodEntry,
    Unit,
    UnitResult,
    check_policies,
    episode_store,
    execute,
    persona_of,
    plan_units,
    unit_key,
)
from tasks.records import Case
from tasks.roles.config import RolesParams

if TYPE_CHECKING:
    from tasks.cluster import ClusterParams
    from tasks.domain_context import DomainContext


_METHODS: dict[str, Method] = {}
_METHODS_LOCK = threading.Lock()


def method_for(entry: MethodEntry) -> Method:
    """One Method per entry and process (a policy keeps its loaded model); built on first use."""
    key = entry.model_dump_json()
    with _METHODS_LOCK:
        if key not in _METHODS:
            _METHODS[key] = get_method(entry.name, entry.kind, entry.options)
        return _METHODS[key]


def play_unit(unit: Unit, case: Case, entry: MethodEntry, settings: EvalSettings, roles: RolesParams,
              store_folder: Path, code: str, domain: DomainContext, client=None,
              refresh: bool = False) -> tuple[UnitResult, bool]:
    """Play and judge one unit in ``domain``, or take it from the store; returns the result and whether it was
    reused.

    A module-level function of picklable arguments, so Dask workers can run it (``client`` None = the process's
    default LLM client).
    """
    from tasks.evaluation.episode_loop import run_episode
    from tasks.evaluation.judge import judge_episodes

    store = episode_store(store_folder, refresh=refresh)  # a unit with a role failure is never stored
    key = unit_key(unit, case, entry, settings, roles, code)
    done = store.get(key)
    if done is not None:
        return done, True
    method = method_for(entry)
    if hasattr(method, "bind_cases"):  # a method that reads the case itself (the oracle)
        method.bind_cases({case.case_id: case})
    ctx = MethodContext(roles=roles, client=client, options=entry.options, domain=domain)
    episode = run_episode(case, method, unit.protocol, repeat=unit.repeat, seed=settings.seed,
                          max_turns=settings.max_turns, ctx=ctx, persona=persona_of(settings, unit.persona))
    [judge] = judge_episodes({case.case_id: case}, [episode], MethodContext(roles=roles, client=client, domain=domain),
                             over_questioning_after=settings.over_questioning_after)
    result = UnitResult(key=key, episode=episode, judge=judge)
    store.put(result)
    return result, False


def play(cases: Sequence[Case], settings: EvalSettings, roles: RolesParams, store: UnitStore[UnitResult], *,
         domain: DomainContext, client=None, runner: str | None = None, cluster: ClusterParams | None = None,
         progress: Callable[[int, int], None] | None = None,
         units: Sequence[Unit] | None = None) -> tuple[list[UnitResult], UnitStats]:
    """Every unit's result in unit order (finished units come from ``store``), each played and judged in
    ``domain`` (the evaluation's, built once where it starts). ``runner`` dask runs on ``cluster``."""
    from functools import partial

    by_id = {c.case_id: c for c in cases}
    entries = {e.name: e for e in settings.methods}
    check_policies(cases, settings)  # a trained policy never plays a source id it was trained on
    units = list(units) if units is not None else plan_units(cases, settings)
    runner = runner or settings.task_runner
    code = code_version(*EPISODE_CODE)
    # Dask may run the work in other processes: nothing unpicklable (the LLM client) travels with it there
    shared = None if runner == "dask" else client
    work = partial(_play_one, by_id=by_id, entries=entries, settings=settings, roles=roles, store=store.folder,
                   code=code, domain=domain, client=shared, refresh=store.refresh)
    outcomes = execute(units, work, concurrency=settings.concurrency, runner=runner,
                       cluster=cluster, progress=progress)
    stats = UnitStats(computed=sum(not reused for _, reused in outcomes),
                      reused=sum(reused for _, reused in outcomes))
    return [result for result, _ in outcomes], stats


def _play_one(unit: Unit, *, by_id, entries, settings, roles, store, code, domain, client,
              refresh: bool = False) -> tuple[UnitResult, bool]:
    return play_unit(unit, by_id[unit.case_id], entries[unit.method], settings, roles, store, code, domain, client,
                     refresh=refresh)


def write_outputs(out: Path, results: Sequence[UnitResult], cases: Sequence[Case], settings: EvalSettings,
                  roles: RolesParams, *, domain: DomainContext, source: str) -> dict[str, Any]:
    """``episodes.jsonl`` (every episode, its judgement and the judge's input rendered in ``domain``), the run
    folders when ``settings.run_folders``, ``summary.json`` (ranked ``rows`` and ``reference_rows`` apart),
    ``recovery.json``/``recovery.png``, ``report.md``, ``run_config.json`` and the Inspect log ``episodes.eval``
    (skipped with a warning when inspect_ai is not installed)."""
    from tasks.clarifiers.base import reference_of
    from tasks.evaluation import inspect_log, metrics, plots, report
    from tasks.evaluation.episodes_jsonl import FILE, episode_records, write_episodes, write_run_folders
    from tasks.roles.config import describe_roles
    from tasks.splits import split_counts
    from tasks.store import atomic_write_json, atomic_write_text

    by_id = {c.case_id: c for c in cases}
    from tasks.evaluation import robustness_outputs

    results, persona_results = robustness_outputs.split(results)
    records = episode_records(results, cases, domain=domain)
    write_episodes(out / FILE, records)
    if settings.run_folders:
        write_run_folders(out, records)
    episodes = [r.episode for r in results]
    judgements = [r.judge for r in results]
    groups = metrics.summarise(episodes, judgements, by_id, n_resamples=settings.bootstrap, seed=settings.seed)
    played = check_policies(cases, settings)
    for key, row in groups.items():  # which split each row played, and a trained policy's training ids
        row.update(split_fields(played[key.split("::", 1)[1]]))
    summary = metrics.ranked_summary(groups, {m.name: reference_of(m.kind) for m in settings.methods})
    curves = metrics.recovery_curves(episodes, judgements, by_id, n_resamples=settings.bootstrap, seed=settings.seed)
    run_config = {
        "cases": source,
        "case_count": len(cases),
        "split": {"cases": split_counts(cases), "rows": played},
        "repeats": settings.repeats,
        "max_turns": settings.max_turns,
        "seed": settings.seed,
        "methods": [m.model_dump(mode="json") for m in settings.methods],
        "roles": describe_roles(roles),
    }
    atomic_write_json(out / "run_config.json", run_config)
    from tasks.stage_metrics import without_wall_clock

    timed, summary = summary, without_wall_clock(summary)  # the outputs hold no wall time (identical reruns)
    atomic_write_json(out / "summary.json", summary)
    atomic_write_json(out / "recovery.json", curves)
    plots.recovery_plot(curves, out / "recovery.png")
    markdown = report.report_markdown(summary, run_config, describe_roles(roles))
    markdown += robustness_outputs.write(out, results, persona_results, cases, settings, roles, domain=domain)
    from tasks.evaluation import frontier

    markdown += frontier.write(out, episodes, judgements, budget=settings.max_turns,
                               references={m.name for m in settings.methods if reference_of(m.kind)},
                               n_resamples=settings.bootstrap, seed=settings.seed)
    atomic_write_text(out / "report.md", markdown)
    inspect_log.write_episode_log(out / inspect_log.EPISODES_LOG, records, timed, run_config,
                               task=f"evaluate@{domain.name}")
    return timed


def split_fields(row: dict[str, Any]) -> dict[str, Any]:
    """A summary row's split entries: ``Split``, ``Cases``, ``SourceIds``; trained policies add
    ``TrainedOnSourceIds`` and ``TrainingOverlap`` (always 0: the stage stops otherwise)."""
    fields = {"Split": row["split"], "Cases": row["cases"], "SourceIds": row["source_ids"]}
    if "trained_on_source_ids" in row:
        fields.update(TrainedOnSourceIds=row["trained_on_source_ids"], TrainingOverlap=row["overlap"])
    return fields
