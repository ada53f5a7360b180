"""evaluate@<domain>: the one body every evaluation runs, whatever its kind.

A domain says how it is evaluated (``Domain.evaluation`` in ``tasks/domains/api.py``); :data:`EVALUATIONS` maps
that kind to its settings record and its scorer:

- ``episodes`` (``tasks.evaluation.episode_kind``): every method x protocol x repeat x case played against the
  simulated user and judged (OR-Clarify; optimisation, analytics, scaffolded domains);
- ``questions`` (``tasks.evaluation.question_kind``): each method's question list per case answered by the simulated
  user and labelled by the judges (CLARITI §7; swe).

:func:`run_evaluation` reads the params (:func:`prepare`: an ``InputError`` naming the file and field before any
work), has the kind score every case into a staging folder, stops when a role failed too often, runs the kind's
gates and the stage-metrics check (``checks``, handed down by the flow: they live in ``tasks/validation``, a layer
above), publishes the folder with the stage's metrics in one swap, writes the ``dvc plots`` records and the report
artifact. The stage metrics share one shape: ``backend``, ``cases``, ``role_failures``, ``llm_roles``, ``split``,
the ranked ``rows`` apart from the ``reference_rows`` (each naming what it reads), and what the kind adds.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from tasks.evaluation.settings import EvaluationSettings
from tasks.registry import Registry


class Checks(Protocol):
    """The gates an evaluation runs on its staged outputs before they are published (``tasks/validation``)."""

    def table(self, suite: str, frame: Any, *, artifact: str, **options: Any) -> None:
        """A Great Expectations suite over a table (raises GateError)."""

    def recovery(self, path: Path, *, artifact: str) -> None:
        """The recovery curves of ``recovery.json``."""

    def bridge(self, folder: Path, *, artifact: str) -> None:
        """The SWE-bench-style exports of ``bridge/``."""

    def stage_metrics(self, stage: str, metrics: dict[str, Any], *, counts: dict[str, int]) -> None:
        """The stage metrics' shape and counts."""


@dataclass
class Prepared:
    """An evaluation's validated params, settings and inputs."""

    root: Path
    params_path: Path
    params: Any
    """The whole ``params.yaml`` (``tasks.params.Params``)."""
    domain: str
    kind: EvaluationKind
    settings: EvaluationSettings
    inputs: Any
    """What the kind read besides the settings (the episode kind: the cases; the question kind: ``QuestionInputs``)."""
    cases: list = field(default_factory=list)


@dataclass
class Scored:
    """What a kind's scorer hands back after writing its outputs into the staging folder."""

    summary: dict[str, Any]
    """What ``summary.json`` holds (its gates read it)."""
    rows: dict[str, dict]
    """Ranked method -> its metrics (the summary's rows)."""
    reference_rows: dict[str, dict]
    """Reference method -> its metrics, with ``reference`` (what it reads)."""
    headline: Callable[[dict], dict]
    """A row's metrics -> the numbers the stage metrics keep of it."""
    failures: list
    """Per role: calls and failures (``tasks.roles.failures.FailureCount``), checked against ``max_failure_rate``."""
    backend: str
    """Which backend produced the numbers, in words."""
    metrics: dict[str, Any]
    """The kind's own stage-metric entries (``split``, repeats, fallbacks, abstention, ...)."""
    plot_rows: list[dict]
    """The ``dvc plots`` records of the recovery plot."""
    units: int
    computed: int
    reused: int
    records: Any = None
    """The kind's own records of the run, handed to its gate (the episode kind: the played units)."""


@dataclass(frozen=True)
class EvaluationKind:
    settings: type[EvaluationSettings]
    prepare: Callable[..., tuple[Any, list]]
    """``(root, params_path, params, domain, settings) -> (inputs, cases)``; raises InputError."""
    score: Callable[..., Scored]
    """``(prepared, staging, *, client, refresh, progress) -> Scored``: every unit scored, the outputs written into
    the staging folder."""
    gate: Callable[..., dict[str, Any]]
    """``(prepared, staging, scored, *, checks, artifact) -> metrics``: the kind's gates on its staged outputs, run
    once the role failures passed; returns stage-metric entries they add (the sanity ladder)."""
    progress_unit: str
    """What the progress lines count."""


EVALUATIONS: Registry[EvaluationKind] = Registry("evaluation")
"""``Domain.evaluation`` -> how the domain is evaluated."""
EVALUATIONS.add("episodes", "tasks.evaluation.episode_kind:KIND")
EVALUATIONS.add("questions", "tasks.evaluation.question_kind:KIND")


def output_dir(root: Path, domain: str, out: str | None) -> Path:
    """``--out`` (default ``data/eval/<domain>``); an InputError naming ``--out`` if it leaves that folder."""
    from tasks.store import contained_dir

    return contained_dir(root, f"data/eval/{domain}", out, flag="--out")


