"""The EVPI questioner (tasks/clarifiers/evpi.py): asks the most valuable gap first, stops on the question cost."""

from __future__ import annotations

import pytest

from tasks.clarifiers import evpi as ev
from tests.test_evaluate import _case


def _episode(protocol: str, **options):
    from tasks.clarifiers.base import MethodContext, get_method
    from tasks.domains import domain_context
    from tasks.evaluation.episode_loop import run_episode

    method = get_method("evpi", "evpi", options)
    ctx = MethodContext(domain=domain_context("optimization"))
    return run_episode(_case(), method, protocol, repeat=1, seed=0, max_turns=10, ctx=ctx)


@pytest.mark.parametrize("protocol", ["open", "mc", "mc_d"])
def test_evpi_stops_at_once_when_a_question_costs_more_than_any_gap_is_worth(protocol):
    ep = _episode(protocol, question_cost=100.0)
    assert ep.ready and ep.question_turns == [] and ep.counters.get("stopped_by_cost") == 1


def test_evpi_asks_while_a_gap_is_worth_its_cost_then_stops_by_cost():
    ep = _episode("mc_d", question_cost=0.5)
    assert ep.ready and 1 <= len(ep.question_turns) < 9 and ep.counters.get("stopped_by_cost") == 1
    asked = [e for e in ep.method_events.get("method_events", []) if e.get("event") == "question"]
    values = [e["value"] for e in asked]
    assert values and all(v >= 0.5 for v in values)
    ready = next(e for e in ep.method_events["method_events"] if e.get("event") == "ready")
    assert ready["best_value"] < 0.5


def test_a_cheaper_question_buys_more_questions():
    assert len(_episode("mc", question_cost=0.2).question_turns) > len(_episode("mc", question_cost=0.8).question_turns)


def test_value_is_wrongness_times_weight_times_answer_chance():
    opts = ev.EvpiOptions()
    gap = ev.GapCandidate(key="k", category="objective", description="", evidence_quote="", question="q?",
                          options={"A": "a", "B": "b", "C": "c"}, priority=0)
    belief = ev.GapBelief(gap, ev.prior(opts))
    assert ev.value(belief, opts) == pytest.approx((1 - 0.4) * 3.0 * 0.5)
    belief.asks = 1
    assert not ev.settle(belief, "B", opts)
    assert ev.value(belief, opts) == pytest.approx((1 - 0.9) * 3.0 * (2 / 3))
    assert ev.settle(belief, "C", opts)  # a different stated value: a contradiction, the gap is open again
    assert belief.wrong() == pytest.approx(0.5)
