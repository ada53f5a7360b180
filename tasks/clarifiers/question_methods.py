"""SWE clarification methods: each maps a case's incomplete issue (the brief) to a completion, a numbered list of
questions that ``tasks.rewards.parse_questions`` parses (the same parser for every method and the reward).

Kinds (``evaluate.swe.methods[].method``, default = ``name``):

- ``no_questions``: asks nothing (the incomplete issue alone). A reference row (a bound, the floor).
- ``oracle_template``: one ``question_writer`` question per *hidden* category, most valuable first by the category
  weights. An oracle: it reads the case's hidden categories. A reference row (privileged).
- ``ask_everything``: one ``question_writer`` question for each of the six categories, most valuable first.
- ``evpi``: value of information: one ``question_writer`` question for each category whose P(hidden) x weight is at
  least ``question_cost``, most valuable first; the belief is the training split's hidden rate per category.
- ``policy``: a trained questioner (:class:`tasks.training.policy.LocalPolicy`), the base model or a LoRA adapter
  (``options: {adapter: data/models/grpo/adapter}``; ``adapter: null`` is the base); one greedy generation per
  brief (batched, ending at the end of the list), the model loaded on first use under a lock. Inside a flow each
  batch of cases runs as one Prefect task (``generate``), so the UI shows how far generation is.
- ``llm_questioner``: any litellm model through ``tasks.llm.client`` (cache, retries, accounting under the
  label ``swe_questioner``) with the policies' own prompt (``tasks.training.prompts``), so a hosted model and the
  trained policies are asked the same thing. ``options``: ``RoleConfig`` fields (``model``, ``temperature``,
  ``max_tokens``, …) and ``system_prompt``. (The ``question_writer`` role is not used for this: its input is the
  list of hidden categories, which would make it an oracle.)
- ``published``: a fixed question list per issue from the CLARITI workbook (``options: {column: …}``); a case
  whose source issue has no list is skipped and counted.

:func:`method` on each class registers its kind in the one method registry (``tasks.clarifiers.base.METHODS``, as
``questions/<kind>``), with its options model and, for a reference kind, why its rows are reference rows: those are
reported apart from the ranked methods (``reference_methods`` in the summary) and never ranked with them.

``complete(cases)`` returns one :class:`Completion` per case; ``fingerprint()`` (and ``case_input``) enter the
unit cache key, so a changed adapter, model or list recomputes exactly the affected units.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from tasks.categories import Category
from tasks.errors import InputError
from tasks.llm.records import RoleConfig
from tasks.records import Case, MethodReference
from tasks.roles.config import RolesParams
from tasks.training.policy import PolicyOptions


class Completion(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    text: str = ""
    """The method's raw output (a numbered list, or "")."""
    skipped: str | None = None
    """Why the case was not evaluated for this method (e.g. no published list); None when it was."""
    failure: str | None = None
    """A generation that failed (an LLM error): the case counts with no questions."""


class QuestionContext(BaseModel):
    """What methods may read besides the case: role settings, category weights, published lists."""

    model_config = ConfigDict(arbitrary_types_allowed=True)

    roles: RolesParams = RolesParams()
    weights: dict[str, float] = {}
    client: Any = None
    published: dict[str, dict[str, str]] = {}
    """Column -> instance id -> numbered list."""
    root: Path = Path(".")


def by_weight(categories: Sequence[Category], weights: dict[str, float]) -> list[Category]:
    """Most valuable first; ties in the canonical category order."""
    order = list(Category)
    return sorted(categories, key=lambda c: (-weights.get(c.key, 0.0), order.index(c)))


def method(kind: str, *, options: type[BaseModel] | None = None, reference: MethodReference | None = None
           ) -> Callable[[type[QuestionMethod]], type[QuestionMethod]]:
    """Register the decorated class as question-list method kind ``kind`` in the one method registry
    (``tasks.clarifiers.base.METHODS``, as ``questions/<kind>``) and set its ``kind``; it is built with its
    ``options`` validated by that model; a ``reference`` makes its rows reference rows."""
    from tasks.clarifiers.base import method as register

    def wrap(cls: type[QuestionMethod]) -> type[QuestionMethod]:
        cls.kind = kind
        return register(kind, evaluation="questions", options=options, reference=reference)(cls)

    return wrap


class QuestionMethod:
    kind = "base"

    def __init__(self, name: str, ctx: QuestionContext):
        self.name = name
        self.ctx = ctx

    def fingerprint(self) -> dict[str, Any]:
        return {"kind": self.kind}

    def case_input(self, case: Case) -> Any:
        """Per-case input besides the case itself (part of the cache key)."""
        return None

    def complete(self, cases: Sequence[Case]) -> list[Completion]:
        raise NotImplementedError


