"""Inspect AI eval logs of an evaluation, so ``inspect view --log-dir data/eval/<domain>`` opens its transcripts.

An additional output: ``episodes.jsonl`` / ``rows.jsonl`` and ``summary.json`` stay the source of truth, and the
log is built from them with Inspect's own records (``inspect_ai.log``) and writer (``write_eval_log``).

- Episode evaluations (optimization, analytics): ``episodes.eval``, one sample per episode. Sample id
  ``<protocol>::<method>::<case_id>``, epoch = the repeat. Messages: the agent's first message (the brief) as
  ``user``, then the transcript (agent = ``assistant``, simulated user = ``user``). Scores: ``all_slot_exact``,
  ``core_exact`` (core-eligible cases only), ``weighted_slot_score`` (the judge's summary as explanation),
  ``slots`` (slot id -> yes/partial/no, each slot's evidence in the score's metadata) and ``stopping`` (the
  rule-based status). Metadata: the unit, statistics, run health, cost (tokens, USD, latency), the method events
  and the question audit; each method event log and the judge's input are also info events (Transcript tab).
  Per role token usage and cost go in ``role_usage``.
- SWE question evaluation: ``questions.eval``, one sample per method x case (``rows.jsonl``): the incomplete issue,
  the method's questions and the simulated user's answers; scores ``recall``, ``weighted_recovery``,
  ``full_coverage``, ``predicted_resolution`` where set; the sample's metadata is the row, with its tokens, USD,
  latency and per-role ``usage``.

The log's results hold one score group per method row (``protocol::method`` or the SWE method) with its headline
metrics and cost / efficiency figures (``tasks.evaluation.metrics.efficiency``; for a SWE method its ``efficiency``
block, ``tasks.evaluation.question_lists.efficiency``); ``eval.metadata`` holds the run
config and the whole summary. inspect_ai is the optional extra ``inspect`` (``make setup`` installs it); when it is
not installed the log is skipped with one warning line.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tasks.evaluation.episodes_jsonl import EpisodeRecord

EPISODES_LOG = "episodes.eval"
SWE_LOG = "questions.eval"
ROW_METRICS = ("RunCount", "AllSlotExactRestoreRate", "CoreExactRestoreRate", "WeightedSlotScore_macro",
               "RecoveryAUC", "AtomicQuestionsPerRun", "TotalTokens", "EstimatedCostUSD", "CostPerRunUSD",
               "LatencySeconds", "ScorePerDollar", "ScorePerQuestion")
"""The figures of an episode row shown in the log's results (the rest is in the log's metadata)."""


def available() -> bool:
    return importlib.util.find_spec("inspect_ai") is not None


def _skipped(path: Path) -> None:
    print(f"warning: inspect_ai is not installed, {Path(path).name} not written (pip install -e '.[inspect]')")


# ---- episode evaluations ----------------------------------------------------------------------------------------


def write_episode_log(path: Path, records: Sequence[EpisodeRecord], summary: Mapping[str, Any],
                      run_config: Mapping[str, Any], *, task: str) -> Path | None:
    """Write the episode evaluation's log to ``path`` (``.eval``); None (and one warning) without inspect_ai."""
    if not available():
        _skipped(path)
        return None
    samples = [episode_sample(r, roles=run_config.get("roles", {})) for r in records]
    rows = {**summary["rows"], **summary["reference_rows"]}
    scores = [_row_score(key, {k: row.get(k) for k in ROW_METRICS}, scorer="judge") for key, row in rows.items()]
    return _write(path, task=task, samples=samples, scores=scores, epochs=run_config.get("repeats", 1),
                  dataset=run_config.get("cases", ""), roles=run_config.get("roles", {}),
                  metadata={"run_config": dict(run_config), "summary": dict(summary)})


