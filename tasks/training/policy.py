"""Clarifier interface: anything that turns an incomplete issue into numbered questions.

:class:`LocalPolicy` wraps a causal LM (the base model or base + a trained LoRA adapter) so evaluation can call
a trained questioner exactly like any other method::

    policy = LocalPolicy.from_adapter("smollm2-135m-instruct", "data/train/grpo/adapter")
    policy.ask(issue_text)          # "1. Which file ...?\n2. ..."
    policy.ask_many(issue_texts)    # batched

Generation is batched (prompts sorted by length into batches of ``batch_size``, left-padded, KV cache on; answers
come back in the order asked) and stops each sequence at the end of its answer: at EOS / ``<|im_end|>``, at a
``stop`` string, or (``stop_at_list_end``) when the numbered list is finished, i.e. after the first item a blank
line followed by a line that is neither an item nor indented. The returned text is cut at that point
(:func:`answer_end`), so under greedy decoding it is what one unbatched ``model.generate`` returns, cut the same way.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field

from tasks.errors import InputError
from tasks.llm.loading import MODEL_LOAD_LOCK

from .models import (
    _torch_dtype,
    align_model,
    inference_dtype,
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


class PolicyOptions(BaseModel):
    """How an evaluation method runs a trained policy: the options both evaluation kinds' ``policy`` methods share
    (each kind adds its own: ``EpisodePolicyOptions``, ``QuestionPolicyOptions``)."""

    model_config = ConfigDict(extra="forbid")

    adapter: str | None = None
    """A LoRA adapter folder (``data/models/sft/adapter``); None: the base model."""
    base: str | None = None
    """None: the base the adapter records, or SmolLM2 without an adapter."""
    max_new_tokens: int = Field(default=256, ge=1)
    system_prompt: str | None = None
    """None: the training prompt (``tasks.training.prompts.SYSTEM_PROMPT``)."""
    dtype: Literal["auto", "float32", "bfloat16"] = "auto"
    """The weights' dtype while generating (``tasks.training.models.inference_dtype``: auto is bfloat16 on CUDA and
    float32 on the CPU, where bf16 is faster but its greedy answers change with the thread count and the batch)."""


class GenerationSettings(BaseModel):
    model_config = ConfigDict(extra="forbid")

    max_new_tokens: int = Field(default=256, ge=1)
    greedy: bool = True
    temperature: float = Field(default=0.9, gt=0)
    top_p: float = Field(default=0.9, gt=0, le=1)
    batch_size: int = Field(default=8, ge=1)
    seed: int = 0
    stop: list[str] = []
    """Strings that end an answer: generation of a sequence stops once one appears, and the text is cut before it."""
    stop_at_list_end: bool = True
    """End an answer when its numbered (or bulleted) list is finished (:func:`list_end`)."""
    sort_by_length: bool = True
    """Batch prompts of similar length together (less padding); answers keep the order asked."""
    progress: bool = True
    """Progress lines on stderr (answers done / total, rate, time left) when there is more than one batch."""


_ITEM = re.compile(r"^\s*(?:(?:[*_]{1,2})?(?:(?:Q|Question)\s*)?\d{1,3}\s*(?:[.):]|\s-)(?=\s|$|\*)|[-*•+]\s)",
                   re.IGNORECASE)
"""A list item's opening, as ``tasks.rewards.parse`` reads numbered and bulleted items."""
_DECIDE_CHARS = 16
"""A line still being generated is judged (item or not) once it has this many characters."""


def list_end(text: str, final: bool = False) -> int | None:
    """Where a finished list ends in ``text`` (``text[:end]`` keeps the list), or None while it is not finished.

    Finished: after the first list item, a blank line followed by a line that is neither an item nor indented (a
    continuation). The last line of a text still being generated is judged only once complete or
    ``_DECIDE_CHARS`` long, so a decision never changes as the text grows (``final``: the text is complete)."""
    lines = text.split("\n")
    seen, gap, offset = False, None, 0
    for k, line in enumerate(lines):
        complete = final or k < len(lines) - 1
        stripped = line.strip()
        if not stripped:
            if complete and seen and gap is None:
                gap = offset  # the first blank line after the list; the list ends before its newline
        else:
            if gap is not None:
                indented = line[:1].isspace()
                if not indented and not complete and len(stripped) < _DECIDE_CHARS:
                    return None
                if not indented and not _ITEM.match(line):
                    return gap - 1
                gap = None
            seen = seen or bool(_ITEM.match(line))
        offset += len(line) + 1
    return None


