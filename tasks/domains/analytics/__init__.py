"""Analytics domain: data-analysis and text-to-SQL requests -> decompose -> filter -> mask -> annotate -> episodes.

A complete request names its data source, the metric definition, the time window, the population filters, the
breakdown and the form of the deliverable, usually next to a schema of the tables it may use. Construction cuts it
into units of :data:`~.decompose.UNIT_KINDS` (rules, :mod:`.decompose`), hides about half of the hideable ones
(context and schema always stay visible), renders the brief with the ``rewriter`` role and writes each hidden
unit's rubric from templates (:mod:`.slots`). Evaluation is the OR-Clarify episode loop; the local agents ask from
the analytics gap inventory (:mod:`.gaps`, with its own rules in :mod:`.statements` and :mod:`.brief_schema`),
which imports nothing from the construction side. Samples: ``data/samples/analytics/requests.jsonl``.

The domain object lives in :mod:`.domain` and loads on first use (PEP 562), so importing the inventory does not
import the decomposer.
"""

from tasks.lazy_exports import lazy_exports

_HOME = {
    "DOMAIN": "domain", "AnalyticsDomain": "domain", "AnalyticsConstructParams": "domain", "BENCHMARK": "domain",
    "SIMULATOR": "domain",
}

__all__ = sorted(_HOME)

__getattr__, __dir__ = lazy_exports(__name__, _HOME)
