"""Analyses over the pipeline's outputs (CLARITI RQ2: which questions a user can answer).

The names below load their module on first use (PEP 562), so importing the package runs none of its modules."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tasks.lazy_exports import lazy_exports

_HOME = {
    "QuestionFeatures": "features",
    "ListedQuestion": "questions", "QuestionRow": "questions", "eval_questions": "questions",
    "workbook_questions": "questions", "tag_questions": "questions", "rows_frame": "questions",
    "workbook_path": "stage",
}

__all__ = [
    "ListedQuestion",
    "QuestionFeatures",
    "QuestionRow",
    "eval_questions",
    "rows_frame",
    "tag_questions",
    "workbook_path",
    "workbook_questions",
]

if TYPE_CHECKING:
    from tasks.analysis.features import QuestionFeatures
    from tasks.analysis.questions import (
        ListedQuestion,
        QuestionRow,
        eval_questions,
        rows_frame,
        tag_questions,
        workbook_questions,
    )
    from tasks.analysis.stage import workbook_path


__getattr__, __dir__ = lazy_exports(__name__, _HOME)