def answer_end(text: str, stop: Sequence[str] = (), at_list_end: bool = True, final: bool = False) -> tuple[int, bool]:
    """``(end, done)``: the answer is ``text[:end]``; ``done`` once generation may stop (a stop string appeared or
    the list is finished). A decision made on a prefix holds for every longer text, so a sequence stopped early
    and one generated to the end are cut at the same place."""
    hits = [i for s in stop if s and (i := text.find(s)) >= 0]
    head, final = (text[:min(hits)], True) if hits else (text, final)
    end = list_end(head, final) if at_list_end else None
    if end is not None:
        return end, True
    return len(head), bool(hits)


def cut_answer(text: str, stop: Sequence[str] = (), at_list_end: bool = True) -> str:
    """A complete generation cut at the end of its answer (:func:`answer_end`), stripped."""
    return text[:answer_end(text, stop, at_list_end, final=True)[0]].strip()


def eos_ids(tokenizer: Any, model: Any) -> list[int]:
    """Token ids that end a sequence: the tokenizer's EOS, the chat end token ``<|im_end|>`` when the vocabulary has
    it, and the model's generation config EOS (one id or several)."""
    ids: list[int] = []
    gen = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    candidates = [tokenizer.eos_token_id, *(gen if isinstance(gen, list) else [gen])]
    im_end = tokenizer.convert_tokens_to_ids("<|im_end|>") if "<|im_end|>" in tokenizer.get_vocab() else None
    for i in [*candidates, im_end]:
        if isinstance(i, int) and i >= 0 and i not in ids:
            ids.append(i)
    return ids


def _answer_stopper(tokenizer: Any, prompt_len: int, eos: Sequence[int], settings: GenerationSettings):
    """A transformers StoppingCriteria that ends each sequence of a batch on its own once its answer is done."""
    from transformers import StoppingCriteria

    class AnswerEnd(StoppingCriteria):
        def __init__(self) -> None:
            self.done: list[bool] = []

        def __call__(self, input_ids, scores, **kwargs):
            import torch

            if not self.done:
                self.done = [False] * input_ids.shape[0]
            new = input_ids[:, prompt_len:]
            for i, finished in enumerate(self.done):
                if finished:
                    continue
                if any(int(t) in eos for t in new[i, -1:]):
                    self.done[i] = True
                    continue
                text = tokenizer.decode(new[i], skip_special_tokens=True)
                self.done[i] = answer_end(text, settings.stop, settings.stop_at_list_end)[1]
            return torch.tensor(self.done, dtype=torch.bool, device=input_ids.device)

    return AnswerEnd()


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


def is_full_model(folder: Path) -> bool:
    """A fully fine-tuned model folder (``lora.enabled`` false): ``config.json`` and no ``adapter_config.json``."""
    folder = Path(folder)
    return (folder / "config.json").is_file() and not (folder / "adapter_config.json").is_file()


def read_adapter_config(adapter_dir: Path) -> dict:
    """``adapter_dir/adapter_config.json`` as a dict; an InputError naming the file when missing or corrupt."""
    from tasks.store import read_json_object

    config = Path(adapter_dir) / "adapter_config.json"
    if not config.is_file():
        why = "folder not found" if not Path(adapter_dir).exists() else "not a LoRA adapter folder"
        raise InputError(adapter_dir, f"{why} (adapter_config.json missing)")
    return read_json_object(config)


