"""The staged reward: parser, each stage, every gating rule, weights, TRL glue, determinism (hand-computed).

Stub judges keep the numbers exact and independent of judge quality; one test runs the real local judges."""

from __future__ import annotations

import json
import math
import re
from collections import Counter

import numpy as np
import pytest

from tasks.errors import InputError
from tasks.rewards import (
    CLARITI_WEIGHTS,
    RewardConfig,
    StagedReward,
    gated_total,
    load_weights,
    parse_questions,
    reward_functions,
    reward_weights,
)
from tasks.rewards import weights as weights_module
from tasks.rewards.config import StageWeights

# ---- a tiny invented issue and a judge stub that knows the answers ----------------------------------------------

INCOMPLETE = "tally.merge_counts drops keys whose merged count is zero. It returns {'apples': 2} for my two inputs."
FULL = INCOMPLETE + "\nKeyError: 'pears' is raised from tally/core.py line 41. Using tally 3.2 on Python 3.12."

Q_TRACE = "What is the full traceback you see?"
Q_VERSION = "Which version of tally do you run?"
Q_RETURN = "What does merge_counts return for you?"
Q_COLOUR = "What is your favourite colour today?"
Q_TRACE_AGAIN = "Could you paste the complete stack trace?"

FACTS = {
    # question: (redundant vs incomplete, answerable from full, label, topic for the embedding)
    Q_TRACE: (False, True, "error_info", 0),
    Q_VERSION: (False, True, "version_env", 1),
    Q_RETURN: (True, True, "expected_behavior", 2),
    Q_COLOUR: (False, False, "irrelevant", 3),
    Q_TRACE_AGAIN: (False, True, "error_info", 0),
    "Which operating system are you on?": (False, False, "version_env", 5),
}
WEIGHTS = {"error_info": 1.0, "implementation": 0.6, "version_env": 0.5, "expected_behavior": 0.5,
           "reproduction": 0.4, "external_refs": 0.2}


class StubJudges:
    """Answers from FACTS; questions in ``fail`` come back as judge failures (None)."""

    def __init__(self, fail: set[str] = frozenset()):
        self.fail = set(fail)
        self.calls: Counter = Counter()
        self.seen: Counter = Counter()

    def _look(self, method: str, questions, column: int):
        self.calls[method] += 1
        self.seen[method] += len(questions)
        return [None if q in self.fail else FACTS[q][column] for q in questions]

    def redundant(self, questions, texts):
        assert all(t == INCOMPLETE for t in texts)
        return self._look("redundant", questions, 0)

    def answerable(self, questions, texts, hints):
        assert all(t == FULL for t in texts)
        return self._look("answerable", questions, 1)

    def classify(self, questions, texts):
        return self._look("classify", questions, 2)

    def embed(self, texts):
        self.calls["embed"] += 1
        vecs = np.zeros((len(texts), 8), np.float32)
        for row, text in enumerate(texts):
            vecs[row, FACTS[text][3]] = 1.0
        return vecs


def numbered(*questions: str) -> str:
    return "\n".join(f"{n}. {q}" for n, q in enumerate(questions, start=1))


def sample(completion, siblings=()) -> dict:
    return {"completion": completion, "incomplete_issue": INCOMPLETE, "full_issue": FULL, "hints": "",
            "siblings": list(siblings)}


def reward(judges=None, **cfg) -> StagedReward:
    return StagedReward(RewardConfig.model_validate(cfg), WEIGHTS, judges=judges or StubJudges())


FOUR = numbered(Q_TRACE, Q_VERSION, Q_RETURN, Q_COLOUR)
# r1 = 1 - 1/4 (Q_RETURN is redundant), r2 = 1, r3 = 3/4 (Q_COLOUR unanswerable), r4 = (1 + .5 + .5 + 0) / 4
R1, R2, R3, R4 = 0.75, 1.0, 0.75, 0.5


