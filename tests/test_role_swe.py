"""SWE-side roles: question classifier, simulated user, redundancy and answerability judges (local backends)."""

from __future__ import annotations

import json
import re

import pytest

from tasks.categories import Category
from tasks.llm.records import RoleConfig
from tasks.roles.base import QuestionInput, run_role
from tasks.roles.question_classifier import SPEC as CLASSIFIER
from tasks.roles.question_classifier import split_questions
from tasks.roles.swe_judges import ANSWERABILITY_SPEC, REDUNDANCY_SPEC, AnswerabilityInput, RedundancyInput
from tasks.roles.swe_user import NO_INFO, SweUserInput, split_units
from tasks.roles.swe_user import SPEC as SWE_USER
from tests.conftest import CLARITI_WORKBOOK, ROOT, python

# An invented issue about an invented library.
FULL = """Title: `tally.merge_counts` drops keys whose count is zero

Description:
When I merge two counters with `merge_counts`, every key whose merged count is zero disappears from the result.

```python
from tally import merge_counts
merge_counts({"apples": 2, "pears": 0}, {"plums": 1})
```

Traceback (most recent call last):
  File "demo.py", line 2, in <module>
    merge_counts({"apples": 2, "pears": 0}, {"plums": 1})
  File "tally/core.py", line 41, in merge_counts
    check_keys(result, expected)
KeyError: 'pears'

I expected the result to keep "pears" with a count of 0 instead of raising.
The same thing was reported earlier in https://example.org/tally/issues/812 for the older API.

Environment:
- tally version: 3.4.1
- Python 3.11.4 on Ubuntu 22.04
"""

# The same issue with the traceback, the link and the version list removed.
INCOMPLETE = """Title: `tally.merge_counts` drops keys whose count is zero

Description:
When I merge two counters with `merge_counts`, every key whose merged count is zero disappears from the result.

```python
from tally import merge_counts
merge_counts({"apples": 2, "pears": 0}, {"plums": 1})
```

I expected the result to keep "pears" with a count of 0 instead of raising.
"""

HINTS = ("A maintainer noted that the zero-filtering happens inside `_prune` in tally/core.py and could be made "
         "optional.")

LABELLED = [
    (Category.ERROR, "What exact error message is printed when the export fails?"),
    (Category.ERROR, "Could you paste the complete traceback you see?"),
    (Category.REPRODUCTION, "Can you share a minimal code snippet that triggers the crash?"),
    (Category.REPRODUCTION, "What steps should I follow to reproduce the problem?"),
    (Category.EXPECTED, "What did you expect the parser to return for an empty string?"),
    (Category.EXPECTED, "What is the desired output when the column is missing?"),
    (Category.IMPLEMENTATION, "Which function in the codebase should the fix modify?"),
    (Category.IMPLEMENTATION, "Should the fix keep the old keyword argument for backward compatibility?"),
    (Category.EXTERNAL_REFS, "Is there a link to the related pull request?"),
    (Category.EXTERNAL_REFS, "Does the documentation page describe this option anywhere?"),
    (Category.VERSION_ENV, "Which version of the package and which Python version are you running?"),
    (Category.VERSION_ENV, "What operating system did you see this on?"),
    ("irrelevant", "What is your favourite colour?"),
    ("irrelevant", "How was your weekend?"),
]

LOCAL = RoleConfig()


def _ask(questions: list[str]):
    return run_role(SWE_USER, [SweUserInput(issue=FULL, hints=HINTS, question=q) for q in questions], LOCAL)


def test_classifier_labels_hand_written_questions():
    outs = run_role(CLASSIFIER, [QuestionInput(question=q) for _, q in LABELLED], LOCAL)
    got = [o.label for o in outs]
    assert got == [gold for gold, _ in LABELLED]
    assert all(0.0 <= o.confidence <= 1.0 for o in outs)


def test_classifier_batch_equals_single_and_is_deterministic():
    inputs = [QuestionInput(question=q, issue_text=INCOMPLETE) for _, q in LABELLED[:5]]
    batch = CLASSIFIER.local_batch(inputs)
    assert batch == [CLASSIFIER.local(i) for i in inputs]
    assert batch == CLASSIFIER.local_batch(inputs)


def test_split_questions_handles_multiline_items_and_short_noise():
    text = "<think>plan</think>1. Which version\n   of tally do you use?\n2. ok\n3) What did you expect instead?"
    assert split_questions(text) == ["Which version of tally do you use?", "What did you expect instead?"]
    assert split_questions("Could you share the traceback please?") == ["Could you share the traceback please?"]
    assert split_questions(None) == []


