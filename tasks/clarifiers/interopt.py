"""InterOPT (or-clarify.md §6, §7) and two variants that go one step past the paper.

Published InterOPT, Choice (MC-D), per turn:
1. Stage 1, Dynamic Gap Search (``or_gap_search``): ADD-only updates to a private ledger (``ledger.py``), at most
   3 per turn, duplicates skipped. A failed search is recorded and the turn goes on with the ledger as it was.
2. Stage 2, Gap-Guided Action Search (``or_candidate_agent``): candidate states C1-C3 and MC-D questions Q1-Q3,
   each bound to an OPEN gap while one exists (else ``NONE``), or READY. An unbound candidate counts
   ``binding_regen_count`` and regenerates with feedback; after 3 invalid outputs (unbound or unparseable) the run
   fails with ``deep_search_agent_format_invalid``.
3. The selector (``or_question_selector``) picks Q1-Q3 by the published priority (objective > rules and policies >
   scope, entities, time > the rest); 3 failed attempts fall back to Q1 (``selector_failed_after_3_attempts``).
4. The chosen gap moves OPEN -> ASKED. READY is accepted even with OPEN gaps (``ready_with_open_gaps_count``).
Ablations: without Stage 1 the ledger stays empty and no gap search runs (candidates bind to ``NONE``); without
Stage 2 one ``or_direct_question`` call adds gaps and writes one question bound to ``selected_gap_ref`` (``G###``
or ``N1``-``N3``), with no candidates and no selector.

Published InterOPT, Open: no ledger. Stage 1 (``or_open_gap_search``) lists 1-5 gaps or says ready_to_model; a
failure ends the run with ``gap_search_error``. Stage 2 (``or_open_candidate_agent``) writes three private
candidates and one public question, or READY with a formulatable confidence. Without Stage 1 the candidate agent
gets no guidance; without Stage 2 the first gap's direct question is asked and ready_to_model means READY.

Local backends (``roles: <name>: backend: local``, the default) ask from the brief's gap inventory (``gaps.py``)
and read only the public brief and transcript. The ablations remove what their stage contributes:

- Full InterOPT: the ledger discovers the inventory's gaps three per turn, in the inventory's order; the candidate
  agent offers the top three OPEN gaps and the selector picks by the published priority (objective > rules and
  policies > scope, entities, time > the rest). Each gap is asked once and marked ASKED whatever the reply.
- Without Stage 1 there is no ledger: every turn the candidate agent infers from the transcript alone what is still
  open (``interopt_roles.transcript_open_gaps``). A gap stays open until a reply to its question settles it (the
  alignment judgement of ``alignment.py``), so a non-answer, a D comment that states nothing on the point or a
  reply about another entity is asked again, narrower (at most twice in all); a free-text reply to another question
  that already states a rule for a gap's subject closes that gap unasked. Unlike plain ``mc_d`` (one generic agent,
  one gap per category, then READY) it goes through every open gap, with candidates and the selector. Under Open
  the unguided Stage 2 agent reads the transcript the same way.
- Without Stage 2 there are no candidates and no selector: the one direct call asks the oldest OPEN gap's own
  question, in the ledger's order of discovery, so rules found late (a third entity's limit) come after the
  relations found before them, where the selector asks every rule first. The gaps asked are the same as
  InterOPT's, in another order; ``candidate_calls`` and ``selector_calls`` stay 0. Under Open the first gap the
  search lists (the inventory's order) is asked, where Stage 2 ranks the listed gaps by the priority.
- ``interopt_aligned``'s ``or_gap_alignment`` local backend is ``alignment.judge``: a picked option, a clear yes or
  no, or a reply naming the asked subject with a value, rule or goal settles the gap; "I don't have that
  information", a D comment that does not answer, or a reply about another entity leaves it unsettled.

With LLM backends each stage is a model call and the same structure holds.

Our variants (not in the paper):

- ``interopt_aligned`` (answer-gap alignment). After each reply, ``or_gap_alignment`` judges from the public reply
  whether it settles the gap that was asked. Settled: ASKED -> RESOLVED. Unsettled: a high-risk gap (risk weight
  >= ``high_risk``, default 2: objective, hard/soft policy, constraint set / feasible rule) goes back to OPEN and
  is re-asked once with a narrower question (``gap_reask_count``); after that, or for a low-risk gap, it stays
  ASKED and unsettled and is flagged in the READY summary as still needing confirmation. READY is taken only
  when no OPEN gap and no re-askable high-risk gap remains: an agent READY before that is sent back once with
  feedback (``ready_overridden_count``); a second READY is accepted. Under Open (no ledger) the agent keeps the
  asked gaps itself and feeds a re-ask to Stage 2 as a "partially answered" gap.
- ``interopt_cost_aware`` (cost-aware stop). Each open gap carries a severity-risk weight by category (objective
  3; hard_soft_policy, constraint_set and feasible_rule 2; the others 1; ``options.risk_weights`` overrides). The
  expected value of asking about a gap is its risk weight times the chance that the next reply settles it,
  estimated from this episode's public replies: after each reply ``or_gap_alignment`` judges whether it settled
  the gap asked, and the chance is (settled + 1) / (judged + 2) (Laplace; 0.5 before any reply; a failed
  judgement is left out, counted in ``alignment_failures``, a counter only this mode sets). Each question costs
  ``options.question_cost`` (default 0.75). The agent offers Stage 2 only the gaps whose expected value exceeds
  the cost and declares READY at once (no Stage 2 call) when none is left or ``options.question_budget`` (default
  8, a ceiling) questions were asked, with a summary that flags every gap still open as needing confirmation. So a
  weight-1 gap is asked only once the chance passes 3/4 (e.g. three settled replies of three), a weight-2 gap while
  it stays above 3/8, and a user who keeps saying "I don't have that information" ends the interview early. An
  agent READY while a gap is still worth its cost is sent back once, as above.

Options (``params.yaml: evaluate.methods.<name>``, minus ``method``) override any field of :class:`InterOptOptions`.
"""