# ---- parser -----------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("text, expected", [
    ("Some preamble:\n1. What is the full traceback?\n2) Which version do you run?\n\nThanks!",
     ["What is the full traceback?", "Which version do you run?"]),
    ("Q1: What is the full traceback?\nQ2. Which version do you run?",
     ["What is the full traceback?", "Which version do you run?"]),
    ("**1.** What is the full traceback?\n**2.** Which version do you\n   run on the server?",
     ["What is the full traceback?", "Which version do you run on the server?"]),
    ("- What is the full traceback?\n* Which version do you run?",
     ["What is the full traceback?", "Which version do you run?"]),
    ("It takes 1.5 seconds. Why is it slow on your side? And which version do you run?",
     ["Why is it slow on your side?", "And which version do you run?"]),
    ("1. Short?\n2. Which version do you run?", ["Which version do you run?"]),
])
def test_parser_formats(text, expected):
    assert parse_questions(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("<think>maybe ask 1. about logs?</think>\n1. What is the full traceback?", ["What is the full traceback?"]),
    ("<think>1. What is the full traceback? still thinking", []),
    ("reasoning from the prompt's open tag</think>1. What is the full traceback?", ["What is the full traceback?"]),
    ("<think></think>", []),
    ("", []),
    (None, []),
])
def test_parser_strips_thinking_and_empty(text, expected):
    assert parse_questions(text) == expected


PARSER_TEXTS = [
    "1. What is the full traceback?\n2. Which version do you run?",
    "1) What is the full traceback?\n2) Which version do you run?\n3) which version do you run",
    "- What is the full traceback?\n- Which version do you run?\n- What is the full traceback?",
    "Thanks for the report. What is the full traceback? Which version do you run? What is the FULL traceback?!",
    "<think>1. Should I ask about logs?</think>\n1. What is the full traceback?\n2. Which version do you run?",
    "1. Short?\n2. **What is the full traceback?**\n3. Which version do you\n   run on the server?",
]


@pytest.mark.parametrize("text", PARSER_TEXTS)
def test_policy_clarifier_and_reward_parse_alike(text):
    """The OR policy agent asks what the reward (and the SWE evaluation) parse, less exact repeats."""
    from tasks.clarifiers.policy import EpisodePolicyOptions, PolicyMethod

    class Fixed:
        def ask(self, brief):
            return text

    asked = PolicyMethod("policy", EpisodePolicyOptions(), loader=Fixed).questions("a brief")
    assert asked == parse_questions(text, dedupe=True)
    assert set(asked) <= set(parse_questions(text))


def test_dedupe_drops_exact_repeats_only():
    text = PARSER_TEXTS[3]
    kept = ["What is the full traceback?", "Which version do you run?", "What is the FULL traceback?"]
    assert parse_questions(text) == kept  # the reward sees the repeat (the diversity stage penalises it)
    assert parse_questions(text, dedupe=True) == kept[:2]
    assert parse_questions(PARSER_TEXTS[1], dedupe=True) == ["What is the full traceback?",
                                                            "Which version do you run?"]
    assert parse_questions(numbered(Q_TRACE, Q_TRACE_AGAIN), dedupe=True) == [Q_TRACE, Q_TRACE_AGAIN]  # rephrased


def test_empty_output_scores_zero():
    judges = StubJudges()
    (out,) = reward(judges).score([sample("<think>no idea</think>")])
    assert out.questions == [] and out.total == 0.0 and out.stopped_at == "no_questions"
    assert set(out.values.values()) == {0.0}
    assert judges.seen["redundant"] == 0


# ---- each stage ---------------------------------------------------------------------------------------------------

def test_stage_values_on_hand_checked_example():
    (out,) = reward().score([sample(FOUR)])
    expected = {"non_redundancy": R1, "diversity": R2, "answerability": R3, "task_relevance": R4}
    assert out.values == pytest.approx(expected)
    assert out.passed == dict.fromkeys(out.values, True) and out.stopped_at is None
    assert out.total == pytest.approx(0.25 * (R1 + R2 + R3 + R4))  # 0.75


