"""evaluate@<domain>: play every clarifier against the simulated user, judge the runs, report the metrics.

Reads ``params.yaml: evaluate.<domain>`` (cases, methods x protocols, K repeats, T_max, concurrency) and writes
``data/eval/<domain>/`` (every episode in ``episodes.jsonl`` and the Inspect log ``episodes.eval``, per-run folders
under ``runs/`` only with ``run_folders: true``, ``summary.json``, ``recovery.json`` + ``recovery.png``, ``report.md``,
``run_config.json``; SWE: ``rows.jsonl`` and ``questions.eval``), ``data/metrics/stages/evaluate/<domain>.json``
and the recovery curves (SWE: one point per method) as ``dvc plots`` records in
``data/plots/evaluate/<domain>/recovery.json``. Both keep the ranked methods under ``rows`` (SWE summary:
``methods``) and the reference rows (an oracle, a floor; declared next to each method's registration) apart under
``reference_rows`` (``reference_methods``), each naming what it reads.
Episodes (swe: batches of question units) fan out over the Prefect task runner ``evaluate.<domain>.task_runner``
names (``--runner`` overrides it; ``tasks/cluster.py``); finished units are stored under ``.cache/eval/<domain>`` so
a killed run resumes without replaying them (and the LLM call cache serves the calls of the units that were cut
off). The episodes and the summary pass GX gates before the folder is swapped into place.

The domain decides how it is evaluated (``Domain.evaluation`` in ``tasks/domains/api.py``): ``episodes`` plays the
OR-Clarify loop over its Case records (optimisation, analytics, scaffolded domains), ``questions`` scores question
sets as in CLARITI (swe). Trained policies are scored on held-out cases only (``tasks/splits.py``): a policy row
whose evaluated source ids meet its adapter's recorded training ids stops the stage with one line.
:data:`EVALUATIONS` maps each kind to its prepare and run functions; nothing here names a domain.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from flows import cli
from tasks.registry import Registry

HEADLINE = ("RunCount", "AllSlotExactRestoreRate", "CoreExactRestoreRate", "WeightedSlotScore_macro", "RecoveryAUC",
            "AtomicQuestionsPerRun", "AverageTurns", "SilentAssumptionsPerRun", "PrematureStopRate", "ReadyRate")
SWE_ROLES = ("swe_user", "redundancy_judge", "answerability_judge", "question_classifier", "question_writer")
EVAL_ROLES = ("or_open_user", "or_choice_user", "question_detector", "slot_hit_judge", "or_session_judge",
              "or_generic_agent", "or_choice_agent", "or_ready_gate", "or_orpilot_agent", "or_gap_search",
              "or_open_gap_search", "or_candidate_agent", "or_open_candidate_agent", "or_question_selector",
              "or_direct_question", "or_gap_alignment")


def backend_line(roles, names=EVAL_ROLES, fallbacks: dict[str, int] | None = None) -> str:
    """Which backend produced the numbers: every evaluation role local, or the LLM roles by model (with the
    fallbacks the stage counted, e.g. ``or_question_selector=mock/x (3 selections fell back to Q1)``)."""
    fallbacks = fallbacks or {}
    llm = [f"{name}={roles.get(name).model}" + (f" ({fallbacks[name]} selections fell back to Q1)"
                                                 if fallbacks.get(name) else "")
           for name in names if roles.get(name).backend == "llm"]
    if not llm:
        return "local backends for every evaluation role (simulated user, detector, judges, agents)"
    return f"llm roles: {', '.join(llm)}; all other roles local"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = cli.ArgumentParser(prog="python -m flows.evaluate", description=__doc__.splitlines()[0])
    parser.add_argument("--domain", required=True, help="domain with an evaluate.<domain> section (e.g. optimization)")
    parser.add_argument("--params", default="params.yaml", help="params file (default: params.yaml)")
    parser.add_argument("--out", default=None, help="output folder (default: data/eval/<domain>)")
    parser.add_argument("--runner", choices=["threads", "dask", "serial"], default=None,
                        help="override evaluate.<domain>.task_runner")
    parser.add_argument("--refresh-cache", action="store_true",
                        help="recompute every unit instead of reusing the stored ones under .cache/eval/<domain>")
    return parser.parse_args(argv)


def output_dir(root, domain: str, out: str | None):
    """``--out`` (default ``data/eval/<domain>``); an InputError naming ``--out`` if it leaves that folder."""
    from tasks.store import contained_dir

    return contained_dir(root, f"data/eval/{domain}", out, flag="--out")


def domain_of(domain: str, params_path):
    """The domain and its evaluation kind, or an InputError naming params.yaml."""
    from tasks.domains import get_domain
    from tasks.errors import DomainError, InputError

    try:
        dom = get_domain(domain)
    except DomainError as err:
        raise InputError(params_path, f"no evaluation for domain {domain!r}: {err}", field="evaluate") from None
    if dom.evaluation not in EVALUATIONS:
        raise InputError(params_path, f"domain {domain!r} has an unknown evaluation {dom.evaluation!r} (known: "
                         f"{', '.join(EVALUATIONS)})", field="evaluate")
    return dom


def prepare(domain: str, params: str = "params.yaml"):
    """Params, settings and inputs, validated before Prefect starts (InputError names the file and field)."""
    from tasks.errors import InputError
    from tasks.params import load_params
    from tasks.store import repo_root

    root = repo_root()
    params_path = root / params
    cfg = load_params(params_path)
    dom = domain_of(domain, params_path)
    if domain not in cfg.evaluate:
        raise InputError(params_path, f"missing section evaluate.{domain}", field=f"evaluate.{domain}")
    return EVALUATIONS.get(dom.evaluation).prepare(root, params_path, cfg, domain)


def prepare_questions(root, params_path, cfg, domain: str):
    """``questions``: the SWE-style settings and inputs (cases, weights, surrogate, workbook)."""
    from tasks.evaluation.questions import SweEvalSettings, load_swe_inputs
    from tasks.params import section

    settings = section(params_path, SweEvalSettings, cfg.evaluate[domain], f"evaluate.{domain}")
    inputs = load_swe_inputs(root, settings)
    return root, cfg, settings, inputs


def prepare_episodes(root, params_path, cfg, domain: str):
    """``episodes``: the methods (each checked against its protocols) and the cases."""
    from tasks.errors import InputError
    from tasks.evaluation.runs import EvalSettings, load_cases
    from tasks.params import section

    settings = section(params_path, EvalSettings, cfg.evaluate[domain], f"evaluate.{domain}")
    from tasks.clarifiers.base import get_method

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
    from tasks.evaluation.runs import check_policies

    check_policies(cases, settings)  # before any episode: a trained policy on its own training data stops here
    return root, cfg, settings, cases


def evaluate(domain: str, params: str = "params.yaml", out: str | None = None,
             runner: str | None = None, refresh_cache: bool = False) -> dict:
    """The flow body: dispatch on the domain's evaluation kind (``refresh_cache``: no unit from the store)."""
    from tasks.store import repo_root

    started = time.monotonic()
    output_dir(repo_root(), domain, out)
    dom = domain_of(domain, repo_root() / params)
    return EVALUATIONS.get(dom.evaluation).run(domain, params, out, runner, started, refresh_cache)


