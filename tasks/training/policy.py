"""Clarifier interface: anything that turns an incomplete issue into numbered questions.

:class:`LocalPolicy` wraps a causal LM (the base model or base + a trained LoRA adapter) so evaluation can call
a trained questioner exactly like any other method::

    policy = LocalPolicy.from_adapter("smollm2-135m-instruct", "data/train/grpo/adapter")
    policy.ask(issue_text)          # "1. Which file ...?\n2. ..."
    policy.ask_many(issue_texts)    # batched
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from tasks.errors import InputError
from tasks.llm.loading import MODEL_LOAD_LOCK

from .models import (
    _torch_dtype,
    align_model,
    load_tokenizer,
    model_label,
    prepare_tokenizer,
    resolve_model_path,
)
from .prompts import SYSTEM_PROMPT, prompt_messages


@runtime_checkable
class Clarifier(Protocol):
    def ask(self, incomplete_issue: str) -> str:
        """Numbered clarifying questions (``1. ...``), or an empty string when nothing needs asking."""
        ...


class GenerationSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_new_tokens: int = Field(default=256, ge=1)
    greedy: bool = True
    temperature: float = Field(default=0.9, gt=0)
    top_p: float = Field(default=0.9, gt=0, le=1)
    batch_size: int = Field(default=8, ge=1)
    seed: int = 0


def _has_tokenizer(folder: Path) -> bool:
    return (folder / "tokenizer.json").is_file() or (folder / "tokenizer_config.json").is_file()


STACK_FILE = "stacked_on.json"
"""Written next to an adapter trained on top of other merged adapters: their folders, relative, in order."""


def stacked_on(adapter_dir: Path) -> list[Path]:
    """The adapters to merge into the base before ``adapter_dir`` (from ``../stacked_on.json``; none if absent)."""
    record = Path(adapter_dir).parent / STACK_FILE
    if not record.is_file():
        return []

    from tasks.store import read_text_utf8

    try:
        rels = json.loads(read_text_utf8(record))["adapters"]
    except (json.JSONDecodeError, TypeError, KeyError):
        raise InputError(record, "expected a JSON object with a list of adapter folders", field="adapters") from None
    if not isinstance(rels, list) or not all(isinstance(r, str) for r in rels):
        raise InputError(record, "expected a list of adapter folders", field="adapters")
    folders = [(record.parent / rel).resolve() for rel in rels]
    missing = [f for f in folders if not (f / "adapter_config.json").is_file()]
    if missing:
        raise InputError(record, f"stacked adapter not found: {missing[0].name}", field="adapters")
    return folders


def read_adapter_config(adapter_dir: Path) -> dict:
    """``adapter_dir/adapter_config.json`` as a dict; an InputError naming the file when missing or corrupt."""
    from tasks.store import read_json_object

    config = Path(adapter_dir) / "adapter_config.json"
    if not config.is_file():
        why = "folder not found" if not Path(adapter_dir).exists() else "not a LoRA adapter folder"
        raise InputError(adapter_dir, f"{why} (adapter_config.json missing)")
    return read_json_object(config)


def adapter_base(adapter_dir: Path) -> str:
    """The base recorded in an adapter written by :mod:`tasks.training.trainers`."""
    config = Path(adapter_dir) / "adapter_config.json"
    base = read_adapter_config(adapter_dir).get("base_model_name_or_path")
    if not base:
        raise InputError(config, "no base model recorded; pass base explicitly", field="base_model_name_or_path")
    from tasks.training.models import model_label
    from tasks.training.profiles import SMOLLM2

    # an adapter trained on an in-memory embedded SmolLM2 (GRPO on the merged SFT model) records its display label
    return SMOLLM2 if base == model_label(SMOLLM2) else str(base)


class LocalPolicy:
    """A chat model asked with the questioner prompt; greedy by default, so answers are reproducible."""

    def __init__(self, model: Any, tokenizer: Any, *, name: str = "local", settings: GenerationSettings | None = None,
                 system_prompt: str = SYSTEM_PROMPT, chat_template_kwargs: dict[str, Any] | None = None):
        self.model = model.eval()
        self.tokenizer = prepare_tokenizer(tokenizer)
        align_model(self.model, self.tokenizer)
        self.name = name
        self.settings = settings or GenerationSettings()
        self.system_prompt = system_prompt
        self.chat_template_kwargs = dict(chat_template_kwargs or {})

    @classmethod
    def from_adapter(
        cls,
        base: Any | None = None,
        adapter_dir: Path | str | None = None,
        *,
        tokenizer: Any | None = None,
        dtype: str = "float32",
        device: str | None = "auto",
        merge: bool = True,
        system_prompt: str = SYSTEM_PROMPT,
        chat_template_kwargs: dict[str, Any] | None = None,
        **generation: Any,
    ) -> LocalPolicy:
        """Base (name, folder, ``"smollm2-135m-instruct"`` or a built model) plus an optional LoRA adapter.

        ``base=None`` takes the base recorded in the adapter. The tokenizer saved with the adapter wins over the
        base's. ``device="auto"`` moves a loaded base to CUDA when there is one (a built model stays put).
        ``generation`` fields: see :class:`GenerationSettings` (``max_new_tokens``, ``greedy``, ...).
        """
        with MODEL_LOAD_LOCK:  # base, adapter and merge as one step: no other thread builds a model meanwhile
            return cls._from_adapter(base, adapter_dir, tokenizer=tokenizer, dtype=dtype, device=device, merge=merge,
                                     system_prompt=system_prompt, chat_template_kwargs=chat_template_kwargs,
                                     **generation)

    @classmethod
    def _from_adapter(cls, base, adapter_dir, *, tokenizer, dtype, device, merge, system_prompt, chat_template_kwargs,
                      **generation: Any) -> LocalPolicy:
        adapter = Path(adapter_dir) if adapter_dir is not None else None
        if base is None:
            if adapter is None:
                raise InputError("policy", "give a base model, an adapter folder, or both", field="base")
            base = adapter_base(adapter)
        if isinstance(base, (str, Path)):
            from transformers import AutoModelForCausalLM

            path = resolve_model_path(base)
            model = AutoModelForCausalLM.from_pretrained(path, dtype=_torch_dtype(dtype))
            tokenizer_source: Any = path
        else:
            model, tokenizer_source = base, getattr(base.config, "_name_or_path", "")
        name = model_label(base)
        if adapter is not None:
            from peft import PeftModel

            if not (adapter / "adapter_config.json").is_file():
                raise InputError(adapter, "not a LoRA adapter folder (adapter_config.json missing)")
            for earlier in stacked_on(adapter):  # e.g. GRPO trained on top of the merged SFT adapter
                model = PeftModel.from_pretrained(model, str(earlier)).merge_and_unload()
            model = PeftModel.from_pretrained(model, str(adapter))
            model = model.merge_and_unload() if merge else model
            name = f"{name} + {adapter.parent.name or adapter.name}"
            if tokenizer is None and _has_tokenizer(adapter):
                tokenizer = load_tokenizer(adapter)
        if tokenizer is None:
            if not tokenizer_source:
                raise InputError("policy", "an in-memory base model needs its tokenizer passed", field="tokenizer")
            tokenizer = load_tokenizer(tokenizer_source)
        if device == "auto":
            import torch

            device = "cuda" if torch.cuda.is_available() and isinstance(base, (str, Path)) else None
        if device:
            model = model.to(device)
        return cls(model, tokenizer, name=name, settings=GenerationSettings(**generation),
                   system_prompt=system_prompt, chat_template_kwargs=chat_template_kwargs)

    def _render(self, issue: str) -> str:
        return self.tokenizer.apply_chat_template(prompt_messages(issue, self.system_prompt), tokenize=False,
                                                  add_generation_prompt=True, **self.chat_template_kwargs)

    def ask(self, incomplete_issue: str) -> str:
        return self.ask_many([incomplete_issue])[0]

    def ask_many(self, issues: Sequence[str]) -> list[str]:
        import torch

        s, tok = self.settings, self.tokenizer
        answers: list[str] = []
        side, tok.padding_side = tok.padding_side, "left"
        try:
            for start in range(0, len(issues), s.batch_size):
                texts = [self._render(i) for i in issues[start:start + s.batch_size]]
                enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(self.model.device)
                sampling = {} if s.greedy else {"temperature": s.temperature, "top_p": s.top_p}
                if not s.greedy:
                    torch.manual_seed(s.seed + start)
                with torch.no_grad():
                    out = self.model.generate(**enc, max_new_tokens=s.max_new_tokens, do_sample=not s.greedy,
                                              pad_token_id=tok.pad_token_id, **sampling)
                new = out[:, enc["input_ids"].shape[1]:]
                answers += [t.strip() for t in tok.batch_decode(new, skip_special_tokens=True)]
        finally:
            tok.padding_side = side
        return answers
