"""evaluate@swe's run: every (method, case) unit from the store or computed in batches, the summary and per-case
rows, and the outputs written to the stage's folder (``evaluate_questions``)."""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from tasks.cluster import ClusterParams
from tasks.evaluation.engine import UnitStats
from tasks.evaluation.question_inputs import (
    QuestionInputs,
    QuestionSettings,
    check_trained_policies,
)
from tasks.records import Case
from tasks.rewards.config import RewardConfig
from tasks.roles.config import RolesParams


def unit_store(root: Path, domain: str) -> Path:
    """Where a question-list evaluation keeps its finished units: ``.cache/eval/<domain>/units``."""
    return Path(root) / ".cache" / "eval" / domain / "units"


def run_units(cases: Sequence[Case], settings: QuestionSettings, roles: RolesParams, inputs: QuestionInputs, *,
              root: Path, reward: RewardConfig, client=None, progress: Callable[[int, int], None] | None = None,
              methods: dict | None = None, cluster: ClusterParams | None = None,
              refresh: bool = False) -> tuple[dict[str, list], UnitStats]:
    """Every (method, case) unit, from the store or computed in batches (on ``settings.task_runner``); per method,
    units in case order."""
    from tasks.caching import code_version
    from tasks.clarifiers.question_methods import QuestionContext, build_method
    from tasks.evaluation.engine import UnitStore
    from tasks.evaluation.question_units import QUESTION_CODE, QuestionUnit, unit_key

    # a unit with a role failure is not stored
    store = UnitStore(unit_store(root, inputs.domain), QuestionUnit, refresh=refresh)
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
        group_done = len(cases) - len(todo)
        if progress and not todo:
            progress(done, total, entry.name, group_done, len(cases))
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
            group_done += len(batch)
            if progress:
                progress(done, total, entry.name, group_done, len(cases))
        out[entry.name] = units
    stats.seconds = time.monotonic() - started
    return out, stats


def batch_units(method, chunk: Sequence[Case], keys: Sequence[str], *, name: str, label: str, roles: RolesParams,
                reward: RewardConfig, weights: dict[str, float], client=None) -> list:
    """One batch's units in this thread: the method's completions, the units and their share of the usage that
    ``client``'s accounting (the process's default one when None) gained meanwhile."""
    from tasks.evaluation.question_units import compute_units, share_usage, usage_delta
    from tasks.llm.client import default_client

    accounting = (client or default_client()).accounting
    before = accounting.snapshot()
    completions = complete_batch(method, chunk, label=label)
    fresh = compute_units(chunk, completions, method=name, keys=keys, roles=roles, reward=reward,
                          weights=weights, client=client)
    shares = share_usage(usage_delta(before, accounting.snapshot()), [len(u.questions) for u in fresh])
    return [u.model_copy(update={"usage": share}) for u, share in zip(fresh, shares)]


def in_flow() -> bool:
    """Whether a Prefect flow run is active in this thread (Prefect is never imported to find out)."""
    if "prefect" not in sys.modules:
        return False
    from prefect.context import FlowRunContext

    return FlowRunContext.get() is not None


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
    from tasks.evaluation.question_units import unit_usage

    total = unit_usage([unit])
    return {"prompt_tokens": total["PromptTokens"], "completion_tokens": total["CompletionTokens"],
            "tokens": total["TotalTokens"], "cost_usd": total["EstimatedCostUSD"],
            "latency_s": total["LatencySeconds"],
            "usage": {role: u.model_dump() for role, u in sorted(unit.usage.items())}}


EFFICIENCY_SCORE = "weighted_recovery"
"""The score of the SWE cost and efficiency figures (``efficiency``)."""


def efficiency(units: Sequence[Any], metrics: dict[str, Any]) -> dict[str, Any]:
    """A method row's cost and efficiency figures (``tasks.evaluation.cost_table.efficiency``, per case) from the
    usage summed over its units (``QuestionUnit.usage``); the score is ``weighted_recovery`` and score / question
    divides
    by ``questions_per_issue``."""
    from tasks.evaluation.cost_table import efficiency as cost_figures
    from tasks.evaluation.question_units import unit_usage

    usage = unit_usage(units)
    score = metrics.get(EFFICIENCY_SCORE)
    figures = cost_figures(tokens=usage["TotalTokens"], cost=usage["EstimatedCostUSD"],
                           latency=usage["LatencySeconds"], n=max(len(units), 1), per="Case", score=score,
                           questions=metrics.get("questions_per_issue"))
    return {**usage, **figures, "Cases": len(units), "Score": score, "ScoreName": EFFICIENCY_SCORE}


