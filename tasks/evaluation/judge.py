"""The OR-Clarify judge (or-clarify.md §3): per-slot hits, silent assumptions, a stopping label and its re-audit.

One episode is judged in two role calls, each batched over every episode (and slot) given:

1. ``slot_hit_judge`` once per (episode, hidden slot). Its evidence is the agent's **accepted question turns before
   READY_TO_MODEL** (the episode's ``question_turns``; the READY summary, user messages and anything at or after the
   READY turn never count). Under the choice protocols a question counts together with its options: an option that
   states the hidden fact is the agent explicitly putting that fact up for confirmation (an explicit assumption
   check), which the published judge credits; the user must still pick it, but the hit is about asking, not about
   the answer. ``evidence_location`` is ``turn N`` of the question the quote was taken from.
2. ``or_session_judge`` (:data:`SESSION_SPEC`) once per episode: silent assumptions and the judge's stopping label,
   from the brief, the transcript, the READY summary and the slot rubrics with this run's hits.

Then the rule-based re-audit (§3, :func:`rule_based_status`) and the restore flags. A slot without a severity counts
as **P1** (a constructed case whose slots were never graded is scored as if each slot mattered to the model's core).
A role call that fails for good marks the run ``judge_failed`` with every slot ``no``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from tasks.episodes.records import (
    HIT_VALUE,
    QUESTION_PREFIX,
    READY_MARKER,
    SEVERITY_WEIGHT,
    USER_PREFIX,
    Episode,
    JudgeResult,
    PublicTurn,
    SilentAssumption,
    SlotScore,
    StoppingBehavior,
    StopStatus,
    public_turns,
)
from tasks.llm.records import RoleFailure
from tasks.records import Case, HiddenSlot
from tasks.roles import slot_hit as sh
from tasks.roles.base import RoleSpec
from tasks.roles.registry import ROLES

if TYPE_CHECKING:
    from tasks.domain_context import DomainContext

Severity = Literal["P0", "P1", "P2"]
CORE = ("P0", "P1")
DEFAULT_SEVERITY: Severity = "P1"
OVER_QUESTIONING_AFTER = 4
"""Low-value question turns after the last P0/P1 hit at which a stop counts as over-questioning."""


def severity_of(slot: HiddenSlot) -> Severity:
    return slot.severity or DEFAULT_SEVERITY


# ---- which agent text counts as a question ------------------------------------------------------------------------


def ready_turn(episode: Episode) -> int | None:
    """The turn of the READY_TO_MODEL row that ended the run (the last agent READY row), None without one."""
    turns = [r.turn for r in episode.transcript if r.speaker == "agent" and r.content.lstrip().startswith(READY_MARKER)]
    return max(turns) if turns else None


def question_text(question: str, options: dict[str, str]) -> str:
    """A question as the judge reads it: under the choice protocols, with its options (one per line)."""
    if not options:
        return question.strip()
    return "\n".join([question.strip(), "Options:"] + [f"{k}. {v.strip()}" for k, v in sorted(options.items())])


def asked_questions(episode: Episode) -> list[tuple[int, str]]:
    """``(turn, text)`` of every accepted question turn strictly before the READY turn, in order."""
    cutoff = ready_turn(episode)
    return [(t.turn, question_text(t.question, t.options)) for t in sorted(episode.question_turns, key=lambda t: t.turn)
            if cutoff is None or t.turn < cutoff]


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip().lower()


def locate(quote: str, questions: Sequence[tuple[int, str]]) -> int | None:
    """The turn of the question ``quote`` was taken from: verbatim first, else the best content-word overlap."""
    if not quote.strip() or not questions:
        return None
    needle = _norm(quote)
    for turn, text in questions:
        if needle in _norm(text):
            return turn
    words = sh.content_words(quote)
    if not words:
        return None
    best_turn, best = None, 0.0
    for turn, text in questions:
        share = len(words & sh.content_words(text)) / len(words)
        if share > best:
            best_turn, best = turn, share
    return best_turn if best >= 0.5 else None


def turn_of(location: str) -> int | None:
    """``"turn 7"`` -> 7; anything else -> None."""
    match = re.fullmatch(r"\s*turn\s+(\d+)\s*", location or "")
    return int(match.group(1)) if match else None


# ---- scores ---------------------------------------------------------------------------------------------------------


def weighted_slot_score(scores: Sequence[SlotScore]) -> float:
    """Σ w_sev·v_hit / Σ w_sev with w = {P0: 3, P1: 2, P2: 1}, v = {yes: 1, partial: .5, no: 0}."""
    total = sum(SEVERITY_WEIGHT[s.severity] for s in scores)
    if not total:
        return 0.0
    return sum(SEVERITY_WEIGHT[s.severity] * HIT_VALUE[s.hit] for s in scores) / total


def unresolved(scores: Sequence[SlotScore], severity: str) -> list[str]:
    return [s.slot_id for s in scores if s.severity == severity and s.hit != "yes"]


def rule_based_status(completed: bool, scores: Sequence[SlotScore], judge_status: StopStatus) -> StopStatus:
    """The §3 re-audit: not completed -> no_stop; any P0/P1 hit != yes -> premature_stop; else the judge's
    over_questioning is kept; else appropriate_stop."""
    if not completed:
        return "no_stop"
    if any(s.severity in CORE and s.hit != "yes" for s in scores):
        return "premature_stop"
    if judge_status == "over_questioning":
        return "over_questioning"
    return "appropriate_stop"


def stopping_mismatch(judgement: JudgeResult) -> bool:
    return judgement.stopping_behavior.status != judgement.rule_based_status


def assemble(case: Case, episode: Episode, scores: Sequence[SlotScore], session: SessionJudgeOutput | None, *,
             judge_failed: bool = False, failure: str = "") -> JudgeResult:
    """A JudgeResult from slot scores and the session judge's output (None: the judge failed)."""
    scores = list(scores)
    core = [s for s in scores if s.severity in CORE]
    if session is None:
        judge_failed = True
        scores = [s.model_copy(update={"hit": "no", "evidence_location": "", "evidence_quote": "",
                                       "rationale": f"judge failed: {failure}".strip()}) for s in scores]
        status = rule_based_status(episode.ready, scores, "appropriate_stop")
        session = SessionJudgeOutput(
            silent_assumptions=[],
            stopping_behavior=StoppingBehavior(status=status, unresolved_p0_slots=unresolved(scores, "P0"),
                                               unresolved_p1_slots=unresolved(scores, "P1"),
                                               rationale="The judge failed; label set by the rule-based re-audit."),
            summary=f"Judge failed: {failure}".strip(),
        )
    return JudgeResult(
        case_id=case.case_id,
        slot_scores=scores,
        silent_assumptions=list(session.silent_assumptions),
        stopping_behavior=session.stopping_behavior,
        rule_based_status=rule_based_status(episode.ready, scores, session.stopping_behavior.status),
        summary=session.summary,
        all_slot_exact=bool(scores) and all(s.hit == "yes" for s in scores),
        core_eligible=bool(core),
        core_exact=all(s.hit == "yes" for s in core) if core else None,
        weighted_slot_score=round(weighted_slot_score(scores), 10),
        judge_failed=judge_failed,
    )


