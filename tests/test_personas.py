"""Simulated-user personas (tasks/roles/personas.py) on a hand-made case: each persona's reply, deterministic under
the local backend, and the judge still scoring against the true facts."""

from __future__ import annotations

import pytest

from tasks.domains.optimization.context import OPTIMIZATION_CONTEXT
from tasks.roles import personas as ps
from tests.test_evaluate import _case


def opt_ctx(**kw):
    """A method context in the optimisation domain (given explicitly: a MethodContext has no default domain)."""
    from tasks.clarifiers.base import MethodContext

    return MethodContext(domain=OPTIMIZATION_CONTEXT, **kw)

HOURS_Q = "How many hours per day can each roaster run at most?"
BOTH_Q = "How many hours per day can each roaster run at most? Should the plan minimise the total roasting cost?"


def _play(persona: ps.Persona, questions: list[str], protocol: str = "open", repeat: int = 1):
    from tasks.clarifiers.base import BaseAgent
    from tasks.episodes.records import AgentAction
    from tasks.evaluation.episode_loop import run_episode

    class Asker(BaseAgent):
        def act(self, view):
            if view.turn <= len(questions):
                q = questions[view.turn - 1]
                options = ({"A": "At most 8 hours a day.", "B": "At most 12 hours a day.", "C": "No daily limit."}
                           if protocol != "open" else {})
                return AgentAction(kind="ask", question=q, options=options)
            return AgentAction(kind="ready", summary="Plan the batches.")

    class AskerMethod:
        name, protocols, uses_detector, privileged = "asker", ("open", "mc", "mc_d"), True, False

        def new_agent(self, case_id, brief, protocol, *, seed, ctx):
            return Asker()

    return run_episode(_case(), AskerMethod(), protocol, repeat=repeat, seed=0, max_turns=6, ctx=opt_ctx(),
                       persona=persona)


def _replies(episode) -> list[str]:
    return [t.reply for t in episode.question_turns]


def test_cooperative_is_todays_user():
    [reply] = _replies(_play(ps.COOPERATIVE, [HOURS_Q]))
    assert "8 hours" in reply


def test_terse_drops_the_unit_and_qualifier():
    [reply] = _replies(_play(ps.Persona(name="terse"), [HOURS_Q]))
    assert "8" in reply and "hours" not in reply and "at most" not in reply


def test_partial_gives_one_fact_per_answer():
    coop = _play(ps.COOPERATIVE, [BOTH_Q])
    part = _play(ps.Persona(name="partial"), [BOTH_Q])
    assert len(coop.question_turns[0].disclosed_slot_ids) == 2  # the cooperative user answers both parts
    assert len(part.question_turns[0].disclosed_slot_ids) == 1
    assert not ("8 hours" in part.question_turns[0].reply and "cost" in part.question_turns[0].reply)


def test_vague_approximates_the_value():
    [reply] = _replies(_play(ps.Persona(name="vague"), [HOURS_Q]))
    assert "8-ish" in reply and "8 hours" not in reply


def test_mistaken_gives_a_wrong_value_then_corrects_when_asked_again():
    first, second = _replies(_play(ps.Persona(name="mistaken", probability=1.0), [HOURS_Q, HOURS_Q]))
    assert "16 hours" in first and "8 hours" not in first
    assert "8 hours" in second and ps.CORRECTION.strip() in second


def test_mistaken_choice_picks_a_wrong_option_then_corrects():
    ep = _play(ps.Persona(name="mistaken", probability=1.0), [HOURS_Q, HOURS_Q], protocol="mc")
    coop = _play(ps.COOPERATIVE, [HOURS_Q], protocol="mc")
    right = coop.question_turns[0].choice
    first, second = ep.question_turns
    assert right == "A" and first.choice != right and second.choice == right
    assert ps.CORRECTION.strip() in second.reply


def test_uncooperative_refuses():
    ep = _play(ps.Persona(name="uncooperative", probability=1.0), [HOURS_Q])
    assert _replies(ep) == ["Business user response: " + ps.DONT_KNOW] and ep.question_turns[0].disclosed_slot_ids == []
    mc = _play(ps.Persona(name="uncooperative", probability=1.0), [HOURS_Q], protocol="mc_d")
    assert mc.question_turns[0].choice is None and "don't know" in mc.question_turns[0].reply


def test_draws_are_seeded_by_case_persona_and_repeat():
    p = ps.Persona(name="uncooperative", probability=0.5)
    runs = [_replies(_play(p, [HOURS_Q] * 4, repeat=r)) for r in (1, 1, 2)]
    assert runs[0] == runs[1]
    draws = {ps.persona_draw("coffee_001", "uncooperative", r, t) for r in (1, 2) for t in range(1, 5)}
    assert len(draws) == 8


def test_llm_backend_gets_a_prompt_addendum_not_a_rewrite():
    assert ps.prompt_addendum(ps.COOPERATIVE) == ""
    assert "units" in ps.prompt_addendum(ps.Persona(name="terse"))
    assert "30%" in ps.prompt_addendum(ps.Persona(name="uncooperative", probability=0.3))


def test_persona_records_validate():
    with pytest.raises(ValueError):
        ps.Persona(name="grumpy")
    assert ps.Persona(name="often_wrong", kind="mistaken").behaviour == "mistaken"

