"""Issue 40 item 3: each InterOPT stage does work the reference gives it, so removing it changes what the agent asks
or when it stops, on a hand-made case (docs/interopt-protocol.md, "The ablations").

- Stage 1 reads the replies: a reply that confirms a rule on one of the brief's entities reveals the same question
  about the entities listed with it (or-clarify.md §6.2, entity coverage); without Stage 1 nothing searches, so
  those are never asked.
- Stage 2 ranks and reviews readiness: the selector asks a revealed rule before the relations found earlier (the
  published priority), and its clarification states keep an unconfirmed goal or demand policy from being left to a
  silent assumption (one narrower check each, §6.3); without Stage 2 the direct call asks in discovery order and
  stops as soon as no ledger gap is OPEN.
"""

from __future__ import annotations

from tasks.clarifiers import interopt_roles as R
from tasks.clarifiers.base import get_method
from tasks.domains.optimization.gaps import OPTIMIZATION
from tasks.episodes.records import AgentView, TranscriptRow
from tasks.roles.or_user import NEEDS_CONFIRMATION
from tests.test_interopt import agent_row as _row
from tests.test_interopt import opt_ctx as _opt_ctx
from tests.test_interopt import pick as _pick
from tests.test_interopt import say as _say

BRIEF = """A cider press turns apples into four drinks and wants a monthly production plan.

| Drink | Apples per barrel (kg) | Price per barrel (EUR) |
|---|---|---|
| Dry cider | 120 | 210 |
| Sweet cider | 100 | 190 |
| Apple juice | 90 | 150 |
| Perry | 110 | 200 |

Shops order cider and juice every month. Growers deliver 30 tonnes of apples per month, and the press runs at most
160 hours per month."""


def _user(replies, default):
    def reply(turn, action):
        return next((r for key, r in replies.items() if key in action.question), default)(turn, action)
    return reply


def _drive(name, protocol, reply, max_turns=20):
    agent = get_method(name).new_agent("press_001", BRIEF, protocol, seed=0, ctx=_opt_ctx())
    transcript, actions = [], []
    for turn in range(1, max_turns + 1):
        action = agent.act(AgentView(case_id="press_001", brief=BRIEF, protocol=protocol, transcript=transcript,
                                     turn=turn, max_turns=max_turns))
        actions.append(action)
        if action.kind != "ask":
            break
        transcript += [_row(turn, action), reply(turn, action)]
    return [a.question for a in actions if a.kind == "ask"], actions[-1]


PERRY = "rule on Perry"
# Dry cider's limit is confirmed (option A: an upper limit); every other question gets "no extra rule" (C)
CONFIRMS_DRY_CIDER = _user({"rule on Dry cider": _pick("A")}, _pick("C"))


def test_the_inventory_leaves_the_fourth_drink_out_and_a_confirmed_limit_reveals_it():
    assert not any("Perry" in g.question for g in R.all_gaps(OPTIMIZATION, BRIEF))
    questions, _ = _drive("interopt", "mc_d", CONFIRMS_DRY_CIDER)
    assert sum(PERRY in q for q in questions) == 1


def test_without_stage1_the_revealed_limit_is_never_asked_and_the_run_is_shorter():
    full, _ = _drive("interopt", "mc_d", CONFIRMS_DRY_CIDER)
    wo1, ready = _drive("interopt_wo_stage1", "mc_d", CONFIRMS_DRY_CIDER)
    assert ready.kind == "ready" and not any(PERRY in q for q in wo1) and len(wo1) < len(full)


def test_open_stage1_reveals_the_same_sibling_from_a_stated_rule():
    user = _user({"rule on Dry cider": _say("Dry cider is capped at 50 barrels a month.")}, _say(NEEDS_CONFIRMATION))
    full, _ = _drive("interopt", "open", user)
    wo1, _ = _drive("interopt_wo_stage1", "open", user)
    assert any(PERRY in q for q in full) and not any(PERRY in q for q in wo1)


def test_no_sibling_is_revealed_by_a_no_a_non_answer_or_option_c():
    for reply in (_pick("C"), _say("No, nothing like that."), _say(NEEDS_CONFIRMATION),
                  _say("As in the request: the press runs at most 160 hours per month.")):
        questions, _ = _drive("interopt", "mc_d" if reply is not None else "open", _user({}, reply))
        assert not any(PERRY in q for q in questions)