# ---- the session judge role (or_session_judge) ------------------------------------------------------------------


class SessionSlot(BaseModel):
    """A hidden slot's rubric plus this run's hit for it."""

    model_config = ConfigDict(extra="forbid")

    slot_id: str
    name: str
    severity: Severity
    unit_content: str
    simulator_answer: str = ""
    semantic_hit_rule: str = ""
    failure_modes: list[str] = []
    hit: Literal["yes", "partial", "no"]
    evidence_location: str = ""


class SessionJudgeInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    case_id: str
    protocol: str
    brief: str
    transcript: list[PublicTurn]
    ready: bool = Field(description="True when the run ended with READY_TO_MODEL.")
    ready_summary: str = ""
    max_turns: int
    slots: list[SessionSlot]
    over_questioning_after: int = OVER_QUESTIONING_AFTER
    subject: str = ""
    """What the request is about (the evaluation domain's ``hints.subject``); empty: the prompt's ``domain.subject``."""


class SessionJudgeOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    silent_assumptions: list[SilentAssumption]
    stopping_behavior: StoppingBehavior
    summary: str


def session_input(case: Case, episode: Episode, scores: Sequence[SlotScore], *, domain: DomainContext,
                  over_questioning_after: int = OVER_QUESTIONING_AFTER) -> SessionJudgeInput:
    by_id = {s.slot_id: s for s in case.hidden_slots}
    slots = []
    for score in scores:
        slot = by_id[score.slot_id]
        rubric = sh.rubric_from_slot(case, slot)
        slots.append(SessionSlot(slot_id=score.slot_id, name=slot.name, severity=score.severity,
                                 unit_content=rubric.unit_content, simulator_answer=slot.simulator_answer,
                                 semantic_hit_rule=slot.semantic_hit_rule, failure_modes=list(slot.failure_modes),
                                 hit=score.hit, evidence_location=score.evidence_location))
    return SessionJudgeInput(
        case_id=case.case_id, protocol=episode.protocol, brief=episode.brief,
        transcript=public_turns(episode.transcript),
        ready=episode.ready, ready_summary=episode.ready_summary if episode.ready else "", max_turns=episode.max_turns,
        slots=slots, over_questioning_after=over_questioning_after, subject=domain.hints.subject,
    )


