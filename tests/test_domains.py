"""The domain plugin API: the registry, every shipped domain satisfying it, hooks that agree with the stages, and
the evaluation's domain (one ``DomainContext``, handed down) reaching the episode loop, the agents, the simulated
user and the judges."""

from __future__ import annotations

import pytest

from tasks import domains
from tasks.domain_context import DomainContext
from tasks.domains import domain_context, domain_names, get_domain, module_name
from tasks.domains.api import Domain, check_domain
from tasks.domains.optimization.context import OPTIMIZATION_CONTEXT
from tasks.domains.optimization.vocabulary import OPTIMIZATION_HINTS
from tasks.errors import DomainError, InputError
from tasks.params import SweConstructParams
from tasks.records import Case
from tests.conftest import ROOT, SAMPLES


def test_registry_lists_the_shipped_domains_and_refuses_unknown_names():
    assert {"swe", "optimization", "analytics"} <= set(domain_names())
    assert not {"api", "units", "or_toml", "template", "question_template"} & set(domain_names())
    for bad in ("../etc", "Swe", "units", "api", "x", "a b"):
        assert module_name(bad) is None
    with pytest.raises(DomainError, match="unknown domain 'nonsense'"):
        get_domain("nonsense")


@pytest.fixture
def broken_domain(tmp_path, monkeypatch):
    """A domain package whose module fails to import (a dependency it needs is missing), found in the domains' folder
    (here a temporary one that the package also imports from)."""
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "__init__.py").write_text("import no_such_dependency_of_clarifyflow\n")
    monkeypatch.setattr(domains, "FOLDER", tmp_path)
    monkeypatch.setattr(domains, "__path__", [str(tmp_path), *domains.__path__])
    assert domain_names() == ["broken"]
    return "broken"


def test_a_domain_whose_module_fails_to_import_is_an_error_naming_it(broken_domain, monkeypatch):
    for build in (get_domain, domain_context):
        with pytest.raises(DomainError, match="domain 'broken': its module tasks.domains.broken fails to import "
                                              r"\(ModuleNotFoundError: No module named 'no_such_dependency"):
            build(broken_domain)
    from tasks.evaluation import stage

    monkeypatch.chdir(ROOT)
    with pytest.raises(InputError, match="no evaluation for domain 'broken': domain 'broken': its module"):
        stage.prepare(broken_domain)


def test_the_domain_context_is_what_the_domain_defines_and_only_for_episode_domains():
    from tasks.domains.analytics.gaps import INVENTORY
    from tasks.domains.analytics.slots import ASPECTS

    assert domain_context("optimization") == OPTIMIZATION_CONTEXT
    analytics = domain_context("analytics")
    assert analytics.name == "analytics" and analytics.hints == get_domain("analytics").judge_hints
    assert analytics.gaps is INVENTORY and analytics.user_aspects == {k: tuple(v) for k, v in ASPECTS.items()}
    with pytest.raises(DomainError, match="domain 'swe' has no gap inventory: it is evaluated by questions"):
        domain_context("swe")
    with pytest.raises(DomainError, match="unknown domain 'nonsense'"):
        domain_context("nonsense")


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
    from tasks.domains.optimization.gaps import OPTIMIZATION

    brief = "We need the weekly signup numbers from the `signups` table for the marketing review."
    optimisation = gaps.all_gaps(OPTIMIZATION_CONTEXT.gaps, brief)
    assert OPTIMIZATION_CONTEXT.gaps is OPTIMIZATION and any(g.category == "objective" for g in optimisation)
    inventory = domain_context("analytics").gaps
    analytics = gaps.all_gaps(inventory, brief)
    assert inventory.facts(brief).entities == ["`signups`"]
    assert [g.question for g in analytics] != [g.question for g in optimisation]
    assert all("plan" not in g.question for g in analytics)


def test_the_episode_loop_hands_the_domain_to_the_agent_and_the_simulated_user(monkeypatch):
    from tasks.clarifiers.base import BaseAgent, MethodContext
    from tasks.episodes.records import AgentAction
    from tasks.evaluation.episode_loop import run_episode
    from tests.test_evaluate import _case

    seen, facts = [], []

    class Spy(BaseAgent):
        def __init__(self, ctx):
            super().__init__()
            seen.append(ctx.domain.name)

        def act(self, view):
            return AgentAction(kind="ask" if view.turn == 1 else "ready", question="How long may a roaster run?",
                               summary="done")

    class SpyMethod:
        name, protocols, uses_detector, privileged = "spy", ("open",), True, False

        def new_agent(self, case_id, brief, protocol, *, seed, ctx):
            return Spy(ctx)

    run = MethodContext.run

    def recording(self, spec, inputs):
        if spec.name == "or_open_user":
            facts.append([fact.aspects for inp in inputs for fact in inp.facts])
        return run(self, spec, inputs)

    monkeypatch.setattr(MethodContext, "run", recording)

    asks = ("How long may each roaster run per day?",)
    demo = DomainContext(name="demo", hints=OPTIMIZATION_HINTS, gaps=OPTIMIZATION_CONTEXT.gaps,
                         user_aspects={"constraint": asks})
    for domain in (OPTIMIZATION_CONTEXT, demo):
        run_episode(_case(), SpyMethod(), "open", repeat=1, seed=0, max_turns=3, ctx=MethodContext(domain=domain))
    assert seen == ["optimization", "demo"]
    assert facts == [[[], []], [list(asks), []]]  # H1 hides a constraint, H2 the objective


