"""Embedded litellm custom providers: ``local/…`` (SmolLM2 from its wheel) and ``mock/…`` (scripted, for tests).

``ensure_registered()`` adds them to ``litellm.custom_provider_map`` once, keeping any providers already there. The
response both build is ``response.build_response``.
"""

from __future__ import annotations

import threading

EMBEDDED_PROVIDERS = ("local", "mock")
_lock = threading.Lock()
_registered = False


def ensure_registered() -> None:
    global _registered
    with _lock:
        if _registered:
            return
        import litellm

        from tasks.llm.providers.mock import MOCK
        from tasks.llm.providers.smollm2 import LOCAL

        existing = [p for p in (litellm.custom_provider_map or []) if p.get("provider") not in EMBEDDED_PROVIDERS]
        litellm.custom_provider_map = [
            *existing,
            {"provider": "local", "custom_handler": LOCAL},
            {"provider": "mock", "custom_handler": MOCK},
        ]
        _registered = True
