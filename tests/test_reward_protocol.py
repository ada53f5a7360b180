"""Judge failures are unscored (never a silent 0), the ``judge_failure`` settings, and ``protocol: reference``'s
rules (docs/clariti-protocol.md)."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import numpy as np
import pytest

from tasks.rewards.config import NEUTRAL, RewardConfig
from tasks.rewards.reference import (
    GenerationCache,
    ReferenceReward,
    answerable_by_answers,
    redundant_by_answers,
    reference_questions,
    share,
    share_left,
    type_value,
)
from tasks.rewards.reference_judges import (
    AnswerInput,
    ClassifyInput,
    CountInput,
    QAPair,
    SimilarInput,
    answer_local,
    classify_local,
    count_local,
    similar_local,
)
from tasks.rewards.staged import StagedReward, gated_total

WEIGHTS = {"error_info": 1.0, "implementation": 0.6, "version_env": 0.6, "expected_behavior": 0.6,
           "reproduction": 0.4, "external_refs": 0.2}
INCOMPLETE = "The exporter crashes on large files."
FULL = INCOMPLETE + " Traceback: MemoryError in export_rows. Version 2.3 on Linux."
QS = ["What is the full traceback of the crash?", "Which version of the exporter do you run?",
      "How large are the files that crash?"]


def numbered(*questions: str) -> str:
    return "\n".join(f"{n}. {q}" for n, q in enumerate(questions, 1))


def sample(completion: str) -> dict:
    return {"completion": completion, "incomplete_issue": INCOMPLETE, "full_issue": FULL}


class FakeJudges:
    """Every question non-redundant, answerable, ``error_info``, orthogonal; ``fail`` stages' calls fail (None)."""

    def __init__(self, fail: set[str] = frozenset()):
        self.fail = set(fail)

    def redundant(self, questions, texts):
        return [None if "redundant" in self.fail else False for _ in questions]

    def answerable(self, questions, texts, hints):
        return [None if "answerable" in self.fail else True for _ in questions]

    def classify(self, questions, texts):
        return [None if "classify" in self.fail else "error_info" for _ in questions]

    def embed(self, texts):
        return np.eye(len(texts), 16, dtype=np.float32)


def staged(fail=(), **cfg) -> StagedReward:
    return StagedReward(RewardConfig.model_validate(cfg), WEIGHTS, judges=FakeJudges(set(fail)))


# ---- A. judge failures -------------------------------------------------------------------------------------------


def test_failed_first_stage_is_unscored_and_does_not_zero_the_sample():
    """Under partial_credit public a 0 first stage zeroes the sample; an unscored one is left out instead."""
    (ok,) = staged().score([sample(numbered(*QS))])
    (out,) = staged(fail={"redundant"}).score([sample(numbered(*QS))])
    assert ok.total == pytest.approx(1.0)
    assert out.values["non_redundancy"] is None and out.unscored == ["non_redundancy"]
    assert out.judge_failures["non_redundancy"] == 3
    assert out.total == pytest.approx(1.0)  # the scored stages' values unchanged, weights rescaled
    assert out.values["answerability"] == ok.values["answerability"]


def test_every_stage_unscored_gives_no_total():
    (out,) = staged(fail={"redundant", "answerable", "classify"}, order=["non_redundancy", "answerability"]) \
        .score([sample(numbered(*QS))])
    assert out.total is None and out.unscored == ["non_redundancy", "answerability"]


def test_neutral_setting_takes_the_reference_values():
    (out,) = staged(fail={"redundant"}, judge_failure="neutral").score([sample(numbered(*QS))])
    assert out.values["non_redundancy"] == pytest.approx(NEUTRAL["non_redundancy"]) == 0.5
    assert out.unscored == [] and out.judge_failures["non_redundancy"] == 3


