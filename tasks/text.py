"""Text helpers every domain's construction shares (the SWE masker, the unit domains' leak checks)."""

from __future__ import annotations


def normalise_ws(text: str) -> str:
    """``text`` with every run of whitespace one space, and none at either end (how leaks and spans are compared)."""
    return " ".join(text.split())
