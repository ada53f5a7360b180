"""One unit of the SWE evaluation = one (method, case): the method's questions, the simulated user's answers, the
judges' labels and the staged reward. Units are stored as JSON under a content key (the engine's store,
``tasks.evaluation.engine.UnitStore``), so a rerun recomputes only what changed.

Per question (every role through ``run_role``, so each can be local or an LLM, per ``params.yaml: roles``):

- ``answer`` / ``answered``: the ``swe_user`` role, from the full issue + hints ("I don't have that information."
  when it cannot answer);
- ``redundant``: the ``redundancy_judge`` against the incomplete issue (the brief);
- ``answerable``: the ``answerability_judge`` against the full issue + hints;
- ``label``: the ``question_classifier`` (a category key or ``irrelevant``) with the brief as context;
- ``intent``: the question's intent within its list (``tasks.rewards.intents``: label + MiniLM embedding, with the
  reward's ``diversity`` thresholds), numbered from 0 in order of first appearance.

A role call that fails leaves that field None (counted, never fatal). The staged reward (``StagedReward`` with the
given ``RewardConfig``) reuses these labels and embeddings through :class:`PrecomputedJudges`, so each judge runs
once per question; its diversity stage compares a list only with itself (cache size 0, no siblings), so a case's reward
does not depend on which cases were scored before it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from pydantic import BaseModel, ConfigDict

from tasks.episodes.records import RoleUsage
from tasks.evaluation import engine
from tasks.params import reward_with_roles
from tasks.records import Case
from tasks.rewards.config import RewardConfig
from tasks.roles.config import RolesParams

UNIT_ROLES = ("swe_user", "redundancy_judge", "answerability_judge", "question_classifier")


class QuestionRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    question: str
    label: str | None
    """Category key (``error_info``, …) or ``irrelevant``; None when the classifier failed."""
    answered: bool | None
    answer: str
    redundant: bool | None
    answerable: bool | None
    intent: int
    """Questions of one list with the same number share an intent."""


class RewardRecord(BaseModel):
    model_config = ConfigDict(extra="forbid")

    total: float | None
    """None when every stage was unscored (its judges failed)."""
    values: dict[str, float | None]
    passed: dict[str, bool | None]
    stopped_at: str | None
    unscored: list[str] = []
    """The stages whose judges failed for this case: counted, left out of the means and of ``total``."""


class QuestionUnit(BaseModel):
    model_config = ConfigDict(extra="forbid")

    key: str
    method: str
    case_id: str
    source_id: str
    completion: str = ""
    skipped: str | None = None
    failure: str | None = None
    questions: list[QuestionRecord] = []
    reward: RewardRecord | None = None
    role_failures: dict[str, int] = {}
    information_insufficient: bool = False
    """The questioner abstained (``questions.abstain``): it asked nothing and flags the task."""
    usage: dict[str, RoleUsage] = {}
    """Per role: requests, provider calls, cache hits, tokens, USD (litellm's price; 0 for local backends) and
    latency of the calls made while computing this unit (the method's generation and the unit roles). Role calls are
    batched over a chunk of cases, so a chunk's usage is shared out (``share_usage``): a unit role's by the case's
    questions, the other roles' evenly; empty in units stored before it was recorded."""

    @property
    def role_failed(self) -> bool:
        """The generation or a unit role failed for good (the unit is then never stored)."""
        return (self.failure is not None or any(self.role_failures.values())
                or any(u.failures for u in self.usage.values()))


QUESTION_CODE = ("evaluation/question_units.py", "clarifiers/question_methods.py", "training/prompts.py", "roles",
                 "rewards", "text.py")
"""The code that determines a question unit (``tasks.caching.code_version`` of it keys the units): the methods, the
units, the roles and their prompts, the rewards, the policy prompt and the text helpers the SWE roles use."""


def unit_key(*, case: Case, method: str, fingerprint: dict, case_input: Any, roles: RolesParams,
             reward: RewardConfig, weights: dict[str, float], code: str) -> str:
    return engine.unit_key({
        "case": case.model_dump(mode="json", exclude={"metadata": {"split"}}),  # the split never changes a result
        "method": method,
        "fingerprint": fingerprint,
        "case_input": case_input,
        "roles": {name: roles.get(name).model_dump(mode="json") for name in UNIT_ROLES},
        "reward": reward.model_dump(mode="json"),
        "weights": weights,
        "code": code,
    })


def evaluation_reward(reward: RewardConfig, roles: RolesParams) -> RewardConfig:
    """The reward settings as evaluated: judges from ``roles``, no cross-sample diversity cache."""
    return reward_with_roles(reward, roles).as_evaluated()


class PrecomputedJudges:
    """The reward's judges, answered from the labels and embeddings this chunk already computed (falls back to the
    roles)."""

    def __init__(self, fallback, redundant: dict, answerable: dict, labels: dict, vectors: dict | None = None):
        self.fallback = fallback
        self._redundant, self._answerable, self._labels = redundant, answerable, labels
        self._vectors = {} if vectors is None else vectors
        self.misses = 0

    def _lookup(self, table: dict, keys: list, compute) -> list:
        missing = [k for k in keys if k not in table]
        if missing:
            self.misses += len(missing)
            table.update(zip(missing, compute(missing)))
        return [table[k] for k in keys]

    def redundant(self, questions: Sequence[str], texts: Sequence[str]) -> list[bool | None]:
        return self._lookup(self._redundant, list(zip(questions, texts)),
                            lambda ks: self.fallback.redundant([q for q, _ in ks], [t for _, t in ks]))

    def answerable(self, questions: Sequence[str], texts: Sequence[str], hints: Sequence[str]) -> list[bool | None]:
        return self._lookup(self._answerable, list(zip(questions, texts, hints)),
                            lambda ks: self.fallback.answerable([k[0] for k in ks], [k[1] for k in ks],
                                                                [k[2] for k in ks]))

    def classify(self, questions: Sequence[str], texts: Sequence[str]) -> list[str | None]:
        return self._lookup(self._labels, list(zip(questions, texts)),
                            lambda ks: self.fallback.classify([q for q, _ in ks], [t for _, t in ks]))

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        found = self._lookup(self._vectors, list(texts), lambda ks: list(self.fallback.embed(ks)))
        return np.stack(found) if found else np.zeros((0, 0), np.float32)


def _run(spec, inputs: list, roles: RolesParams, client, retries: int = 0) -> list:
    """Outputs of role ``spec`` aligned with inputs; None for a failed call (sent again ``retries`` times first)."""
    from tasks.llm.records import RoleFailure
    from tasks.rewards.judges import run_with_repair

    if not inputs:
        return []
    outputs = run_with_repair(spec, inputs, roles.get(spec.name), client=client, retries=retries)
    return [None if isinstance(o, RoleFailure) else o for o in outputs]


def _label(output) -> str | None:
    from tasks.categories import Category

    if output is None:
        return None
    return output.label.key if isinstance(output.label, Category) else "irrelevant"


def compute_units(cases: Sequence[Case], completions: Sequence[Any], *, method: str, keys: Sequence[str],
                  roles: RolesParams, reward: RewardConfig, weights: dict[str, float],
                  client=None) -> list[QuestionUnit]:
    """Answer, judge, classify and score the questions of one chunk of cases (one batched call per role)."""
    from tasks.rewards.intents import intent_clusters
    from tasks.rewards.judges import RoleJudges
    from tasks.rewards.parse import parse_questions
    from tasks.rewards.staged import StagedReward
    from tasks.roles import question_classifier, swe_user
    from tasks.roles.base import QuestionInput
    from tasks.roles.swe_judges import ANSWERABILITY_SPEC, REDUNDANCY_SPEC, AnswerabilityInput, RedundancyInput
    from tasks.roles.swe_user import NO_INFO, SweUserInput

    asked = [[] if c.skipped else parse_questions(c.text) for c in completions]
    retries = reward.repair_retries if reward.judge_failure == "repair" else 0
    flat = [(k, q) for k, qs in enumerate(asked) for q in qs]
    user = _run(swe_user.SPEC, [SweUserInput(issue=cases[k].full_text, hints=cases[k].hints, question=q)
                                     for k, q in flat], roles, client, retries)
    red = _run(REDUNDANCY_SPEC, [RedundancyInput(text=cases[k].brief.content, question=q) for k, q in flat],
                      roles, client, retries)
    ans = _run(ANSWERABILITY_SPEC, [AnswerabilityInput(text=cases[k].full_text, question=q, hints=cases[k].hints)
                                       for k, q in flat], roles, client, retries)
    cls = _run(question_classifier.SPEC, [QuestionInput(question=q, issue_text=cases[k].brief.content)
                                              for k, q in flat], roles, client, retries)
    cfg = evaluation_reward(reward, roles)
    roles_judges = RoleJudges(cfg.judges, client=client)
    texts = list(dict.fromkeys(q for _, q in flat))
    vectors = dict(zip(texts, np.asarray(roles_judges.embed(texts), dtype=np.float32))) if texts else {}
    labels = [_label(out) for out in cls]
    intents: list[int] = []
    for qs in filter(None, asked):  # flat runs case by case
        intents += intent_clusters(labels[len(intents):len(intents) + len(qs)], np.stack([vectors[q] for q in qs]),
                                   intent_threshold=cfg.diversity.intent_threshold,
                                   similarity_threshold=cfg.diversity.similarity_threshold)
    records: list[list[QuestionRecord]] = [[] for _ in cases]
    fails: list[dict[str, int]] = [dict.fromkeys(UNIT_ROLES, 0) for _ in cases]
    red_table, ans_table, lab_table = {}, {}, {}
    for i, (k, q) in enumerate(flat):
        case = cases[k]
        rec = QuestionRecord(
            question=q,
            label=labels[i],
            answered=None if user[i] is None else bool(user[i].answered),
            answer="" if user[i] is None else (user[i].answer if user[i].answered else NO_INFO),
            redundant=None if red[i] is None else bool(red[i].answerable),
            answerable=None if ans[i] is None else bool(ans[i].answerable),
            intent=intents[i],
        )
        records[k].append(rec)
        for name, out in zip(UNIT_ROLES, (user[i], red[i], ans[i], cls[i])):
            fails[k][name] += out is None
        red_table[(q, case.brief.content)] = rec.redundant
        ans_table[(q, case.full_text, case.hints)] = rec.answerable
        lab_table[(q, case.brief.content)] = rec.label

    judges = PrecomputedJudges(roles_judges, red_table, ans_table, lab_table, vectors)
    scored = [k for k, c in enumerate(completions) if not c.skipped]
    staged = StagedReward(cfg, weights, judges=judges, client=client)
    samples = [{"completion": completions[k].text, "incomplete_issue": cases[k].brief.content,
                "full_issue": cases[k].full_text, "hints": cases[k].hints} for k in scored]
    breakdowns = dict(zip(scored, staged.score(samples))) if samples else {}

    units = []
    for k, case in enumerate(cases):
        done = breakdowns.get(k)
        units.append(QuestionUnit(
            key=keys[k], method=method, case_id=case.case_id, source_id=case.metadata.source_id,
            completion=completions[k].text, skipped=completions[k].skipped, failure=completions[k].failure,
            questions=records[k],
            reward=None if done is None else RewardRecord(total=done.total, values=done.values, passed=done.passed,
                                                          stopped_at=done.stopped_at, unscored=done.unscored),
            role_failures={n: v for n, v in fails[k].items() if v},
        ))
    return units


_INT_USAGE = ("requests", "calls", "cache_hits", "failures", "prompt_tokens", "completion_tokens", "reasoning_tokens",
              "truncated", "params_dropped")
_FLOAT_USAGE = ("cost_usd", "latency_s")


def usage_delta(before: dict[str, dict], after: dict[str, dict]) -> dict[str, dict[str, float]]:
    """Per role, what an ``Accounting.snapshot`` gained between two snapshots (roles that gained nothing dropped)."""
    out: dict[str, dict[str, float]] = {}
    for role, row in after.items():
        old = before.get(role, {})
        gained = {"requests": row.get("requests", 0) - old.get("requests", 0),
                  "calls": row.get("provider_calls", 0) - old.get("provider_calls", 0),
                  **{n: row.get(n, 0) - old.get(n, 0)
                     for n in ("cache_hits", "failures", "prompt_tokens", "completion_tokens", "reasoning_tokens",
                               "truncated", "params_dropped", "cost_usd", "latency_s")}}
        if any(gained.values()):
            out[role] = gained
    return out


def _split_int(total: int, weights: list[float]) -> list[int]:
    """``total`` split in proportion to ``weights`` (largest remainder: the parts sum to ``total``)."""
    raw = [total * w / sum(weights) for w in weights]
    parts = [int(r) for r in raw]
    for k in sorted(range(len(raw)), key=lambda k: (parts[k] - raw[k], k))[:total - sum(parts)]:
        parts[k] += 1
    return parts


def share_usage(delta: dict[str, dict[str, float]], questions: Sequence[int]) -> list[dict[str, RoleUsage]]:
    """A chunk's role usage shared out over its cases: a unit role's in proportion to each case's questions, any
    other role's (the method's generation, embeddings) evenly; integer counts by largest remainder, so the units'
    sums equal the chunk's."""
    out: list[dict[str, RoleUsage]] = [{} for _ in questions]
    if not questions:
        return out
    for role, row in sorted(delta.items()):
        weights = [float(q) for q in questions] if role in UNIT_ROLES and sum(questions) else [1.0] * len(questions)
        ints = {n: _split_int(int(row.get(n, 0)), weights) for n in _INT_USAGE}
        total = sum(weights)
        for k, w in enumerate(weights):
            if not w:
                continue
            out[k][role] = RoleUsage(**{n: ints[n][k] for n in _INT_USAGE},
                                     cost_usd=round(float(row.get("cost_usd", 0.0)) * w / total, 8),
                                     latency_s=round(float(row.get("latency_s", 0.0)) * w / total, 4))
    return out


def unit_usage(units: Sequence[QuestionUnit]) -> dict[str, float | int]:
    """The summed usage of ``units`` (all roles)."""
    rows = [u for unit in units for u in unit.usage.values()]
    return {"PromptTokens": sum(u.prompt_tokens for u in rows),
            "CompletionTokens": sum(u.completion_tokens for u in rows),
            "TotalTokens": sum(u.prompt_tokens + u.completion_tokens for u in rows),
            "ReasoningTokens": sum(u.reasoning_tokens for u in rows),
            "TruncatedReplies": sum(u.truncated for u in rows),
            "ParamsDroppedCalls": sum(u.params_dropped for u in rows),
            "ProviderCalls": sum(u.calls for u in rows),
            "EstimatedCostUSD": round(float(sum(u.cost_usd for u in rows)), 8),
            "LatencySeconds": round(float(sum(u.latency_s for u in rows)), 4)}
