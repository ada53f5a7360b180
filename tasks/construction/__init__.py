"""Unit construction, shared by every unit domain: segment -> mask -> brief, and slot names.

``segment`` cuts a free-text record into verbatim segments (each domain types them itself), ``brief`` chooses the
hidden units and renders the public brief (the ``rewriter`` role), ``slot_names`` names a hidden slot from its words.
What is specific to one domain lives in its folder: the optimisation domain's unit kinds, decomposer, filter, slot
annotator, problems and OR-Clarify TOML under ``tasks/domains/optimization/``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from tasks.lazy_exports import lazy_exports

_HOME = {
    "Segment": "segment", "heading_kind": "segment",  # the function ``segment`` shares its module's name: import it
    "choose_hidden": "brief", "choose_hidden_shaped": "brief", "leaked_units": "brief", "render_briefs": "brief",
    "slot_name": "slot_names",
}

__all__ = [
    "Segment",
    "choose_hidden",
    "choose_hidden_shaped",
    "heading_kind",
    "leaked_units",
    "render_briefs",
    "slot_name",
]

__getattr__, __dir__ = lazy_exports(__name__, _HOME)

if TYPE_CHECKING:
    from tasks.construction.brief import choose_hidden, choose_hidden_shaped, leaked_units, render_briefs
    from tasks.construction.segment import Segment, heading_kind
    from tasks.construction.slot_names import slot_name
