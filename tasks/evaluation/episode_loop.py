"""One episode: a clarification agent and the simulated user, up to ``max_turns`` turns (or-clarify.md §2, §5).

Per turn the agent sees an :class:`AgentView` (the public brief and transcript, plus feedback addressed to it) and
either asks, declares ``READY_TO_MODEL``, or produces something invalid (a protocol failure that ends the run; with
0 structural retries, as in the published Choice runs). A question is counted by the question detector (Open: the
whole question; Choice: the question field only, never the options; external adapters count 1 per turn), answered
by the simulated user of the protocol, and both messages enter the public transcript. Audit-only fields (the user's
rationale and match status, disclosed slots, detector verdicts) go to the :class:`Episode` and never to the agent.
"""

from __future__ import annotations

import hashlib

from tasks.clarifiers.base import Method, MethodContext
from tasks.episodes.records import (
    USER_PREFIX,
    AgentAction,
    AgentView,
    Episode,
    Protocol,
    ProtocolFailure,
    QuestionTurn,
    RoleUsage,
    TranscriptRow,
)
from tasks.llm.records import RoleFailure
from tasks.records import Case
from tasks.roles.personas import Persona

CHOICE_KEYS = ("A", "B", "C")


def render_persona_choice(choice: str | None, comment: str | None, corrected: bool) -> str:
    """The public reply of a persona's choice: "I don't know" (no choice), a D comment, or an option (with an
    apology when it corrects an earlier wrong pick)."""
    from tasks.roles.personas import CHOICE_DONT_KNOW, CORRECTION

    if choice is None:
        return USER_PREFIX + CHOICE_DONT_KNOW
    if choice == "D":
        return f"{USER_PREFIX}none of the offered options match. {comment}"
    return f"Business user selected option {choice}." + (f" {CORRECTION.strip()}" if corrected else "")


def episode_seed(seed: int, case_id: str, method: str, protocol: str, repeat: int) -> int:
    digest = hashlib.sha256(f"{seed}:{case_id}:{method}:{protocol}:{repeat}".encode()).digest()
    return int.from_bytes(digest[:4], "big")


def _check_action(action: AgentAction, protocol: Protocol) -> AgentAction:
    """Structural checks the loop enforces for every method (the choice detector's rules)."""
    if action.kind != "ask":
        return action
    problem = ""
    if not action.question.strip():
        problem = "empty question"
    elif protocol == "open" and action.options:
        problem = "options under the Open protocol"
    elif protocol != "open":
        texts = [action.options.get(k, "").strip() for k in CHOICE_KEYS]
        if sorted(action.options) != list(CHOICE_KEYS) or not all(texts):
            problem = f"choice question needs exactly options A, B, C (got {sorted(action.options)})"
        elif len({t.lower() for t in texts}) < 3:
            problem = "choice options are not distinct"
    if not problem:
        return action
    return action.model_copy(update={"kind": "invalid", "failure": "agent_format_invalid",
                                     "raw": action.raw or f"{action.question} ({problem})"})


def _usage(client) -> dict[str, RoleUsage]:
    out: dict[str, RoleUsage] = {}
    for role, row in sorted(client.accounting.snapshot().items()):
        out[role] = RoleUsage(requests=int(row.get("requests", 0)), calls=int(row.get("provider_calls", 0)),
                              cache_hits=int(row.get("cache_hits", 0)), failures=int(row.get("failures", 0)),
                              prompt_tokens=int(row.get("prompt_tokens", 0)),
                              completion_tokens=int(row.get("completion_tokens", 0)),
                              reasoning_tokens=int(row.get("reasoning_tokens", 0)),
                              truncated=int(row.get("truncated", 0)), params_dropped=int(row.get("params_dropped", 0)),
                              cost_usd=round(float(row.get("cost_usd", 0.0)), 8),
                              latency_s=round(float(row.get("latency_s", 0.0)), 4))
    return out