def adapter_base(adapter_dir: Path) -> str:
    """The base recorded in an adapter written by :mod:`tasks.training.trainers`; a fully fine-tuned model folder
    is its own base."""
    if is_full_model(adapter_dir):
        return str(adapter_dir)
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
        base's. ``device="auto"`` moves a loaded base to CUDA when there is one (a built model stays put);
        ``dtype="auto"`` is :func:`tasks.training.models.inference_dtype`'s choice (float32 on the CPU).
        ``generation`` fields: see :class:`GenerationSettings` (``max_new_tokens``, ``greedy``, ...). The first load
        in a process sets torch's thread count (:func:`tasks.training.threads.configure_torch_threads`).
        """
        from .threads import configure_torch_threads

        configure_torch_threads()  # once per process: torch's threads from the cores other work leaves free
        with MODEL_LOAD_LOCK:  # base, adapter and merge as one step: no other thread builds a model meanwhile
            return cls._from_adapter(base, adapter_dir, tokenizer=tokenizer, dtype=dtype, device=device, merge=merge,
                                     system_prompt=system_prompt, chat_template_kwargs=chat_template_kwargs,
                                     **generation)

    @classmethod
    def _from_adapter(cls, base, adapter_dir, *, tokenizer, dtype, device, merge, system_prompt, chat_template_kwargs,
                      **generation: Any) -> LocalPolicy:
        dtype = inference_dtype(dtype)
        adapter = Path(adapter_dir) if adapter_dir is not None else None
        if adapter is not None and is_full_model(adapter):  # fully fine-tuned: the folder is the whole model
            base, adapter = adapter, None
        if base is None:
            if adapter is None:
                raise InputError("policy", "give a base model, an adapter folder, or both", field="base")
            base = adapter_base(adapter)
        if isinstance(base, (str, Path)):
            from transformers import AutoModelForCausalLM

            path = resolve_model_path(base)
            # adapters merge in float32 and the merged weights are cast after: a small LoRA delta added to bf16
            # weights would round away
            load = "float32" if adapter is not None and merge else dtype
            model = AutoModelForCausalLM.from_pretrained(path, dtype=_torch_dtype(load))
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
            if merge and isinstance(base, (str, Path)) and dtype != "float32":
                model = model.to(_torch_dtype(dtype))
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
        """One answer per issue, in order (see the module docstring for batching and stopping)."""
        import torch

        s, tok = self.settings, self.tokenizer
        texts = [self._render(i) for i in issues]
        order = list(range(len(texts)))
        if s.sort_by_length:  # stable: equal lengths keep the order asked
            lengths = [len(tok(t, add_special_tokens=False)["input_ids"]) for t in texts]
            order.sort(key=lambda k: lengths[k])
        batches = [order[i:i + s.batch_size] for i in range(0, len(order), s.batch_size)]
        eos = eos_ids(tok, self.model)
        answers: list[str] = [""] * len(texts)
        side, tok.padding_side = tok.padding_side, "left"
        from tasks.training.threads import generation_threads, torch_threads

        with torch_threads(generation_threads()):  # a phase of its own: the cores free when it starts
            try:
                for number, batch in enumerate(self._progress(batches)):
                    enc = tok([texts[k] for k in batch], return_tensors="pt", padding=True,
                              add_special_tokens=False).to(self.model.device)
                    prompt_len = enc["input_ids"].shape[1]
                    sampling = {} if s.greedy else {"temperature": s.temperature, "top_p": s.top_p}
                    if not s.greedy:
                        torch.manual_seed(s.seed + number)
                    with torch.no_grad():
                        out = self.model.generate(**enc, max_new_tokens=s.max_new_tokens, do_sample=not s.greedy,
                                                  use_cache=True, pad_token_id=tok.pad_token_id, eos_token_id=eos,
                                                  stopping_criteria=[_answer_stopper(tok, prompt_len, eos, s)],
                                                  **sampling)
                    decoded = tok.batch_decode(out[:, prompt_len:], skip_special_tokens=True)
                    for k, text in zip(batch, decoded):
                        answers[k] = cut_answer(text, s.stop, s.stop_at_list_end)
            finally:
                tok.padding_side = side
        return answers

    def _progress(self, batches: list[list[int]]):
        """The batches, with a progress line (answers done / total, rate, time left) per finished batch at most every
        10 s when there is more than one batch (``tasks.progress``)."""
        if not self.settings.progress or len(batches) < 2:
            yield from batches
            return
        from tasks.progress import Progress

        line = Progress(f"generate {self.name}", "answers")
        total, done = sum(len(b) for b in batches), 0
        line(0, total)
        for batch in batches:
            yield batch
            done += len(batch)
            line(done, total)