def test_judge_prompts_name_the_domain_and_keep_the_optimisation_wording():
    from tasks.episodes.records import Episode
    from tasks.evaluation.judge import SESSION_SPEC, session_input
    from tests.test_evaluate import _case

    case = _case()
    episode = Episode(case_id=case.case_id, method="m", protocol="open", repeat=1, seed=0, max_turns=3,
                      brief=case.brief.content, transcript=[], question_turns=[], ready=False, turn_count=0,
                      attempted_turns=0, atomic_questions=0)
    inp = session_input(case, episode, [], domain=OPTIMIZATION_CONTEXT)
    system = SESSION_SPEC.messages(inp, OPTIMIZATION_CONTEXT)[0]["content"]
    assert "about an optimisation problem." in system and inp.subject == "an optimisation problem"
    analytics = domain_context("analytics")
    system = SESSION_SPEC.messages(session_input(case, episode, [], domain=analytics), analytics)[0]["content"]
    assert "about a data-analysis request (text to SQL)." in system


def test_the_evaluate_flow_dispatches_on_the_domain_evaluation(monkeypatch):
    from tasks.domains.api import EVALUATIONS as DOMAIN_EVALUATIONS
    from tasks.evaluation import stage

    assert set(stage.EVALUATIONS) == set(DOMAIN_EVALUATIONS) == {"episodes", "questions"}
    for name in ("swe", "optimization", "analytics"):
        assert get_domain(name).evaluation in stage.EVALUATIONS
    assert stage.EVALUATIONS.get("questions").settings.__name__ == "QuestionSettings"
    monkeypatch.chdir(ROOT)
    with pytest.raises(InputError, match="no evaluation for domain 'nonsense'"):
        stage.prepare("nonsense")


def test_agent_user_and_judge_prompts_follow_the_evaluation_domain(monkeypatch):
    """LLM-backend agents, the simulated user, the question detector and the judges of an analytics evaluation are
    told about a data-analysis request, those of an optimisation one about an optimisation problem; a role that
    reads the domain is never run without one."""
    import jinja2

    from tasks.clarifiers.base import MethodContext, get_method
    from tasks.clarifiers.freeqa import SPEC as GENERIC
    from tasks.clarifiers.freeqa import AgentInput
    from tasks.evaluation.episode_loop import run_episode
    from tasks.evaluation.judge import judge_episodes
    from tasks.llm.client import LLMClient
    from tasks.llm.providers import ensure_registered
    from tasks.llm.providers.mock import replay_local
    from tasks.llm.records import RoleConfig
    from tasks.roles import base
    from tasks.roles.config import RolesParams
    from tests.test_evaluate import _case

    with pytest.raises(jinja2.UndefinedError, match="'domain' is undefined"):
        GENERIC.messages(AgentInput(brief="Plan the shifts."))
    with pytest.raises(ValueError, match="role 'or_generic_agent' asks from the domain's gap inventory"):
        GENERIC.run_local([AgentInput(brief="Plan the shifts.")])

    systems: list[tuple[str, str]] = []
    render = base.RoleSpec.messages

    def spy(self, inp, domain=None):
        messages = render(self, inp, domain)
        systems.append((self.name, messages[0]["content"]))
        return messages

    monkeypatch.setattr(base.RoleSpec, "messages", spy)
    ensure_registered()
    llm = RoleConfig(backend="llm", model=replay_local("framing-test"), max_retries=0)
    framed = ("or_generic_agent", "or_open_user", "question_detector", "slot_hit_judge", "or_session_judge")
    roles = RolesParams(**dict.fromkeys(framed, llm))
    case = _case()
    for name in ("analytics", "optimization"):
        systems.clear()
        ctx = MethodContext(roles=roles, client=LLMClient(use_cache=False), domain=domain_context(name))
        episode = run_episode(case, get_method("freeqa"), "open", repeat=1, seed=0, max_turns=2, ctx=ctx)
        judge_episodes({case.case_id: case}, [episode], ctx)
        assert {role for role, _ in systems} == set(framed), systems
        for role, system in systems:
            if name == "analytics":
                assert "data-analysis request" in system and "optimisation" not in system, (role, system[:200])
            else:
                assert "optimisation" in system and "data-analysis" not in system, (role, system[:200])
        agent = next(system for role, system in systems if role == "or_generic_agent")
        assert agent.startswith("You are a data analyst." if name == "analytics"
                                else "You are an operations-research analyst."), agent[:80]


def test_an_episode_evaluation_refuses_cases_of_another_domain(tmp_path):
    from tasks.evaluation.episode_kind import prepare as prepare_episodes
    from tasks.evaluation.runs import EvalSettings
    from tasks.params import load_params
    from tasks.store import jsonl_text
    from tests.test_evaluate import _case

    cases = tmp_path / "cases.jsonl"
    cases.write_text(jsonl_text([_case()]))
    cfg = load_params(ROOT / "params.yaml")
    cfg.evaluate["analytics"] = {**cfg.evaluate["analytics"], "cases": str(cases), "case_ids": None, "limit": None}
    with pytest.raises(InputError, match=r"record coffee_001: field 'metadata\.domain': case of domain "
                                         r"'optimization' in evaluate\.analytics"):
        prepare_episodes(ROOT, ROOT / "params.yaml", cfg, "analytics", EvalSettings(**cfg.evaluate["analytics"]))
