"""``reward.protocol: reference``: the CLARITI public code's four-stage reward, rule for rule (clariti.md §5;
docs/clariti-protocol.md has the table rule -> key -> section -> test).

Per sample, in order, each stage running only for the samples that passed the previous one:

- S1 non-redundancy: pass A answers every question from the underspecified issue ("I don't know" when it cannot);
  pass B counts the sufficiently answered (redundant) ones. r1 = 1 − redundant/total.
- S2 diversity: one judge call counts the questions similar to the last ``cache_size`` generations (kept across
  batches, pushed after each batch) or to another question of the same generation. r2 = 1 − similar/total; an empty
  cache gives ``reference.empty_cache`` (1.0) without a call.
- S3 answerability: pass A answers every question from the full issue ("I don't know", or "Generic question" for a
  vague ask); pass B counts the answerable ones. r3 = answerable/total; no full issue -> ``no_original_issue``.
- S4 task relevance: one call labels every question with a type; r4 = mean of ``type_rewards`` (unknown type
  ``unknown_type``).

Gating and totals as ``gated_total(rule="public")``. A pass-B answer that cannot be read falls back, as the reference
does, to counting pass A's answers; any other failed or unreadable call follows ``judge_failure`` (``neutral`` =
the reference's values in ``config.NEUTRAL``). The judges are the roles in ``tasks.rewards.reference_judges``:
served models with prompts under ``tasks/roles/prompts/reference_*``, or the deterministic local stand-in.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence

from tasks.rewards.breakdown import (
    NO_QUESTIONS,
    PASS_TOLERANCE,
    RewardBreakdown,
    RewardSample,
    completion_text,
    gated_total,
)
from tasks.rewards.config import NEUTRAL, RewardConfig
from tasks.rewards.reference_judges import ReferenceJudges
from tasks.rewards.reference_parse import MIN_CHARS, reference_questions  # noqa: F401 - the protocol's parser

DONT_KNOW = "don't know"
GENERIC = "generic question"
FORMATTING = "formatting issue"
"""What pass A writes for an answer it could not find (the reference's placeholder)."""


def redundant_by_answers(answers: Sequence[str]) -> int:
    """S1's fallback when pass B cannot be read: answers without "don't know" are redundant (a missing answer,
    "Formatting issue", counts too, as in the reference)."""
    return sum(DONT_KNOW not in a.lower() for a in answers)


def answerable_by_answers(answers: Sequence[str]) -> int:
    """S3's fallback when pass B cannot be read: answers that are not "don't know", "Generic question" or
    "Formatting issue"."""
    return sum(all(m not in a.lower() for m in (DONT_KNOW, GENERIC, FORMATTING)) for a in answers)


def share_left(count: float, total: float, empty: float) -> float:
    """1 − count/total (S1, S2); ``empty`` when the judge reports no total."""
    return 1.0 - count / total if total > 0 else empty


def share(count: float, total: float, empty: float) -> float:
    """count/total (S3); ``empty`` when the judge reports no total."""
    return count / total if total > 0 else empty


def type_value(labels: Sequence[str] | None, n: int, type_rewards: dict[str, float], unknown: float) -> float | None:
    """S4: the mean type reward of the labels (lower-cased, stripped); None when the labels are missing or their
    number is not the number of questions (the reference's "count mismatch": a parse failure)."""
    if labels is None or len(labels) != n or n == 0:
        return None
    return sum(type_rewards.get(label.lower().strip(), unknown) for label in labels) / n


class GenerationCache:
    """The last ``size`` generations (completion texts) across batches; the reference pushes every non-empty
    generation of a batch after the batch is scored."""

    def __init__(self, size: int):
        self.items: deque[str] = deque(maxlen=size) if size > 0 else deque(maxlen=0)

    def push(self, generations: Sequence[str]) -> None:
        for g in generations:
            if g and g.strip() != "<think></think>":
                self.items.append(g)

    def clear(self) -> None:
        self.items.clear()


class ReferenceReward:
    """Scores a batch by the reference's rules; returns the project's ``RewardBreakdown`` (protocol ``reference``)."""

    def __init__(self, cfg: RewardConfig, *, judges: ReferenceJudges | None = None, client=None):
        self.cfg = cfg
        self.judges = judges or ReferenceJudges(cfg.judges, client=client,
                                                retries=cfg.repair_retries if cfg.judge_failure == "repair" else 0)
        self.cache = GenerationCache(cfg.diversity.cache_size)

    def _failed(self, stage: str) -> float | None:
        """What a failed or unreadable judge call gives: the reference's neutral value, or unscored (None)."""
        return NEUTRAL[stage] if self.cfg.judge_failure == "neutral" else None

    def non_redundancy(self, contexts: Sequence[str], questions: Sequence[list[str]]) -> list[tuple[float | None, int]]:
        return self._two_pass("non_redundancy", contexts, questions)

    def answerability(self, fulls: Sequence[str], questions: Sequence[list[str]]) -> list[tuple[float | None, int]]:
        return self._two_pass("answerability", fulls, questions)

    def _two_pass(self, stage: str, texts: Sequence[str], questions: Sequence[list[str]]) \
            -> list[tuple[float | None, int]]:
        """(value, failed calls) per sample: pass A answers, pass B counts, the fallbacks as the module says."""
        out: list[tuple[float | None, int] | None] = [None] * len(texts)
        todo = []
        for k, text in enumerate(texts):
            if stage == "answerability" and not text.strip():
                out[k] = (self.cfg.reference.no_original_issue, 0)
            else:
                todo.append(k)
        mode = "redundancy" if stage == "non_redundancy" else "answerability"
        answers = self.judges.answer([texts[k] for k in todo], [questions[k] for k in todo], mode)
        ok = [k for k, a in zip(todo, answers) if a is not None]
        for k, a in zip(todo, answers):
            if a is None:
                out[k] = (self._failed(stage), 1)
        by_k = dict(zip(todo, answers))
        counts = self.judges.count([texts[k] for k in ok], [questions[k] for k in ok], [by_k[k] for k in ok], mode)
        for k, counted in zip(ok, counts):
            n = len(questions[k])
            if counted is None:  # pass B unreadable: the reference counts pass A's answers
                found = redundant_by_answers(by_k[k]) if mode == "redundancy" else answerable_by_answers(by_k[k])
                value = 1.0 - found / n if mode == "redundancy" else found / n
                out[k] = (value, 1)
            else:
                count, total = counted
                value = share_left(count, total, 0.5) if mode == "redundancy" else share(count, total, 0.5)
                out[k] = (value, 0)
        return [o if o is not None else (self._failed(stage), 1) for o in out]

    def diversity(self, questions: Sequence[list[str]]) -> list[tuple[float | None, int]]:
        previous = list(self.cache.items)
        if not previous:
            return [(self.cfg.reference.empty_cache, 0) for _ in questions]
        counts = self.judges.similar(previous, questions)
        return [(self._failed("diversity"), 1) if c is None else (share_left(c[0], c[1], NEUTRAL["diversity"]), 0)
                for c in counts]

    def task_relevance(self, contexts: Sequence[str], questions: Sequence[list[str]]) \
            -> list[tuple[float | None, int]]:
        labels = self.judges.classify(contexts, questions)
        ref = self.cfg.reference
        out = []
        for qs, lab in zip(questions, labels):
            value = type_value(lab, len(qs), ref.type_rewards, ref.unknown_type)
            out.append((self._failed("task_relevance"), 1) if value is None else (value, 0))
        return out

    def score(self, samples: Sequence[RewardSample]) -> list[RewardBreakdown]:
        order = list(self.cfg.order)
        texts = [completion_text(s.completion) for s in samples]
        questions = [reference_questions(t) for t in texts]
        values = [dict.fromkeys(order) for _ in samples]
        passed: list[dict[str, bool | None]] = [dict.fromkeys(order) for _ in samples]
        failures = [dict.fromkeys(order, 0) for _ in samples]
        alive = [i for i, qs in enumerate(questions) if qs]
        for stage in order:
            qs = [questions[i] for i in alive]
            if stage == "non_redundancy":
                got = self.non_redundancy([samples[i].incomplete_issue for i in alive], qs)
            elif stage == "answerability":
                got = self.answerability([samples[i].full_issue for i in alive], qs)
            elif stage == "diversity":
                got = self.diversity(qs)
            else:
                got = self.task_relevance([samples[i].incomplete_issue for i in alive], qs)
            threshold = self.cfg.thresholds.get(stage)
            for i, (value, failed) in zip(alive, got):
                values[i][stage] = value
                failures[i][stage] = failed
                passed[i][stage] = None if value is None else value >= threshold - PASS_TOLERANCE
            alive = [i for i in alive if passed[i][stage] is not False]
        self.cache.push(texts)
        out = []
        for i, qs in enumerate(questions):
            if not qs:
                out.append(RewardBreakdown(questions=[], values=dict.fromkeys(order, 0.0), passed=passed[i],
                                           stopped_at=NO_QUESTIONS, total=0.0, judge_failures=failures[i],
                                           protocol="reference"))
                continue
            unscored = [s for s in order if values[i][s] is None and failures[i][s]]
            total = gated_total(order, values[i], passed[i], self.cfg.weights, "public", unscored)
            out.append(RewardBreakdown(questions=qs, values=values[i], passed=passed[i],
                                       stopped_at=next((s for s in order if passed[i][s] is False), None),
                                       total=total, judge_failures=failures[i], unscored=unscored,
                                       protocol="reference"))
        return out
