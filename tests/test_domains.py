"""The domain plugin API: the registry, every shipped domain satisfying it, hooks that agree with the stages, and
the per-domain gap inventory and judge hints reaching the episode loop."""

from __future__ import annotations

import pytest

from tasks.domains import domain_names, gap_inventory_for, get_domain, judge_hints_for, module_name
from tasks.domains.api import Domain, check_domain
from tasks.errors import InputError
from tasks.params import SweConstructParams
from tasks.records import Case
from tests.conftest import ROOT, SAMPLES


def test_registry_lists_the_shipped_domains_and_refuses_unknown_names():
    assert {"swe", "optimization", "analytics"} <= set(domain_names())
    assert not {"api", "units", "or_toml", "template"} & set(domain_names())
    for bad in ("../etc", "Swe", "units", "api", "x", "a b"):
        assert module_name(bad) is None
    with pytest.raises(KeyError, match="unknown domain 'nonsense'"):
        get_domain("nonsense")


@pytest.mark.parametrize("name", ["swe", "optimization", "analytics"])
def test_every_shipped_domain_satisfies_the_api(name):
    domain = get_domain(name)
    assert isinstance(domain, Domain) and check_domain(domain) == [], check_domain(domain)
    assert domain.name == name and set(domain.taxonomy.hideable) <= set(domain.taxonomy.kinds)
    assert domain.judge_hints.subject and domain.judge_hints.deliverable
    assert (domain.gap_inventory is None) == (domain.evaluation == "questions")


def test_swe_hooks_agree_with_the_masking_stage():
    from tasks.domains.swe import mask_issue
    from tasks.swe_samples import load_samples

    swe = get_domain("swe")
    cfg = SweConstructParams(variants_per_issue=3)
    issue = load_samples(SAMPLES)[0]
    cases, notes = mask_issue(issue, cfg)
    assert notes["spans_not_in_text"] == 0
    units = swe.decompose(issue)
    assert units == cases[0].units
    verdicts = swe.hide_candidates(units)
    assert [v.unit_id for v in verdicts] == [u.id for u in units] and all(v.eligible for v in verdicts)
    sets = swe.choose_hidden(issue.instance_id, units, cfg)
    assert [sorted(s) for s in sets] == [sorted(uid for slot in c.hidden_slots for uid in slot.unit_ids)
                                         for c in cases]
    level, reason = swe.severity([units[0]], units)
    assert level is None and "P1" in reason
    slot = cases[0].hidden_slots[0]
    hidden = [u for u in units if u.id in slot.unit_ids]
    assert swe.simulated_answer(hidden, units) == slot.simulator_answer
    assert swe.reference_questions(hidden, units)[0].endswith("?")


def test_optimization_hooks_agree_with_its_slot_annotator():
    from tasks.domains.optimization import DOMAIN, build_chunk, load_problems
    from tasks.params import OptimizationConstructParams
    from tasks.roles.config import RolesParams

    cfg = OptimizationConstructParams(limit=2)
    problems = [p.model_dump(mode="json") for p in load_problems(cfg, ROOT)]
    roles = {n: RolesParams().get(n).model_dump(mode="json") for n in ("decomposer", "slot_annotator", "rewriter")}
    case = Case.model_validate(build_chunk(problems, cfg.model_dump(mode="json"), roles)["cases"][0])
    units = case.units
    for slot in case.hidden_slots:
        hidden = [u for u in units if u.id in slot.unit_ids]
        assert DOMAIN.severity(hidden, units)[0] == slot.severity
        assert DOMAIN.reference_questions(hidden, units) == slot.reference_questions
        assert DOMAIN.simulated_answer(hidden, units) == slot.simulator_answer
    verdicts = {v.unit_id: v.eligible for v in DOMAIN.hide_candidates(units)}
    assert all(verdicts[uid] for slot in case.hidden_slots for uid in slot.unit_ids)


def test_the_gap_inventory_follows_the_domain():
    from tasks.clarifiers import gaps

    brief = "We need the weekly signup numbers from the `signups` table for the marketing review."
    optimisation = gaps.all_gaps(brief)
    assert gaps.active() is gaps.OPTIMIZATION and any(g.category == "objective" for g in optimisation)
    with gaps.using(gap_inventory_for("analytics")):
        analytics = gaps.all_gaps(brief)
        assert gaps.brief_facts(brief).entities == ["`signups`"]
    assert gaps.active() is gaps.OPTIMIZATION
    assert [g.question for g in analytics] != [g.question for g in optimisation]
    assert all("plan" not in g.question for g in analytics)
    assert gap_inventory_for("swe") is None and gap_inventory_for("no-such-domain") is None
    assert judge_hints_for("analytics").subject.startswith("a data-analysis request")