@pytest.mark.parametrize("mode, within, expected", [
    ("embedding", "any", 1 - 2 / 3), ("embedding", "earlier", 1 - 1 / 3),
    ("intent", "any", 2 / 3), ("intent", "earlier", 2 / 3),  # two intents in three questions, whatever `within`
])
def test_diversity_within_completion(mode, within, expected):
    staged = reward(diversity={"mode": mode, "within_completion": within})
    (out,) = staged.score([sample(numbered(Q_TRACE, Q_TRACE_AGAIN, Q_VERSION))])
    assert out.values["diversity"] == pytest.approx(expected)


def test_diversity_against_siblings():
    (out,) = reward().score([sample(numbered(Q_TRACE, Q_VERSION), siblings=[numbered(Q_TRACE_AGAIN)])])
    assert out.values["diversity"] == pytest.approx(0.5)


def test_diversity_against_bounded_cache_of_recent_generations():
    staged = reward(diversity={"cache_size": 1})
    staged.score([sample(numbered(Q_TRACE_AGAIN))])
    (out,) = staged.score([sample(numbered(Q_TRACE, Q_VERSION))])
    assert out.values["diversity"] == pytest.approx(0.5)  # Q_TRACE matches the cached generation
    staged.score([sample(numbered("Which operating system are you on?"))])  # pushes the others out
    (again,) = staged.score([sample(numbered(Q_TRACE, Q_COLOUR))])
    assert again.values["diversity"] == pytest.approx(1.0)
    (no_cache,) = reward(diversity={"cache_size": 0}).score([sample(numbered(Q_TRACE))])
    assert no_cache.values["diversity"] == 1.0


def test_cache_is_updated_after_the_whole_batch():
    (a, b) = reward().score([sample(numbered(Q_TRACE)), sample(numbered(Q_TRACE_AGAIN))])
    assert a.values["diversity"] == b.values["diversity"] == 1.0  # not siblings, cache empty during the batch


def test_judge_failure_is_unscored_not_zero():
    """A failed judge call is counted and left out of the stage's mean (the other three questions' mean)."""
    (out,) = reward(StubJudges(fail={Q_TRACE})).score([sample(FOUR)])
    assert out.values["non_redundancy"] == pytest.approx(2 / 3)
    assert out.values["answerability"] == pytest.approx(2 / 3)
    assert out.values["task_relevance"] == pytest.approx((0.5 + 0.5 + 0) / 3)
    assert out.judge_failures == {"non_redundancy": 1, "diversity": 0, "answerability": 1, "task_relevance": 1}


def test_one_judge_call_per_stage_per_batch():
    judges = StubJudges()
    reward(judges).score([sample(FOUR), sample(numbered(Q_TRACE)), sample(""), sample(numbered(Q_VERSION, Q_COLOUR))])
    assert judges.calls == Counter(redundant=1, answerable=1, classify=1, embed=1)
    assert judges.seen["redundant"] == 4 + 1 + 2


def test_one_classifier_call_per_batch_in_intent_mode():
    """Diversity labels every question and its siblings' once; task relevance and the cache reuse the labels."""
    judges = StubJudges()
    staged = reward(judges, diversity={"cache_size": 2})
    batch = [sample(FOUR, [numbered(Q_TRACE_AGAIN, Q_VERSION)]), sample(numbered(Q_TRACE, Q_TRACE))]
    staged.score(batch)
    assert judges.calls["classify"] == 1 and judges.seen["classify"] == 5  # FOUR + Q_TRACE_AGAIN, each pair once
    staged.score(batch)
    assert judges.calls["classify"] == 2 and staged.cache_labels()[:4] == ["error_info", "version_env",
                                                                            "expected_behavior", "irrelevant"]
    embedding = StubJudges()
    reward(embedding, diversity={"mode": "embedding"}).score(batch)
    assert embedding.calls["classify"] == 1 and embedding.seen["classify"] == 5 - 1  # task relevance only


