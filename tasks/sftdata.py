"""SFT data from the SWE cases: prompt = the incomplete issue, target = numbered questions for what it hides.

Questions are written by the ``question_writer`` role, one per hidden category, most valuable first (category
weights from the ``shap`` stage, else CLARITI's published weights). Rows are split into train and held-out by
instance (a stable hash of the source issue id), so no issue contributes to both.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from tasks import store
from tasks.categories import Category
from tasks.records import Case



class SftRow(BaseModel):
    model_config = ConfigDict(extra="forbid")

    case_id: str
    instance_id: str
    split: str = Field(pattern="^(train|heldout)$")
    prompt: list[dict]
    completion: list[dict]
    messages: list[dict]
    incomplete_issue: str = Field(min_length=1)
    full_issue: str = Field(min_length=1)
    hints: str = ""
    hidden_categories: list[str] = Field(min_length=1)
    n_questions: int = Field(ge=1)


def load_weights(path: Path) -> tuple[dict[str, float], str]:
    """The shap stage's weights when the file exists, else CLARITI's published ones; plus where they came from."""
    from tasks.rewards.weights import CLARITI_WEIGHTS
    from tasks.rewards.weights import load_weights as load_relevance

    if not path.is_file():
        return dict(CLARITI_WEIGHTS), "CLARITI published weights"
    weights = load_relevance(path).weights
    source = json.loads(store.read_text_utf8(path)).get("source", "unknown source")
    return weights, f"shap stage ({source})"


def split_of(instance_id: str, heldout_fraction: float, seed: int) -> str:
    digest = hashlib.sha256(f"{seed}:{instance_id}".encode()).digest()
    return "heldout" if int.from_bytes(digest[:8], "big") / 2**64 < heldout_fraction else "train"


def build_rows(cases: list[Case], weights: dict[str, float], role_cfg, *, heldout_fraction: float, seed: int,
               client=None) -> tuple[list[SftRow], int]:
    """SFT rows for every case (plus how many cases the question writer failed on)."""
    from tasks.roles.base import RoleFailure, run_role
    from tasks.roles.question_writer import SPEC, QuestionWriterInput, numbered
    from tasks.training.prompts import prompt_messages

    ordered = [sorted(c.hidden_categories, key=lambda cat: (-weights[cat.key], cat.key)) for c in cases]
    inputs = [
        QuestionWriterInput(incomplete_issue=c.brief.content, hidden_categories=cats, repo=str(c.extra.get("repo", "")))
        for c, cats in zip(cases, ordered)
    ]
    outputs = run_role(SPEC, inputs, role_cfg, client=client)
    rows, failed = [], 0
    for case, cats, out in zip(cases, ordered, outputs):
        if isinstance(out, RoleFailure):
            failed += 1
            continue
        prompt = prompt_messages(case.brief.content)
        completion = [{"role": "assistant", "content": numbered(out.questions)}]
        rows.append(SftRow(
            case_id=case.case_id, instance_id=case.metadata.source_id,
            split=split_of(case.metadata.source_id, heldout_fraction, seed),
            prompt=prompt, completion=completion, messages=prompt + completion,
            incomplete_issue=case.brief.content, full_issue=case.full_text, hints=case.hints,
            hidden_categories=[c.key for c in cats], n_questions=len(out.questions),
        ))
    return rows, failed


def validation_frame(rows: list[SftRow]):
    import pandas as pd

    train_ids = {r.instance_id for r in rows if r.split == "train"}
    return pd.DataFrame([
        {
            "case_id": r.case_id,
            "split": r.split,
            "prompt_chars": len(r.incomplete_issue),
            "target_chars": len(r.completion[0]["content"]),
            "n_questions": r.n_questions,
            "questions_match_hidden": r.n_questions == len(r.hidden_categories),
            "split_by_instance": r.split == "train" or r.instance_id not in train_ids,
        }
        for r in rows
    ])