def test_the_episode_loop_activates_the_case_domain_inventory():
    from tasks.clarifiers import gaps
    from tasks.clarifiers.base import BaseAgent, MethodContext
    from tasks.episodes.loop import run_episode
    from tasks.episodes.records import AgentAction
    from tests.test_evaluate import _case

    seen = []

    class Spy(BaseAgent):
        def act(self, view):
            seen.append(gaps.active().name)
            return AgentAction(kind="ready", summary="done")

    class SpyMethod:
        name, protocols, uses_detector, privileged = "spy", ("open",), True, False

        def new_agent(self, case_id, brief, protocol, *, seed, ctx):
            return Spy()

    base = _case()
    for domain in ("optimization", "analytics"):
        case = base.model_copy(update={"metadata": base.metadata.model_copy(update={"domain": domain})})
        run_episode(case, SpyMethod(), "open", repeat=1, seed=0, max_turns=3, ctx=MethodContext())
    assert seen == ["optimization", "analytics"] and gaps.active() is gaps.OPTIMIZATION


def test_judge_prompts_name_the_domain_and_keep_the_optimisation_wording():
    from tasks.episodes.records import Episode
    from tasks.evaluation.judge import SESSION_SPEC, session_input, subject_of
    from tests.test_evaluate import _case

    case = _case()
    episode = Episode(case_id=case.case_id, method="m", protocol="open", repeat=1, seed=0, max_turns=3,
                      brief=case.brief.content, transcript=[], question_turns=[], ready=False, turn_count=0,
                      attempted_turns=0, atomic_questions=0)
    system = SESSION_SPEC.messages(session_input(case, episode, []))[0]["content"]
    assert "about an optimisation problem." in system and subject_of(case) == "an optimisation problem"
    other = case.model_copy(update={"metadata": case.metadata.model_copy(update={"domain": "analytics"})})
    system = SESSION_SPEC.messages(session_input(other, episode, []))[0]["content"]
    assert "about a data-analysis request (text to SQL)." in system


def test_the_evaluate_flow_dispatches_on_the_domain_evaluation(monkeypatch):
    from flows import evaluate

    assert set(evaluate.EVALUATIONS) == {"episodes", "questions"}
    for name in ("swe", "optimization", "analytics"):
        assert get_domain(name).evaluation in evaluate.EVALUATIONS
    monkeypatch.chdir(ROOT)
    with pytest.raises(InputError, match="no evaluation for domain 'nonsense'"):
        evaluate.prepare("nonsense")


def test_agent_and_user_prompts_follow_the_episode_domain(monkeypatch):
    """LLM-backend agents and the simulated user of an analytics episode are told about a data-analysis request;
    the same roles outside an episode (and in an optimisation episode) keep the optimisation wording."""
    from tasks.clarifiers.base import MethodContext, get_method
    from tasks.clarifiers.freeqa import SPEC as GENERIC
    from tasks.clarifiers.freeqa import AgentInput
    from tasks.episodes.loop import run_episode
    from tasks.llm.client import LLMClient
    from tasks.llm.providers import ensure_registered
    from tasks.llm.providers.mock import replay_local
    from tasks.llm.records import RoleConfig
    from tasks.roles import base
    from tasks.roles.config import RolesParams
    from tests.test_evaluate import _case

    outside = GENERIC.messages(AgentInput(brief="Plan the shifts."))[0]["content"]
    assert "an optimisation model" in outside and "operations-research analyst" in outside

    systems: list[tuple[str, str]] = []
    render = base.RoleSpec.messages

    def spy(self, inp):
        messages = render(self, inp)
        systems.append((self.name, messages[0]["content"]))
        return messages

    monkeypatch.setattr(base.RoleSpec, "messages", spy)
    ensure_registered()
    model = replay_local("framing-test")
    llm = RoleConfig(backend="llm", model=model, max_retries=0)
    roles = RolesParams(or_generic_agent=llm, or_open_user=llm)
    ctx = MethodContext(roles=roles, client=LLMClient(use_cache=False))
    base_case = _case()
    for domain in ("analytics", "optimization"):
        systems.clear()
        case = base_case.model_copy(update={"metadata": base_case.metadata.model_copy(update={"domain": domain})})
        run_episode(case, get_method("freeqa"), "open", repeat=1, seed=0, max_turns=2, ctx=ctx)
        names = {name for name, _ in systems}
        assert {"or_generic_agent", "or_open_user"} <= names, names
        for name, system in systems:
            if domain == "analytics":
                assert "data-analysis request" in system and "optimisation" not in system, (name, system[:200])
            else:
                assert "optimisation" in system and "data-analysis" not in system, (name, system[:200])
        agent = next(system for name, system in systems if name == "or_generic_agent")
        assert agent.startswith("You are a data analyst." if domain == "analytics"
                                else "You are an operations-research analyst."), agent[:80]