def episode_context(base: MethodContext, sample: str) -> MethodContext:
    """A per-episode context: its own accounting (per-episode usage), the shared call cache, a sampling salt, and
    the evaluation's domain.

    The salt keeps the K repeats of a sampled (temperature > 0) role from replaying each other's cached calls,
    while deterministic (temperature 0) calls stay shared across repeats.
    """
    from tasks.llm.accounting import Accounting
    from tasks.llm.client import LLMClient, default_client

    shared = base.client or default_client()
    client = LLMClient(shared.cache, use_cache=shared.use_cache, accounting=Accounting(),
                       backoff_s=shared.backoff_s, backoff_max_s=shared.backoff_max_s, keep_reasoning=True)
    return MethodContext(roles=base.roles, client=client, options=base.options, sample=sample, domain=base.domain)


def run_episode(case: Case, method: Method, protocol: Protocol, *, repeat: int, seed: int, max_turns: int,
                ctx: MethodContext, persona: Persona | None = None) -> Episode:
    """Play one episode in ``ctx.domain``: the agents' and the simulated user's role calls are made in it (its
    framing names the request in their prompts, its gap inventory is what the local agents ask from) and the
    simulated user hears questions with its user aspects. ``persona`` (default cooperative) shapes the simulated
    user's replies (tasks/roles/personas.py): rewritten under the local backend, a prompt addendum under an LLM."""
    from tasks.roles.or_user import (
        CHOICE_SPEC,
        OPEN_SPEC,
        ChoiceUserInput,
        OpenUserInput,
        TranscriptTurn,
        facts_from_case,
        render_choice_reply,
    )
    from tasks.roles.personas import COOPERATIVE, PersonaState, prompt_addendum
    from tasks.roles.question_detector import SPEC as DETECTOR
    from tasks.roles.question_detector import DetectorInput

    if protocol not in method.protocols:
        raise ValueError(f"method {method.name!r} does not run under protocol {protocol!r}")
    ep_seed = episode_seed(seed, case.case_id, method.name, protocol, repeat)
    ctx = episode_context(ctx, sample=f"{seed}:{repeat}")
    agent = method.new_agent(case.case_id, case.brief.content, protocol, seed=ep_seed, ctx=ctx)
    facts = facts_from_case(case, ctx.domain.user_aspects)
    persona = persona or COOPERATIVE
    user_role = "or_open_user" if protocol == "open" else "or_choice_user"
    rewrite = persona.behaviour != "cooperative" and ctx.roles.get(user_role).backend == "local"
    note = "" if rewrite else prompt_addendum(persona)
    shaped = PersonaState(persona, case.case_id, repeat)
    transcript: list[TranscriptRow] = []
    turns: list[QuestionTurn] = []
    events: list[dict] = []
    detector_events: list[dict] = []
    failure: ProtocolFailure | None = None
    ready = False
    summary, confidence = "", None
    attempted = 0
    atomic_total = 0

    for turn in range(1, max_turns + 1):
        attempted = turn
        view = AgentView(case_id=case.case_id, brief=case.brief.content, protocol=protocol,
                         transcript=list(transcript), turn=turn, max_turns=max_turns)
        action = _check_action(agent.act(view), protocol)
        events += [{"turn": turn, **e} for e in action.events]
        if action.kind == "invalid":
            failure = ProtocolFailure(type=action.failure or "agent_format_invalid", turn=turn,
                                      message=(action.raw or "invalid agent output")[:500])
            break
        if action.kind == "ready":
            transcript.append(TranscriptRow(turn=turn, speaker="agent", content=action.public_text(),
                                            structured={"action": "ready_to_model"}))
            ready, summary, confidence = True, action.summary, action.confidence
            break

        if action.atomic_questions is not None:
            count, atomic = action.atomic_questions, [action.question]
            detector_events.append({"turn": turn, "source": "method", "question_count": count})
        else:
            verdict = ctx.run_one(DETECTOR, DetectorInput(turn=action.question))
            if isinstance(verdict, RoleFailure):
                failure = ProtocolFailure(type="detector_failure", turn=turn, message=verdict.message[:500])
                break
            count, atomic = verdict.question_count, list(verdict.atomic_questions)
            detector_events.append({"turn": turn, "source": "question_detector", **verdict.model_dump(mode="json")})
        atomic_total += count

        agent_row = TranscriptRow(turn=turn, speaker="agent", content=action.public_text(),
                                  structured={"action": "question", **({"options": dict(action.options)}
                                                                      if action.options else {})})
        if protocol == "open":
            history = [TranscriptTurn(speaker=r.speaker, content=r.content) for r in transcript]
            out = ctx.run_one(OPEN_SPEC, OpenUserInput(brief=case.brief.content, facts=facts, transcript=history,
                                                       question=action.question, persona=note))
            if isinstance(out, RoleFailure):
                failure = ProtocolFailure(type="user_format_invalid", turn=turn, message=out.message[:500])
                transcript.append(agent_row)
                break
            if rewrite:
                answers = {f.slot_id: f.simulator_answer.strip() for f in facts}
                text, disclosed = shaped.open_reply(turn, [(s, answers[s]) for s in out.disclosed_slot_ids
                                                           if s in answers], out.reply)
                out = out.model_copy(update={"reply": text, "disclosed_slot_ids": disclosed})
            reply = USER_PREFIX + out.reply
            record = QuestionTurn(turn=turn, question=action.question, atomic_count=count, atomic_questions=atomic,
                                  reply=reply, disclosed_slot_ids=list(out.disclosed_slot_ids))
            structured: dict = {}
        else:
            out = ctx.run_one(CHOICE_SPEC, ChoiceUserInput(brief=case.brief.content, facts=facts,
                                                           question=action.question, options=dict(action.options),
                                                           allow_d=protocol == "mc_d", persona=note))
            if isinstance(out, RoleFailure) or (protocol == "mc" and out.choice == "D"):
                message = out.message if isinstance(out, RoleFailure) else "picked D under MC"
                failure = ProtocolFailure(type="user_format_invalid", turn=turn, message=message[:500])
                transcript.append(agent_row)
                break
            reply = render_choice_reply(out)
            choice, comment = out.choice, out.comment
            if rewrite:
                point = action.question if out.match_status == "undetermined" else out.rationale  # names the fact
                choice, comment, corrected = shaped.choice_reply(turn, out.choice, out.comment, point,
                                                                 sorted(action.options))
                reply = render_persona_choice(choice, comment, corrected)
            record = QuestionTurn(turn=turn, question=action.question, options=dict(action.options),
                                  atomic_count=count, atomic_questions=atomic, reply=reply, choice=choice,
                                  comment=comment, match_status=out.match_status if choice else None,
                                  user_rationale=out.rationale)
            structured = {"choice": choice, **({"comment": comment} if comment else {})} if choice else {}
        transcript += [agent_row, TranscriptRow(turn=turn, speaker="user", content=reply, structured=structured)]
        turns.append(record)

    logs = agent.event_logs()
    if events:
        logs.setdefault("method_events", [])
        logs["method_events"] = events + logs["method_events"]
    if ctx.client.reasoning_log:  # served reasoning models: their reasoning, apart from the transcript's answers
        logs["reasoning_events"] = list(ctx.client.reasoning_log)
    return Episode(
        case_id=case.case_id, method=method.name, protocol=protocol, repeat=repeat, seed=ep_seed,
        max_turns=max_turns, brief=case.brief.content, transcript=transcript, question_turns=turns, ready=ready,
        ready_summary=summary, ready_confidence=confidence,
        turn_count=max((r.turn for r in transcript), default=0), attempted_turns=attempted,
        atomic_questions=atomic_total, protocol_failure=failure, counters=agent.counters(), method_events=logs,
        detector_events=detector_events, usage=_usage(ctx.client), persona=persona.name,
    )
