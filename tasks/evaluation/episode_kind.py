"""The episode kind of evaluation (OR-Clarify, or-clarify.md): every method x protocol x repeat x case played
against the simulated user and judged, in the domain's context (``tasks.domains.domain_context``, built here once
and handed down); the units fan out over ``evaluate.<domain>.task_runner`` and resume from the engine's store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tasks.evaluation.runs import EvalSettings
from tasks.evaluation.stage import EvaluationKind, Prepared, Scored, backend_line

HEADLINE = ("RunCount", "AllSlotExactRestoreRate", "CoreExactRestoreRate", "WeightedSlotScore_macro", "RecoveryAUC",
            "AtomicQuestionsPerRun", "AverageTurns", "SilentAssumptionsPerRun", "PrematureStopRate", "ReadyRate")
EVAL_ROLES = ("or_open_user", "or_choice_user", "question_detector", "slot_hit_judge", "or_session_judge",
              "or_generic_agent", "or_choice_agent", "or_ready_gate", "or_orpilot_agent", "or_gap_search",
              "or_open_gap_search", "or_candidate_agent", "or_open_candidate_agent", "or_question_selector",
              "or_direct_question", "or_gap_alignment")
"""The roles an episode evaluation calls (the backend line names those served by a model)."""


def prepare(root: Path, params_path: Path, params: Any, domain: str, settings: EvalSettings) -> tuple[list, list]:
    """The methods (each checked against its protocols) and the cases; a trained policy on its own training data
    stops here, before any episode."""
    from tasks.clarifiers.base import get_method
    from tasks.errors import InputError
    from tasks.evaluation.runs import check_policies, load_cases

    for i, entry in enumerate(settings.methods):
        try:
            method = get_method(entry.name, entry.kind, entry.options)
        except (KeyError, ValueError) as err:
            raise InputError(params_path, str(err.args[0]), field=f"evaluate.{domain}.methods.{i}") from None
        bad = [p for p in entry.protocols or [] if p not in method.protocols]
        if bad:
            raise InputError(params_path, f"method {entry.name!r} does not run under {', '.join(bad)} (supports "
                             f"{', '.join(method.protocols)})", field=f"evaluate.{domain}.methods.{i}.protocols")
    cases_path = (root / settings.cases).resolve()
    cases = load_cases(cases_path, case_ids=settings.case_ids, limit=settings.limit, section=f"evaluate.{domain}")
    other = next((c for c in cases if c.metadata.domain != domain), None)
    if other is not None:  # every episode plays in this evaluation's domain, so its cases must be of it
        raise InputError(cases_path, f"case of domain {other.metadata.domain!r} in evaluate.{domain}",
                         record=other.case_id, field="metadata.domain")
    check_policies(cases, settings)
    return cases, cases


def score(prepared: Prepared, staging: Path, *, client, refresh: bool, progress) -> Scored:
    """Play and judge every unit (from the store where finished), write the outputs into ``staging``."""
    from tasks.domains import domain_context
    from tasks.evaluation.evaluate import play, write_outputs
    from tasks.evaluation.plots import recovery_rows
    from tasks.evaluation.runs import check_policies, episode_store
    from tasks.roles.failures import episode_failure_counts, episode_fallbacks
    from tasks.splits import split_counts
    from tasks.store import read_json_object

    root, cfg, settings, cases, domain = (prepared.root, prepared.params, prepared.settings, prepared.cases,
                                          prepared.domain)
    context = domain_context(domain)
    store = episode_store(root / ".cache" / "eval" / domain, refresh=refresh)
    results, stats = play(cases, settings, cfg.roles, store, domain=context, client=client, cluster=cfg.cluster,
                          progress=progress)
    failures = episode_failure_counts(results, cfg.roles)
    summary = write_outputs(staging, results, cases, settings, cfg.roles, domain=context, source=settings.cases)
    fallbacks = episode_fallbacks(results)
    metrics = {"repeats": settings.repeats, "episodes": len(results), "fallbacks": fallbacks,
               "split": {"evaluated": "all (policy rows: heldout)", "cases": split_counts(cases),
                         "policies": {name: row for name, row in check_policies(cases, settings).items()
                                      if row["split"] == "heldout"}}}
    return Scored(summary=summary, rows=summary["rows"],
                  reference_rows=summary["reference_rows"], headline=headline, failures=failures,
                  backend=backend_line(cfg.roles, EVAL_ROLES, fallbacks), metrics=metrics,
                  plot_rows=recovery_rows(read_json_object(staging / "recovery.json")), units=len(results),
                  computed=stats.computed, reused=stats.reused, records=results)


def gate(prepared: Prepared, staging: Path, scored: Scored, *, checks, artifact: str) -> dict[str, Any]:
    """The episodes, the summary and the recovery curves through their suites; the sanity ladder."""
    from tasks.evaluation import metrics as eval_metrics

    results, summary, settings = scored.records, scored.summary, prepared.settings
    checks.table("or_episodes", eval_metrics.episodes_frame([r.episode for r in results], [r.judge for r in results]),
                 artifact=f"{artifact}/episodes.jsonl", methods=[m.name for m in settings.methods])
    checks.table("or_summary", eval_metrics.summary_frame(summary), artifact=f"{artifact}/summary.json")
    ladder = check_ladder(summary, settings, artifact=f"{artifact}/summary.json",
                          served=any(prepared.params.roles.get(name).backend == "llm" for name in EVAL_ROLES))
    checks.recovery(staging / "recovery.json", artifact=f"{artifact}/recovery.json")
    return {"sanity": ladder} if ladder else {}


def check_ladder(summary: dict, settings: EvalSettings, *, artifact: str, served: bool = False) -> list[str]:
    """The sanity ladder (``tasks/evaluation/sanity.py``) when both reference methods ran: a GateError under
    ``sanity.check: error``, printed under ``warn``; returns the violations. ``served``: an evaluation role runs on a
    model (not its local backend); the ladder's thresholds and tie list were set on the local roles, so its violations
    are printed and published (``sanity`` in the stage metrics), never a gate (docs/served-models.md)."""
    from tasks.errors import GateError
    from tasks.evaluation.sanity import CEILING, FLOOR, violations

    kinds = {m.name: m.kind for m in settings.methods}
    if settings.sanity.check == "off" or not {CEILING, FLOOR} <= set(kinds.values()):
        return []
    found = violations(summary["rows"], summary["reference_rows"], kinds, settings.sanity)
    if found and settings.sanity.check == "error" and not served:
        raise GateError(artifact, "sanity ladder failed: " + "; ".join(found))
    for line in found:
        print(f"sanity ladder: {line}")
    return found


def headline(metrics: dict) -> dict:
    return {k: v for k, v in metrics.items() if k in HEADLINE}


KIND = EvaluationKind(settings=EvalSettings, prepare=prepare, score=score, gate=gate, progress_unit="episodes")
