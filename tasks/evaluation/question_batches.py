"""evaluate@swe's batches of question units as Prefect tasks on a task runner (``evaluate.swe.task_runner``).

A :class:`QuestionBatch` (picklable: pydantic records only) is one batch of one method's cases; :func:`compute_batch`
builds the method in the process that runs it (once per process, :func:`method_for`), lets it write the questions
and computes the units with a client of the batch's own, so each unit's usage is its batch's alone however many
batches run at once. The batches come back in submission order, so the units equal the serial run's.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from tasks.cluster import ClusterParams, Runner, fan_out
from tasks.records import Case
from tasks.rewards.config import RewardConfig
from tasks.roles.config import RolesParams


class MethodSpec(BaseModel):
    """What builds a SWE method in any process (``methods.build_method``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str
    kind: str
    options: dict[str, Any]
    roles: RolesParams
    weights: dict[str, float]
    root: Path
    published: dict[str, dict[str, str]] = {}
    """The published lists a ``published`` method reads (its column only)."""


class QuestionBatch(BaseModel):
    model_config = ConfigDict(extra="forbid")

    method: MethodSpec
    label: str
    """``<method>/<batch number>``: the task run's name."""
    cases: list[Case]
    unit_keys: list[str]
    """The units' store keys, one per case."""
    reward: RewardConfig


_METHODS: dict[str, tuple[Any, threading.Lock]] = {}
_METHODS_LOCK = threading.Lock()


def own_client():
    """A client with its own accounting over the process's call cache."""
    from tasks.llm.accounting import Accounting
    from tasks.llm.client import LLMClient, default_client

    shared = default_client()
    return LLMClient(shared.cache, use_cache=shared.use_cache, accounting=Accounting(), backoff_s=shared.backoff_s,
                     backoff_max_s=shared.backoff_max_s)


def method_for(spec: MethodSpec) -> tuple[Any, threading.Lock]:
    """One method per spec and process (a policy loads its model once), with a client of its own and the lock its
    generations take turns under."""
    from tasks.clarifiers.question_methods import QuestionContext, build_method

    key = spec.model_dump_json()
    with _METHODS_LOCK:
        if key not in _METHODS:
            ctx = QuestionContext(roles=spec.roles, weights=spec.weights, client=own_client(), root=spec.root,
                                  published=spec.published)
            _METHODS[key] = build_method(spec.name, spec.kind, spec.options, ctx), threading.Lock()
        return _METHODS[key]


def compute_batch(batch: QuestionBatch) -> list:
    """The batch's units (``QuestionUnit``), their usage shared out as in the serial run (``units.share_usage``)."""
    from tasks.evaluation.question_units import compute_units, share_usage, usage_delta

    method, lock = method_for(batch.method)
    with lock:  # one generation of this method at a time in this process: its client's usage is this batch's
        before = method.ctx.client.accounting.snapshot()
        completions = method.complete(batch.cases)
        usage = usage_delta(before, method.ctx.client.accounting.snapshot())
    client = own_client()
    spec = batch.method
    fresh = compute_units(batch.cases, completions, method=spec.name, keys=batch.unit_keys, roles=spec.roles,
                          reward=batch.reward, weights=spec.weights, client=client)
    for role, gained in usage_delta({}, client.accounting.snapshot()).items():
        usage[role] = {n: usage.get(role, {}).get(n, 0) + v for n, v in gained.items()}
    shares = share_usage(usage, [len(u.questions) for u in fresh])
    return [u.model_copy(update={"usage": share}) for u, share in zip(fresh, shares)]


def batch_spec(name: str, kind: str, options: dict[str, Any], roles: RolesParams, inputs: Any, *,
               root: Path) -> MethodSpec:
    """The spec of one ``evaluate.swe.methods`` row (``options`` with a published method's column resolved) from
    the evaluation's inputs (``inputs.QuestionInputs``)."""
    column = options.get("column") if kind == "published" else None
    return MethodSpec(name=name, kind=kind, options=options, roles=roles, weights=inputs.weights, root=root,
                      published={column: inputs.published[column]} if column in inputs.published else {})


def run_batches(spec: MethodSpec, chunks: Sequence[list[Case]], keys: Sequence[list[str]], labels: Sequence[str], *,
                reward: RewardConfig, runner: Runner, concurrency: int,
                cluster: ClusterParams | None = None) -> Iterator[list]:
    """Each chunk's units, in chunk order, computed as one Prefect task per chunk on the runner."""
    from prefect import task
    from prefect.cache_policies import NO_CACHE

    compute = task(name="question-batch", task_run_name="{batch.label}", retries=0, log_prints=False,
                   cache_policy=NO_CACHE)(compute_batch)
    calls = [{"batch": QuestionBatch(method=spec, label=label, cases=chunk, unit_keys=ks, reward=reward)}
             for chunk, ks, label in zip(chunks, keys, labels)]
    for units, _ in fan_out(compute, calls, runner=runner, concurrency=concurrency, cluster=cluster):
        yield units