def test_gated_total_rescales_over_scored_stages():
    from tasks.rewards.config import StageWeights

    order = ["non_redundancy", "diversity"]
    values = {"non_redundancy": None, "diversity": 0.8}
    passed = {"non_redundancy": None, "diversity": True}
    assert gated_total(order, values, passed, StageWeights(), "public", ["non_redundancy"]) == pytest.approx(0.4)


def _mock_client(tmp_path, rule):
    from tasks.llm.cache import CallCache
    from tasks.llm.client import LLMClient
    from tasks.llm.providers import ensure_registered
    from tasks.llm.providers.mock import MockScript, register

    ensure_registered()
    model = register(f"refreward-{time.time_ns()}", MockScript(rule=rule))
    return model, LLMClient(CallCache(tmp_path / "calls.sqlite"))


def _served(model: str, *roles: str) -> dict:
    from tasks.llm.records import RoleConfig

    return {r: RoleConfig(backend="llm", model=model, max_regenerations=0).model_dump() for r in roles}


def test_served_judge_answering_garbage_is_unscored_and_counted(tmp_path):
    """A served S1 judge that answers prose (reference protocol, the other judges local): S1 is unscored and
    counted, the other stages' values are those of the all-local run, and the total is not zeroed."""
    model, client = _mock_client(tmp_path, lambda messages: "I cannot help with that.")
    local = StagedReward(RewardConfig(protocol="reference"), WEIGHTS)
    cfg = RewardConfig.model_validate({"protocol": "reference", "judges": _served(model, "redundancy_judge")})
    reward = StagedReward(cfg, WEIGHTS, client=client)
    (ok,) = local.score([sample(numbered(*QS))])
    (out,) = reward.score([sample(numbered(*QS))])
    assert out.unscored == ["non_redundancy"] and out.judge_failures["non_redundancy"] == 1
    assert reward.stats["unscored/non_redundancy"] == 1 and reward.stats["judge_failures/non_redundancy"] == 1
    assert {s: out.values[s] for s in ("diversity", "answerability", "task_relevance")} == \
        {s: ok.values[s] for s in ("diversity", "answerability", "task_relevance")}
    assert out.total is not None and out.total > 0


def test_repair_retries_the_failed_calls(tmp_path):
    """judge_failure: repair sends a failed call again; a judge that fails once then answers is scored."""
    seen: dict[str, int] = {}

    def flaky(messages):
        user = messages[-1]["content"]
        seen[user] = seen.get(user, 0) + 1
        return "garbage" if seen[user] == 1 else json.dumps({"answerable": False, "evidence": "", "rationale": "no"})

    model, client = _mock_client(tmp_path, flaky)
    for mode, expect in (("unscored", None), ("repair", 1.0)):
        seen.clear()
        cfg = RewardConfig.model_validate({"judge_failure": mode, "judges": _served(model, "redundancy_judge")})
        (out,) = StagedReward(cfg, WEIGHTS, client=client).score([sample(numbered(*QS))])
        assert out.values["non_redundancy"] == expect


# ---- B. protocol: reference ---------------------------------------------------------------------------------------


def test_reference_parser_numbered_items_then_lines():
    # the reference's pattern is multi-line: an item ends at its line end (a wrapped item keeps its first line)
    assert reference_questions("1. What version is it?\n2. Short\n3. Which OS do you\nuse here?") == \
        ["What version is it?", "Which OS do you"]
    assert reference_questions("What version is it?\n- which OS is this") == ["What version is it?",
                                                                              "- which OS is this"]
    assert reference_questions("<think>1. hidden question here</think>1. What version is it?") == \
        ["What version is it?"]
    assert reference_questions("") == [] and reference_questions("<think></think>") == []


def test_reference_pass_b_fallbacks_count_pass_a_answers():
    answers = ["I don't know", "Version 2.3", "Formatting issue", "Generic question"]
    assert redundant_by_answers(answers) == 3  # the reference counts a formatting placeholder as redundant
    assert answerable_by_answers(answers) == 1