def evaluate_episodes(domain: str, params: str, out: str | None, runner: str | None, started: float,
                      refresh: bool = False) -> dict:
    """Episodes: every method x protocol x repeat x case played, judged, summarised and gated (or-clarify.md), all
    in the domain's context (:func:`tasks.domains.domain_context`, built here once and handed down)."""
    from tasks.domains import domain_context
    from tasks.evaluation import metrics as eval_metrics
    from tasks.evaluation.evaluate import play, write_outputs
    from tasks.evaluation.report import publish_report
    from tasks.evaluation.runs import check_policies, episode_store
    from tasks.llm.client import default_client
    from tasks.roles.failures import check_failure_rates, episode_failure_counts, episode_fallbacks
    from tasks.splits import split_counts
    from tasks.stage_metrics import publish_with_metrics
    from tasks.store import staged_dir
    from tasks.validation import gate
    from tasks.validation.eval_gates import gate_recovery
    from tasks.validation.stage_metrics import check_stage_metrics

    root, cfg, settings, cases = prepare(domain, params)
    context = domain_context(domain)
    store = episode_store(root / ".cache" / "eval" / domain, refresh=refresh)
    client = default_client()
    bar = _progress_bar(domain, "episodes")
    results, stats = play(cases, settings, cfg.roles, store, domain=context, client=client, runner=runner,
                          cluster=cfg.cluster, progress=bar)
    # a role (a judge, an agent, the simulated user) that failed too often stops the stage before anything is written
    failures = episode_failure_counts(results, cfg.roles)
    check_failure_rates(failures, cfg.roles.max_failure_rate, stage=f"evaluate@{domain}")
    out_dir = output_dir(root, domain, out)
    results_dir = root / ".cache" / "gx" / "results"
    with staged_dir(out_dir) as staging:
        summary = write_outputs(staging, results, cases, settings, cfg.roles, domain=context, source=settings.cases)
        gate("or_episodes", eval_metrics.episodes_frame([r.episode for r in results], [r.judge for r in results]),
             artifact=f"{out_dir.relative_to(root)}/episodes.jsonl", results_dir=results_dir,
             methods=[m.name for m in settings.methods])
        gate("or_summary", eval_metrics.summary_frame(summary), artifact=f"{out_dir.relative_to(root)}/summary.json",
             results_dir=results_dir)
        ladder = check_ladder(summary, settings, artifact=f"{out_dir.relative_to(root)}/summary.json",
                              served=any(cfg.roles.get(name).backend == "llm" for name in EVAL_ROLES))
        gate_recovery(staging / "recovery.json", artifact=f"{out_dir.relative_to(root)}/recovery.json",
                      results_dir=results_dir)
        report = (staging / "report.md").read_text(encoding="utf-8")
        fallbacks = episode_fallbacks(results)
        metrics = {"backend": backend_line(cfg.roles, fallbacks=fallbacks), "cases": len(cases),
                   "repeats": settings.repeats, "episodes": len(results),
                   "role_failures": {c.role: c.failures for c in failures}, "fallbacks": fallbacks,
                   **({"sanity": ladder} if ladder else {}), **llm_calls_entry(client),
                   "split": {"evaluated": "all (policy rows: heldout)", "cases": split_counts(cases),
                             "policies": {name: row for name, row in check_policies(cases, settings).items()
                                          if row["split"] == "heldout"}},
                   **metric_rows(summary["rows"], summary["reference_rows"], _episode_headline)}
        check_stage_metrics(f"evaluate/{domain}", metrics, counts={"cases": len(cases)})
        publish_with_metrics(staging, out_dir, root, f"evaluate/{domain}", metrics)
    from tasks.evaluation.plots import plot_data_path, recovery_rows
    from tasks.store import atomic_write_json, read_json_object

    atomic_write_json(plot_data_path(root, domain), recovery_rows(read_json_object(out_dir / "recovery.json")))
    publish_report(report, key=f"evaluate-{domain}")
    return {"domain": domain, "episodes": len(results), "played": stats.computed, "reused": stats.reused,
            "rows": len(summary["rows"]) + len(summary["reference_rows"]),
            "seconds": round(time.monotonic() - started, 1),
            "out": str(out_dir.relative_to(root)) if out_dir.is_relative_to(root) else str(out_dir)}