# local backend: silent assumptions ----------------------------------------------------------------------------------

HEDGE = re.compile(
    r"\b(assum\w*|to be confirmed|tbc|needs? (to be )?confirm\w*|unconfirmed|not (yet )?(confirmed|specified|stated|"
    r"known|given|provided|clear)|unknown|unclear|unspecified|pending|open (question|point|issue)s?|please confirm|"
    r"(could|can) you confirm|is (that|this) (right|correct)|correct me|if (that|this) is (wrong|not right)|"
    r"still need\w*|outstanding|placeholder|tentative\w*|provisional\w*)\b",
    re.I,
)
LIST_MARK = re.compile(r"^\s*(?:[-*•]|\d{1,2}[.)]|\(\d{1,2}\))\s+")
SILENT_WEIGHTS = {"fact": 1.7, "wrong": 0.1, "name": 3.8, "cover": 2.7, "conflict": -3.5, "brief": -3.3,
                  "over_brief": 4.3}
SILENT_BIAS = -3.2
SILENT_THRESHOLD = 0.5
"""A logistic fit (rounded) on OR-Clarify cases 1-50: each slot's hidden unit and failure modes stated as facts,
scored against the slot with that very text left out (a stand-in for a paraphrase), versus every sentence of the
public brief (scored against the brief without it). At the threshold, cases 1-50 / 51-100: 83% / 79% of restated
hidden facts and 54% / 44% of restated wrong assumptions are caught and attributed to the right slot, and 1.6% /
1.4% of paraphrased brief sentences are flagged."""


def statements(text: str) -> list[str]:
    """The declarative sentences of a text: split on sentence ends, newlines and list marks; questions dropped."""
    out = []
    for line in text.splitlines():
        line = LIST_MARK.sub("", QUESTION_PREFIX.sub("", line)).strip()
        for sentence in re.split(r"(?<=[.!?;])\s+", line):
            sentence = sentence.strip()
            if sentence.endswith("?") or len(sh.content_words(sentence)) < 2:
                continue
            out.append(sentence)
    return list(dict.fromkeys(out))


def agent_statements(inp: SessionJudgeInput) -> list[tuple[int, str]]:
    """``(turn, sentence)`` of declarative sentences in the agent's question turns (options excluded)."""
    out = []
    for row in inp.transcript:
        if row.speaker != "agent" or row.content.lstrip().startswith(READY_MARKER):
            continue
        body = re.split(r"\n\s*Options:\s*\n", row.content, maxsplit=1)[0]
        out += [(row.turn, s) for s in statements(body)]
    return out


def _slot_prepared(slot: SessionSlot) -> sh.PreparedSlot:
    prepared = sh.prepare_slot(slot.name, slot.unit_content, slot.semantic_hit_rule, (), slot.failure_modes)
    prepared.texts["answer"] = [slot.simulator_answer] if slot.simulator_answer.strip() else []
    prepared.texts["fail"] = [_declarative(f) for f in slot.failure_modes if f.strip()]
    prepared.words.update(sh.content_words(slot.simulator_answer))
    return prepared


def _declarative(failure_mode: str) -> str:
    """'Assuming the X is Y.' -> 'The X is Y.' (a failure mode read as the assertion an agent would make)."""
    text = re.sub(r"^\s*(wrongly\s+|incorrectly\s+)?(assum\w+|treat\w*|ignor\w+)\s+(that\s+)?", "", failure_mode,
                  flags=re.I).strip()
    return (text[:1].upper() + text[1:]) if text else failure_mode