def test_units_are_verbatim_and_keep_code_and_traceback_whole():
    units = split_units(FULL)
    assert all(u.text in FULL for u in units)
    traceback = [u for u in units if "traceback" in u.tags]
    assert len(traceback) == 1 and traceback[0].text.startswith("Traceback") and traceback[0].text.endswith("'pears'")
    assert any("code" in u.tags and u.text.startswith("from tally import") for u in units)
    assert "- tally version: 3.4.1" in [u.text for u in units]


def test_swe_user_answers_from_the_issue_only():
    questions = [
        "Which version of tally and Python are you using?",
        "What is the full traceback you get?",
        "Is there a link to a related issue?",
        "Which function should the fix change?",
        "What is your favourite colour?",
        "How many users are affected by this in production?",
        "Does this also happen on Windows?",
    ]
    version, traceback, link, impl, colour, users, windows = _ask(questions)
    assert version.answered and "- tally version: 3.4.1" in version.evidence
    assert "Python 3.11.4" in version.answer
    assert traceback.answered and "KeyError: 'pears'" in traceback.answer
    assert link.answered and "https://example.org/tally/issues/812" in link.answer
    assert impl.answered and impl.evidence == [HINTS]
    for out in (colour, users, windows):
        assert not out.answered and out.answer == NO_INFO and out.evidence == []
    for out in (version, traceback, link, impl):
        assert out.answer == "\n".join(out.evidence)
        assert all(piece in FULL or piece in HINTS for piece in out.evidence)


def test_redundancy_and_answerability():
    kept = "What did you expect merge_counts to return?"
    removed = "What is the full traceback you get?"
    red_kept, red_removed, colour = run_role(
        REDUNDANCY_SPEC,
        [RedundancyInput(text=INCOMPLETE, question=q) for q in (kept, removed, "What is your favourite colour?")],
        LOCAL,
    )
    assert red_kept.answerable and red_kept.evidence in INCOMPLETE and red_kept.evidence.startswith("I expected")
    assert not red_removed.answerable and red_removed.evidence == ""
    assert not colour.answerable
    ans_removed, ans_colour = run_role(
        ANSWERABILITY_SPEC,
        [AnswerabilityInput(text=FULL, hints=HINTS, question=q) for q in (removed, "What is your favourite colour?")],
        LOCAL,
    )
    assert ans_removed.answerable and ans_removed.evidence in FULL and "KeyError" in ans_removed.evidence
    assert not ans_colour.answerable and ans_colour.evidence == ""
    assert ans_removed.rationale and ans_colour.rationale


def test_the_judges_do_not_use_the_simulated_user():
    code = "import sys, tasks.roles.swe_judges; print('tasks.roles.swe_user' in sys.modules)"
    assert python(ROOT, "-c", code).stdout.strip() == "False"
    generic, version, windows = ANSWERABILITY_SPEC.run_local([
        AnswerabilityInput(text=FULL, hints=HINTS, question=q)
        for q in ("Can you provide more details?", "Which version of tally and Python are you using?",
                  "Does this also happen on Windows?")])
    assert not generic.answerable and "generic" in generic.rationale  # S3's "Generic question"
    assert version.answerable and version.evidence in FULL and re.search(r"\d+\.\d+", version.evidence)
    assert not windows.answerable


def test_deterministic():
    questions = ["Which version of tally and Python are you using?", "What did you expect merge_counts to return?"]
    assert _ask(questions) == _ask(questions)


@pytest.mark.parametrize(
    "spec, inp",
    [
        (CLASSIFIER, QuestionInput(question="Which Python version?", issue_text=INCOMPLETE)),
        (CLASSIFIER, QuestionInput(question="Which Python version?")),
        (SWE_USER, SweUserInput(issue=FULL, hints=HINTS, question="Which Python version?")),
        (SWE_USER, SweUserInput(issue=FULL, question="Which Python version?")),
        (REDUNDANCY_SPEC, RedundancyInput(text=INCOMPLETE, question="Which Python version?")),
        (ANSWERABILITY_SPEC, AnswerabilityInput(text=FULL, hints=HINTS, question="Which Python version?")),
    ],
)
def test_prompts_render(spec, inp):
    system, user = spec.messages(inp)
    assert system["role"] == "system" and user["role"] == "user"
    assert "JSON" in system["content"]
    assert json.loads(system["content"][system["content"].index("{"):]) == spec.output_model.model_json_schema()
    assert "Which Python version?" in user["content"]


@pytest.mark.realdata
def test_parser_matches_readme_question_counts():
    import pandas as pd

    path = CLARITI_WORKBOOK
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    df = pd.read_excel(path)
    readme = {"clarification_questions_grpo_3": 2.94, "clarification_questions_gpt5_nano_3": 5.25,
              "clarification_questions_gpt5_3": 5.07}
    for column, expected in readme.items():
        counts = [len(split_questions(v)) for v in df[column] if isinstance(v, str) and v.strip()]
        assert abs(sum(counts) / len(counts) - expected) <= 0.05, column
