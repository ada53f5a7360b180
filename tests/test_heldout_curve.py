"""GRPO's held-out curve: scoring answers with the staged reward, the paired comparison, the files and the report."""

from __future__ import annotations

import json

import pytest

from tasks.rewards.config import RewardConfig
from tasks.rewards.staged import RewardBreakdown, gated_total
from tasks.training.heldout import (
    CURVE_FILE,
    CURVE_PNG,
    HeldoutCurve,
    HeldoutPrompt,
    comparison,
    heldout_callback,
    paired_interval,
    score_answers,
    write_curve,
)

STAGES = ["non_redundancy", "diversity"]


class CountingReward:
    """Total = 0.1 x the number of lines of the answer; each stage = half of it."""

    stage_names = STAGES
    cfg = RewardConfig(order=STAGES)

    def score(self, samples):
        out = []
        for s in samples:
            n = len([line for line in s["completion"].splitlines() if line.strip()])
            out.append(RewardBreakdown(questions=[f"q{i}" for i in range(n)], values=dict.fromkeys(STAGES, n / 20),
                                       passed=dict.fromkeys(STAGES, True), stopped_at=None, total=n / 10,
                                       judge_failures=dict.fromkeys(STAGES, 0)))
        return out


class GateReward:
    """The real gate: an answer's text names its stage values (``"nr=0.29 rest=0.7"``); the public partial-credit
    rule turns a failed first gate into 0."""

    cfg = RewardConfig()
    stage_names = tuple(cfg.order)

    def score(self, samples):
        out = []
        for s in samples:
            fields = dict(part.split("=") for part in s["completion"].split())
            values = {st: float(fields["nr"] if st == "non_redundancy" else fields["rest"]) for st in self.stage_names}
            passed = {st: values[st] >= self.cfg.thresholds.get(st) for st in self.stage_names}
            total = gated_total(list(self.stage_names), values, passed, self.cfg.weights, "public")
            out.append(RewardBreakdown(questions=["q1", "q2"], values=values, passed=passed,
                                       stopped_at=next((st for st in self.stage_names if not passed[st]), None),
                                       total=total, judge_failures=dict.fromkeys(self.stage_names, 0)))
        return out


def prompts(n=4):
    return [HeldoutPrompt(case_id=f"c{i}", source_id=f"issue-{i // 2}", incomplete_issue=f"issue {i}",
                          full_issue=f"full issue {i}") for i in range(n)]


def test_paired_interval_of_a_constant_gain_is_that_gain():
    got = paired_interval([0.5, 0.7, 0.9], [0.4, 0.6, 0.8])
    assert got.mean == pytest.approx(0.1)
    assert got.low == pytest.approx(0.1) and got.high == pytest.approx(0.1)


def test_paired_interval_straddles_zero_for_noise_and_excludes_it_for_a_shift():
    before = [0.1 * (i % 7) for i in range(30)]
    noisy = [b + (0.05 if i % 2 else -0.05) for i, b in enumerate(before)]
    shifted = [b + 0.05 + 0.01 * (i % 3) for i, b in enumerate(before)]
    assert paired_interval(noisy, before).low < 0 < paired_interval(noisy, before).high
    assert paired_interval(shifted, before).low > 0


def test_score_answers_means_and_per_case_values():
    point = score_answers(CountingReward(), prompts(2), ["1. a\n2. b", ""], step=3)
    assert point.step == 3
    assert point.per_case == {"c0": 0.2, "c1": 0.0}
    assert point.total == pytest.approx(0.1)
    assert point.stages == {"non_redundancy": pytest.approx(0.05), "diversity": pytest.approx(0.05)}
    assert point.asking_rate == 0.5 and point.questions == 1.0


def test_comparison_pairs_the_first_and_last_points_by_case():
    reward, ps = CountingReward(), prompts(4)
    curve = HeldoutCurve(cases=4, issues=2, every=2, max_new_tokens=8, points=[
        score_answers(reward, ps, ["a", "a", "a", "a"], 0),
        score_answers(reward, ps, ["a\nb", "a\nb", "a\nb\nc", "a\nb"], 4),
    ])
    got = comparison(curve)
    assert got["steps"] == [0, 4]
    assert got["sft"]["total"] == pytest.approx(0.1) and got["grpo"]["total"] == pytest.approx(0.225)
    assert got["gain"]["total"]["mean"] == pytest.approx(0.125)
    assert got["gain"]["total"]["low"] > 0
    gates = {"non_redundancy_gate_passed", "diversity_gate_passed"}
    assert set(got["gain"]) == {"total", *STAGES, "ungated", "paper", *gates}
    with pytest.raises(ValueError):
        comparison(HeldoutCurve(cases=4, issues=2, every=2, max_new_tokens=8, points=curve.points[:1]))


