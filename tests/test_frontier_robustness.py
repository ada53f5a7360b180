"""The frontier (WSS within a question budget) and the robustness table on hand-judged runs."""

from __future__ import annotations

import pytest

from tasks.evaluation import frontier, robustness
from tests.test_evaluation_metrics import runs  # noqa: F401  (the fixture)


def test_wss_within_a_budget_counts_only_hits_asked_by_then(runs):  # noqa: F811
    eps, judged, _ = runs
    a1 = eps[0], judged[0]  # P0 yes at turn 1 (1 question), P1 + P2 yes at turn 2 (3 questions)
    assert frontier.wss_at(*a1, 0) == 0.0
    assert frontier.wss_at(*a1, 1) == pytest.approx(3 / 6)
    assert frontier.wss_at(*a1, 2) == pytest.approx(3 / 6)
    assert frontier.wss_at(*a1, 3) == pytest.approx(1.0) == judged[0].weighted_slot_score


def test_frontier_curve_ends_at_the_rows_wss_and_the_area_is_its_mean(runs):  # noqa: F811
    eps, judged, _ = runs
    table = frontier.frontier(eps, judged, budget=4, n_resamples=200)
    row = table["rows"]["open::m"]
    assert table["questions"] == [0, 1, 2, 3, 4] and row["wss"][0] == 0.0
    assert row["wss"] == sorted(row["wss"])  # a larger budget never loses a hit
    assert row["area"] == pytest.approx(sum(row["wss"]) / 5, abs=1e-6)
    assert row["wss"][-1] == pytest.approx(sum(j.weighted_slot_score for j in judged) / 4, abs=1e-6)


def test_robustness_table_drop_and_corrections(runs):  # noqa: F811
    eps, judged, _ = runs
    worse = [e.model_copy(update={"persona": "mistaken"}) for e in eps]
    fixed = worse[1].question_turns[1].model_copy(update={"reply": "Business user response: Sorry, I got that "
                                                                   "wrong earlier. 8 hours."})
    worse[1] = worse[1].model_copy(update={"question_turns": [worse[1].question_turns[0], fixed]})
    zero = [j.model_copy(update={"weighted_slot_score": 0.0}) for j in judged]
    table = robustness.robustness_table([*eps, *worse], [*judged, *zero], personas=["cooperative", "mistaken"],
                                        n_resamples=200)
    cell = table["rows"]["open::m"]["mistaken"]
    coop = table["rows"]["open::m"]["cooperative"]
    assert cell["WSS"] == 0.0 and cell["WSSDrop"] == pytest.approx(coop["WSS"], abs=1e-6)
    assert cell["CorrectionRate"] == pytest.approx(0.25)
    assert "WSSDrop" not in coop
    assert "| open::m | mistaken |" in robustness.robustness_markdown(table, source="hand-judged")