from __future__ import annotations

import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tasks.clarifiers import interopt_roles as R
from tasks.clarifiers.base import BaseAgent, MethodContext, method
from tasks.clarifiers.ledger import GapRow, Ledger
from tasks.episodes.records import AgentAction, AgentView, Protocol, public_turns
from tasks.errors import InputError
from tasks.llm.records import RoleFailure

DEFAULT_RISK = {"objective": 3.0, "hard_soft_policy": 2.0, "constraint_set": 2.0, "feasible_rule": 2.0,
                "decision_scope": 1.0, "time_boundary": 1.0, "entity_relation": 1.0}


class InterOptOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    stage1: bool = True
    stage2: bool = True
    aligned: bool = False
    cost_aware: bool = False
    question_cost: float = Field(default=0.75, ge=0.0)
    question_budget: int = Field(default=8, ge=0)
    risk_weights: dict[str, float] = {}
    """Per-category overrides of :data:`DEFAULT_RISK`."""
    high_risk: float = 2.0
    """Aligned mode: gaps at or above this risk are re-asked when unsettled and block READY."""
    max_reasks: int = Field(default=1, ge=0)
    format_attempts: int = Field(default=3, ge=1)
    selector_attempts: int = Field(default=3, ge=1)

    def risk(self, category: str) -> float:
        return {**DEFAULT_RISK, **self.risk_weights}.get(category, 1.0)

    def question_value(self, category: str, settled: int, judged: int) -> float:
        """Expected value of the next question on a gap: risk weight x P(the reply settles it), the probability
        estimated from the episode's judged replies as (settled + 1) / (judged + 2)."""
        return self.risk(category) * (settled + 1) / (judged + 2)


def _transcript(view: AgentView) -> list[R.PublicTurn]:
    return public_turns(view.transcript)


def _last_reply(view: AgentView) -> str | None:
    rows = view.transcript
    return rows[-1].content if rows and rows[-1].speaker == "user" else None


def _failure_text(out: RoleFailure) -> str:
    return f"{out.kind}: {out.message}"


def _failed_attempt(agent: BaseAgent, counter: str, out: RoleFailure, attempts: list[dict]) -> str:
    """Counts a candidate call whose output failed its schema, records the attempt, and returns the feedback for the
    next attempt."""
    agent.bump(counter)
    attempts.append({"valid": False, "error": _failure_text(out)})
    return f"Your previous output was not valid JSON for the schema ({out.message})."


