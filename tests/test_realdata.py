"""Real data (skipped when ../shared is absent): the CLARITI workbook masks without a leak."""

from __future__ import annotations

import pytest

from tasks.domains.swe import load_clariti, mask_issue
from tasks.domains.swe.masking import find_leaks
from tasks.params import SweConstructParams
from tests.conftest import SHARED

pytestmark = pytest.mark.realdata
WORKBOOK = SHARED / "data" / "clariti" / "data.xlsx"


@pytest.fixture(scope="module")
def annotated():
    return [i for i in load_clariti(WORKBOOK) if i.spans is not None]


def test_workbook_has_496_annotated_issues(annotated):
    assert len(annotated) == 496


def test_all_annotated_issues_mask_without_a_leak(annotated):
    cfg = SweConstructParams(variants_per_issue="all")
    total, without_variant = 0, []
    for issue in annotated:
        cases, _ = mask_issue(issue, cfg)
        if not cases:  # every annotated span quotes the patch, or hiding it would empty the issue
            without_variant.append(issue.instance_id)
        for case in cases:
            hidden = [u.content for u in case.units if u.category in case.hidden_categories]
            assert not find_leaks(case.brief.content, hidden), case.case_id
            assert len(case.brief.content) < len(case.full_text)
        total += len(cases)
    assert total > 9000
    assert len(without_variant) <= 2, without_variant