def summarise(cases: Sequence[Case], units_by_method: dict[str, list], settings: QuestionSettings, roles: RolesParams,
              inputs: QuestionInputs, reward: RewardConfig) -> tuple[dict[str, Any], list[dict]]:
    """The summary (deterministic) and the per-case rows. The ranked methods are ``methods`` (in ``method_order``);
    the reference methods (their ``questions.methods.method(reference=...)``: the oracle template, the no-questions
    floor; and every ``+abstain`` variant, whose abstention reads the full issue) are ``reference_methods`` (in
    ``reference_order``), each with its ``reference`` (kind, what it reads)."""
    from tasks.clarifiers.question_methods import reference_of
    from tasks.evaluation.metrics import tidy
    from tasks.evaluation.question_metrics import (
        distinct_intents,
        measured_metrics,
        method_metrics,
        outcome,
        presence_after,
    )
    from tasks.evaluation.question_units import UNIT_ROLES, evaluation_reward
    from tasks.evaluation.surrogate import LABEL
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
    from tasks.evaluation.abstain import reference as abstain_reference
    from tasks.splits import split_counts

    references = {e.name: reference_of(e.kind) or abstain_reference(e.name) for e in settings.methods}
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
        "reward_protocol": reward.protocol,
        "judge_failure": reward.judge_failure,
        "unscored": sum(m.get("unscored", 0) for m in (*methods.values(), *reference_methods.values())),
        "bootstrap": {"resamples": settings.bootstrap, "seed": settings.seed, "unit": "issue (source_id)",
                      "method": "percentile, paired ratio"},
        "roles": {name: described[name] for name in (*UNIT_ROLES, "question_writer")},
    }
    if any(e.kind == "published" for e in settings.methods) and settings.case_source != "workbook_rewrite3":
        summary["published_note"] = ("the published lists were written for the workbook's rewrite 3, not for these "
                                     "variants; they are matched by instance id")
    return tidy(summary), [tidy(r) for r in rows]