class _Agent(BaseAgent):
    COUNTERS: tuple[str, ...] = ()

    def __init__(self, brief: str, opts: InterOptOptions, seed: int, ctx: MethodContext) -> None:
        super().__init__()
        self.brief, self.opts, self.seed, self.ctx = brief, opts, seed, ctx
        for name in self.COUNTERS:
            self._counters[name] = 0
        self.questions_asked = 0
        self.replies_judged = 0
        self.replies_settled = 0
        self.cost_pending: tuple[str, str, str, dict[str, str]] | None = None
        """Cost-aware mode: (category, description, question, options) of the last question, for the reply's
        judgement."""

    def worth_asking(self, category: str) -> bool:
        """Cost-aware mode: whether a gap's expected value exceeds the question cost."""
        return self.opts.question_value(category, self.replies_settled, self.replies_judged) > self.opts.question_cost

    def value_record(self, gaps: list[tuple[str, str]]) -> dict[str, Any]:
        """What the cost-aware stop weighed, for the event log: (id, category) per open gap."""
        return {"questions_asked": self.questions_asked, "replies_settled": self.replies_settled,
                "replies_judged": self.replies_judged, "question_cost": self.opts.question_cost,
                "values": {gid: round(self.opts.question_value(cat, self.replies_settled, self.replies_judged), 4)
                           for gid, cat in gaps}}

    def observe_reply(self, view: AgentView, event: dict) -> None:
        """Cost-aware mode: judge whether the last reply settled the gap asked (public reply only) and count it."""
        if self.cost_pending is None:
            return
        category, description, question, options = self.cost_pending
        self.cost_pending = None
        reply = _last_reply(view)
        if reply is None:
            return
        self.bump("alignment_calls")
        out = self.ctx.run_one(R.ALIGNMENT_SPEC, R.AlignmentInput(
            brief=self.brief, gap_category=category, gap_description=description, question=question,
            options=options, reply=reply))
        if isinstance(out, RoleFailure):
            self.bump("alignment_failures")
            event["reply_value"] = {"error": _failure_text(out)}
            return
        self.replies_judged += 1
        self.replies_settled += int(out.settled)
        event["reply_value"] = {"settled": out.settled, "replies_settled": self.replies_settled,
                                "replies_judged": self.replies_judged}

    def set(self, name: str, value: float) -> None:
        self._counters[name] = value

    def _open_turn(self, view: AgentView) -> tuple[list[R.PublicTurn], dict[str, Any]]:
        """What every turn starts with: the public transcript and the turn's event, after the alignment check and
        the judgement of the last reply where the options ask for them."""
        transcript = _transcript(view)
        event: dict[str, Any] = {"turn": view.turn}
        if self.opts.aligned:
            self._align(view, event)
        if self.opts.cost_aware:
            self.observe_reply(view, event)
        return transcript, event


# ---- Choice (MC-D) -----------------------------------------------------------------------------------------------