def test_intent_clusters_link_by_label_and_cosine():
    from tasks.rewards.intents import distinct_ratio, intent_clusters, same_intent

    def unit(*xs):
        v = np.array(xs, dtype=np.float32)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    # a~b (cos 0.6, one label), b~c (0.6), a-c only 0.0: one intent through b; d shares a's label but not its
    # direction; e has another label at cos 0.6 with a; f has no label but cos 0.8 with e
    vectors = unit([1, 0, 0, 0], [0.6, 0.8, 0, 0], [-0.28, 0.96, 0, 0], [0, 0, 1, 0], [0.6, 0, 0, 0.8], [0, 0, 0, 1])
    labels = ["error_info", "error_info", "error_info", "error_info", "version_env", None]
    kw = {"intent_threshold": 0.5, "similarity_threshold": 0.7}
    assert intent_clusters(labels, vectors, **kw) == [0, 0, 0, 1, 2, 2]
    assert distinct_ratio(intent_clusters(labels, vectors, **kw)) == pytest.approx(3 / 6)
    assert intent_clusters(labels, vectors, intent_threshold=0.7, similarity_threshold=0.7) == [0, 1, 2, 3, 4, 4]
    assert same_intent(labels[:1], vectors[:1], [None], vectors[1:2], **kw).tolist() == [[False]]
    assert same_intent([], vectors[:0], labels, vectors, **kw).shape == (0, 6) and distinct_ratio([]) is None


# ---- gating -------------------------------------------------------------------------------------------------------

W = 0.25
PUBLIC_23 = 0.5 * (W * R1 + W * R2 * math.sqrt(R1))


@pytest.mark.parametrize("rule, thresholds, siblings, stopped, expected", [
    # stage 1 fails (0.75 < 0.8)
    ("public", {"non_redundancy": 0.8}, [], "non_redundancy", 0.0),
    ("paper", {"non_redundancy": 0.8}, [], "non_redundancy", W * R1),
    ("passed", {"non_redundancy": 0.8}, [], "non_redundancy", 0.0),
    # stage 2 fails: a sibling repeats three of the four questions, r2 = 1 - 3/4 = 0.25 < 0.3
    ("public", {}, [numbered(Q_TRACE_AGAIN, Q_VERSION, Q_RETURN)], "diversity", 0.5 * W * R1),
    ("paper", {}, [numbered(Q_TRACE_AGAIN, Q_VERSION, Q_RETURN)], "diversity", W * (R1 + 0.25)),
    ("passed", {}, [numbered(Q_TRACE_AGAIN, Q_VERSION, Q_RETURN)], "diversity", W * R1),
    # stage 3 fails (0.75 < 0.8)
    ("public", {"answerability": 0.8}, [], "answerability", PUBLIC_23),
    ("paper", {"answerability": 0.8}, [], "answerability", W * (R1 + R2 + R3)),
    ("passed", {"answerability": 0.8}, [], "answerability", W * (R1 + R2)),
    # stage 4 fails (0.5 < 0.6): the public rule's pattern continued
    ("public", {"task_relevance": 0.6}, [], "task_relevance", 0.5 * (W * R1 + W * R2 * math.sqrt(R1) + W * R3)),
    ("paper", {"task_relevance": 0.6}, [], "task_relevance", W * (R1 + R2 + R3 + R4)),
    ("passed", {"task_relevance": 0.6}, [], "task_relevance", W * (R1 + R2 + R3)),
    # all pass: the weighted sum under every rule
    ("public", {}, [], None, W * (R1 + R2 + R3 + R4)),
    ("paper", {}, [], None, W * (R1 + R2 + R3 + R4)),
    ("passed", {}, [], None, W * (R1 + R2 + R3 + R4)),
])
def test_gating_rules(rule, thresholds, siblings, stopped, expected):
    (out,) = reward(partial_credit=rule, thresholds=thresholds).score([sample(FOUR, siblings)])
    assert out.stopped_at == stopped
    assert out.total == pytest.approx(expected)