def statement_features(sentence: str, slot: sh.PreparedSlot, emb: sh.Embeddings, brief: Sequence[str]
                       ) -> dict[str, float]:
    fact = max(emb.best(sentence, slot.texts["unit"]) or 0.0, emb.best(sentence, slot.texts["answer"]) or 0.0)
    wrong = emb.best(sentence, slot.texts["fail"]) or 0.0
    words = sh.content_words(sentence)
    near_brief = emb.best(sentence, brief) or 0.0
    return {
        "fact": fact,
        "wrong": wrong,
        "name": emb.best(sentence, slot.texts["name"]) or 0.0,
        "cover": len(words & slot.words) / len(words) if words else 0.0,
        "conflict": float(sh.entity_conflict(sentence, slot.core)),
        "brief": near_brief,
        "over_brief": max(fact, wrong) - near_brief,
    }


def statement_score(sentence: str, slot: sh.PreparedSlot, emb: sh.Embeddings, brief: Sequence[str]) -> float:
    """Logit that a statement asserts something about the slot: close to its fact, its answer or a typical wrong
    assumption, to its name and content words, and closer to the slot than to the public brief; an entity conflict
    (it names another product than the slot) sinks it."""
    feats = statement_features(sentence, slot, emb, brief)
    return SILENT_BIAS + sum(SILENT_WEIGHTS[k] * v for k, v in feats.items())


def brief_sentences(brief: str) -> list[str]:
    return list(statements(brief))


def _session_texts(inp: SessionJudgeInput, prepared: Sequence[sh.PreparedSlot]) -> list[str]:
    texts = [t for p in prepared for group in p.texts.values() for t in group]
    texts += statements(inp.ready_summary) + [s for _, s in agent_statements(inp)] + brief_sentences(inp.brief)
    texts += user_statements(inp)
    return texts


def user_statements(inp: SessionJudgeInput) -> list[str]:
    """The user's replies as statements (the reply prefix dropped; a bare choice letter says nothing)."""
    out: list[str] = []
    for row in inp.transcript:
        if row.speaker == "user":
            out += statements(row.content.removeprefix(USER_PREFIX))
    return list(dict.fromkeys(out))


def _belongs(sentence: str, prep: sh.PreparedSlot, prepared: Sequence[sh.PreparedSlot], emb: sh.Embeddings,
             brief: Sequence[str]) -> bool:
    """The statement is about this slot: over the threshold, and no other slot of the case scores higher."""
    score = statement_score(sentence, prep, emb, brief)
    if score < SILENT_THRESHOLD:
        return False
    return not any(statement_score(sentence, other, emb, brief) > score for other in prepared if other is not prep)


def silent_assumptions(inp: SessionJudgeInput, prepared: Sequence[sh.PreparedSlot], emb: sh.Embeddings
                       ) -> list[SilentAssumption]:
    """At most one per slot that was neither hit ``yes`` nor stated by the user: its best unhedged statement (READY
    summary first, then the agent's question turns) that is about that slot (:func:`_belongs`)."""
    brief = brief_sentences(inp.brief)
    sources: list[tuple[str, str]] = [("ready_to_model", s) for s in statements(inp.ready_summary)] if inp.ready else []
    sources += [("clarification_turn", s) for _, s in agent_statements(inp)]
    sources = [(where, s) for where, s in sources if not HEDGE.search(s)]
    replies = user_statements(inp)
    found: list[SilentAssumption] = []
    claimed: set[str] = set()
    for slot, prep in zip(inp.slots, prepared):
        if slot.hit == "yes" or any(_belongs(r, prep, prepared, emb, brief) for r in replies):
            continue  # asked about, or stated by the user (volunteered facts earn no hit but are not assumptions)
        best: tuple[float, str, str] | None = None
        for where, sentence in sources:
            if sentence in claimed:
                continue
            if not _belongs(sentence, prep, prepared, emb, brief):
                continue
            score = statement_score(sentence, prep, emb, brief)
            rank = (where == "ready_to_model", score)
            if best is None or rank > (best[1] == "ready_to_model", best[0]):
                best = (score, where, sentence)
        if best is None:
            continue
        score, where, sentence = best
        claimed.add(sentence)
        state = "was never asked about" if slot.hit == "no" else "was only partly asked about"
        found.append(SilentAssumption(
            related_slot=slot.slot_id, agent_assumption=sentence, where_it_appeared=where,
            silent_reason=f"States content about '{sh.humanise(slot.name)}', which {state} and never confirmed by "
                          f"the user (score {score:.2f})."))
    return found