def llm_calls_entry(client=None) -> dict:
    """``llm_roles`` for the stage metrics: each LLM role's calls in this run, failures by kind, regenerations,
    retries and tokens (its summed latency goes to the timings file); nothing when every role ran locally."""
    from tasks.llm.client import default_client
    from tasks.roles.failures import llm_role_calls

    calls = llm_role_calls((client or default_client()).accounting.snapshot())
    return {"llm_roles": calls} if calls else {}


def check_ladder(summary: dict, settings, *, artifact: str, served: bool = False) -> list[str]:
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


def evaluate_questions(domain: str, params: str, out: str | None, runner: str | None, started: float,
                       refresh: bool = False) -> dict:
    """Question sets per method on the cases, answered by the simulated user, scored (CLARITI §7; evaluate@swe)."""
    from tasks.evaluation import questions
    from tasks.roles.failures import check_failure_rates
    from tasks.stage_metrics import publish_with_metrics
    from tasks.store import staged_dir
    from tasks.validation import gate
    from tasks.validation.eval_gates import gate_bridge
    from tasks.validation.stage_metrics import check_stage_metrics

    root, cfg, settings, inputs = prepare(domain, params)
    if runner:
        settings = settings.model_copy(update={"task_runner": runner})
    out_dir = output_dir(root, domain, out)
    results_dir = root / ".cache" / "gx" / "results"
    with staged_dir(out_dir) as staging:
        summary = questions.evaluate_swe(inputs.cases, settings, cfg.roles, staging, root=root, inputs=inputs,
                                         reward=cfg.reward, progress=_progress_bar(domain, "question units"),
                                         cluster=cfg.cluster, refresh=refresh)
        run = summary.pop("run", {})
        # the same gate as the episode evaluations: a role that failed too often stops the stage, nothing published
        failures = run.get("failure_counts", [])
        check_failure_rates(failures, cfg.roles.max_failure_rate, stage=f"evaluate@{domain}")
        gate("swe_eval_summary", questions.summary_frame(summary),
             artifact=f"{out_dir.relative_to(root)}/summary.json", results_dir=results_dir)
        gate("swe_eval_rows", questions.rows_frame(staging), artifact=f"{out_dir.relative_to(root)}/rows.jsonl",
             results_dir=results_dir)
        gate_bridge(staging / "bridge", artifact=f"{out_dir.relative_to(root)}/bridge", results_dir=results_dir)
        report = (staging / "report.md").read_text(encoding="utf-8")
        metrics = {"backend": backend_line(cfg.roles, SWE_ROLES), "cases": len(inputs.cases),
                   "role_failures": {c.role: c.failures for c in failures},
                   "split": questions.split_metrics(summary, inputs, settings),
                   **metric_rows(summary["methods"], summary["reference_methods"],
                                 partial(_swe_headline, trained_on=summary["surrogate"].get("trained_on")))}
        if "abstention" in summary:
            metrics["abstention"] = summary["abstention"]["methods"]
        if summary.get("paired"):
            metrics["paired"] = summary["paired"]
        metrics.update(llm_calls_entry())
        check_stage_metrics(f"evaluate/{domain}", metrics, counts={"cases": len(inputs.cases)})
        publish_with_metrics(staging, out_dir, root, f"evaluate/{domain}", metrics)
    from tasks.evaluation.plots import plot_data_path
    from tasks.evaluation.report import publish_report
    from tasks.store import atomic_write_json

    atomic_write_json(plot_data_path(root, domain), questions.recovery_rows(questions.plotted_methods(summary)))

    publish_report(report, key=f"evaluate-{domain}")
    return {"domain": domain, "episodes": len(inputs.cases) * len(settings.methods),
            "played": run.get("computed", 0), "reused": run.get("reused", 0),
            "rows": len(metrics["rows"]) + len(metrics["reference_rows"]),
            "seconds": round(time.monotonic() - started, 1), "out": str(out_dir.relative_to(root))}