def test_public_rule_floors_the_square_root():
    order = ["non_redundancy", "diversity", "answerability", "task_relevance"]
    values = {"non_redundancy": 0.0, "diversity": 0.8, "answerability": 0.1, "task_relevance": 1.0}
    passed = {"non_redundancy": True, "diversity": True, "answerability": False, "task_relevance": True}
    assert gated_total(order, values, passed, StageWeights(), "public") == pytest.approx(0.5 * 0.25 * 0.8 * 0.1)


def test_stage_weights_and_lazy_stages():
    weights = {"non_redundancy": 0.1, "diversity": 0.2, "answerability": 0.3, "task_relevance": 0.4}
    (out,) = reward(weights=weights).score([sample(FOUR)])
    assert out.total == pytest.approx(0.1 * R1 + 0.2 * R2 + 0.3 * R3 + 0.4 * R4)
    judges = StubJudges()
    (lazy,) = reward(judges, evaluate_all=False, thresholds={"non_redundancy": 0.8}).score([sample(FOUR)])
    assert lazy.values["diversity"] is None and lazy.passed["answerability"] is None and lazy.total == 0.0
    assert judges.seen["answerable"] == 0


def test_threshold_boundary_passes():
    # 1 - 7/10 is 0.30000000000000004 or 0.29999999999999993 depending on the order of operations; both pass 0.3
    assert reward(thresholds={"non_redundancy": 1 - 0.7}).score([sample(FOUR)])[0].passed["non_redundancy"]


# ---- relevance weights --------------------------------------------------------------------------------------------

def test_weights_from_a_given_dict_and_labels():
    given = dict(WEIGHTS, error_info=0.2)
    (out,) = StagedReward(RewardConfig(), given, judges=StubJudges()).score([sample(FOUR)])
    assert out.values["task_relevance"] == pytest.approx((0.2 + 0.5 + 0.5 + 0) / 4)
    labelled = {"Error Information": 1.0, **{k: 0.0 for k in WEIGHTS if k != "error_info"}}
    by_label = StagedReward(RewardConfig(), labelled, judges=StubJudges())
    assert by_label.relevance.weights["error_info"] == 1.0 and by_label.relevance.source == "given"
    with pytest.raises(InputError, match="no weight for external_refs"):
        StagedReward(RewardConfig(), {k: v for k, v in WEIGHTS.items() if k != "external_refs"}, judges=StubJudges())


def test_weights_from_shap_file_or_published(tmp_path, monkeypatch):
    path = tmp_path / "weights.json"
    path.write_text(json.dumps({"weights": dict(WEIGHTS, reproduction=0.9), "ranking": []}))
    loaded = load_weights(path)
    assert loaded.weights["reproduction"] == 0.9 and loaded.source == str(path)
    monkeypatch.setattr(weights_module, "SHAP_WEIGHTS", tmp_path / "absent.json")
    default = load_weights()
    assert default.weights == CLARITI_WEIGHTS and default.source == "clariti-published"
    assert weights_module.weights_at(path).weights["reproduction"] == 0.9  # the file when it exists ...
    assert weights_module.weights_at(tmp_path / "no-shap-run.json") == default  # ... else the default
    path.write_text("{}")
    with pytest.raises(InputError, match=re.escape("weights.json: field 'weights'")):
        load_weights(path)


def test_bad_sample_names_the_field():
    with pytest.raises(InputError, match="sample 1: field 'full_issue'"):
        reward().score([sample(FOUR), {"completion": FOUR, "incomplete_issue": INCOMPLETE}])


# ---- TRL glue -----------------------------------------------------------------------------------------------------

