"""Masking: no leaks, determinism, fluent output, 1-3 hidden categories, every category removable."""

from __future__ import annotations

import re

import pytest

from tasks.categories import Category
from tasks.domains.swe import case_id_for, mask_issue
from tasks.domains.swe.masking import (
    all_combinations,
    choose_hidden,
    fence_count,
    find_leaks,
    mask_text,
)
from tasks.params import SweConstructParams
from tasks.swe_samples import load_samples
from tasks.text import locate, normalise_ws
from tests.conftest import MINI, SAMPLES

MARKERS = re.compile(r"\[(REDACTED|MASKED|HIDDEN|REMOVED)\]|<(redacted|masked|hidden|removed)>|XXX|\.\.\.\s*$", re.I)
LABEL = re.compile(r"^\s*(#{1,6}\s+\S.*|\*\*[^*]+\*\*:?|[A-Z][\w /()-]{0,40}:)\s*$")


@pytest.fixture(scope="module")
def samples():
    return load_samples(SAMPLES)


@pytest.fixture(scope="module")
def all_cases(samples):
    cfg = SweConstructParams(variants_per_issue="all")
    return [case for issue in samples for case in mask_issue(issue, cfg)[0]]


def test_samples_are_rich_enough(samples):
    assert len(samples) >= 30
    for cat in Category:
        assert sum(cat in i.present_categories() for i in samples) >= 20, cat


def test_no_hidden_span_survives(all_cases):
    assert len(all_cases) > 500
    for case in all_cases:
        hidden = [u.content for u in case.units if u.category in case.hidden_categories]
        assert not find_leaks(case.brief.content, hidden), case.case_id


def test_every_present_category_is_removable_alone(samples):
    cfg = SweConstructParams(variants_per_issue="all", max_hidden=1)
    for issue in samples:
        cases, _ = mask_issue(issue, cfg)
        assert {c.hidden_categories[0] for c in cases} == set(issue.present_categories()), issue.instance_id
        for case in cases:
            assert len(case.brief.content) < len(case.full_text)


def test_hidden_counts_and_subsets(samples):
    cfg = SweConstructParams(variants_per_issue=3)
    for issue in samples:
        cases, _ = mask_issue(issue, cfg)
        assert len(cases) == 3
        assert len({c.case_id for c in cases}) == 3
        for case in cases:
            assert 1 <= len(case.hidden_categories) <= 3
            assert set(case.hidden_categories) <= set(case.present_categories)
            assert set(case.visible_categories) == set(case.present_categories) - set(case.hidden_categories)
            assert [s.category for s in case.hidden_slots] == case.hidden_categories
            for slot in case.hidden_slots:
                assert slot.simulator_answer and slot.unit_ids


def test_deterministic_per_instance_and_seed(samples):
    issue = samples[0]
    a, _ = mask_issue(issue, SweConstructParams(seed=7))
    b, _ = mask_issue(issue, SweConstructParams(seed=7))
    assert [c.model_dump() for c in a] == [c.model_dump() for c in b]
    picks = {tuple(choose_hidden(issue.instance_id, s, list(Category), 3, 1, 3)) for s in range(20)}
    assert len(picks) > 5, "different seeds should give different draws"


def test_combinations_cover_up_to_41():
    assert len(all_combinations(list(Category), 1, 3)) == 41
    assert len(all_combinations([Category.ERROR, Category.EXPECTED], 1, 3)) == 3


def test_fluency_rules(all_cases):
    for case in all_cases:
        brief = case.brief.content
        assert not MARKERS.search(brief), case.case_id
        assert fence_count(brief) % 2 == fence_count(case.full_text) % 2, case.case_id
        assert "\n\n\n" not in brief and brief == brief.strip()
        lines = brief.split("\n")
        in_code = False
        for i, line in enumerate(lines):
            if line.lstrip().startswith("```"):
                in_code = not in_code
                if in_code:
                    assert i + 1 < len(lines) and not lines[i + 1].lstrip().startswith("```"), \
                        f"empty fence in {case.case_id}"
                continue
            if in_code:
                continue
            assert not re.fullmatch(r"\s*(\d+[.)]|[-*+>])\s*", line), f"empty list item in {case.case_id}: {line!r}"
            assert "  " not in line.strip() or line.startswith("|"), f"double space in {case.case_id}: {line!r}"
            assert not re.search(r"\s[,.;:](\s|$)", line), f"dangling punctuation in {case.case_id}: {line!r}"
            # a label or heading must still introduce something
            if LABEL.match(line) and line.strip() not in case.full_text.split("\n")[0]:
                rest = [ln for ln in lines[i + 1 :] if ln.strip()]
                assert rest, f"orphaned header at the end of {case.case_id}: {line!r}"


def test_orphaned_header_and_traceback_label_are_removed():
    text = (
        "Title line\n\nSome context here about the bug.\n\nTraceback:\n```\nTraceback (most recent call last):\n"
        "  File \"a.py\", line 1\nValueError: boom\n```\n\n### Environment\n- lib 1.2.3 on Linux\n\n"
        "### Expected\nIt should work fine."
    )
    tb = 'Traceback (most recent call last):\n  File "a.py", line 1\nValueError: boom'
    env = "lib 1.2.3 on Linux"
    out = mask_text(text, [iv for span in (tb, env) for iv in locate(text, span)])
    assert "Traceback" not in out and "```" not in out
    assert "### Environment" not in out
    assert "### Expected\nIt should work fine." in out
    assert "Some context here about the bug." in out


def test_partial_sentence_removal_keeps_grammar():
    text = "Title\n\nI'm using requests 2.31.0 on Python 3.11 and it fails. The session hangs forever."
    out = mask_text(text, locate(text, "requests 2.31.0 on Python 3.11"))
    assert "2.31" not in out
    assert "The session hangs forever." in out
    assert " ," not in out and "  " not in out


def test_whitespace_insensitive_location():
    text = "a\r\nb  c"
    assert locate("alpha  beta\ngamma", "alpha beta gamma") == [(0, 17)]
    assert locate(text.replace("\r\n", "\n"), "a b c")


def test_case_ids_are_safe_and_stable():
    assert case_id_for("psf__requests-s01", (Category.ERROR, Category.VERSION_ENV)) \
        == "psf__requests-s01__error_info+version_env"


def test_mini_fixture_masks_like_the_samples():
    issues = load_samples(MINI)
    cases, notes = mask_issue(issues[0], SweConstructParams(variants_per_issue="all"))
    assert len(cases) == 41 and notes["spans_not_in_text"] == 0
    only_error = next(c for c in cases if c.hidden_categories == [Category.ERROR])
    assert "ZeroDivisionError" not in only_error.brief.content
    assert "Traceback:" not in only_error.brief.content
    assert normalise_ws("w.resize(height=0)") in normalise_ws(only_error.brief.content)
