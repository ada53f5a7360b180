"""Optimisation domain (OR-Clarify): complete problems -> decompose -> filter -> mask -> annotate -> episodes.

Everything specific to OR-Clarify lives in this folder: the closed vocabularies and judge hints (:mod:`.vocabulary`),
the ``decomposer`` role's typing (:mod:`.decompose`), the hide-candidate filter (:mod:`.eligibility`), the
``slot_annotator`` role (:mod:`.annotate`), the problem records (:mod:`.problems`) and the OR-Clarify TOML format
(:mod:`.or_toml`). Construction (:mod:`.domain`) runs them on the shared unit machinery (``tasks.construction``:
segmentation, masking, the brief, slot names) and also writes each case as OR-Clarify TOML; evaluation is the
OR-Clarify episode loop, whose local agents ask from the optimisation gap inventory (:mod:`.gaps`), which imports
nothing from the construction side.
Samples: ``data/samples/optimization/problems.jsonl``.

The domain object lives in :mod:`.domain` and loads on first use (PEP 562), so importing the inventory does not
import the construction machinery.
"""

from tasks.lazy_exports import lazy_exports

_HOME = {
    "DOMAIN": "domain", "OptimizationDomain": "domain", "BENCHMARK": "domain", "SIMULATOR": "domain",
    "build_chunk": "domain", "load_problems": "domain", "source_path": "domain", "OPTIMIZATION": "gaps",
}

__all__ = sorted(_HOME)

__getattr__, __dir__ = lazy_exports(__name__, _HOME)