def test_trl_functions_with_conversational_completions():
    judges = StubJudges()
    staged = reward(judges)
    functions = reward_functions(staged)
    names = [f.__name__ for f in functions]
    assert names == ["non_redundancy", "diversity", "answerability", "task_relevance", "staged_total"]
    assert reward_weights(functions) == [0.0, 0.0, 0.0, 0.0, 1.0]

    prompt_a = [{"role": "user", "content": INCOMPLETE}]
    prompt_b = [{"role": "user", "content": INCOMPLETE + " (second variant)"}]
    prompts = [prompt_a, prompt_a, prompt_b, prompt_b]
    completions = [[{"role": "assistant", "content": text}] for text in
                   (FOUR, numbered(Q_TRACE_AGAIN), numbered(Q_TRACE), "")]
    columns = {"incomplete_issue": [INCOMPLETE] * 4, "full_issue": [FULL] * 4, "hints": [None] * 4,
               "trainer_state": object()}
    logged = {}
    out = {f.__name__: f(prompts=prompts, completions=completions, completion_ids=None,
                         log_metric=logged.__setitem__, **columns) for f in functions}
    assert judges.calls["redundant"] == 1 and judges.calls["classify"] == 1  # five functions, one scoring pass
    # completion 0 shares its prompt with completion 1, whose question repeats Q_TRACE; completion 2 is alone
    assert out["diversity"] == pytest.approx([0.75, 0.0, 1.0, 0.0])
    assert out["non_redundancy"] == pytest.approx([R1, 1.0, 1.0, 0.0])
    assert out["staged_total"][2] == pytest.approx(0.25 * (1 + 1 + 1 + 1.0))
    assert out["staged_total"][1] == pytest.approx(0.5 * 0.25 * 1.0)  # diversity 0 < 0.3 under the public rule
    assert out["staged_total"][3] == 0.0
    assert logged["reward/judge_failures"] == 0.0 and logged["reward/unscored"] == 0.0


def test_trl_functions_can_score_each_completion_alone():
    """``diversity.siblings: false`` (as ``as_evaluated``): a completion is not compared with its group's others."""
    prompts = [[{"role": "user", "content": INCOMPLETE}]] * 2
    completions = [numbered(Q_TRACE, Q_VERSION), numbered(Q_TRACE_AGAIN)]
    columns = {"incomplete_issue": [INCOMPLETE] * 2, "full_issue": [FULL] * 2}
    grouped, alone = (reward_functions(reward(diversity={"siblings": s}))[1] for s in (True, False))
    assert grouped(prompts=prompts, completions=completions, **columns) == pytest.approx([0.5, 0.0])
    assert alone(prompts=prompts, completions=completions, **columns) == pytest.approx([1.0, 1.0])
    evaluated = RewardConfig().as_evaluated().diversity
    assert (evaluated.cache_size, evaluated.siblings) == (0, False)


def test_trl_string_completions_and_missing_column():
    (f_total,) = reward_functions(reward())[-1:]
    assert f_total(prompts=["p"], completions=[FOUR], incomplete_issue=[INCOMPLETE], full_issue=[FULL]) \
        == pytest.approx([0.75])
    with pytest.raises(InputError, match="full_issue"):
        f_total(prompts=["p"], completions=[FOUR], incomplete_issue=[INCOMPLETE])


def test_llm_judge_failure_is_counted(tmp_path):
    """The redundancy judge on a scripted LLM: valid JSON for most questions, prose (a RoleFailure) for one."""
    import time

    from tasks.llm.cache import CallCache
    from tasks.llm.client import LLMClient
    from tasks.llm.providers import ensure_registered
    from tasks.llm.providers.mock import MockScript, register
    from tasks.llm.records import RoleConfig

    ensure_registered()

    def answer(messages):
        user = messages[-1]["content"]
        if Q_COLOUR in user:
            return "Sorry, I would rather not say."
        return json.dumps({"answerable": Q_RETURN in user})

    model = register(f"reward-redundancy-{time.time_ns()}", MockScript(rule=answer))
    cfg = RewardConfig.model_validate(
        {"judges": {"redundancy_judge": RoleConfig(backend="llm", model=model, max_regenerations=0).model_dump()}}
    )
    staged = StagedReward(cfg, WEIGHTS, client=LLMClient(CallCache(tmp_path / "calls.sqlite")))
    (out,) = staged.score([sample(FOUR)])
    assert out.values["non_redundancy"] == pytest.approx(2 / 3)  # Q_RETURN redundant, Q_COLOUR failed (unscored)
    assert out.judge_failures["non_redundancy"] == 1
    assert staged.stats["judge_failures/non_redundancy"] == 1