def evaluate_questions(cases: Sequence[Case], settings: QuestionSettings, roles: RolesParams, out_dir: Path, *,
                       root: Path, inputs: QuestionInputs, client=None,
                       progress: Callable[[int, int], None] | None = None, reward: RewardConfig | None = None,
                       methods: dict | None = None,
                       cluster: ClusterParams | None = None, refresh: bool = False) -> dict[str, Any]:
    """Run every method on ``cases``, write the outputs into ``out_dir`` and return the summary.

    ``reward``: the staged reward settings (``params.yaml: reward``; default ``RewardConfig()``), judged by
    ``roles``. ``inputs``: from :func:`load_question_inputs` (its domain names the unit store; its cases are replaced
    by ``cases``). ``methods``: name -> a prepared ``QuestionMethod`` (tests inject fake policies; serial runner only).
    ``cluster``: where the batches run under ``settings.task_runner: dask``. The returned summary
    equals ``summary.json`` plus a ``run`` entry (units computed / reused, seconds) that is not written.
    """
    from tasks.evaluation import question_plots as plots
    from tasks.evaluation.bridge import export_clarified, has_repositories
    from tasks.evaluation.question_report import report_markdown
    from tasks.store import atomic_write_json, atomic_write_text

    root, out_dir = Path(root), Path(out_dir)
    reward = reward or RewardConfig()
    cases = sorted(cases, key=lambda c: c.case_id)
    inputs.trained = check_trained_policies(root, settings, cases)  # the cases given here, not only the loaded ones
    units, stats = run_units(cases, settings, roles, inputs, root=root, reward=reward, client=client,
                             progress=progress, methods=methods, cluster=cluster, refresh=refresh)
    abstaining: list[str] = []
    if settings.abstain.threshold is not None:
        from tasks.evaluation.abstain import add_abstaining

        settings, units, abstaining = add_abstaining(settings, units)
        inputs.columns.update({f"{n}+abstain": inputs.columns[n] for n in abstaining if n in inputs.columns})
    summary, rows = summarise(cases, units, settings, roles, inputs, reward)
    if abstaining:
        from tasks.evaluation.abstain import abstention_block
        from tasks.evaluation.metrics import tidy

        summary["abstention"] = tidy(abstention_block(summary, units, abstaining, settings.abstain.threshold))
    if settings.compare:
        summary["paired"] = paired_comparisons(units, settings)
    out_dir.mkdir(parents=True, exist_ok=True)
    from tasks.stage_metrics import without_wall_clock

    # the outputs hold no wall time, so an identical rerun writes identical bytes (the summary returned keeps it)
    atomic_write_json(out_dir / "summary.json", without_wall_clock(summary))
    atomic_write_text(out_dir / "rows.jsonl", "".join(json.dumps(without_wall_clock(r), sort_keys=True,
                                                                 ensure_ascii=False) + "\n"
                                                      for r in rows))
    from tasks.evaluation import inspect_log

    inspect_log.write_swe_log(out_dir / inspect_log.SWE_LOG, rows, summary, {c.case_id: c.brief.content for c in cases})
    ordered = plotted_methods(summary)
    plots.category_plot(ordered, out_dir / "category_distribution.png")
    plots.recovery_plot(ordered, out_dir / "questions_vs_recovery.png")
    if has_repositories(cases, inputs.meta):  # SWE-bench-style exports: only for issues of code repositories
        export_clarified([u for name in units for u in units[name]], {c.case_id: c for c in cases},
                         out_dir / "bridge", inputs.meta)
    sections = persona_outputs(out_dir, cases, units, summary, settings, roles, inputs)
    atomic_write_text(out_dir / "report.md", report_markdown(without_wall_clock(summary)) + sections)
    from tasks.roles.failures import unit_failure_counts

    failure_counts = unit_failure_counts([u for name in units for u in units[name]], roles)
    return {**summary, "run": {"computed": stats.computed, "reused": stats.reused,
                               "seconds": round(stats.seconds, 2), "failure_counts": failure_counts}}


def persona_outputs(out_dir: Path, cases: Sequence[Case], units: dict[str, list], summary: dict[str, Any],
                    settings: QuestionSettings, roles: RolesParams, inputs: QuestionInputs) -> str:
    """``frontier.json`` / ``frontier.png`` (every method) and, with more than one persona, ``robustness.json`` /
    ``robustness.png`` (the ``persona_methods`` rows, default every ranked one); returns their report sections."""
    from tasks.evaluation import question_personas as personas
    from tasks.evaluation.frontier import frontier_plot
    from tasks.evaluation.metrics import tidy
    from tasks.evaluation.robustness import robustness_plot
    from tasks.roles.config import describe_roles
    from tasks.store import atomic_write_json

    by_id = {c.case_id: c for c in cases}
    references = set(summary["reference_order"])
    ordered = {name: units[name] for name in (*summary["method_order"], *summary["reference_order"])}
    table = personas.frontier_table(by_id, ordered, references=references, n_resamples=settings.bootstrap,
                                    seed=settings.seed)
    atomic_write_json(out_dir / "frontier.json", tidy(table))
    frontier_plot(table, out_dir / "frontier.png", y="recall", label="hidden-category recall within budget")
    sections = "\n" + personas.frontier_markdown(table)
    if len(settings.personas) < 2:
        return sections
    rows = settings.persona_methods if settings.persona_methods is not None else summary["method_order"]
    user = describe_roles(roles)["swe_user"]
    source = ("simulated user swe_user: " + ("local rules" if user.get("backend", "local") == "local"
                                             else str(user.get("model"))) + " + the persona rewrite (local rules)")
    robust = personas.robustness_table(by_id, {name: units[name] for name in rows}, settings.personas,
                                       inputs.weights, n_resamples=settings.bootstrap, seed=settings.seed)
    robust.update({"personas_settings": [p.model_dump(mode="json") for p in settings.personas], "source": source})
    atomic_write_json(out_dir / "robustness.json", tidy(robust))
    persona_logs(out_dir, cases, {name: units[name] for name in rows}, robust, summary, settings, inputs)
    robustness_plot(robust, out_dir / "robustness.png", metric="facts_received",
                    label="facts received (category-weighted)")
    return sections + "\n" + personas.robustness_markdown(robust, source=source)