def test_write_curve_writes_json_and_png(tmp_path):
    reward, ps = CountingReward(), prompts(2)
    curve = HeldoutCurve(cases=2, issues=1, every=1, max_new_tokens=8,
                         points=[score_answers(reward, ps, ["a", "a"], 0), score_answers(reward, ps, ["a\nb", "a"], 1)])
    written = write_curve(tmp_path, curve)
    assert [p.name for p in written] == [CURVE_FILE, CURVE_PNG]
    assert HeldoutCurve.model_validate(json.loads((tmp_path / CURVE_FILE).read_text())) == curve
    assert (tmp_path / CURVE_PNG).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_callback_scores_step_zero_every_n_and_the_last_step():
    from types import SimpleNamespace

    pytest.importorskip("transformers")
    seen = []

    def generate(model, tokenizer, issues):
        seen.append(model)
        return ["1. x\n2. y" if model == "trained" else "1. x"] * len(issues)

    callback = heldout_callback(prompts(2), CountingReward(), every=2, max_new_tokens=8, generate=generate)
    state = SimpleNamespace(global_step=0, max_steps=5)
    callback.on_train_begin(None, state, None, model="sft", processing_class=None)
    for step in range(1, 6):
        state.global_step = step
        callback.on_step_end(None, state, None, model="trained", processing_class=None)
    assert [p.step for p in callback.curve.points] == [0, 2, 4, 5]
    assert callback.curve.points[0].total == pytest.approx(0.1)
    assert callback.curve.points[-1].total == pytest.approx(0.2)
    assert callback.curve.issues == 1


def test_report_shows_the_heldout_table():
    from tasks.reporting.sections import heldout_table

    reward, ps = CountingReward(), prompts(4)
    curve = HeldoutCurve(cases=4, issues=2, every=2, max_new_tokens=8, points=[
        score_answers(reward, ps, ["a"] * 4, 0), score_answers(reward, ps, ["a\nb"] * 4, 4)])
    table = heldout_table(comparison(curve))
    first = table.rows[0]
    assert first[0] == "total" and first[-1] == "yes"
    assert "4 cases from 2 issues" in table.caption


def test_measures_separate_a_gate_flip_from_the_stage_values():
    """GRPO's answers improve every ungated stage but slip under the non-redundancy gate: the gated total falls to
    0, the ungated and paper readings and the gate pass rate say what moved."""
    reward, ps = GateReward(), prompts(4)
    curve = HeldoutCurve(cases=4, issues=2, every=1, max_new_tokens=8, points=[
        score_answers(reward, ps, ["nr=0.31 rest=0.6"] * 4, 0),
        score_answers(reward, ps, ["nr=0.29 rest=0.7"] * 4, 1)])
    sft, grpo = curve.points
    assert sft.measures["ungated"] == pytest.approx(0.25 * 0.31 + 0.75 * 0.6)
    assert sft.measures["paper"] == pytest.approx(sft.total)
    assert grpo.total == 0.0 and grpo.measures["paper"] == pytest.approx(0.25 * 0.29)
    assert sft.pass_rate == {"non_redundancy": 1.0, "diversity": 1.0}
    assert grpo.pass_rate == {"non_redundancy": 0.0, "diversity": 1.0}
    got = comparison(curve)
    assert got["gain"]["total"]["high"] < 0
    assert got["gain"]["ungated"]["low"] > 0
    assert got["gain"]["non_redundancy_gate_passed"]["mean"] == pytest.approx(-1.0)
    assert got["sft"]["non_redundancy_gate_passed"] == 1.0 and got["grpo"]["non_redundancy_gate_passed"] == 0.0
    from tasks.training.heldout import curve_lines

    assert list(curve_lines(curve)) == ["total", *reward.stage_names, "ungated", "paper"]


def test_a_curve_written_before_the_measures_still_compares():
    reward, ps = CountingReward(), prompts(2)
    points = [score_answers(reward, ps, ["a", "a"], 0), score_answers(reward, ps, ["a\nb", "a"], 1)]
    old = [p.model_copy(update={"measures": {}, "per_case_measures": {}, "per_case_passed": {}}) for p in points]
    got = comparison(HeldoutCurve(cases=2, issues=1, every=1, max_new_tokens=8, points=old))
    assert set(got["gain"]) == {"total", *STAGES}
