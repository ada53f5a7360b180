"""The question_writer role: the ideal clarifying questions for an incomplete issue (SFT targets).

Given the incomplete issue and the categories hidden from it (most valuable first), it writes one question per
category. The local backend fills per-category templates with entities found in the issue: file paths, function
or method names, exception names, and the library (from the repository name).
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field

from tasks.categories import Category
from tasks.roles.base import RoleSpec
from tasks.roles.registry import ROLES


class QuestionWriterInput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    incomplete_issue: str = Field(min_length=1)
    hidden_categories: list[Category] = Field(min_length=1, description="Most valuable first.")
    repo: str = ""


class QuestionWriterOutput(BaseModel):
    model_config = ConfigDict(extra="forbid")

    questions: list[str] = Field(min_length=1, description="One question per hidden category, in the given order.")


_PATH = re.compile(r"\b[\w.-]+(?:/[\w.-]+)+\.(?:py|pyx|c|cpp|js|cfg|toml|ini|rst|txt)\b")
_CALL = re.compile(r"`?\b([A-Za-z_][\w.]*)\(\)?")
_EXC = re.compile(r"\b([A-Z]\w*(?:Error|Exception|Warning))\b")
_CODE = re.compile(r"`([^`\n]{2,40})`")


def entities(text: str, repo: str = "") -> dict[str, str]:
    """The most telling names in the issue, for filling templates (empty strings when absent)."""
    calls = [m.group(1) for m in _CALL.finditer(text) if "." in m.group(1) or text.count(m.group(1)) > 1]
    code = [m.group(1) for m in _CODE.finditer(text)]
    library = repo.split("/")[-1] if repo else ""
    return {
        "path": next(iter(_PATH.findall(text)), ""),
        "call": next(iter(calls), next(iter(code), "")),
        "exception": next(iter(_EXC.findall(text)), ""),
        "library": library,
    }


def _subject(ent: dict[str, str]) -> str:
    if ent["call"]:
        return f"`{ent['call'].strip('`')}`"
    if ent["path"]:
        return f"`{ent['path']}`"
    return "this"


def question_for(category: Category, ent: dict[str, str]) -> str:
    subject = _subject(ent)
    library = ent["library"] or "the library"
    if category is Category.ERROR:
        if ent["exception"]:
            return f"What is the full traceback of the {ent['exception']} you get, and the exact error message?"
        return f"What exactly goes wrong when you use {subject}: is there an error message, traceback or wrong output?"
    if category is Category.REPRODUCTION:
        return f"Could you share a minimal code snippet or the exact steps that reproduce the problem with {subject}?"
    if category is Category.EXPECTED:
        return f"What did you expect {subject} to return or do instead?"
    if category is Category.IMPLEMENTATION:
        where = f" in `{ent['path']}`" if ent["path"] else ""
        return f"Do you know where the fix should go{where}, or do you have a preferred approach or constraint for it?"
    if category is Category.EXTERNAL_REFS:
        return "Are there related issues, pull requests, commits or documentation pages that describe this behaviour?"
    return f"Which versions of {library}, Python and your operating system are you using?"


def local(inp: QuestionWriterInput) -> QuestionWriterOutput:
    ent = entities(inp.incomplete_issue, inp.repo)
    return QuestionWriterOutput(questions=[question_for(c, ent) for c in inp.hidden_categories])


SPEC = RoleSpec(name="question_writer", input_model=QuestionWriterInput, output_model=QuestionWriterOutput, local=local)
ROLES.add(SPEC.name, SPEC)


def numbered(questions: list[str]) -> str:
    return "\n".join(f"{n}. {q}" for n, q in enumerate(questions, start=1))