def persona_logs(out_dir: Path, cases: Sequence[Case], units: dict[str, list], robust: dict[str, Any],
                 summary: dict[str, Any], settings: QuestionSettings, inputs: QuestionInputs) -> None:
    """One Inspect log per further persona, ``persona_<name>.eval``: every robustness row's cases as that persona
    answered them (``persona`` in each sample's metadata), its robustness figures as the method scores."""
    from tasks.evaluation import inspect_log
    from tasks.evaluation.question_personas import persona_row

    by_id = {c.case_id: c for c in cases}
    briefs = {c.case_id: c.brief.content for c in cases}
    rows_by_key = {f"{u.method}::{u.case_id}": u for name in units for u in units[name] if u.skipped is None}
    for persona in settings.personas[1:]:
        rows = [persona_row({"key": key, "method": u.method, "case_id": u.case_id,
                             "hidden": [c.key for c in by_id[u.case_id].hidden_categories],
                             "questions": [q.model_dump() for q in u.questions]},
                            by_id[u.case_id], u, persona, inputs.weights) for key, u in rows_by_key.items()]
        methods = {name: {k: v for k, v in cells[persona.name].items() if isinstance(v, int | float)}
                   for name, cells in robust["rows"].items()}
        inspect_log.write_swe_log(out_dir / f"persona_{persona.name}.eval", rows,
                                  {"methods": methods, "case_source": summary.get("case_source"),
                                   "roles": summary.get("roles", {}), "persona": persona.model_dump(mode="json")},
                                  briefs, task=f"evaluate@swe/{persona.name}")


def paired_comparisons(units: dict[str, list], settings: QuestionSettings) -> dict[str, Any]:
    """``"a - b"`` -> the mean staged-reward difference over the cases both methods scored, with its paired 95%
    bootstrap interval over those cases (``settings.compare``); a pair with a method that did not run says so."""
    from tasks.training.heldout import paired_interval

    out: dict[str, Any] = {}
    for a, b in settings.compare:
        name = f"{a} - {b}"
        if a not in units or b not in units:
            out[name] = {"skipped": f"not evaluated: {', '.join(m for m in (a, b) if m not in units)}"}
            continue
        scored = {u.case_id: u.reward.total for u in units[b] if u.reward is not None}
        paired_units = [u for u in units[a] if u.reward is not None and u.case_id in scored]
        pairs = [(u.reward.total, scored[u.case_id]) for u in paired_units]
        if not pairs:
            out[name] = {"skipped": "no case scored by both"}
            continue
        interval = paired_interval([x for x, _ in pairs], [y for _, y in pairs], n=settings.bootstrap,
                                   seed=settings.seed)
        answers = {u.case_id: u.completion for u in units[b]}
        same = sum(u.completion == answers[u.case_id] for u in paired_units)
        out[name] = {"cases": len(pairs), "same_answers": same,
                     "mean_a": round(sum(x for x, _ in pairs) / len(pairs), 6),
                     "mean_b": round(sum(y for _, y in pairs) / len(pairs), 6),
                     **{k: round(v, 6) for k, v in interval.model_dump().items()}}
    return out


def plotted_methods(summary: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The summary's methods in report order, the reference methods after them as ``<name> (reference)``: what the
    plots show (the PNGs and ``questions.plots.recovery_rows``)."""
    ordered = {name: summary["methods"][name] for name in summary["method_order"]}
    return ordered | {f"{name} (reference)": summary["reference_methods"][name] for name in summary["reference_order"]}


def split_metrics(summary: dict[str, Any], inputs: QuestionInputs, settings: QuestionSettings) -> dict[str, Any]:
    """The stage metrics' ``split``: the split evaluated, its counts, and each trained policy's training ids."""
    cases = {k: v for k, v in summary["split"].items() if k != "evaluated"}
    policies = {name: {"split": settings.split, "cases": summary["cases"], "source_ids": summary["issues"], **row}
                for name, row in inputs.trained.items()}
    return {"evaluated": settings.split, "cases": cases, "policies": policies}
