"""Role failures and fallbacks of one stage, and the one check that fails a stage whose LLM roles mostly failed.

A role call that fails for good comes back as a ``RoleFailure`` (``tasks/roles/base.py``) and its caller carries
on: the judge marks the run failed, the rewriter falls back to the local join, the selector to its first candidate.
That keeps one bad call from stopping a run, but a backend that fails on *every* call would still publish numbers
that look real. ``check_failure_rates`` stops the stage (a ``RoleFailureRateError``, one line naming the role, the
failure count and the rate) when a role's failure rate is above ``roles.max_failure_rate``; it runs before anything
is published, so the previous outputs stay in place.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from pydantic import BaseModel, ConfigDict

from tasks.errors import ClarifyflowError, GateError


class RoleFailureCount(BaseModel):
    """How many of a role's requests in one stage failed for good (``total``: the requests that were made)."""

    model_config = ConfigDict(frozen=True)

    role: str
    failures: int
    total: int

    @property
    def rate(self) -> float:
        return self.failures / self.total if self.total else 0.0


class RoleFailureRateError(GateError):
    """A role failed on more of its requests than ``roles.max_failure_rate`` allows; nothing was published (a gate:
    the command exits with ``EXIT_GATE``)."""

    def __init__(self, stage: str, count: RoleFailureCount, max_rate: float):
        self.artifact = stage
        self.count = count
        self.summary = f"role {count.role} failed {count.failures} of {count.total} requests"
        ClarifyflowError.__init__(self, f"{stage}: role {count.role} failed {count.failures} of {count.total} requests "
                         f"(rate {count.rate:.2f} > roles.max_failure_rate {max_rate:g}); nothing was published")


def counts_from_usage(usage: Mapping[str, Mapping]) -> list[RoleFailureCount]:
    """One count per LLM role of an accounting snapshot (``{role: {backend, requests, failures, ...}}``)."""
    return [RoleFailureCount(role=role, failures=int(row.get("failures", 0)), total=int(row.get("requests", 0)))
            for role, row in sorted(usage.items()) if row.get("backend", "llm") == "llm" and row.get("requests")]


def llm_role_calls(usage: Mapping[str, Mapping]) -> dict[str, dict]:
    """Per LLM role of an accounting snapshot (this process's calls; units reused from a store made none): its
    model, requests, provider calls, failures by kind, regenerations, retries, replies cut by the token limit and
    tokens. Empty when every role ran its local backend."""
    return {
        role: {"model": row.get("model", ""), "requests": int(row.get("requests", 0)),
               "provider_calls": int(row.get("provider_calls", 0)), "failures": int(row.get("failures", 0)),
               "failures_by_kind": dict(sorted((row.get("failure_kinds") or {}).items())),
               "regenerations": int(row.get("regenerations", 0)), "retries": int(row.get("retries", 0)),
               "truncated_replies": int(row.get("truncated", 0)),
               "prompt_tokens": int(row.get("prompt_tokens", 0)),
               "completion_tokens": int(row.get("completion_tokens", 0)),
               "latency_s": round(float(row.get("latency_s", 0.0)), 2)}
        for role, row in sorted(usage.items()) if row.get("backend", "llm") == "llm" and row.get("requests")
    }


def check_failure_rates(counts: Iterable[RoleFailureCount], max_rate: float, *, stage: str) -> None:
    """Raise ``RoleFailureRateError`` for the first role (by name) whose failure rate is above ``max_rate``."""
    for count in sorted(counts, key=lambda c: c.role):
        if count.total and count.rate > max_rate:
            raise RoleFailureRateError(stage, count, max_rate)


def fallback_note(backend: str, fallbacks: int, total: int, to: str = "local") -> str:
    """A role's backend as reports show it: ``llm`` or ``llm (3 of 8 fell back to local)``."""
    if not fallbacks:
        return backend
    return f"{backend} ({fallbacks} of {total} fell back to {to})"


def episode_failure_counts(results: Iterable, roles) -> list[RoleFailureCount]:
    """Evaluation counts from the played (or resumed) units: each LLM role's failed requests over its requests in
    the episodes (``episode.usage``), and each judge role's failed runs over the judged runs (a failed judge marks
    the run ``judge_failed``; its summary names the role)."""
    from tasks.roles.config import ROLE_NAMES

    results = list(results)
    failures: dict[str, int] = {}
    totals: dict[str, int] = {}
    for r in results:
        for role, usage in r.episode.usage.items():
            if role in ROLE_NAMES and roles.get(role).backend == "llm":
                failures[role] = failures.get(role, 0) + usage.failures
                totals[role] = totals.get(role, 0) + usage.requests
    judges = [name for name in JUDGE_ROLES if roles.get(name).backend == "llm"]
    for name in judges:
        failures.setdefault(name, 0)
        totals[name] = totals.get(name, 0) + len(results)
    for r in results:
        if r.judge.judge_failed:
            role = judge_role(r.judge.summary)
            failures[role] = failures.get(role, 0) + 1
            totals.setdefault(role, len(results))
    return [RoleFailureCount(role=role, failures=failures.get(role, 0), total=totals[role]) for role in sorted(totals)]


JUDGE_ROLES = ("slot_hit_judge", "or_session_judge")


def judge_role(summary: str) -> str:
    """The judge role a failed judgement names (``Judge failed: slot_hit_judge invalid_output: ...``)."""
    name = summary.removeprefix("Judge failed:").strip().split(" ", 1)[0]
    return name if name in JUDGE_ROLES else "judge"


def episode_fallbacks(results: Iterable) -> dict[str, int]:
    """Fallbacks the methods counted in their episodes: the InterOPT selector's first-candidate fallback."""
    selector = sum(int(v) for r in results for k, v in r.episode.counters.items() if k.startswith("selector_fallback"))
    return {"or_question_selector": selector}


def unit_failure_counts(units: Iterable, roles) -> list[RoleFailureCount]:
    """Question-evaluation counts (evaluate@swe) from the computed or reused ``QuestionUnit`` records: per LLM role, its
    failed requests over its requests in the units' usage; a role whose failures show only in the units (a failed
    generation ``question_writer: provider: ...``, a unit role's ``role_failures``) counts failed units over units.
    The same :func:`check_failure_rates` then gates it as it gates the episode evaluations."""
    from tasks.roles.config import ROLE_NAMES

    units = list(units)
    requests: dict[str, int] = {}
    failed: dict[str, int] = {}
    in_units: dict[str, int] = {}
    for unit in units:
        for role, usage in unit.usage.items():
            requests[role] = requests.get(role, 0) + int(getattr(usage, "requests", 0))
            failed[role] = failed.get(role, 0) + int(getattr(usage, "failures", 0))
        named = dict(unit.role_failures)
        if unit.failure:
            role = unit.failure.split(":", 1)[0].strip()
            named[role] = named.get(role, 0) + 1
        for role, n in named.items():
            in_units[role] = in_units.get(role, 0) + (1 if n else 0)

    def is_llm(role: str) -> bool:
        return role not in ROLE_NAMES or roles.get(role).backend == "llm"

    out = []
    for role in sorted(set(requests) | set(in_units)):
        if not is_llm(role):
            continue
        by_usage = RoleFailureCount(role=role, failures=failed.get(role, 0), total=requests.get(role, 0))
        by_units = RoleFailureCount(role=role, failures=in_units.get(role, 0), total=len(units))
        out.append(max(by_usage, by_units, key=lambda c: (c.rate, c.total)))
    return out