def kind_of(domain: str, params_path: Path) -> EvaluationKind:
    """How ``domain`` is evaluated, or an InputError naming params.yaml."""
    from tasks.domains import get_domain
    from tasks.errors import DomainError, InputError

    try:
        dom = get_domain(domain)
    except DomainError as err:
        raise InputError(params_path, f"no evaluation for domain {domain!r}: {err}", field="evaluate") from None
    if dom.evaluation not in EVALUATIONS:
        raise InputError(params_path, f"domain {domain!r} has an unknown evaluation {dom.evaluation!r} (known: "
                         f"{', '.join(EVALUATIONS)})", field="evaluate")
    return EVALUATIONS.get(dom.evaluation)


def prepare(domain: str, params: str = "params.yaml") -> Prepared:
    """Params, settings and inputs, validated before Prefect starts (InputError names the file and field)."""
    from tasks.errors import InputError
    from tasks.params import load_params, section
    from tasks.store import repo_root

    root = repo_root()
    params_path = root / params
    cfg = load_params(params_path)
    kind = kind_of(domain, params_path)
    if domain not in cfg.evaluate:
        raise InputError(params_path, f"missing section evaluate.{domain}", field=f"evaluate.{domain}")
    settings = section(params_path, kind.settings, cfg.evaluate[domain], f"evaluate.{domain}")
    inputs, cases = kind.prepare(root, params_path, cfg, domain, settings)
    return Prepared(root=root, params_path=params_path, params=cfg, domain=domain, kind=kind, settings=settings,
                    inputs=inputs, cases=cases)


def run_evaluation(domain: str, params: str = "params.yaml", *, checks: Checks, out: str | None = None,
                   runner: str | None = None, refresh: bool = False) -> dict[str, Any]:
    """The stage: prepare, score into a staging folder, gate, publish (``refresh``: no unit from the store)."""
    from tasks.evaluation.plots import plot_data_path
    from tasks.evaluation.report import publish_report
    from tasks.llm.client import default_client
    from tasks.progress import Progress
    from tasks.roles.failures import check_failure_rates, llm_role_calls
    from tasks.stage_metrics import publish_with_metrics
    from tasks.store import atomic_write_json, repo_root, staged_dir

    started = time.monotonic()
    root = repo_root()
    out_dir = output_dir(root, domain, out)
    prepared = prepare(domain, params)
    kind = prepared.kind
    if runner:
        prepared.settings = prepared.settings.model_copy(update={"task_runner": runner})
    client = default_client()
    artifact = str(out_dir.relative_to(root)) if out_dir.is_relative_to(root) else str(out_dir)
    with staged_dir(out_dir) as staging:
        scored = kind.score(prepared, staging, client=client, refresh=refresh,
                            progress=Progress(f"evaluate@{domain}", kind.progress_unit))
        # a role (a judge, an agent, the simulated user) that failed too often stops the stage: nothing is published
        check_failure_rates(scored.failures, prepared.params.roles.max_failure_rate, stage=f"evaluate@{domain}")
        gated = kind.gate(prepared, staging, scored, checks=checks, artifact=artifact)
        calls = llm_role_calls(client.accounting.snapshot())
        metrics = {"backend": scored.backend, "cases": len(prepared.cases),
                   "role_failures": {c.role: c.failures for c in scored.failures},
                   **scored.metrics, **gated, **({"llm_roles": calls} if calls else {}),
                   **metric_rows(scored.rows, scored.reference_rows, scored.headline)}
        checks.stage_metrics(f"evaluate/{domain}", metrics, counts={"cases": len(prepared.cases)})
        report = (staging / "report.md").read_text(encoding="utf-8")
        publish_with_metrics(staging, out_dir, root, f"evaluate/{domain}", metrics)
    atomic_write_json(plot_data_path(root, domain), scored.plot_rows)
    publish_report(report, key=f"evaluate-{domain}")
    return {"domain": domain, "episodes": scored.units, "played": scored.computed, "reused": scored.reused,
            "rows": len(scored.rows) + len(scored.reference_rows), "seconds": round(time.monotonic() - started, 1),
            "out": artifact}


def metric_rows(rows: dict, reference_rows: dict, headline: Callable[[dict], dict]) -> dict:
    """The stage metrics' ``rows`` (ranked methods) and ``reference_rows`` (each with what it reads), apart."""
    return {"rows": {name: headline(m) for name, m in rows.items()},
            "reference_rows": {name: {**headline(m), "reference": m["reference"]}
                               for name, m in reference_rows.items()}}


def backend_line(roles, names: tuple[str, ...], fallbacks: dict[str, int] | None = None) -> str:
    """Which backend produced the numbers: every evaluation role local, or the LLM roles by model (with the
    fallbacks the stage counted, e.g. ``or_question_selector=mock/x (3 selections fell back to Q1)``)."""
    fallbacks = fallbacks or {}
    llm = [f"{name}={roles.get(name).model}" + (f" ({fallbacks[name]} selections fell back to Q1)"
                                                 if fallbacks.get(name) else "")
           for name in names if roles.get(name).backend == "llm"]
    if not llm:
        return "local backends for every evaluation role (simulated user, detector, judges, agents)"
    return f"llm roles: {', '.join(llm)}; all other roles local"
