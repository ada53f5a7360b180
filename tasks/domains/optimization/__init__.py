"""Optimisation domain (OR-Clarify): complete problems -> decompose -> filter -> mask -> annotate -> episodes.

Construction (:mod:`.domain`) runs the shared unit-construction machinery (``tasks.construction``) with model roles
and also writes each case as OR-Clarify TOML; evaluation is the OR-Clarify episode loop, whose local agents ask from
the optimisation gap inventory (:mod:`.gaps`), which imports nothing from the construction side.
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
