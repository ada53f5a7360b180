"""Unit construction, shared by every unit domain: segment -> mask -> brief, and slot names.

``segment`` cuts a free-text record into verbatim segments (each domain types them itself), ``brief`` chooses the
hidden units and renders the public brief (the ``rewriter`` role), ``slot_names`` names a hidden slot from its words.
What is specific to one domain lives in its folder: the optimisation domain's unit kinds, decomposer, filter, slot
annotator, problems and OR-Clarify TOML under ``tasks/domains/optimization/``.
"""