def episode_sample(record: EpisodeRecord, *, roles: Mapping[str, Any]):
    """One episode as an ``EvalSample``."""
    from inspect_ai.event import InfoEvent
    from inspect_ai.log import EvalSample
    from inspect_ai.model import ChatMessageAssistant, ChatMessageUser, ModelOutput
    from inspect_ai.scorer import Score

    from tasks.episodes.records import FIRST_MESSAGE

    e, j = record.episode, record.judge
    first = FIRST_MESSAGE.format(brief=e.brief)
    messages: list[Any] = [ChatMessageUser(content=first, source="input")]
    for row in e.transcript:
        meta = {"turn": row.turn, **({"structured": row.structured} if row.structured else {})}
        message = ChatMessageAssistant if row.speaker == "agent" else ChatMessageUser
        messages.append(message(content=row.content, metadata=meta))
    last_agent = next((r.content for r in reversed(e.transcript) if r.speaker == "agent"), "")
    scores = {
        "all_slot_exact": Score(value=float(j.all_slot_exact), answer=e.ready_summary or None),
        "weighted_slot_score": Score(value=j.weighted_slot_score, explanation=j.summary or None),
        "slots": Score(value={s.slot_id: s.hit for s in j.slot_scores},
                       metadata={s.slot_id: s.model_dump() for s in j.slot_scores},
                       explanation="; ".join(f"{s.slot_id} ({s.severity}) {s.hit}: {s.name}" for s in j.slot_scores)),
        "stopping": Score(value=j.rule_based_status, explanation=j.stopping_behavior.rationale or None,
                          metadata={"judge_label": j.stopping_behavior.status,
                                    **j.stopping_behavior.model_dump(exclude={"status", "rationale"})}),
    }
    if j.core_eligible:
        scores["core_exact"] = Score(value=float(bool(j.core_exact)))
    events: list[Any] = [InfoEvent(source=stem, data=evs) for stem, evs in sorted(e.method_events.items())]
    if e.detector_events:
        events.append(InfoEvent(source="detector_events", data=e.detector_events))
    events.append(InfoEvent(source="judge_input", data=record.judge_input))
    usage = e.usage.values()
    cost = {"prompt_tokens": sum(u.prompt_tokens for u in usage),
            "completion_tokens": sum(u.completion_tokens for u in usage),
            "cost_usd": sum(u.cost_usd for u in usage), "latency_s": sum(u.latency_s for u in usage),
            "provider_calls": sum(u.calls for u in usage), "cache_hits": sum(u.cache_hits for u in usage)}
    return EvalSample(
        id=f"{e.protocol}::{e.method}::{e.case_id}", epoch=e.repeat, input=first,
        target=[f"{s.slot_id} ({s.severity}): {s.name}" for s in j.slot_scores],
        messages=messages, output=ModelOutput.from_content(model=e.method, content=last_agent),
        scores=scores, events=events,
        metadata={"unit": record.unit, "key": record.key, "case_id": e.case_id, "method": e.method,
                  "protocol": e.protocol, "repeat": e.repeat, "persona": e.persona, "cost": cost,
                  "statistics": record.statistics,
                  "run_health": record.run_health, "question_turns": [t.model_dump() for t in e.question_turns],
                  "method_events": e.method_events, "silent_assumptions": [a.model_dump() for a in
                                                                           j.silent_assumptions],
                  "judge_failed": j.judge_failed,
                  "protocol_failure": e.protocol_failure.model_dump() if e.protocol_failure else None},
        role_usage={role: _usage(u.prompt_tokens, u.completion_tokens, u.cost_usd) for role, u in e.usage.items()},
        model_usage=_by_model(((role, u.prompt_tokens, u.completion_tokens, u.cost_usd)
                               for role, u in e.usage.items()), roles),
        total_time=round(cost["latency_s"], 4), completed=True,
    )


# ---- the SWE question evaluation --------------------------------------------------------------------------------


def write_swe_log(path: Path, rows: Sequence[Mapping[str, Any]], summary: Mapping[str, Any],
                  briefs: Mapping[str, str], *, task: str = "evaluate@swe") -> Path | None:
    """Write the SWE evaluation's log (``rows`` as in ``rows.jsonl``; ``briefs``: case id -> incomplete issue)."""
    if not available():
        _skipped(path)
        return None
    samples = [swe_sample(r, briefs.get(r["case_id"], "")) for r in rows]
    methods = {**summary.get("methods", {}), **summary.get("reference_methods", {})}
    scores = [_row_score(name, {**{k: v for k, v in m.items() if isinstance(v, int | float)
                                   and not isinstance(v, bool)}, **(m.get("efficiency") or {})}, scorer="swe")
              for name, m in methods.items()]
    return _write(path, task=task, samples=samples, scores=scores, epochs=1, dataset=str(summary.get("case_source")),
                  roles=summary.get("roles", {}), metadata={"summary": dict(summary)})