def test_stage2_asks_the_revealed_limit_before_the_relations_the_direct_call_asks_first():
    full, _ = _drive("interopt", "mc_d", CONFIRMS_DRY_CIDER)
    direct, _ = _drive("interopt_wo_stage2", "mc_d", CONFIRMS_DRY_CIDER)
    assert sorted(full) == sorted(direct)  # the same gaps (both have Stage 1) ...
    relation = "depend on each other"
    first_relation = {name: next(i for i, q in enumerate(qs) if relation in q)
                      for name, qs in (("full", full), ("direct", direct))}
    perry = {name: next(i for i, q in enumerate(qs) if PERRY in q) for name, qs in (("full", full), ("direct", direct))}
    # ... in another order: the selector ranks the rule above every relation, the direct call asks it last
    assert perry["full"] < first_relation["full"] and perry["direct"] > first_relation["direct"]


def test_stage2_readiness_review_checks_an_unconfirmed_goal_where_the_plain_loop_stops():
    for protocol, unsure in (("mc_d", _user({}, lambda t, a: TranscriptRow(
            turn=t, speaker="user", structured={"choice": "D", "comment": "I don't have that information."},
            content="Business user response: none of the offered options match. I don't have that information."))),
            ("open", _user({}, _say(NEEDS_CONFIRMATION)))):
        full, full_ready = _drive("interopt", protocol, unsure)
        direct, direct_ready = _drive("interopt_wo_stage2", protocol, unsure)
        assert full_ready.kind == direct_ready.kind == "ready"
        checks = [g for g in R.all_gaps(OPTIMIZATION, BRIEF) if g.category in R.ASSUMPTION_CATEGORIES]
        assert {g.category for g in checks} == {"objective", "hard_soft_policy"}
        # Stage 2 stops later: one narrower check per unconfirmed goal / demand policy, after every gap was asked
        assert len(full) == len(direct) + len(checks)
        assert full[:len(direct)] != direct or protocol == "open"  # mc_d: the order differs too
        assert full[-len(checks):] == [R.narrow_question(g, protocol) for g in checks]
        assert not any(q in direct for q in full[-len(checks):])


def test_a_settled_goal_needs_no_readiness_check():
    full, _ = _drive("interopt", "open", _user({"goal": _say("We want the most revenue.")}, _say(NEEDS_CONFIRMATION)))
    assert not any("the goal is to" in q for q in full)


# ---- the ties left in params.yaml: evaluate.optimization.sanity.allowed_ties ----------------------------------------

PICKER = _user({"rule on Dry cider": _pick("B"), "depend on each other": _pick("A")}, _pick("C"))
"""A user who always picks an offered option (never option D)."""


def _protocol_pair(name_a, protocol_a, name_b, protocol_b):
    return _drive(name_a, protocol_a, PICKER), _drive(name_b, protocol_b, PICKER)


def test_tie_mc_and_mc_d_ask_the_same_while_the_user_picks_an_offered_option():
    (a, ready_a), (b, ready_b) = _protocol_pair("mc", "mc", "mc_d", "mc_d")
    assert a == b and ready_a.summary == ready_b.summary


def test_tie_evpi_under_mc_and_mc_d_while_the_user_picks_an_offered_option():
    (a, ready_a), (b, ready_b) = _protocol_pair("evpi", "mc", "evpi", "mc_d")
    assert a == b and ready_a.kind == ready_b.kind


def test_tie_interopt_and_aligned_while_the_user_picks_an_offered_option():
    (a, ready_a), (b, ready_b) = _protocol_pair("interopt", "mc_d", "interopt_aligned", "mc_d")
    assert a == b and ready_a.kind == ready_b.kind == "ready"
    # and they part as soon as a reply leaves a high-risk gap unsettled
    unsure = _user({"rule on Dry cider": _say("I don't have that information.")}, _pick("C"))
    assert _drive("interopt", "mc_d", unsure)[0] != _drive("interopt_aligned", "mc_d", unsure)[0]