def test_reference_shares_and_type_values():
    assert share_left(1, 4, 0.5) == 0.75 and share_left(0, 0, 0.5) == 0.5
    assert share(3, 4, 0.5) == 0.75 and share(1, 0, 0.5) == 0.5
    rewards = RewardConfig().reference.type_rewards
    assert type_value(["Error_Info ", "made_up"], 2, rewards, 0.3) == pytest.approx((1.0 + 0.3) / 2)
    assert type_value(["error_info"], 2, rewards, 0.3) is None  # count mismatch


def test_generation_cache_keeps_the_last_two_non_empty():
    cache = GenerationCache(2)
    cache.push(["a", "", "<think></think>", "b", "c"])
    assert list(cache.items) == ["b", "c"]


class FakeReference:
    """Reference judges with set answers; ``fail`` names the calls that fail (None)."""

    def __init__(self, answers, count=None, similar=(0, 3), labels=None, fail=()):
        self.answers, self.counted, self.sim, self.labels, self.fail = answers, count, similar, labels, set(fail)
        self.calls: list[str] = []

    def answer(self, texts, questions, mode):
        self.calls.append(f"answer:{mode}")
        return [None if "answer" in self.fail else list(self.answers) for _ in texts]

    def count(self, texts, questions, answers, mode):
        self.calls.append(f"count:{mode}")
        return [None if "count" in self.fail else self.counted for _ in texts]

    def similar(self, previous, questions):
        self.calls.append("similar")
        return [None if "similar" in self.fail else self.sim for _ in questions]

    def classify(self, texts, questions):
        self.calls.append("classify")
        return [None if "classify" in self.fail else (self.labels or ["error_info"] * len(q)) for q in questions]


def ref(judges, **cfg) -> ReferenceReward:
    return ReferenceReward(RewardConfig.model_validate({"protocol": "reference", **cfg}), judges=judges)


def test_reference_two_passes_and_all_stages():
    judges = FakeReference(["I don't know"] * 3, count=(0, 3), labels=["error_info", "version_env", "irrelevant"])
    (out,) = ref(judges).score([RewardSampleOf(numbered(*QS))])
    assert judges.calls == ["answer:redundancy", "count:redundancy", "answer:answerability", "count:answerability",
                            "classify"]  # empty cache: no similarity call, S2 = 1.0
    assert out.values == {"non_redundancy": 1.0, "diversity": 1.0, "answerability": 0.0,
                          "task_relevance": pytest.approx((1.0 + 0.59 + 0.0) / 3)}
    assert out.protocol == "reference"


def RewardSampleOf(completion: str, full: str = FULL):
    from tasks.rewards.staged import RewardSample

    return RewardSample(completion=completion, incomplete_issue=INCOMPLETE, full_issue=full)


def test_reference_gating_first_stage_fail_is_zero_second_is_half_w1_r1():
    judges = FakeReference(["x"] * 3, count=(3, 3))  # every question redundant: r1 = 0 < 0.3
    (out,) = ref(judges).score([RewardSampleOf(numbered(*QS))])
    assert out.total == 0.0 and out.stopped_at == "non_redundancy" and out.values["diversity"] is None
    reward = ref(FakeReference(["x"] * 3, count=(0, 3), similar=(3, 3)))
    reward.cache.push(["1. an earlier generation's question"])
    (out,) = reward.score([RewardSampleOf(numbered(*QS))])
    assert out.values["diversity"] == 0.0 and out.total == pytest.approx(0.5 * 0.25 * 1.0)


def test_reference_cache_is_pushed_after_the_batch():
    reward = ref(FakeReference(["I don't know"] * 3, count=(0, 3), similar=(1, 3)))
    first = reward.score([RewardSampleOf(numbered(*QS)), RewardSampleOf(numbered(*QS))])
    assert [b.values["diversity"] for b in first] == [1.0, 1.0]  # same batch: cache still empty
    (second,) = reward.score([RewardSampleOf(numbered(*QS))])
    assert second.values["diversity"] == pytest.approx(1 - 1 / 3)


