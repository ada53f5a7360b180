"""SWE domain (CLARITI): annotated GitHub issues -> masked variants as cases -> question sets.

Construction (:mod:`.domain`) loads the issues (:mod:`.samples`, the CLARITI workbook or SWE-bench), has the
``annotator`` role mark their spans and hides 1-3 categories per variant with the rule-based masker
(:mod:`.masking`); :mod:`.workbook` reads the CLARITI workbook's rewrite-3 variants and published question lists
for the question-set evaluation (``tasks/evaluation/question_lists.py``). Samples: ``data/samples/swe/issues.jsonl``.

The domain object lives in :mod:`.domain` and loads on first use (PEP 562), so importing the masker or the sample
loader does not import the annotator.
"""

from tasks.lazy_exports import lazy_exports

_HOME = {
    "DOMAIN": "domain", "SweDomain": "domain", "BENCHMARK": "domain", "annotate_chunk": "domain",
    "case_id_for": "domain", "load_clariti": "domain", "load_issues": "domain", "load_swebench": "domain",
    "mask_issue": "domain", "parse_category_mapping": "domain", "source_path": "domain",
}

__all__ = sorted(_HOME)

__getattr__, __dir__ = lazy_exports(__name__, _HOME)
