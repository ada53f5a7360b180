"""One process-wide lock around every model construction, and the process-wide instances (:class:`ProcessDefault`).

transformers builds a model under process-wide patches (meta-device initialisation), so two threads building models
at once, for example a trained policy and the MiniLM embedder in evaluation worker threads, can leave one of them with
meta tensors ("Cannot copy out of meta tensor"). Every place that builds a model holds this lock. It is re-entrant
because a policy load may first convert the GGUF base, which builds a model too.
"""

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

MODEL_LOAD_LOCK = threading.RLock()

T = TypeVar("T")


class ProcessDefault(Generic[T]):
    """The process's one instance of something (the LLM client, the embedder): made by ``factory`` on first use,
    once, even when several threads ask first at the same moment."""

    def __init__(self, factory: Callable[[], T]):
        self._factory = factory
        self._lock = threading.Lock()
        self._value: T | None = None

    def get(self) -> T:
        with self._lock:
            if self._value is None:
                self._value = self._factory()
            return self._value
