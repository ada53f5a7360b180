"""Held-out staged reward during GRPO: the policy answers the held-out issues every N steps, greedy, and the staged
reward scores the answers as ``evaluate@swe`` does (no siblings, no cross-sample diversity cache).

Step 0 is scored before the first update, where the GRPO adapter is still zero: that point is the SFT policy, so
the curve compares GRPO with SFT on the same issues, paired by case. The points go to ``heldout_curve.json``
next to the adapter, with a plot per stage (``heldout.png``); :func:`comparison` gives the paired bootstrap
interval of (last − first) for the total and for each stage.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

CURVE_FILE = "heldout_curve.json"
CURVE_PNG = "heldout.png"
TOTAL = "total"
UNGATED = "ungated"
PAPER = "paper"
MEASURES = (UNGATED, PAPER)
"""Two readings of a case's stage values beside the gated ``total`` that GRPO is trained on: ``ungated`` = Σ w·v over
every stage, no gate; ``paper`` = the ``paper`` partial-credit rule (credit up to and including the failed stage).
Under ``partial_credit: public`` a case that fails the first gate scores 0, so on a few dozen held-out cases the
gated total moves with the handful of cases that cross one threshold; these two (and the gate pass rates) show
whether the stage values themselves moved."""


class HeldoutPrompt(BaseModel):
    model_config = ConfigDict(extra="forbid")

    case_id: str
    source_id: str
    incomplete_issue: str = Field(min_length=1)
    full_issue: str = Field(min_length=1)
    hints: str = ""


def prompts_of(rows: Sequence[Any]) -> list[HeldoutPrompt]:
    """One prompt per SFT row (``tasks.sftdata.SftRow``): its case, source issue, incomplete and full issue, hints."""
    return [HeldoutPrompt(case_id=r.case_id, source_id=r.instance_id, incomplete_issue=r.incomplete_issue,
                          full_issue=r.full_issue, hints=r.hints) for r in rows]


def evaluated_reward(cfg: Any, weights: Any) -> Any:
    """The staged reward of ``params.yaml`` as the held-out curve and evaluate@swe score it (each answer alone)."""
    from tasks.rewards.staged import StagedReward

    return StagedReward(cfg.reward_config().as_evaluated(), weights)


class HeldoutPoint(BaseModel):
    model_config = ConfigDict(extra="forbid")

    step: int = Field(ge=0)
    total: float
    stages: dict[str, float]
    per_case: dict[str, float]
    """case id -> staged total."""
    per_case_stages: dict[str, dict[str, float]]
    """stage -> case id -> stage value (0 for a case without questions)."""
    questions: float = Field(ge=0.0)
    """Mean number of parsed questions per answer."""
    asking_rate: float = Field(ge=0.0, le=1.0)
    """Share of answers with at least one question."""
    measures: dict[str, float] = {}
    """``MEASURES`` -> held-out mean (empty in curves written before they existed)."""
    per_case_measures: dict[str, dict[str, float]] = {}
    """measure -> case id -> value."""
    per_case_passed: dict[str, dict[str, bool]] = {}
    """gating stage (threshold > 0) -> case id -> passed its gate (False for a case without questions)."""

    @property
    def pass_rate(self) -> dict[str, float]:
        """Gating stage -> share of the held-out cases that pass its gate."""
        return {s: sum(v.values()) / max(len(v), 1) for s, v in self.per_case_passed.items()}


class HeldoutCurve(BaseModel):
    model_config = ConfigDict(extra="forbid")

    cases: int
    issues: int
    every: int
    max_new_tokens: int
    points: list[HeldoutPoint] = []


class Interval(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mean: float
    low: float
    high: float


def paired_interval(after: Sequence[float], before: Sequence[float], *, n: int = 2000, seed: int = 0) -> Interval:
    """Mean of (after − before) over paired cases with a 95% percentile bootstrap interval (resampling cases)."""
    diffs = [a - b for a, b in zip(after, before, strict=True)]
    if not diffs:
        raise ValueError("no paired cases")
    rng = random.Random(seed)
    k = len(diffs)
    means = sorted(sum(diffs[rng.randrange(k)] for _ in range(k)) / k for _ in range(n))
    return Interval(mean=sum(diffs) / k, low=means[int(0.025 * n)], high=means[int(0.975 * n) - 1])


def case_measures(cfg: Any, values: Mapping[str, float | None], passed: Mapping[str, bool | None]) -> dict[str, float]:
    """``MEASURES`` of one case from its stage values and gates (``cfg``: the reward's ``RewardConfig``)."""
    from tasks.rewards.staged import gated_total

    order = list(cfg.order)
    return {UNGATED: float(sum(cfg.weights.get(s) * (values.get(s) or 0.0) for s in order)),
            PAPER: gated_total(order, values, passed, cfg.weights, "paper")}


def score_answers(reward: Any, prompts: Sequence[HeldoutPrompt], answers: Sequence[str], step: int) -> HeldoutPoint:
    """One point of the curve: ``reward`` is a :class:`tasks.rewards.staged.StagedReward` (cache_size 0)."""
    samples = [{"completion": a, "incomplete_issue": p.incomplete_issue, "full_issue": p.full_issue,
                "hints": p.hints} for p, a in zip(prompts, answers, strict=True)]
    found = reward.score(samples)
    stages, cfg = list(reward.stage_names), reward.cfg
    cases = list(zip(prompts, found, strict=True))
    per_case = {p.case_id: float(b.total) for p, b in cases}
    per_stage = {s: {p.case_id: float(b.values.get(s) or 0.0) for p, b in cases} for s in stages}
    measures = {p.case_id: case_measures(cfg, b.values, b.passed) for p, b in cases}
    per_measure = {m: {case: v[m] for case, v in measures.items()} for m in MEASURES}
    gates = [s for s in stages if cfg.thresholds.get(s) > 0]
    n = max(len(found), 1)
    return HeldoutPoint(
        step=step, total=sum(per_case.values()) / n,
        stages={s: sum(v.values()) / n for s, v in per_stage.items()},
        per_case=per_case, per_case_stages=per_stage,
        questions=sum(b.n_questions for b in found) / n, asking_rate=sum(b.n_questions > 0 for b in found) / n,
        measures={m: sum(v.values()) / n for m, v in per_measure.items()}, per_case_measures=per_measure,
        per_case_passed={s: {p.case_id: bool(b.passed.get(s)) for p, b in cases} for s in gates},
    )


def comparison(curve: HeldoutCurve, *, n: int = 2000, seed: int = 0) -> dict[str, Any]:
    """First point (SFT) against the last (GRPO): means and paired intervals, total and per stage."""
    if len(curve.points) < 2:
        raise ValueError("a comparison needs the step-0 point and at least one later point")
    first, last = curve.points[0], curve.points[-1]
    ids = sorted(first.per_case)

    def pair(a: Mapping[str, float], b: Mapping[str, float]) -> dict[str, float]:
        return paired_interval([a[i] for i in ids], [b[i] for i in ids], n=n, seed=seed).model_dump()

    def passes(point: HeldoutPoint, stage: str) -> dict[str, float]:
        return {case: float(ok) for case, ok in point.per_case_passed[stage].items()}

    measures = [m for m in MEASURES if m in first.per_case_measures and m in last.per_case_measures]
    gates = [s for s in first.per_case_passed if s in last.per_case_passed]

    def row(point: HeldoutPoint) -> dict[str, float]:
        return {TOTAL: point.total, **point.stages, **{m: point.measures[m] for m in measures},
                **{gate_key(s): point.pass_rate[s] for s in gates}, "questions": point.questions}

    return {
        "cases": curve.cases, "issues": curve.issues, "steps": [first.step, last.step],
        "sft": row(first), "grpo": row(last),
        "gain": {TOTAL: pair(last.per_case, first.per_case),
                 **{s: pair(last.per_case_stages[s], first.per_case_stages[s]) for s in first.stages},
                 **{m: pair(last.per_case_measures[m], first.per_case_measures[m]) for m in measures},
                 **{gate_key(s): pair(passes(last, s), passes(first, s)) for s in gates}},
    }


def gate_key(stage: str) -> str:
    """The comparison's key for the share of cases passing ``stage``'s gate."""
    return f"{stage}_gate_passed"


def curve_lines(curve: HeldoutCurve) -> dict[str, list[float]]:
    """The total, each stage, then ``MEASURES`` (where every point has them) -> the held-out mean at each point
    (``{}`` without points)."""
    if not curve.points:
        return {}
    lines = {TOTAL: [p.total for p in curve.points]}
    lines |= {name: [p.stages[name] for p in curve.points] for name in curve.points[0].stages}
    lines |= {name: [p.measures[name] for p in curve.points] for name in MEASURES
              if all(name in p.measures for p in curve.points)}
    return lines


def curve_rows(curve: HeldoutCurve) -> list[dict[str, Any]]:
    """``[{"step", "series", "reward"}]`` for ``dvc plots``: the total, then each stage, one record per point."""
    steps = [p.step for p in curve.points]
    return [{"step": step, "series": name, "reward": value}
            for name, values in curve_lines(curve).items() for step, value in zip(steps, values, strict=True)]


PANELS_PER_ROW = 4
"""The held-out figure's panels per row: with the total, four stages and two measures (7 panels) it is two rows of
four, ``FIGURE_WIDTH_IN`` wide, so the report shows it at full size with 9-11 pt text (one row of 7 was 2100 px wide
and shrank to half size on the page)."""
FIGURE_WIDTH_IN = 11.0
"""At ``dpi=100``: 1100 px, the report page's text width (``tasks.reporting.to_html.PAGE_WIDTH_PX``)."""


def curve_figure(curve: HeldoutCurve):
    """The held-out curve as a matplotlib ``Figure``: one panel per line of :func:`curve_lines` (the total first),
    ``PANELS_PER_ROW`` to a row, the SFT level (step 0) dashed; the legend sits in the first spare cell."""
    from matplotlib.figure import Figure

    lines = curve_lines(curve)
    cols = min(PANELS_PER_ROW, len(lines))
    nrows = -(-len(lines) // cols)
    fig = Figure(figsize=(FIGURE_WIDTH_IN, 2.9 * nrows + 0.5), dpi=100)
    axes = fig.subplots(nrows, cols, squeeze=False).ravel()
    steps = [p.step for p in curve.points]
    for ax, (name, values) in zip(axes, lines.items()):
        ax.plot(steps, values, marker="o", markersize=4, label="GRPO")
        ax.axhline(values[0], color="grey", linestyle="--", linewidth=1, label="SFT (step 0)")
        ax.set_title(name.replace("_", " "), fontsize=11)
        ax.set_xlabel("step", fontsize=10)
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=9)
    for ax in axes[len(lines):]:
        ax.axis("off")
    fig.suptitle(f"Held-out mean per GRPO step ({curve.cases} cases, {curve.issues} issues never trained on)",
                 fontsize=11)
    handles, labels = axes[0].get_legend_handles_labels()
    spare = axes[len(lines)] if len(lines) < len(axes) else None
    (spare or axes[0]).legend(handles, labels, fontsize=10, loc="center" if spare else "best", frameon=spare is None)
    fig.tight_layout()
    return fig


def write_curve(folder: Path, curve: HeldoutCurve) -> list[Path]:
    """``heldout_curve.json`` and ``heldout.png`` (:func:`curve_figure`)."""
    import io

    from tasks.store import atomic_write_bytes, atomic_write_json

    atomic_write_json(folder / CURVE_FILE, curve.model_dump(mode="json"))
    if not curve.points:
        return [folder / CURVE_FILE]
    fig = curve_figure(curve)
    buf = io.BytesIO()
    fig.savefig(buf, format="png", metadata={"Software": None})
    atomic_write_bytes(folder / CURVE_PNG, buf.getvalue())
    return [folder / CURVE_FILE, folder / CURVE_PNG]


Generate = Callable[[Any, Any, Sequence[str]], list[str]]


def policy_generate(max_new_tokens: int, batch_size: int = 32) -> Generate:
    """Greedy answers of the model being trained, through the evaluation's own ``LocalPolicy``."""

    def generate(model: Any, tokenizer: Any, issues: Sequence[str]) -> list[str]:
        from .policy import GenerationSettings, LocalPolicy

        was_training = model.training
        try:
            policy = LocalPolicy(model, tokenizer, name="grpo-heldout",
                                 settings=GenerationSettings(max_new_tokens=max_new_tokens, batch_size=batch_size))
            return policy.ask_many(list(issues))
        finally:
            model.train(was_training)

    return generate


def heldout_callback(prompts: Sequence[HeldoutPrompt], reward: Any, *, every: int, max_new_tokens: int,
                     generate: Generate | None = None):
    """A ``TrainerCallback`` that fills a :class:`HeldoutCurve` (``callback.curve``) at step 0, every ``every``
    steps and at the last step."""
    from transformers import TrainerCallback

    from .progress import say

    prompts = list(prompts)
    run = generate or policy_generate(max_new_tokens)

    class HeldoutCallback(TrainerCallback):
        def __init__(self) -> None:
            self.curve = HeldoutCurve(cases=len(prompts), issues=len({p.source_id for p in prompts}), every=every,
                                      max_new_tokens=max_new_tokens)

        def _point(self, step: int, kwargs: dict) -> None:
            if any(p.step == step for p in self.curve.points):
                return
            model, tokenizer = kwargs["model"], kwargs["processing_class"]
            answers = run(model, tokenizer, [p.incomplete_issue for p in prompts])
            point = score_answers(reward, prompts, answers, step)
            self.curve.points.append(point)
            say(f"held-out reward at step {step}: {point.total:.4f} "
                + " ".join(f"{k}={v:.3f}" for k, v in {**point.stages, **point.measures}.items()))

        def on_train_begin(self, args, state, control, **kwargs):
            self._point(0, kwargs)

        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step % every == 0 or state.global_step >= state.max_steps:
                self._point(state.global_step, kwargs)

    return HeldoutCallback()