@dataclass(frozen=True)
class EvaluationKind:
    prepare: Callable
    """``(root, params_path, params, domain) -> (root, params, settings, inputs)``; raises InputError."""
    run: Callable
    """``(domain, params, out, runner, started, refresh) -> summary`` (the flow body for this kind)."""


EVALUATIONS: Registry[EvaluationKind] = Registry("evaluation")
"""``Domain.evaluation`` -> how the domain is evaluated."""
EVALUATIONS.add("episodes", EvaluationKind(prepare=prepare_episodes, run=evaluate_episodes))
EVALUATIONS.add("questions", EvaluationKind(prepare=prepare_questions, run=evaluate_questions))


def metric_rows(rows: dict, reference_rows: dict, headline: Callable[[dict], dict]) -> dict:
    """The stage metrics' ``rows`` (ranked methods) and ``reference_rows`` (each with what it reads), apart."""
    return {"rows": {name: headline(m) for name, m in rows.items()},
            "reference_rows": {name: {**headline(m), "reference": m["reference"]}
                               for name, m in reference_rows.items()}}


def _episode_headline(metrics: dict) -> dict:
    return {k: v for k, v in metrics.items() if k in HEADLINE}


def _swe_headline(metrics: dict, trained_on: str | None = None) -> dict:
    """A SWE method's numeric metrics; the surrogate's predicted resolution under a key naming its source
    (``tasks.evaluation.questions.surrogate.metric_key``: planted by default), never bare."""
    from tasks.evaluation.questions.surrogate import METRIC, metric_key

    return {metric_key(trained_on) if k == METRIC else k: v for k, v in metrics.items()
            if isinstance(v, int | float) and not isinstance(v, bool)}


def _progress_bar(domain: str, unit: str):
    """Lines with done / total, rate and time left, per method (``tasks.progress``), in a terminal and a log alike."""
    from tasks.progress import Progress

    return Progress(f"evaluate@{domain}", unit)


def describe(summary: dict) -> str:
    return (f"evaluate@{summary['domain']}: {summary['episodes']} episodes ({summary['played']} played, "
            f"{summary['reused']} resumed from the store), {summary['rows']} report rows -> {summary['out']}/ "
            f"({summary['seconds']} s)")


def build_flow():
    from prefect import flow

    return flow(name="evaluate", flow_run_name="evaluate@{domain}", log_prints=True)(evaluate)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)

    def check() -> None:
        from tasks.store import repo_root

        output_dir(repo_root(), args.domain, args.out)
        prepare(args.domain, args.params)

    return cli.run_stage(lambda: build_flow()(domain=args.domain, params=args.params, out=args.out, runner=args.runner,
                                              refresh_cache=args.refresh_cache), describe, check=check)


if __name__ == "__main__":
    sys.exit(main())
