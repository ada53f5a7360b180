"""The project's own complete optimisation problems (``data/samples/optimization/problems.jsonl``)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tasks.domains.optimization.problems import load_problem_samples

ROOT = Path(__file__).resolve().parents[1]
SAMPLES = ROOT / "data" / "samples" / "optimization" / "problems.jsonl"
BULLET = re.compile(r"^\s*(?:[-*]|\d+\.)\s+")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(€])")
OBJECTIVE = re.compile(r"\b(minimi[sz]e|maximi[sz]e)\b", re.IGNORECASE)
CONSTRAINT = re.compile(
    r"\b(must|at most|at least|up to|cannot|may not|no more than|not allowed|capped|exactly|only)\b", re.IGNORECASE
)


def statements(text: str) -> list[str]:
    """Atomic statements as a decomposer would cut them: a whole table, one bullet, or one sentence."""
    found: list[str] = []
    table: list[str] = []
    for line in [*text.splitlines(), ""]:
        if line.lstrip().startswith("|"):
            table.append(line)
            continue
        if table:
            found.append("\n".join(table))
            table = []
        if BULLET.match(line):
            found.append(BULLET.sub("", line).strip())
        elif line.strip():
            found += [s for s in SENTENCE_END.split(line.strip()) if s]
    return found


@pytest.fixture(scope="module")
def problems():
    return load_problem_samples(SAMPLES)


def test_samples_load_with_unique_ids(problems):
    assert len(problems) >= 20  # the default evaluation has one case per problem and needs at least 20
    ids = [p.problem_id for p in problems]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"opt_[a-z]+_\d{3}", i) for i in ids)
    assert all(p.title and p.units is None for p in problems)


def test_samples_cover_the_required_problem_families(problems):
    families = {p.problem_id.split("_")[1] for p in problems}
    required = {"production", "workforce", "transport", "inventory", "blending", "scheduling", "facility",
                "portfolio"}
    assert required <= families and len(families) >= 20


def test_each_problem_is_a_complete_request(problems):
    for problem in problems:
        parts = statements(problem.text)
        assert 8 <= len(parts) <= 20, (problem.problem_id, len(parts))
        assert any(OBJECTIVE.search(s) for s in parts), problem.problem_id
        assert sum(bool(CONSTRAINT.search(s)) for s in parts) >= 2, problem.problem_id
        assert problem.text == problem.text.strip()


def test_most_problems_carry_a_markdown_table(problems):
    with_table = [p for p in problems if any(s.startswith("|") for s in statements(p.text))]
    assert len(with_table) >= len(problems) * 3 // 4
    for problem in with_table:
        for table in (s for s in statements(problem.text) if s.startswith("|")):
            rows = table.splitlines()
            assert re.fullmatch(r"\|(\s*-+\s*\|)+", rows[1]), problem.problem_id  # header separator row
            widths = {row.count("|") - row.count("\\|") for row in rows}
            assert len(widths) == 1, (problem.problem_id, rows[0])


def test_statement_splitter():
    text = "Intro one. Intro two costs €5.\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n- first\n- second.\n1. third"
    assert statements(text) == ["Intro one.", "Intro two costs €5.", "| a | b |\n|---|---|\n| 1 | 2 |",
                                "first", "second.", "third"]


def test_every_problem_offers_at_least_four_hide_candidates(problems):
    """The real decomposer and filter leave each problem >= 4 eligible units, the objective among them."""
    from tasks.domains.optimization import decompose
    from tasks.domains.optimization.eligibility import eligibility

    outputs = decompose.local_batch([decompose.DecomposeInput(problem_id=p.problem_id, text=p.text)
                                     for p in problems])
    for problem, output in zip(problems, outputs, strict=True):
        units = decompose.to_units(output)
        eligible = [u for u, e in zip(units, eligibility(units), strict=True) if e.eligible]
        assert len(eligible) >= 4, (problem.problem_id, len(eligible))
        assert any(u.kind == "objective" for u in eligible), problem.problem_id
