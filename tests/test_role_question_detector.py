"""The question detector: action and count of semantically independent questions in one agent turn."""

from __future__ import annotations

import json

import pytest

from tasks.domains.optimization.context import OPTIMIZATION_CONTEXT
from tasks.llm.records import RoleConfig
from tasks.roles.base import run_role
from tasks.roles.question_detector import SPEC, DetectorInput, local


def detect(text: str):
    return local(DetectorInput(turn=text))


@pytest.mark.parametrize(
    ("text", "count"),
    [
        ("QUESTION: Should the bakery maximise margin or the number of loaves?", 1),
        ("What exactly is the goal? Is it to maximise the daily margin?", 1),
        ("We bake rye and sourdough. Is rye required every day?", 1),
        ("Please confirm whether the oven can run a fifth bake.", 1),
        ("Is rye required every day? How many bakes can the oven run?", 2),
        ("Which oven runs at night, and also how long is one bake?", 2),
        ("A few points:\n1. Is rye required daily?\n2. May the oven run overtime?\n3. Can orders be late?", 3),
        ("- Is rye required daily?\n- Can orders be late?", 2),
    ],
)
def test_question_counts(text, count):
    out = detect(text)
    assert out.action == "question"
    assert out.question_count == count == len(out.atomic_questions)
    assert out.is_atomic == (count == 1)


def test_ready_and_invalid():
    for text in ("READY_TO_MODEL\nSummary: maximise margin with a rye floor.", "[INTERVIEW_COMPLETE] done"):
        out = detect(text)
        assert (out.action, out.question_count, out.atomic_questions) == ("ready_to_model", 0, [])
    for text in ("", "   ", "Thanks, that is clear."):
        out = detect(text)
        assert out.action == "invalid" and out.question_count == 0 and not out.is_atomic


def test_atomic_questions_keep_the_agents_words():
    out = detect("Is rye required every day? How many bakes can the oven run?")
    assert out.atomic_questions == ["Is rye required every day?", "How many bakes can the oven run?"]


def test_prompt_renders_and_role_is_deterministic():
    inp = DetectorInput(turn="Is rye required daily?")
    system, user = SPEC.messages(inp, OPTIMIZATION_CONTEXT)
    assert json.loads(system["content"][system["content"].index("{"):]) == SPEC.output_model.model_json_schema()
    assert "Is rye required daily?" in user["content"]
    first, second = run_role(SPEC, [inp, inp], RoleConfig())
    assert first == second == local(inp)
