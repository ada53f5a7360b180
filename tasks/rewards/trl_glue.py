"""TRL glue: one GRPO reward function per stage (logged as ``rewards/<stage>/mean``) plus ``staged_total``.

TRL sums every reward function with ``GRPOConfig.reward_weights``; pass ``reward_weights(functions)`` (0 for the
per-stage functions, 1 for ``staged_total``) so only the gated total drives the advantage. All functions of one
batch share a single scoring pass (cached by the batch's contents), so the judges run once per batch.
"""

from __future__ import annotations

import hashlib
import json
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

from tasks.errors import InputError
from tasks.rewards.staged import RewardBreakdown, StagedReward, completion_text

TOTAL = "staged_total"
_KEEP_BATCHES = 4


def _prompt_key(prompt: Any) -> str:
    return prompt if isinstance(prompt, str) else json.dumps(prompt, sort_keys=True, default=str)


def _prompt_text(prompt: Any) -> str:
    """The issue text of a prompt when no ``incomplete_issue`` column is given: the last user message."""
    if isinstance(prompt, str):
        return prompt
    users = [m for m in prompt if isinstance(m, dict) and m.get("role") == "user"]
    return completion_text(users[-1:] or prompt)


def _column(kwargs: dict, name: str, n: int, default: Sequence[Any] | None = None) -> list[Any]:
    values = kwargs.get(name)
    if values is None:
        if default is None:
            raise InputError("GRPO reward", f"the dataset has no '{name}' column", field=name)
        return list(default)
    if len(values) != n:
        raise InputError("GRPO reward", f"{len(values)} values for {n} completions", field=name)
    return list(values)


class BatchScorer:
    """Scores a TRL batch once and hands the same breakdowns to every reward function of that batch."""

    def __init__(self, staged: StagedReward):
        self.staged = staged
        self._done: OrderedDict[str, list[RewardBreakdown]] = OrderedDict()

    def breakdowns(self, prompts: Sequence[Any], completions: Sequence[Any], kwargs: dict) -> list[RewardBreakdown]:
        n = len(completions)
        incomplete = _column(kwargs, "incomplete_issue", n, [_prompt_text(p) for p in prompts])
        full = _column(kwargs, "full_issue", n)
        hints = [h or "" for h in _column(kwargs, "hints", n, [""] * n)]
        texts = [completion_text(c) for c in completions]
        key = hashlib.sha256(json.dumps([[_prompt_key(p) for p in prompts], texts, incomplete, full, hints],
                                        default=str).encode()).hexdigest()
        if key not in self._done:
            groups: dict[str, list[int]] = {}
            for i, prompt in enumerate(prompts):
                groups.setdefault(_prompt_key(prompt), []).append(i)
            alone = not self.staged.cfg.diversity.siblings
            samples = [
                {"completion": texts[i], "incomplete_issue": incomplete[i], "full_issue": full[i], "hints": hints[i],
                 "siblings": [] if alone else [texts[j] for j in groups[_prompt_key(prompts[i])] if j != i]}
                for i in range(n)
            ]
            self._done[key] = self.staged.score(samples)
            while len(self._done) > _KEEP_BATCHES:
                self._done.popitem(last=False)
        return self._done[key]


class StageReward:
    """``f(prompts, completions, **kwargs)`` -> one stage's value per completion (ungated; None if not evaluated)."""

    def __init__(self, scorer: BatchScorer, stage: str):
        self.scorer = scorer
        self.stage = stage
        self.__name__ = stage

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], **kwargs) -> list[float | None]:
        return [b.values[self.stage] for b in self.scorer.breakdowns(prompts, completions, kwargs)]


class TotalReward:
    """``f(prompts, completions, **kwargs)`` -> the gated staged total per completion."""

    __name__ = TOTAL

    def __init__(self, scorer: BatchScorer):
        self.scorer = scorer

    def __call__(self, prompts: Sequence[Any], completions: Sequence[Any], **kwargs) -> list[float | None]:
        """None for a completion whose every stage is unscored (TRL leaves it out)."""
        found = self.scorer.breakdowns(prompts, completions, kwargs)
        log_metric = kwargs.get("log_metric")
        if callable(log_metric):
            log_metric("reward/judge_failures", float(sum(sum(b.judge_failures.values()) for b in found)))
            log_metric("reward/unscored", float(sum(len(b.unscored) for b in found)))
            log_metric("reward/questions_per_completion", sum(b.n_questions for b in found) / max(len(found), 1))
        return [b.total for b in found]


def reward_functions(staged: StagedReward) -> list[Callable[..., list]]:
    """The per-stage functions in stage order, then ``staged_total``; all share one scoring pass per batch."""
    scorer = BatchScorer(staged)
    return [StageReward(scorer, stage) for stage in staged.stage_names] + [TotalReward(scorer)]


def reward_weights(functions: Sequence[Callable]) -> list[float]:
    """``GRPOConfig.reward_weights`` for ``functions``: only ``staged_total`` counts towards the reward."""
    return [1.0 if getattr(f, "__name__", "") == TOTAL else 0.0 for f in functions]