def test_reference_fallbacks_and_judge_failure_modes():
    # pass B unreadable: pass A's answers are counted (1 of 3 "don't know" -> 2 redundant)
    judges = FakeReference(["I don't know", "Version 2.3", "yes"], fail={"count"})
    (out,) = ref(judges, thresholds={"non_redundancy": 0.0}).score([RewardSampleOf(numbered(*QS))])
    assert out.values["non_redundancy"] == pytest.approx(1 / 3)
    # no full issue: S3 = 0.7
    reward = ref(FakeReference(["I don't know"] * 3, count=(0, 3)))
    assert reward.answerability([""], [QS]) == [(0.7, 0)]
    # pass A fails: unscored by default, the reference's 0.5 under neutral
    for mode, expect in (("unscored", None), ("neutral", 0.5)):
        (out,) = ref(FakeReference([], fail={"answer"}), judge_failure=mode).score([RewardSampleOf(numbered(*QS))])
        assert out.values["non_redundancy"] == expect and out.judge_failures["non_redundancy"] == 1
    # classifier unreadable: unscored, or 0.3
    (out,) = ref(FakeReference(["I don't know"] * 3, count=(0, 3), fail={"classify"}), judge_failure="neutral") \
        .score([RewardSampleOf(numbered(*QS))])
    assert out.values["task_relevance"] == 0.3


def test_local_stand_in_has_the_passes_shape():
    answers = answer_local(AnswerInput(text=FULL, questions=["Which version of the exporter on Linux?",
                                                             "Any more details?"], mode="answerability")).answers
    assert answers[0].startswith("Version 2.3") and answers[1] == "Generic question"
    assert answer_local(AnswerInput(text=INCOMPLETE, questions=QS[:1], mode="redundancy")).answers == \
        ["I don't know"]
    pairs = [QAPair(question=q, answer=a) for q, a in zip(QS, ["I don't know", "2.3", "Generic question"])]
    assert count_local(CountInput(text=FULL, pairs=pairs, mode="answerability")).count == 1
    sim = similar_local(SimilarInput(previous=["1. What is the full traceback of this crash?"],
                                     questions=[QS[0], QS[1], "Which exporter version do you run?"]))
    assert (sim.similar_count, sim.total) == (2, 3)
    labels = [c.info_type for c in classify_local(ClassifyInput(text=FULL, questions=QS + ["Hello there friend"]))
              .classifications]
    assert labels[:2] == ["error_info", "version_env"] and labels[3] == "irrelevant"