class ChoiceInterOptAgent(_Agent):
    COUNTERS = ("ledger_add_count", "ledger_asked_count", "ledger_duplicate_skipped_count", "ledger_final_size",
                "ledger_final_open_count", "binding_regen_count", "ledger_unbound_turn_count",
                "ledger_consume_error_count", "ready_with_open_gaps_count", "selector_calls", "selector_fallbacks",
                "gap_search_calls", "candidate_calls", "gap_search_errors", "deep_search_format_errors",
                "direct_question_calls", "ledger_update_limit_error_count", "ledger_resolved_count",
                "alignment_calls", "gap_reask_count", "ready_overridden_count", "cost_aware_stops")

    def __init__(self, brief: str, opts: InterOptOptions, seed: int, ctx: MethodContext) -> None:
        super().__init__(brief, opts, seed, ctx)
        self.ledger = Ledger(allow_resolved=opts.aligned)
        self.stem = "ledger_events" if opts.stage2 else "ledger_direct_question_events"
        self.pending: tuple[str, str, dict[str, str]] | None = None
        """(gap id, question, options) of the last question asked, for the aligned mode."""

    # -- bookkeeping --

    def _sync(self) -> None:
        for key, value in self.ledger.counters().items():
            self.set(key, value)

    def _finish(self, event: dict, action: AgentAction) -> AgentAction:
        self._sync()
        event["action"] = action.kind
        event["ledger_after_turn"] = self.ledger.snapshot()
        event["visibility"] = {"ledger": "private", "candidates": "private", "selector": "private"}
        self.log(self.stem, event)
        return action

    def _must_ask(self) -> list[GapRow]:
        """Open gaps that make READY premature under our variants (empty for the published InterOPT)."""
        rows = self.ledger.open_rows()
        if self.opts.cost_aware:
            return [r for r in rows if self.worth_asking(r.category)]
        if self.opts.aligned:
            return [r for r in rows if self.opts.risk(r.category) >= self.opts.high_risk]
        return []

    def _ready(self, summary: str, event: dict) -> AgentAction:
        open_rows = self.ledger.open_rows()
        if open_rows:
            self.bump("ready_with_open_gaps_count")
        # our variants flag what remains open; the published InterOPT keeps the agent's summary as it is
        unsettled = [r for r in self.ledger.rows if r.status == "ASKED"] if self.opts.aligned else []
        flagged = ([r.description for r in open_rows + unsettled if r.description not in summary]
                   if self.opts.aligned or self.opts.cost_aware else [])
        if flagged:
            summary = summary.rstrip() + "\n" + "\n".join(f"Still needs confirmation: {d}" for d in flagged)
        return self._finish(event, AgentAction(kind="ready", summary=summary))

    def _ask(self, question: str, options: dict[str, str], gap_id: str, event: dict) -> AgentAction:
        row = self.ledger.get(gap_id)
        if gap_id == "NONE" or row is None:
            self.bump("ledger_unbound_turn_count")
            if gap_id != "NONE":
                self.ledger.mark_asked(gap_id, event["turn"])  # counted as a ledger_consume_error, never raised
            event["ledger_consumed"] = None
        else:
            if row.ask_count:
                self.bump("gap_reask_count")
            event["ledger_consumed"] = gap_id if self.ledger.mark_asked(gap_id, event["turn"]) else None
        self.pending = (gap_id, question, options)
        if self.opts.cost_aware:
            self.cost_pending = (row.category, row.description, question, options) if row is not None else \
                ("unknown", question, question, options)
        self.questions_asked += 1
        return self._finish(event, AgentAction(kind="ask", question=question, options=options))

    # -- steps --

    def _align(self, view: AgentView, event: dict) -> None:
        if self.pending is None:
            return
        gap_id, question, options = self.pending
        self.pending = None
        row, reply = self.ledger.get(gap_id), _last_reply(view)
        if row is None or reply is None or row.status != "ASKED":
            return
        self.bump("alignment_calls")
        out = self.ctx.run_one(R.ALIGNMENT_SPEC, R.AlignmentInput(
            brief=self.brief, gap_category=row.category, gap_description=row.description, question=question,
            options=options, reply=reply))
        if isinstance(out, RoleFailure):
            event["alignment"] = {"gap_id": gap_id, "error": _failure_text(out)}
            return
        event["alignment"] = {"gap_id": gap_id, "settled": out.settled, "rationale": out.rationale}
        if out.settled:
            self.ledger.mark_resolved(gap_id, view.turn)
        elif self.opts.risk(row.category) >= self.opts.high_risk and row.ask_count <= self.opts.max_reasks:
            self.ledger.reopen(gap_id, view.turn)

    def _gap_search(self, view: AgentView, transcript: list[R.PublicTurn], event: dict) -> None:
        before = self.ledger.snapshot()
        self.bump("gap_search_calls")
        out = self.ctx.run_one(R.GAP_SEARCH_SPEC, R.GapSearchInput(brief=self.brief, transcript=transcript,
                                                                   ledger=list(self.ledger.rows)))
        record: dict[str, Any] = {"ledger_before": before}
        if isinstance(out, RoleFailure):
            self.bump("gap_search_errors")
            record["error"] = _failure_text(out)
        else:
            applied = self.ledger.apply(out.updates, view.turn)
            record.update(decision=out.decision, search_summary=out.search_summary,
                          applied_updates=[r.model_dump() for r in applied.added], duplicates=applied.duplicates,
                          dropped_over_limit=[u.model_dump() for u in applied.dropped_over_limit],
                          error=applied.error)
        record["ledger_after"] = self.ledger.snapshot()
        record["open_ids"] = [r.gap_id for r in self.ledger.open_rows()]
        event["gap_search"] = record

    def _frontier(self) -> list[GapRow]:
        rows = self.ledger.open_rows()
        if self.opts.cost_aware:
            rows = [r for r in rows if self.worth_asking(r.category)]
        return rows

    def _cost_stop(self) -> bool:
        if not self.opts.cost_aware:
            return False
        if self.questions_asked >= self.opts.question_budget:
            return True
        return bool(self.opts.stage1) and not any(self.worth_asking(r.category) for r in self.ledger.open_rows())

    def act(self, view: AgentView) -> AgentAction:
        transcript, event = self._open_turn(view)
        if not self.opts.stage2:
            return self._direct(view, transcript, event)
        if self.opts.stage1:
            self._gap_search(view, transcript, event)
        if self._cost_stop():
            self.bump("cost_aware_stops")
            event["cost_aware"] = self.value_record([(r.gap_id, r.category) for r in self.ledger.open_rows()])
            unresolved = [r.description for r in self.ledger.open_rows()]
            return self._ready(R.compose_summary(self.ctx.domain.gaps, self.brief, transcript, unresolved), event)
        if self.opts.cost_aware:
            event["cost_aware"] = self.value_record([(r.gap_id, r.category) for r in self.ledger.open_rows()])
        return self._stage2(view, transcript, event)

    def _stage2(self, view: AgentView, transcript: list[R.PublicTurn], event: dict) -> AgentAction:
        frontier = self._frontier()
        ids = {r.gap_id for r in frontier}
        attempts: list[dict] = []
        event["agent_attempts"] = attempts
        invalid, feedback, overridden, out = 0, "", False, None
        while invalid < self.opts.format_attempts:
            self.bump("candidate_calls")
            out = self.ctx.run_one(R.CANDIDATE_SPEC, R.CandidateInput(
                brief=self.brief, transcript=transcript, open_gaps=frontier, ledger=self.opts.stage1,
                attempt=len(attempts) + 1, feedback=feedback))
            if isinstance(out, RoleFailure):
                invalid += 1
                feedback = _failed_attempt(self, "deep_search_format_errors", out, attempts)
                continue
            attempts.append({"valid": True, "output": out.model_dump()})
            if out.decision == "READY":
                must = self._must_ask()
                if must and not overridden:
                    overridden = True
                    self.bump("ready_overridden_count")
                    feedback = ("READY is premature: these high-risk gaps are still OPEN: "
                                + "; ".join(f"{r.gap_id} {r.description}" for r in must) + ". Ask about one of them.")
                    attempts[-1]["ready_overridden"] = True
                    continue
                return self._ready(out.summary, event)
            unbound = [k for k, q in out.questions().items() if ids and q.frontier_gap_id not in ids]
            if unbound:
                invalid += 1
                self.bump("binding_regen_count")
                attempts[-1]["valid"] = False
                attempts[-1]["unbound"] = unbound
                feedback = (f"Candidates {', '.join(unbound)} are not bound to an OPEN gap. Every candidate must carry "
                            f"frontier_gap_id from: {', '.join(sorted(ids))}.")
                continue
            break
        else:
            message = f"candidate generation invalid after {self.opts.format_attempts} attempts"
            event["protocol_failure"] = message
            return self._finish(event, AgentAction(kind="invalid", failure="deep_search_agent_format_invalid",
                                                   raw=message))
        assert out is not None and not isinstance(out, RoleFailure)
        event["candidates"] = {k: q.model_dump() for k, q in out.questions().items()}
        event["deep_search_decision_evidence"] = out.deep_search_decision_evidence
        qid = self._select(transcript, out, frontier, event)
        chosen = out.questions()[qid]
        gap_id = chosen.frontier_gap_id if ids else "NONE"
        return self._ask(chosen.question, dict(chosen.options), gap_id, event)

    def _select(self, transcript: list[R.PublicTurn], out: R.CandidateOutput, frontier: list[GapRow],
                event: dict) -> str:
        questions = out.questions()
        candidates = [R.SelectorCandidate(question_id=k, question=q.question, options=dict(q.options),
                                          frontier_gap_id=q.frontier_gap_id) for k, q in questions.items()]
        eligible = [R.FrontierGap(gap_id=r.gap_id, category=r.category, description=r.description) for r in frontier]
        attempts: list[dict] = []
        event["selector_attempts"] = attempts
        for attempt in range(1, self.opts.selector_attempts + 1):
            self.bump("selector_calls")
            sel = self.ctx.run_one(R.SELECTOR_SPEC, R.SelectorInput(
                transcript=transcript, states=[out.C1, out.C2, out.C3], candidates=candidates,
                eligible_frontier=eligible, attempt=attempt))
            if isinstance(sel, RoleFailure):
                attempts.append({"attempt": attempt, "error": _failure_text(sel)})
                continue
            chosen = questions.get(sel.selected_question_id)
            if chosen is None or (eligible and chosen.frontier_gap_id not in {g.gap_id for g in eligible}):
                attempts.append({"attempt": attempt, "selected": sel.selected_question_id, "error": "not eligible"})
                continue
            attempts.append({"attempt": attempt, "selected": sel.selected_question_id,
                             "evaluation_process": sel.evaluation_process})
            event["selected_question_id"] = sel.selected_question_id
            return sel.selected_question_id
        self.bump("selector_fallbacks")
        event["selected_question_id"] = "Q1"
        event["fallback"] = "selector_failed_after_3_attempts"
        return "Q1"

    def _direct(self, view: AgentView, transcript: list[R.PublicTurn], event: dict) -> AgentAction:
        attempts: list[dict] = []
        event["agent_attempts"] = attempts
        if self.opts.cost_aware and self.questions_asked >= self.opts.question_budget:
            self.bump("cost_aware_stops")
            unresolved = [r.description for r in self.ledger.open_rows()]
            return self._ready(R.compose_summary(self.ctx.domain.gaps, self.brief, transcript, unresolved), event)
        feedback, out = "", None
        for attempt in range(1, self.opts.format_attempts + 1):
            self.bump("direct_question_calls")
            out = self.ctx.run_one(R.DIRECT_SPEC, R.DirectInput(brief=self.brief, transcript=transcript,
                                                                ledger=list(self.ledger.rows),
                                                                attempt=attempt, feedback=feedback))
            if isinstance(out, RoleFailure):
                self.bump("deep_search_format_errors")
                feedback = f"Your previous output was not valid JSON for the schema ({out.message})."
                attempts.append({"attempt": attempt, "error": _failure_text(out)})
                continue
            attempts.append({"attempt": attempt, "output": out.model_dump()})
            break
        if out is None or isinstance(out, RoleFailure):
            message = f"direct question invalid after {self.opts.format_attempts} attempts"
            return self._finish(event, AgentAction(kind="invalid", failure="deep_search_agent_format_invalid",
                                                   raw=message))
        before = self.ledger.snapshot()
        applied = self.ledger.apply(out.updates, view.turn)
        event["gap_search"] = {"ledger_before": before, "search_summary": out.search_summary,
                               "applied_updates": [r.model_dump() for r in applied.added],
                               "duplicates": applied.duplicates, "error": applied.error,
                               "ledger_after": self.ledger.snapshot(),
                               "open_ids": [r.gap_id for r in self.ledger.open_rows()]}
        if out.decision == "READY":
            return self._ready(out.summary, event)
        gap_id = self._resolve_ref(out.selected_gap_ref, out.updates)
        event["selected_gap_ref"] = out.selected_gap_ref
        return self._ask(out.question, dict(out.options), gap_id, event)

    def _resolve_ref(self, ref: str, updates: list) -> str:
        if re.fullmatch(r"N[1-3]", ref):
            n = int(ref[1:])
            if n > min(len(updates), self.ledger.max_new_per_turn):
                return ref  # refers to no applied update: a counted ledger_consume_error in _ask
            row = self.ledger.find(updates[n - 1].description)
            return row.gap_id if row is not None else ref
        return ref