# ---- determinism and the real local judges ------------------------------------------------------------------------

def test_deterministic_with_fresh_instances():
    batch = [sample(FOUR, [numbered(Q_TRACE_AGAIN)]), sample(numbered(Q_VERSION, Q_COLOUR))]
    first = [b.model_dump() for b in reward().score(batch)]
    assert first == [b.model_dump() for b in reward().score(batch)]


REAL_FULL = """`quill.render_table` crashes when a column header is empty

Rendering a table whose first header cell is an empty string fails.

```python
from quill import render_table
render_table([["", "score"], ["ann", 3]])
```

Traceback (most recent call last):
  File "quill/table.py", line 88, in render_table
ZeroDivisionError: division by zero

I expected the empty header cell to be drawn as a blank column title.

quill 2.4.1, Python 3.11 on Ubuntu 22.04.
"""
REAL_INCOMPLETE = REAL_FULL.split("Traceback")[0].rstrip()


def test_real_local_judges_on_an_obvious_example():
    good = numbered("What is the full traceback or error message you get?",
                    "Which quill and Python versions are you using?")
    off_topic = numbered("What do you call to render the table?", "What is the weather like where you live today?")
    batch = [{"completion": c, "incomplete_issue": REAL_INCOMPLETE, "full_issue": REAL_FULL} for c in (good, off_topic)]
    staged = StagedReward(RewardConfig(), CLARITI_WEIGHTS)
    good_out, off_out = staged.score(batch)
    assert good_out.values["non_redundancy"] == 1.0 and good_out.values["answerability"] == 1.0
    assert good_out.values["task_relevance"] == pytest.approx((1.0 + 0.59) / 2)
    assert off_out.values["non_redundancy"] < 1.0 and off_out.values["task_relevance"] < 0.6
    assert good_out.total > off_out.total
    again = StagedReward(RewardConfig(), CLARITI_WEIGHTS).score(batch)
    assert [b.model_dump() for b in again] == [good_out.model_dump(), off_out.model_dump()]


REPHRASED = ["Can you share the full traceback?", "What is the complete error output you see?",
             "Could you paste the stack trace of the failure?"]
PYTHON = "Which Python version are you on?"
DISTINCT = ["Can you share the full traceback?", PYTHON, "What output did you expect instead?"]


def test_rephrasing_one_ask_does_not_buy_diversity_with_the_real_local_judges():
    """Three rephrasings of the traceback ask (MiniLM cosines 0.32 / 0.46 / 0.51, all below 0.7; the local
    classifier labels all three error_info) plus the Python version are two intents; three different asks are
    three. The embedding rule finds no similar pair in either list."""
    from tasks.rewards.judges import RoleJudges

    assert RoleJudges().classify([*REPHRASED, PYTHON], [REAL_INCOMPLETE] * 4) == ["error_info"] * 3 + ["version_env"]
    batch = [{"completion": numbered(*qs), "incomplete_issue": REAL_INCOMPLETE, "full_issue": REAL_FULL}
             for qs in ([*REPHRASED, PYTHON], DISTINCT)]
    intent = StagedReward(RewardConfig(), CLARITI_WEIGHTS).score(batch)
    embedding = StagedReward(RewardConfig.model_validate({"diversity": {"mode": "embedding"}}),
                             CLARITI_WEIGHTS).score(batch)
    assert [b.values["diversity"] for b in intent] == [0.5, 1.0]
    assert [b.values["diversity"] for b in embedding] == [1.0, 1.0]
    assert intent[0].total < embedding[0].total and intent[1].total == embedding[1].total