# local backend: stopping label ---------------------------------------------------------------------------------------


def question_turns_of(inp: SessionJudgeInput) -> list[int]:
    return sorted({r.turn for r in inp.transcript if r.speaker == "agent"
                   and not r.content.lstrip().startswith(READY_MARKER)})


def stopping_label(inp: SessionJudgeInput) -> StoppingBehavior:
    """The re-audit's rules, plus ``over_questioning``: all P0/P1 hit ``yes`` yet at least ``over_questioning_after``
    low-value question turns (turns that earned no slot a yes/partial) came after the last P0/P1 hit."""
    p0 = [s.slot_id for s in inp.slots if s.severity == "P0" and s.hit != "yes"]
    p1 = [s.slot_id for s in inp.slots if s.severity == "P1" and s.hit != "yes"]
    if not inp.ready:
        return StoppingBehavior(status="no_stop", unresolved_p0_slots=p0, unresolved_p1_slots=p1,
                                rationale="The agent never declared READY_TO_MODEL.")
    if p0 or p1:
        return StoppingBehavior(status="premature_stop", unresolved_p0_slots=p0, unresolved_p1_slots=p1,
                                rationale=f"READY while {', '.join(p0 + p1)} were not resolved.")
    core_turns = [turn_of(s.evidence_location) for s in inp.slots if s.severity in CORE]
    asked = question_turns_of(inp)
    if any(t is None for t in core_turns):
        last = max(asked, default=0)  # a core hit of unknown turn: assume it came last (no over-questioning)
    else:
        last = max([t for t in core_turns if t is not None], default=0)
    useful = {turn_of(s.evidence_location) for s in inp.slots if s.hit != "no"}
    low_value = [t for t in asked if t > last and t not in useful]
    if len(low_value) >= inp.over_questioning_after:
        return StoppingBehavior(status="over_questioning", rationale=(
            f"All P0/P1 slots were resolved by turn {last}, then {len(low_value)} question turns earned no slot."))
    return StoppingBehavior(status="appropriate_stop", rationale="READY with every P0/P1 slot resolved.")


def session_local_batch(inputs: Sequence[SessionJudgeInput]) -> list[SessionJudgeOutput]:
    prepared = [[_slot_prepared(s) for s in inp.slots] for inp in inputs]
    texts: list[str] = []
    for inp, prep in zip(inputs, prepared):
        texts += _session_texts(inp, prep)
    emb = sh.Embeddings(texts)
    out = []
    for inp, prep in zip(inputs, prepared):
        silent = silent_assumptions(inp, prep, emb)
        stop = stopping_label(inp)
        hits = [s.hit for s in inp.slots]
        summary = (f"{hits.count('yes')} of {len(hits)} hidden slots asked about ({hits.count('partial')} partly); "
                   f"{len(silent)} silent assumption(s); stopping: {stop.status}.")
        out.append(SessionJudgeOutput(silent_assumptions=silent, stopping_behavior=stop, summary=summary))
    return out


def session_local(inp: SessionJudgeInput) -> SessionJudgeOutput:
    return session_local_batch([inp])[0]


SESSION_SPEC = RoleSpec(name="or_session_judge", input_model=SessionJudgeInput, output_model=SessionJudgeOutput,
                        local=session_local, local_batch=session_local_batch)
ROLES.add(SESSION_SPEC.name, SESSION_SPEC)


# ---- judging episodes -------------------------------------------------------------------------------------------


def _slot_score(slot: HiddenSlot, out: Any, questions: Sequence[tuple[int, str]]) -> SlotScore:
    if out.hit == "no":
        return SlotScore(slot_id=slot.slot_id, name=slot.name, severity=severity_of(slot), hit="no",
                         rationale=out.rationale)
    turn = locate(out.evidence_quote, questions)
    return SlotScore(slot_id=slot.slot_id, name=slot.name, severity=severity_of(slot), hit=out.hit,
                     evidence_location=f"turn {turn}" if turn is not None else "",
                     evidence_quote=out.evidence_quote, rationale=out.rationale)