# ---- Open --------------------------------------------------------------------------------------------------------


def _words(text: str) -> set[str]:
    return set(re.findall(r"[a-z]{3,}", text.lower()))


def _match_gap(question: str, gaps: list[R.OpenGap]) -> R.OpenGap | None:
    """The guidance gap a public question targets (exact question first, then word overlap >= 0.3)."""
    for gap in gaps:
        if R.normalise(gap.direct_question) == R.normalise(question):
            return gap
    scored = [(len(_words(question) & _words(g.direct_question + " " + g.description))
               / max(1, len(_words(question) | _words(g.direct_question))), g) for g in gaps]
    best = max(scored, key=lambda s: s[0], default=(0.0, None))
    return best[1] if best[0] >= 0.3 else None


class _Asked(BaseModel):
    model_config = ConfigDict(extra="forbid")

    gap: R.OpenGap
    question: str
    asks: int = 1
    settled: bool | None = None


class OpenInterOptAgent(_Agent):
    COUNTERS = ("gap_search_calls", "gap_search_errors", "candidate_calls", "candidate_format_errors",
                "ready_with_open_gaps_count", "alignment_calls", "gap_reask_count", "ready_overridden_count",
                "cost_aware_stops")

    def __init__(self, brief: str, opts: InterOptOptions, seed: int, ctx: MethodContext) -> None:
        super().__init__(brief, opts, seed, ctx)
        self.asked: dict[str, _Asked] = {}
        """Aligned mode: gaps asked so far, by normalised description."""
        self.pending: str | None = None

    def _finish(self, event: dict, action: AgentAction) -> AgentAction:
        event["action"] = action.kind
        self.log("gap_search_events", event)
        return action

    def _align(self, view: AgentView, event: dict) -> None:
        if self.pending is None or (record := self.asked.get(self.pending)) is None:
            return
        self.pending = None
        reply = _last_reply(view)
        if reply is None:
            return
        self.bump("alignment_calls")
        out = self.ctx.run_one(R.ALIGNMENT_SPEC, R.AlignmentInput(
            brief=self.brief, gap_category=record.gap.category, gap_description=record.gap.description,
            question=record.question, reply=reply))
        if isinstance(out, RoleFailure):
            event["alignment"] = {"gap": record.gap.description, "error": _failure_text(out)}
            return
        record.settled = out.settled
        event["alignment"] = {"gap": record.gap.description, "settled": out.settled, "rationale": out.rationale}

    def _reaskable(self) -> list[_Asked]:
        return [a for a in self.asked.values() if a.settled is False and a.asks <= self.opts.max_reasks
                and self.opts.risk(a.gap.category) >= self.opts.high_risk]

    def _reask_gap(self, record: _Asked) -> R.OpenGap:
        inventory = {g.key: g for g in R.all_gaps(self.ctx.domain.gaps, self.brief)}
        base = inventory.get(record.gap.gap_id)
        question = (R.narrow_question(base, "open") if base is not None else
                    f"Even if it is not final, what is your current practice on this point: "
                    f"{R._sentence_core(record.gap.description)}?")
        return record.gap.model_copy(update={"source_status": "partially answered", "direct_question": question})

    def _unsettled(self) -> list[str]:
        return [a.gap.description for a in self.asked.values() if a.settled is False]

    def _ready(self, summary: str, confidence: float | None, guidance: R.OpenGapSearchOutput | None,
               event: dict) -> AgentAction:
        if guidance is not None and guidance.gaps and not guidance.ready_to_model:
            self.bump("ready_with_open_gaps_count")
        flagged = [d for d in self._unsettled() if d not in summary]
        if flagged:
            summary = summary.rstrip() + "\n" + "\n".join(f"Still needs confirmation: {d}" for d in flagged)
        return self._finish(event, AgentAction(kind="ready", summary=summary, confidence=confidence))

    def _ask(self, question: str, guidance: R.OpenGapSearchOutput | None, event: dict) -> AgentAction:
        gap = _match_gap(question, guidance.gaps) if guidance is not None else None
        event["asked_gap"] = gap.gap_id if gap is not None else None
        if gap is not None and self.opts.aligned:
            key = R.normalise(gap.description)
            if key in self.asked:
                self.asked[key].asks += 1
                self.asked[key].question = question
                self.asked[key].settled = None
                self.bump("gap_reask_count")
            else:
                self.asked[key] = _Asked(gap=gap, question=question)
            self.pending = key
        if self.opts.cost_aware:
            self.cost_pending = ((gap.category, gap.description, question, {}) if gap is not None else
                                 ("unknown", question, question, {}))
        self.questions_asked += 1
        return self._finish(event, AgentAction(kind="ask", question=question))

    def _must_ask(self, guidance: R.OpenGapSearchOutput | None) -> list[R.OpenGap]:
        gaps = list(guidance.gaps) if guidance is not None and not guidance.ready_to_model else []
        if self.opts.cost_aware:
            return [g for g in gaps if self.worth_asking(g.category)]
        if self.opts.aligned:
            return [g for g in gaps if g.source_status == "partially answered"
                    or self.opts.risk(g.category) >= self.opts.high_risk]
        return []

    def act(self, view: AgentView) -> AgentAction:
        transcript, event = self._open_turn(view)
        guidance: R.OpenGapSearchOutput | None = None
        if self.opts.stage1:
            self.bump("gap_search_calls")
            out = self.ctx.run_one(R.OPEN_GAP_SEARCH_SPEC, R.OpenGapSearchInput(brief=self.brief,
                                                                                transcript=transcript))
            if isinstance(out, RoleFailure):
                self.bump("gap_search_errors")
                event["gap_search"] = {"error": _failure_text(out)}
                return self._finish(event, AgentAction(kind="invalid", failure="gap_search_error",
                                                       raw=_failure_text(out)))
            guidance = out
            event["gap_search"] = out.model_dump()
        if self.opts.aligned and (reask := self._reaskable()):
            extra = [self._reask_gap(a) for a in reask]
            kept = [g for g in (guidance.gaps if guidance else []) if R.normalise(g.description) not in
                    {R.normalise(x.description) for x in extra}]
            guidance = R.OpenGapSearchOutput(search_summary=(guidance.search_summary if guidance else "")
                                             + " Re-ask narrowly: " + "; ".join(x.description for x in extra),
                                             ready_to_model=False, gaps=(extra + kept)[:5])
            event["reask"] = [x.description for x in extra]
        if self.opts.cost_aware and (stop := self._cost_stop(guidance)):
            self.bump("cost_aware_stops")
            event["cost_aware"] = stop
            remaining = [g.description for g in guidance.gaps] if guidance is not None else []
            return self._ready(R.compose_summary(self.ctx.domain.gaps, self.brief, transcript, remaining),
                               R.open_confidence(transcript, len(remaining)), guidance, event)
        if not self.opts.stage2:
            assert guidance is not None
            if guidance.ready_to_model or not guidance.gaps:
                return self._ready(R.compose_summary(self.ctx.domain.gaps, self.brief, transcript, []), None, guidance,
                                   event)
            return self._ask(guidance.gaps[0].direct_question, guidance, event)
        return self._stage2(transcript, guidance, event)

    def _cost_stop(self, guidance: R.OpenGapSearchOutput | None) -> dict | None:
        gaps = [(g.gap_id, g.category) for g in guidance.gaps] if guidance is not None else []
        if self.questions_asked >= self.opts.question_budget:
            return {"reason": "budget", **self.value_record(gaps)}
        if guidance is not None and not any(self.worth_asking(cat) for _, cat in gaps):
            return {"reason": "value_below_cost", **self.value_record(gaps)}
        return None

    def _stage2(self, transcript: list[R.PublicTurn], guidance: R.OpenGapSearchOutput | None,
                event: dict) -> AgentAction:
        offered = guidance
        if guidance is not None and self.opts.cost_aware:
            worth = [g for g in guidance.gaps if self.worth_asking(g.category)]
            offered = guidance.model_copy(update={"gaps": worth})
        attempts: list[dict] = []
        event["agent_attempts"] = attempts
        invalid, feedback, overridden = 0, "", False
        while invalid < self.opts.format_attempts:
            self.bump("candidate_calls")
            out = self.ctx.run_one(R.OPEN_CANDIDATE_SPEC, R.OpenCandidateInput(
                brief=self.brief, transcript=transcript, guidance=offered,
                attempt=len(attempts) + 1, feedback=feedback))
            if isinstance(out, RoleFailure):
                invalid += 1
                feedback = _failed_attempt(self, "candidate_format_errors", out, attempts)
                continue
            attempts.append({"valid": True, "output": out.model_dump()})
            if out.decision == "READY":
                must = self._must_ask(offered)
                if must and not overridden:
                    overridden = True
                    self.bump("ready_overridden_count")
                    feedback = ("READY is premature: these gaps still need a question: "
                                + "; ".join(g.description for g in must) + ". Ask about one of them.")
                    attempts[-1]["ready_overridden"] = True
                    continue
                return self._ready(out.summary, out.formulatable_confidence, guidance, event)
            event["public_question"] = out.public_question
            return self._ask(out.public_question, offered, event)
        message = f"candidate agent invalid after {self.opts.format_attempts} attempts"
        return self._finish(event, AgentAction(kind="invalid", failure="agent_format_invalid", raw=message))


