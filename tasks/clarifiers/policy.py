"""A trained questioner policy as a clarifier (Open protocol).

The policy (:class:`tasks.training.policy.LocalPolicy`: SmolLM2 alone, or with the SFT / GRPO LoRA adapter) writes
a numbered list of questions for the brief once (parsed by ``tasks.rewards.parse_questions``, the reward's parser,
with exact repeats dropped); the agent then asks them one per turn (``questions_per_turn`` at
a time, as a numbered list the detector counts item by item) and declares READY_TO_MODEL when the list is done.
Generation is greedy, so the list is cached per brief, and each method instance keeps one loaded model, loaded on
first use under a lock (episodes run concurrently in threads; generation is serialised through the same lock).

Options: ``adapter`` (an adapter folder such as ``data/models/sft/adapter``; null for the base model), ``base``
(default: the base the adapter records; SmolLM2 without an adapter), ``questions_per_turn``
(default 1), ``max_new_tokens`` (default 256), ``system_prompt`` (default: the training prompt).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pydantic import Field

from tasks.clarifiers.base import BaseAgent, MethodContext, method
from tasks.clarifiers.freeqa import parse_options, ready_summary
from tasks.episodes.records import AgentAction, AgentView, Protocol
from tasks.errors import InputError
from tasks.rewards.parse import parse_questions
from tasks.training.policy import PolicyOptions


class EpisodePolicyOptions(PolicyOptions):
    questions_per_turn: int = Field(default=1, ge=1)


class PolicyMethod:
    protocols: tuple[Protocol, ...] = ("open",)
    uses_detector = True

    def __init__(self, name: str, options: EpisodePolicyOptions, loader: Callable[[], Any] | None = None):
        self.name = name
        self.options = options
        self._loader = loader or self._load
        self._policy: Any = None
        self._lock = threading.Lock()
        self._cache: dict[str, list[str]] = {}
        self.generations = 0

    def _load(self) -> Any:
        from tasks.training.policy import LocalPolicy, adapter_base
        from tasks.training.profiles import SMOLLM2
        from tasks.training.prompts import SYSTEM_PROMPT

        opts = self.options
        base = opts.base or (adapter_base(Path(opts.adapter)) if opts.adapter else SMOLLM2)
        return LocalPolicy.from_adapter(base, opts.adapter, dtype=opts.dtype,
                                        system_prompt=opts.system_prompt or SYSTEM_PROMPT,
                                        max_new_tokens=opts.max_new_tokens)

    def questions(self, brief: str) -> list[str]:
        """The policy's questions for ``brief`` (generated once per brief and method instance)."""
        with self._lock:
            if brief not in self._cache:
                if self._policy is None:
                    self._policy = self._loader()
                self._cache[brief] = parse_questions(self._policy.ask(brief), dedupe=True)
                self.generations += 1
            return list(self._cache[brief])

    def new_agent(self, case_id: str, brief: str, protocol: Protocol, *, seed: int, ctx: MethodContext) -> PolicyAgent:
        return PolicyAgent(self, self.options.questions_per_turn)


class PolicyAgent(BaseAgent):
    def __init__(self, method: PolicyMethod, per_turn: int):
        super().__init__()
        self.method = method
        self.per_turn = per_turn
        self.asked = 0

    def act(self, view: AgentView) -> AgentAction:
        questions = self.method.questions(view.brief)
        batch = questions[self.asked:self.asked + self.per_turn]
        if not batch or view.turn >= view.max_turns:
            return AgentAction(kind="ready", summary=ready_summary(view.brief, view.transcript),
                               events=[{"event": "ready", "policy_questions": len(questions), "asked": self.asked}])
        self.asked += len(batch)
        self.bump("policy_questions_asked", len(batch))
        text = batch[0] if len(batch) == 1 else "\n".join(f"{i}. {q}" for i, q in enumerate(batch, 1))
        return AgentAction(kind="ask", question=text,
                           events=[{"event": "question", "policy_index": self.asked - len(batch),
                                    "count": len(batch)}])


@method("policy")
def policy(name: str, options: dict[str, Any]) -> PolicyMethod:
    opts = parse_options(name, options, EpisodePolicyOptions)
    from tasks.training.policy import is_full_model

    if opts.adapter is not None and is_full_model(Path(opts.adapter)):  # fully fine-tuned (training.lora false)
        return PolicyMethod(name, opts)
    if opts.adapter is not None and not (Path(opts.adapter) / "adapter_config.json").is_file():
        why = ("folder not found" if not Path(opts.adapter).exists()
               else "not a LoRA adapter (adapter_config.json missing)")
        raise InputError(f"evaluate.methods.{name}", f"{why}: {opts.adapter}", field="adapter")
    if opts.adapter is not None:
        from tasks.training.policy import read_adapter_config

        read_adapter_config(Path(opts.adapter))  # a corrupt adapter_config.json is refused before any episode
    return PolicyMethod(name, opts)
