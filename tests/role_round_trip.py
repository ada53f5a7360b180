"""The round trip of an optimisation-domain role: its local backend's output, then the same through a mock LLM."""

from __future__ import annotations

from pathlib import Path

from tasks.domains.optimization.context import OPTIMIZATION_CONTEXT
from tasks.llm.records import RoleConfig
from tasks.roles.base import run_role


def local_example(name: str, example: dict):
    """(spec, input, local backend's output, the LLM prompt's messages) of role ``name`` on ``example``."""
    from tasks.roles.registry import get_spec

    spec = get_spec(name)
    inp = spec.input_model.model_validate(example)
    [expected] = run_role(spec, [inp], RoleConfig(), domain=OPTIMIZATION_CONTEXT)
    return spec, inp, expected, spec.messages(inp, OPTIMIZATION_CONTEXT)


def run_with_llm(spec, inp, model: str, tmp_path: Path):
    """The role's output for ``inp`` from its LLM backend on ``model`` (calls cached under ``tmp_path``)."""
    from tasks.llm.cache import CallCache
    from tasks.llm.client import LLMClient

    [got] = run_role(spec, [inp], RoleConfig(backend="llm", model=model), domain=OPTIMIZATION_CONTEXT,
                     client=LLMClient(CallCache(tmp_path / "calls.sqlite")))
    return got
