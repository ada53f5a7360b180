"""The gap-inventory helpers the clarifiers share: every gap of a brief, and those its transcript has not asked yet.

The protocol and its records (:class:`~tasks.domain_context.GapInventory`, ``GapCandidate``, ``BriefFacts``,
``GAP_CATEGORIES``) are ``tasks.domain_context``, below the domains that implement it.
"""

from __future__ import annotations

from collections.abc import Sequence

from tasks.domain_context import GapCandidate, GapInventory
from tasks.episodes.records import TranscriptRow


def all_gaps(inventory: GapInventory, brief: str) -> list[GapCandidate]:
    """Every gap the brief leaves open, most important first (a fresh list; the gaps are frozen records)."""
    return list(inventory.gaps(brief))


def asked_keys(transcript: Sequence[TranscriptRow], gaps: Sequence[GapCandidate]) -> set[str]:
    """Keys of the gaps whose question already appears among the agent's messages."""
    asked = " ".join(r.content for r in transcript if r.speaker == "agent")
    return {g.key for g in gaps if g.question in asked}


def open_gaps(inventory: GapInventory, brief: str, transcript: Sequence[TranscriptRow] = ()) -> list[GapCandidate]:
    """The gaps not yet asked about, most important first."""
    gaps = all_gaps(inventory, brief)
    done = asked_keys(transcript, gaps)
    return [g for g in gaps if g.key not in done]
