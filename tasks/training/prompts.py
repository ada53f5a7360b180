"""The questioner's chat prompt, shared by SFT rows, GRPO rows and the policy so all three see the same text."""

from __future__ import annotations

from typing import Any

SYSTEM_PROMPT = (
    "You are given a software task that may leave out details needed to carry it out. "
    "If anything needed is missing, ask for it: reply with a numbered list of questions (1. ..., 2. ...), "
    "the most important first. If nothing is missing, reply with nothing."
)

Message = dict[str, str]


def prompt_messages(incomplete_issue: str, system_prompt: str = SYSTEM_PROMPT) -> list[Message]:
    return [{"role": "system", "content": system_prompt}, {"role": "user", "content": incomplete_issue}]


def sft_row(incomplete_issue: str, questions_text: str, system_prompt: str = SYSTEM_PROMPT) -> dict[str, Any]:
    """A conversational prompt/completion row: the loss covers the assistant's questions only."""
    return {
        "prompt": prompt_messages(incomplete_issue, system_prompt),
        "completion": [{"role": "assistant", "content": questions_text}],
    }


def grpo_row(incomplete_issue: str, system_prompt: str = SYSTEM_PROMPT, **extra: Any) -> dict[str, Any]:
    """A GRPO row; ``extra`` columns (e.g. ``full_text``, ``case_id``) reach every reward function as kwargs."""
    return {"prompt": prompt_messages(incomplete_issue, system_prompt), **extra}


def completion_text(completion: Any) -> str:
    """A GRPO completion as plain text, whether TRL passes a string or ``[{"role": "assistant", ...}]``."""
    if isinstance(completion, str):
        return completion
    if isinstance(completion, list):
        return "".join(str(m.get("content", "")) for m in completion if isinstance(m, dict))
    return str(completion)