# ---- the method and its factories --------------------------------------------------------------------------------


class InterOptMethod:
    protocols: tuple[Protocol, ...] = ("open", "mc_d")
    uses_detector = True

    def __init__(self, name: str, options: InterOptOptions) -> None:
        self.name = name
        self.options = options

    def new_agent(self, case_id: str, brief: str, protocol: Protocol, *, seed: int, ctx: MethodContext) -> _Agent:
        if protocol == "mc_d":
            return ChoiceInterOptAgent(brief, self.options, seed, ctx)
        if protocol == "open":
            return OpenInterOptAgent(brief, self.options, seed, ctx)
        raise ValueError(f"{self.name} runs under open and mc_d, not {protocol!r}")


def _factory(preset: dict[str, Any]):
    def build(name: str, options: dict[str, Any]) -> InterOptMethod:
        try:
            parsed = InterOptOptions.model_validate({**preset, **(options or {})})
        except ValidationError as err:
            first = err.errors()[0]
            field = ".".join(str(p) for p in first["loc"]) or None
            raise InputError(f"evaluate.methods.{name}", first["msg"], field=field) from None
        return InterOptMethod(name, parsed)

    return build


interopt = method("interopt")(_factory({}))
interopt_wo_stage1 = method("interopt_wo_stage1")(_factory({"stage1": False}))
interopt_wo_stage2 = method("interopt_wo_stage2")(_factory({"stage2": False}))
interopt_aligned = method("interopt_aligned")(_factory({"aligned": True}))
interopt_cost_aware = method("interopt_cost_aware")(_factory({"cost_aware": True}))
