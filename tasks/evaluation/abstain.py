"""Abstain with warning (CLARITI's failure-mode proposal, clariti.md; issue 26): a questioner whose best staged
reward over its sampled question lists for a case stays under a threshold asks nothing and hands the task on with
an "information insufficient" flag.

``evaluate.swe.abstain`` turns it on. evaluate@swe draws one list per (method, case), so the best staged reward of
its sampled lists is that list's reward; the abstaining variant of a method, ``<name>+abstain``, is derived from the
method's own units without generating again: each case under the threshold (or without a scored list) gets no
questions, no reward (it counts 0 in ``reward_mean``) and ``information_insufficient``, every other case keeps its
list. The variants are evaluated like any method (their rows, metrics and bridge exports, where the flag travels
with the task) but are *reference* rows, never ranked (:data:`REFERENCE`): the decision to abstain reads the staged
reward, whose answerability and relevance judges read the full issue. :func:`abstention_block` sets each beside its
method: the abstention rate, and what abstaining
costs or saves in hidden-category recall, weighted recovery, reward and questions.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

SUFFIX = "+abstain"
FLAG = "information insufficient"
REFERENCE_READS = ("the full issue, through its method's staged reward (answerability and relevance judges): "
                   "abstains where that reward is under the threshold")


def reference(name: str):
    """A ``+abstain`` variant's :class:`~tasks.records.MethodReference` (privileged), or None for any other name."""
    from tasks.records import MethodReference

    return MethodReference(kind="privileged", reads=REFERENCE_READS) if name.endswith(SUFFIX) else None


COMPARED = ("hidden_recall", "weighted_recovery", "reward_mean", "questions_per_issue")
"""The method metrics set side by side (asking vs abstaining)."""


class AbstainSettings(BaseModel):
    """``params.yaml: evaluate.swe.abstain``."""

    model_config = ConfigDict(extra="forbid")

    threshold: float | None = Field(default=None, ge=0.0, le=1.0)
    """A case whose best staged reward is under this gets no questions and the flag; None: off."""
    methods: list[str] | None = None
    """The methods that get an abstaining variant; None: every ranked method (reference rows never)."""


def abstains(unit: Any, threshold: float) -> bool:
    """Whether the questioner abstains on this (evaluated) unit: no scored list, or its reward under ``threshold``
    (a list whose every stage is unscored has no reward to compare: it does not abstain)."""
    if unit.skipped is not None:
        return False
    return unit.reward is None or (unit.reward.total is not None and unit.reward.total < threshold)


def abstaining_unit(unit: Any, threshold: float) -> Any:
    """The unit as the abstaining variant plays it (a copy; the method's own unit is unchanged)."""
    update: dict[str, Any] = {"method": unit.method + SUFFIX, "key": unit.key + SUFFIX}
    if abstains(unit, threshold):
        update.update(questions=[], completion="", reward=None, information_insufficient=True)
    return unit.model_copy(update=update)


def add_abstaining(settings: Any, units: Mapping[str, list]) -> tuple[Any, dict[str, list], list[str]]:
    """``(settings with the variants' method entries, units with the variants', the base methods)``; the variants
    follow their methods in the method list."""
    from tasks.clarifiers.question_methods import reference_of

    cfg: AbstainSettings = settings.abstain
    assert cfg.threshold is not None
    known = {m.name for m in settings.methods}
    chosen = cfg.methods if cfg.methods is not None else [m.name for m in settings.methods
                                                          if reference_of(m.kind) is None]
    unknown = sorted(set(chosen) - known)
    if unknown:
        from tasks.errors import InputError

        raise InputError("params.yaml", f"unknown method(s) {', '.join(unknown)}", field="evaluate.swe.abstain.methods")
    entries, out = [], dict(units)
    for entry in settings.methods:
        entries.append(entry)
        if entry.name in chosen:
            entries.append(entry.model_copy(update={"name": entry.name + SUFFIX}))
            out[entry.name + SUFFIX] = [abstaining_unit(u, cfg.threshold) for u in units[entry.name]]
    return settings.model_copy(update={"methods": entries}), out, list(chosen)


def abstention_block(summary: Mapping[str, Any], units: Mapping[str, Sequence], bases: Sequence[str],
                     threshold: float) -> dict[str, Any]:
    """Per method: how often it abstains and, for each compared metric, asking vs abstaining and the change
    (abstaining - asking: negative recall is what abstaining costs), plus the questions and unanswerable questions
    (answerability judge) it does not ask."""
    every = {**summary["methods"], **summary["reference_methods"]}
    out: dict[str, Any] = {"threshold": threshold, "flag": FLAG,
                           "rule": "best staged reward of the method's lists for a case (one greedy list per case) "
                                   "under the threshold, or no scored list: ask nothing, flag the task",
                           "methods": {}}
    for base in bases:
        evaluated = [u for u in units[base] if u.skipped is None]
        held = [u for u in evaluated if abstains(u, threshold)]
        row: dict[str, Any] = {
            "cases": len(evaluated), "abstained": len(held),
            "abstention_rate": round(len(held) / len(evaluated), 4) if evaluated else 0.0,
            "questions_not_asked": sum(len(u.questions) for u in held),
            "unanswerable_not_asked": sum(q.answerable is False for u in held for q in u.questions),
        }
        for name in COMPARED:
            asking, abstaining = every[base].get(name), every[base + SUFFIX].get(name)
            change = None if asking is None or abstaining is None else round(abstaining - asking, 4)
            row[name] = {"asking": asking, "abstaining": abstaining, "change": change}
        out["methods"][base] = row
    return out


def abstention_lines(block: Mapping[str, Any]) -> list[str]:
    """The block as a Markdown table (evaluate@swe's report.md)."""
    lines = [f"Abstain with warning: threshold {block['threshold']} on the best staged reward; "
             f"flag \"{block['flag']}\".", "",
             "| method | abstention rate | hidden recall (ask -> abstain) | weighted recovery | reward | "
             "questions/issue | unanswerable not asked |", "|---|---|---|---|---|---|---|"]
    for name, row in block["methods"].items():
        cells = [f"{_num(row[m]['asking'])} -> {_num(row[m]['abstaining'])}" for m in COMPARED]
        lines.append(f"| {name} | {_num(row['abstention_rate'])} ({row['abstained']}/{row['cases']}) | "
                     + " | ".join(cells) + f" | {row['unanswerable_not_asked']} |")
    return lines


def _num(value: Any) -> str:
    return "–" if value is None else f"{value:.3f}"