@method("no_questions", reference=MethodReference(
    kind="bound", reads="nothing: asks no question (the incomplete issue alone, the floor)"))
class NoQuestions(QuestionMethod):
    def complete(self, cases: Sequence[Case]) -> list[Completion]:
        return [Completion(text="") for _ in cases]


class _Options(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TemplateOptions(_Options):
    max_questions: int | None = Field(default=None, ge=1, le=6)


class _WriterMethod(QuestionMethod):
    """Questions from the ``question_writer`` role for a list of categories per case."""

    def __init__(self, name: str, ctx: QuestionContext, options: TemplateOptions):
        super().__init__(name, ctx)
        self.options = options

    def categories(self, case: Case) -> list[Category]:
        raise NotImplementedError

    def fingerprint(self) -> dict[str, Any]:
        return {"kind": self.kind, "options": self.options.model_dump(), "weights": self.ctx.weights,
                "question_writer": self.ctx.roles.question_writer.model_dump(mode="json")}

    def complete(self, cases: Sequence[Case]) -> list[Completion]:
        from tasks.llm.records import RoleFailure
        from tasks.roles.base import run_role
        from tasks.roles.question_writer import SPEC, QuestionWriterInput, numbered

        if not cases:
            return []
        inputs = [QuestionWriterInput(incomplete_issue=c.brief.content, hidden_categories=self.categories(c),
                                      repo=str(c.extra.get("repo", "") or "")) for c in cases]
        outputs = run_role(SPEC, inputs, self.ctx.roles.question_writer, client=self.ctx.client)
        out = []
        for output in outputs:
            if isinstance(output, RoleFailure):
                out.append(Completion(text="", failure=f"question_writer: {output.kind}: {output.message}"))
            else:
                questions = output.questions[: self.options.max_questions] if self.options.max_questions else \
                    output.questions
                out.append(Completion(text=numbered(list(questions))))
        return out


@method("oracle_template", options=TemplateOptions, reference=MethodReference(
    kind="privileged", reads="the case's hidden categories: one question per hidden category"))
class OracleTemplate(_WriterMethod):
    def categories(self, case: Case) -> list[Category]:
        return by_weight(case.hidden_categories, self.ctx.weights)


@method("ask_everything", options=TemplateOptions)
class AskEverything(_WriterMethod):
    def categories(self, case: Case) -> list[Category]:
        return by_weight(list(Category), self.ctx.weights)


class EvpiOptions(TemplateOptions):
    question_cost: float = Field(default=0.1, ge=0.0)
    """Ask a category while its expected value is at least this (a share of the top category weight, 1.0)."""
    prior_cases: str = "data/cases/swe/cases.jsonl"
    """The cases whose *training* split gives each category's hidden rate (the belief); never the cases scored."""


@method("evpi", options=EvpiOptions)
class EvpiQuestioner(_WriterMethod):
    """Value of information over the six categories: the value of asking about category h is P(h is hidden) x w_h
    (the probability that the agent's default, "it is in the issue", is wrong, times what the category is worth to
    resolution); ask every category worth at least ``question_cost``, most valuable first, and stop there. The
    belief is the category's hidden rate in the training split of ``prior_cases`` (a prior learnt from data, the
    same for every case: nothing of the scored case's hidden content is read), so a case from that training split
    is refused (a failure, counted)."""

    def __init__(self, name: str, ctx: QuestionContext, options: EvpiOptions):
        super().__init__(name, ctx, options)
        from tasks.case_files import read_cases

        path = Path(options.prior_cases)
        path = path if path.is_absolute() else ctx.root / path
        train = [c for c in read_cases(path, missing="no cases for the evpi prior (run construct@swe first)")
                 if c.metadata.split == "train"]
        if not train:
            raise InputError(path, "no case of the training split for the evpi prior", field="options.prior_cases")
        self.train_ids = {c.case_id for c in train}
        self.belief = {c.key: sum(c in t.hidden_categories for t in train) / len(train) for c in Category}
        self.values = {k: round(p * ctx.weights.get(k, 0.0), 6) for k, p in self.belief.items()}

    def categories(self, case: Case) -> list[Category]:
        worth = [c for c in Category if self.values[c.key] >= self.options.question_cost]
        return sorted(worth, key=lambda c: (-self.values[c.key], list(Category).index(c)))

    def fingerprint(self) -> dict[str, Any]:
        return {**super().fingerprint(), "values": self.values}

    def complete(self, cases: Sequence[Case]) -> list[Completion]:
        scored = [c for c in cases if c.case_id not in self.train_ids]
        worth = bool(scored) and bool(self.categories(scored[0]))  # nothing worth its cost: no question at all
        done = iter(super().complete(scored) if worth else [Completion(text="")] * len(scored))
        return [next(done) if c.case_id not in self.train_ids else
                Completion(failure="evpi: a case of the training split its belief was estimated on") for c in cases]


class QuestionPolicyOptions(PolicyOptions):
    batch_size: int = Field(default=8, ge=1)
    stop: list[str] = Field(default_factory=list)
    """Strings that end a generation (``GenerationSettings.stop``)."""
    stop_at_list_end: bool = True
    """End a generation when its list is finished (``GenerationSettings.stop_at_list_end``)."""


@method("policy", options=QuestionPolicyOptions)
class PolicyQuestioner(QuestionMethod):
    def __init__(self, name: str, ctx: QuestionContext, options: QuestionPolicyOptions,
                 loader: Callable[[], Any] | None = None):
        super().__init__(name, ctx)
        self.options = options
        self._loader = loader or self._load
        self._policy: Any = None
        self._lock = threading.Lock()
        self._texts: dict[str, str] = {}
        """Brief -> generated text (greedy, so one generation per distinct brief)."""
        self.generations = 0

    def adapter_dir(self) -> Path | None:
        if self.options.adapter is None:
            return None
        path = Path(self.options.adapter)
        return path if path.is_absolute() else self.ctx.root / path

    def fingerprint(self) -> dict[str, Any]:
        from tasks.store import sha256_tree
        from tasks.training.models import inference_dtype
        from tasks.training.policy import stacked_on
        from tasks.training.prompts import SYSTEM_PROMPT

        adapter = self.adapter_dir()
        stack = [] if adapter is None else [*stacked_on(adapter), adapter]
        return {"kind": self.kind, "base": self.options.base, "max_new_tokens": self.options.max_new_tokens,
                "dtype": inference_dtype(self.options.dtype),
                "system_prompt": self.options.system_prompt or SYSTEM_PROMPT,
                "stop": self.options.stop, "stop_at_list_end": self.options.stop_at_list_end,
                "adapters": [sha256_tree(a) for a in stack]}

    def _load(self) -> Any:
        from tasks.training.policy import LocalPolicy, adapter_base
        from tasks.training.profiles import SMOLLM2
        from tasks.training.prompts import SYSTEM_PROMPT

        adapter = self.adapter_dir()
        base = self.options.base or (adapter_base(adapter) if adapter else SMOLLM2)
        return LocalPolicy.from_adapter(base, adapter, system_prompt=self.options.system_prompt or SYSTEM_PROMPT,
                                        dtype=self.options.dtype,
                                        max_new_tokens=self.options.max_new_tokens,
                                        batch_size=self.options.batch_size, greedy=True, stop=self.options.stop,
                                        stop_at_list_end=self.options.stop_at_list_end)

    def complete(self, cases: Sequence[Case]) -> list[Completion]:
        if not cases:
            return []
        with self._lock:
            todo = list(dict.fromkeys(c.brief.content for c in cases if c.brief.content not in self._texts))
            if todo:
                if self._policy is None:
                    self._policy = self._loader()
                self._texts.update(zip(todo, self._policy.ask_many(todo)))
                self.generations += len(todo)
            return [Completion(text=self._texts[c.brief.content]) for c in cases]


class LlmOptions(RoleConfig):
    backend: str = "llm"
    system_prompt: str | None = None


@method("llm_questioner", options=LlmOptions)
class LlmQuestioner(QuestionMethod):
    ROLE = "swe_questioner"
    """The accounting label of its calls (not a registered role)."""

    def __init__(self, name: str, ctx: QuestionContext, options: LlmOptions):
        super().__init__(name, ctx)
        self.options = options

    def role_config(self) -> RoleConfig:
        return RoleConfig.model_validate(self.options.model_dump(exclude={"system_prompt", "backend"}) |
                                         {"backend": "llm"})

    def fingerprint(self) -> dict[str, Any]:
        from tasks.training.prompts import SYSTEM_PROMPT

        cfg = self.role_config().model_dump(mode="json")
        return {"kind": self.kind, "model": cfg["model"], "temperature": cfg["temperature"],
                "max_tokens": cfg["max_tokens"], "system_prompt": self.options.system_prompt or SYSTEM_PROMPT,
                # another server with the same model name is another method (absent: the keys stay as they were)
                **{k: cfg[k] for k in ("api_base", "extra") if cfg[k]}}

    def complete(self, cases: Sequence[Case]) -> list[Completion]:
        import asyncio

        from tasks.llm.client import LLMCallFailed, default_client, run_sync
        from tasks.training.prompts import SYSTEM_PROMPT, prompt_messages

        if not cases:
            return []
        cfg = self.role_config()
        client = self.ctx.client or default_client()
        system = self.options.system_prompt or SYSTEM_PROMPT
        client.accounting.add(self.ROLE, model=cfg.model, requests=len(cases))

        async def all_of() -> list[Completion]:
            gate = asyncio.Semaphore(cfg.concurrency)

            async def one(case: Case) -> Completion:
                async with gate:
                    try:
                        text = await client.acomplete(role=self.ROLE, cfg=cfg,
                                                      messages=prompt_messages(case.brief.content, system))
                        return Completion(text=text)
                    except LLMCallFailed as failed:
                        client.accounting.add(self.ROLE, model=cfg.model, failures=1)
                        return Completion(text="", failure=f"{self.ROLE}: {failed.kind}: {failed}")

            return list(await asyncio.gather(*(one(c) for c in cases)))

        return run_sync(all_of)


class PublishedOptions(_Options):
    column: str = Field(min_length=1)
    """A workbook column with one numbered list per issue (e.g. ``clarification_questions_grpo_3``)."""


@method("published", options=PublishedOptions)
class Published(QuestionMethod):
    def __init__(self, name: str, ctx: QuestionContext, options: PublishedOptions):
        super().__init__(name, ctx)
        self.options = options

    def lists(self) -> dict[str, str]:
        return self.ctx.published.get(self.options.column, {})

    def fingerprint(self) -> dict[str, Any]:
        return {"kind": self.kind, "column": self.options.column}

    def case_input(self, case: Case) -> Any:
        return self.lists().get(case.metadata.source_id)

    def complete(self, cases: Sequence[Case]) -> list[Completion]:
        lists = self.lists()
        return [Completion(text=lists[c.metadata.source_id]) if c.metadata.source_id in lists
                else Completion(skipped="no published list for this issue") for c in cases]


def reference_of(kind: str) -> MethodReference | None:
    """Why the question-list method kind's rows are reference rows, or None for a method ranked with the others."""
    from tasks.clarifiers.base import reference_of as registered

    return registered(kind, "questions")


def parse_options(kind: str, options: dict[str, Any]) -> BaseModel | None:
    """The method's options, validated (ValueError naming the first bad field)."""
    from pydantic import ValidationError

    from tasks.clarifiers.base import method_entry, method_kinds

    try:
        _, meta = method_entry(kind, "questions")
    except KeyError:
        raise ValueError(f"unknown method kind {kind!r} (known: {', '.join(method_kinds('questions'))})") from None
    model = meta["options"]
    if model is None:
        if options:
            raise ValueError(f"method kind {kind!r} takes no options")
        return None
    try:
        return model.model_validate(options)
    except ValidationError as err:
        first = err.errors()[0]
        loc = ".".join(str(p) for p in first["loc"])
        raise ValueError(f"options.{loc}: {first['msg']}" if loc else first["msg"]) from None


def build_method(name: str, kind: str, options: dict[str, Any], ctx: QuestionContext, **extra: Any) -> QuestionMethod:
    from tasks.clarifiers.base import method_entry

    parsed = parse_options(kind, options)  # raises ValueError for an unknown kind
    cls, _ = method_entry(kind, "questions")
    return cls(name, ctx) if parsed is None else cls(name, ctx, parsed, **extra)


def check_method_files(kind: str, options: BaseModel | None, root: Path, field: str) -> None:
    """Files a method needs, checked before anything runs (InputError naming the field)."""
    if kind == "policy" and options is not None and options.adapter is not None:
        path = Path(options.adapter) if Path(options.adapter).is_absolute() else root / options.adapter
        from tasks.training.policy import is_full_model

        if is_full_model(path):  # a fully fine-tuned model (training.lora false) loads on its own
            return
        if not (path / "adapter_config.json").is_file():
            why = "folder not found" if not path.exists() else "not a LoRA adapter (adapter_config.json missing)"
            raise InputError(path, f"{why} (run the sft / grpo stage first)", field=f"{field}.options.adapter")
        from tasks.training.policy import read_adapter_config, stacked_on

        read_adapter_config(path)  # raises when adapter_config.json is corrupt
        stacked_on(path)  # raises when a stacked adapter is missing
