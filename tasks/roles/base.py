"""A role = typed input, typed output, a deterministic local backend and an LLM backend (Jinja prompt + schema).

``run_role`` is the one entry point callers use; it picks the backend from the role's ``RoleConfig``. An LLM call
that finally fails comes back as a ``RoleFailure`` in the output list (callers record it); it never raises.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

from tasks.llm.records import RoleConfig, RoleFailure

if TYPE_CHECKING:
    from tasks.domain_context import DomainContext

PROMPTS = Path(__file__).parent / "prompts"

I = TypeVar("I", bound=BaseModel)  # noqa: E741 - input and output model of a role
O = TypeVar("O", bound=BaseModel)  # noqa: E741


@cache
def _environment():
    import jinja2

    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(PROMPTS)),
        undefined=jinja2.StrictUndefined,
        keep_trailing_newline=False,
        trim_blocks=True,
        lstrip_blocks=True,
        autoescape=False,
    )


@cache
def _schema_json(model: type[BaseModel]) -> str:
    return json.dumps(model.model_json_schema(), ensure_ascii=False)


def render(template: str, **values) -> str:
    return _environment().get_template(template).render(**values).strip()


class QuestionInput(BaseModel):
    """One clarification question and the issue it was asked about: the input of the roles that read a single
    question (``question_classifier``, ``strategy_tagger``)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    question: str = Field(min_length=1)
    issue_text: str = ""
    """The (possibly incomplete) issue the question was asked about; optional context."""


@dataclass(frozen=True)
class RoleSpec(Generic[I, O]):
    name: str
    input_model: type[I]
    output_model: type[O]
    local: Callable[..., O]
    """The deterministic backend, ``local(inp)`` (``local(inp, domain)`` with ``reads_domain``). It must not call
    any model except the cached embedder."""
    local_batch: Callable[[Sequence[I]], list[O]] | None = None
    """Optional faster batch version of ``local`` (e.g. one embedding call for all inputs)."""
    reads_domain: bool = False
    """The local backend asks from the domain's gap inventory, so every call needs the domain."""

    def messages(self, inp: I, domain: DomainContext | None = None) -> list[dict]:
        """``prompts/<name>/system.j2`` and ``user.j2`` rendered with the input's fields, the output schema and the
        framing of the domain the call is made in (``domain``: its ``JudgeHints``). A prompt that names the domain
        does not render without one."""
        values = inp.model_dump(mode="json")
        if domain is not None:
            values.setdefault("domain", domain.hints)
        schema = _schema_json(self.output_model)
        return [
            {"role": "system", "content": render(f"{self.name}/system.j2", schema=schema, **values)},
            {"role": "user", "content": render(f"{self.name}/user.j2", schema=schema, **values)},
        ]

    def run_local(self, inputs: Sequence[I], domain: DomainContext | None = None) -> list[O]:
        if self.reads_domain:
            if domain is None:
                raise ValueError(f"role {self.name!r} asks from the domain's gap inventory: run it with a domain")
            return [self.local(i, domain) for i in inputs]
        if self.local_batch is not None:
            return list(self.local_batch(inputs))
        return [self.local(i) for i in inputs]


def run_role(
    spec: RoleSpec[I, O],
    inputs: Sequence[I],
    cfg: RoleConfig,
    *,
    domain: DomainContext | None = None,
    client=None,
    sample: str | None = None,
) -> list[O | RoleFailure]:
    """Run ``spec`` over ``inputs`` with the backend ``cfg`` names; outputs are aligned with inputs.

    ``domain`` is the domain the call is made in (an episode's; None for the roles that construct cases, whose
    prompts and local backends never read one). ``sample`` (LLM backend only) separates cache entries of repeated
    samples of a sampled role.
    """
    from tasks.llm.client import default_client

    client = client or default_client()
    if cfg.backend == "local":
        started = time.perf_counter()
        outputs = list(spec.run_local(inputs, domain))
        client.accounting.add(
            spec.name, backend="local", model="local-rules", requests=len(inputs),
            latency_s=time.perf_counter() - started,
        )
        return outputs
    if cfg.model.startswith("mock/"):
        from tasks.llm.providers.mock import prime_replay

        prime_replay(cfg.model, spec, inputs, domain)
    return client.map_structured(
        role=spec.name,
        cfg=cfg,
        messages=[spec.messages(i, domain) for i in inputs],
        schema=spec.output_model,
        sample=sample,
    )


def run_one(spec: RoleSpec[I, O], inp: I, cfg: RoleConfig, *, domain: DomainContext | None = None,
            client=None) -> O | RoleFailure:
    return run_role(spec, [inp], cfg, domain=domain, client=client)[0]