def test_local_stand_in_shares_no_code_with_the_masker():
    code = ("import sys, tasks.rewards.reference, tasks.rewards.reference_judges;"
            "print(sorted(m for m in sys.modules if m.startswith(('tasks.domains', 'tasks.construction'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_reference_protocol_through_staged_reward_offline():
    reward = StagedReward(RewardConfig(protocol="reference"), WEIGHTS)
    out = reward.score([sample(numbered(*QS)), sample("")])
    assert out[0].protocol == "reference" and out[0].total is not None and out[1].total == 0.0
    assert all(v is not None for v in out[0].values.values())


# ---- the tables show the unscored counts -------------------------------------------------------------------------


def test_or_report_and_combined_report_show_unscored():
    from tasks.evaluation import judge as J
    from tasks.evaluation import metrics as M
    from tasks.evaluation.report import report_markdown
    from tasks.reporting.sections import unscored_line
    from tasks.roles.config import RolesParams, describe_roles
    from tests.test_evaluation_metrics import R, episode, make_case, score, session

    case = make_case("case_a")
    eps = [episode("case_a", [("q", 1, R)], ready_summary="x", repeat=k) for k in (1, 2)]
    slots = [score("H1", "P0", "yes", 1), score("H2", "P1", "no"), score("H3", "P2", "yes", 1)]
    judged = [J.assemble(case, eps[0], slots, session("appropriate_stop")),
              J.assemble(case, eps[1], slots, None, failure="provider 500")]
    summary = M.ranked_summary(M.summarise(eps, judged, {"case_a": case}, n_resamples=50), {"m": None})
    row = summary["rows"]["open::m"]
    assert row["Unscored"] == 1
    assert row["WeightedSlotScore_macro"] == pytest.approx(judged[0].weighted_slot_score, abs=1e-6)
    text = report_markdown(summary, {"cases": "c", "case_count": 1, "repeats": 2, "max_turns": 20, "seed": 0},
                           describe_roles(RolesParams()))
    assert "unscored: 1 runs" in text
    assert unscored_line(summary).text.startswith("unscored: 1 ")
    swe = unscored_line({"unscored": 3, "reward_protocol": "reference", "judge_failure": "unscored"}).text
    assert "Reward protocol: reference" in swe and "unscored: 3" in swe



def test_sanity_ladder_names_an_unscored_row_instead_of_crashing():
    from tests.test_sanity_ladder import _ladder, _row, _violations

    row = {**_row(0.3, 0.5, 0.7), "AllSlotExactRestoreRate": None, "WeightedSlotScore_macro": None}
    found = _violations(_ladder(**{"open::a": row}))
    assert found == ["open::a: every run unscored (its judge failed), not placed on the ladder"]


def test_served_reference_passes_round_trip(tmp_path):
    """S1's two passes on a scripted served model: the prompts render the question list and the answers, and the
    model's count sets r1."""
    seen: list[str] = []

    def judge(messages):
        system, user = messages[0]["content"], messages[-1]["content"]
        seen.append(system.split("\n", 1)[0])
        if system.startswith("You answer"):
            assert all(f"{k}. {q}" in user for k, q in enumerate(QS, 1))
            return json.dumps({"answers": ["I don't know", "I don't know", "large files"]})
        assert "A3: large files" in user
        return json.dumps({"count": 1, "total": 3, "explanation": "one answered"})

    model, client = _mock_client(tmp_path, judge)
    cfg = RewardConfig.model_validate({"protocol": "reference", "judges": _served(model, "redundancy_judge")})
    (out,) = StagedReward(cfg, WEIGHTS, client=client).score([sample(numbered(*QS))])
    assert out.values["non_redundancy"] == pytest.approx(1 - 1 / 3) and out.judge_failures["non_redundancy"] == 0
    assert [s[:10] for s in seen] == ["You answer", "You count "]


def test_evaluate_swe_under_the_reference_protocol_names_it(tmp_path):
    """evaluate@swe (in process, local roles) with ``reward.protocol: reference``: the summary and report.md name
    the protocol and show the unscored count; the per-case rewards come from the reference rules."""
    from tasks.evaluation.question_inputs import load_question_inputs
    from tasks.evaluation.question_lists import evaluate_questions
    from tasks.roles.config import RolesParams
    from tests.test_swe_eval import project

    root, settings = project(tmp_path, [{"name": "no_questions"}, {"name": "ask_everything"}])
    inputs = load_question_inputs(root, settings, domain="swe")
    summary = evaluate_questions(inputs.cases, settings, RolesParams(), tmp_path / "out", root=root, inputs=inputs,
                           reward=RewardConfig(protocol="reference"))
    assert summary["reward_protocol"] == "reference" and summary["reward"]["protocol"] == "reference"
    assert summary["unscored"] == 0 and summary["methods"]["ask_everything"]["unscored"] == 0
    assert summary["methods"]["ask_everything"]["reward_mean"] is not None
    report = (tmp_path / "out" / "report.md").read_text()
    assert "protocol reference" in report and "Reward protocol: reference" in report and "| unscored |" in report
    rows = [json.loads(line) for line in (tmp_path / "out" / "rows.jsonl").read_text().splitlines()]
    assert all(r["reward"]["unscored"] == [] for r in rows if r["reward"])