def swe_sample(row: Mapping[str, Any], brief: str):
    """One method x case row as an ``EvalSample``: the issue, the questions, the answers."""
    from inspect_ai.log import EvalSample
    from inspect_ai.model import ChatMessageAssistant, ChatMessageUser, ModelOutput
    from inspect_ai.scorer import Score

    questions = row.get("questions") or []
    asked = "\n".join(f"{i}. {q['question']}" for i, q in enumerate(questions, 1)) or "(no questions)"
    messages: list[Any] = [ChatMessageUser(content=brief, source="input"),
                           ChatMessageAssistant(content=asked, metadata={"questions": questions})]
    if questions:
        answers = "\n".join(f"{i}. {q['answer']}" for i, q in enumerate(questions, 1))
        messages.append(ChatMessageUser(content=answers, metadata={"role": "swe_user"}))
    scores = {name: Score(value=float(row[name])) for name in ("recall", "weighted_recovery", "full_coverage",
                                                                 "predicted_resolution") if row.get(name) is not None}
    return EvalSample(id=row["key"], epoch=1, input=brief, target=list(row.get("hidden") or []), messages=messages,
                      output=ModelOutput.from_content(model=row["method"], content=asked), scores=scores or None,
                      metadata={k: v for k, v in row.items() if k != "questions"}, completed=True)


# ---- shared ---------------------------------------------------------------------------------------------------------


def _usage(prompt: int, completion: int, cost: float):
    from inspect_ai.model import ModelUsage

    return ModelUsage(input_tokens=prompt, output_tokens=completion, total_tokens=prompt + completion,
                      total_cost=cost)


def _model_of(role: str, roles: Mapping[str, Any]) -> str:
    """The model a role ran (``describe_roles``): ``<model>`` for LLM roles, ``local/<role>`` otherwise."""
    described = roles.get(role) or {}
    return described.get("model") or f"local/{role}"


def _by_model(usage: Iterable[tuple[str, int, int, float]], roles: Mapping[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for role, prompt, completion, cost in usage:
        model = _model_of(role, roles)
        u = _usage(prompt, completion, cost)
        out[model] = out[model] + u if model in out else u
    return out


def _row_score(name: str, figures: Mapping[str, Any], *, scorer: str):
    from inspect_ai.log import EvalMetric, EvalScore

    metrics = {k: EvalMetric(name=k, value=v) for k, v in figures.items()
               if isinstance(v, int | float) and not isinstance(v, bool)}
    return EvalScore(name=name, scorer=scorer, metrics=metrics)


def _write(path: Path, *, task: str, samples: list, scores: list, epochs: int, dataset: str,
           roles: Mapping[str, Any], metadata: dict[str, Any]) -> Path:
    from inspect_ai.log import EvalConfig, EvalDataset, EvalLog, EvalResults, EvalSpec, EvalStats, write_eval_log
    from inspect_ai.model import ModelConfig

    now = datetime.now(UTC).isoformat(timespec="seconds")
    role_usage: dict[str, Any] = {}
    model_usage: dict[str, Any] = {}
    for s in samples:
        for role, u in s.role_usage.items():
            role_usage[role] = role_usage[role] + u if role in role_usage else u
        for model, u in s.model_usage.items():
            model_usage[model] = model_usage[model] + u if model in model_usage else u
    ids = sorted({str(s.id) for s in samples})
    spec = EvalSpec(created=now, task=task, task_id=_digest(task), run_id=_digest(f"{task}@{now}"),
                    dataset=EvalDataset(name=task, location=dataset, samples=len(ids), sample_ids=ids),
                    model="none/clarifyflow", config=EvalConfig(epochs=epochs),
                    model_roles={r: ModelConfig(model=_model_of(r, roles)) for r in sorted(role_usage)} or None,
                    packages={"clarifyflow": _version()}, metadata={"source": "clarifyflow", **metadata})
    log = EvalLog(
        status="success",
        eval=spec,
        results=EvalResults(total_samples=len(samples), completed_samples=len(samples), scores=scores),
        stats=EvalStats(started_at=now, completed_at=now, role_usage=role_usage, model_usage=model_usage),
        samples=samples,
    )
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_eval_log(log, str(path))
    return path


def _digest(text: str) -> str:
    import hashlib

    return hashlib.sha256(text.encode()).hexdigest()[:22]


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("clarifyflow")
    except PackageNotFoundError:
        return "0"