def _unasked(slot: HiddenSlot) -> SlotScore:
    return SlotScore(slot_id=slot.slot_id, name=slot.name, severity=severity_of(slot), hit="no",
                     rationale="The agent asked no question before READY_TO_MODEL.")


def judge_episodes(cases: dict[str, Case], episodes: Sequence[Episode], ctx: Any, *,
                   over_questioning_after: int | None = None) -> list[JudgeResult]:
    """Judge ``episodes`` (aligned output). Slot hits run as one ``slot_hit_judge`` batch over every (episode, slot)
    with at least one question; the session judge as one ``or_session_judge`` batch over the episodes whose slot
    hits all came back. ``ctx`` is a MethodContext (``ctx.run(spec, inputs)``; its ``domain`` frames the judges)."""
    from tasks.roles.slot_hit import SPEC as SLOT_HIT

    n_after = over_questioning_after
    if n_after is None:
        n_after = int((getattr(ctx, "options", None) or {}).get("over_questioning_after", OVER_QUESTIONING_AFTER))
    asked = [asked_questions(e) for e in episodes]
    requests: list[sh.SlotHitInput] = []
    where: list[tuple[int, int]] = []
    for i, (episode, questions) in enumerate(zip(episodes, asked)):
        case = cases[episode.case_id]
        if not questions:
            continue
        for j, slot in enumerate(case.hidden_slots):
            texts = [q for _, q in questions]
            requests.append(sh.SlotHitInput(slot=sh.rubric_from_slot(case, slot), agent_questions=texts,
                                            subject=ctx.domain.hints.subject))
            where.append((i, j))
    outs = ctx.run(SLOT_HIT, requests) if requests else []

    scores: list[list[SlotScore]] = [[_unasked(s) for s in cases[e.case_id].hidden_slots] for e in episodes]
    failures: list[str] = [""] * len(episodes)
    for (i, j), out in zip(where, outs):
        slot = cases[episodes[i].case_id].hidden_slots[j]
        if isinstance(out, RoleFailure):
            failures[i] = failures[i] or f"slot_hit_judge {out.kind}: {out.message}"[:300]
            continue
        scores[i][j] = _slot_score(slot, out, asked[i])

    todo = [i for i in range(len(episodes)) if not failures[i]]
    inputs = [session_input(cases[episodes[i].case_id], episodes[i], scores[i], domain=ctx.domain,
                            over_questioning_after=n_after) for i in todo]
    sessions: dict[int, Any] = dict(zip(todo, ctx.run(SESSION_SPEC, inputs) if inputs else []))
    results = []
    for i, episode in enumerate(episodes):
        case = cases[episode.case_id]
        session = sessions.get(i)
        if isinstance(session, RoleFailure):
            failures[i] = f"or_session_judge {session.kind}: {session.message}"[:300]
            session = None
        results.append(assemble(case, episode, scores[i], session, failure=failures[i]))
    return results


# ---- the judge's input as an artifact -----------------------------------------------------------------------


def judge_input_markdown(case: Case, episode: Episode, judgement: JudgeResult | None = None, *,
                         domain: DomainContext, over_questioning_after: int = OVER_QUESTIONING_AFTER) -> str:
    """``judge_prompt_user_message.md``: the questions the slot judge weighed and the session judge's user message
    in ``domain`` (with this run's hits when ``judgement`` is given; otherwise every slot shows ``no`` as a
    placeholder)."""
    questions = asked_questions(episode)
    scores = judgement.slot_scores if judgement is not None else [_unasked(s) for s in case.hidden_slots]
    inp = session_input(case, episode, scores, domain=domain, over_questioning_after=over_questioning_after)
    lines = [f"# Judge input: {episode.key}", "", "## Questions and assumption checks before READY_TO_MODEL", ""]
    lines += [f"{k}. (turn {turn}) " + text.replace("\n", " / ") for k, (turn, text) in enumerate(questions, 1)]
    if not questions:
        lines.append("(none)")
    lines += ["", "## Session judge message", "", SESSION_SPEC.messages(inp, domain)[-1]["content"]]
    if judgement is None:
        lines += ["", "_Slot hits not yet judged: every slot shows `no` here._"]
    return "\n".join(lines).rstrip() + "\n"


judge_prompt_user_message = judge_input_markdown
