"""``python -m flows.new_domain``: a scaffolded domain gets its module, params entries, samples and test, shows up
in the DAG, and its construct and evaluate stages run; bad names are refused before anything is written."""

from __future__ import annotations

import difflib
import json

import pytest
import yaml

from flows.new_domain import params_text
from tests.conftest import ROOT, python

NAME = "demo_requests"
QNAME = "demo_reports"
"""A question-list domain (``--evaluation questions``), scaffolded into the same project copy."""


def test_params_entries_keep_the_file_and_its_comments():
    text = ("# top comment\ndomains:\n  - swe\n\nconstruct:\n  swe: {seed: 0}  # keep me\n\nreport:\n  title: t\n\n"
            "evaluate:\n  swe: {limit: 2}\n")
    out = params_text(text, "legal")
    parsed = yaml.safe_load(out)
    assert parsed["domains"] == ["swe", "legal"] and parsed["report"] == {"title": "t"}
    assert parsed["construct"]["legal"]["samples_path"] == "data/samples/legal/records.jsonl"
    assert parsed["evaluate"]["legal"]["cases"] == "data/cases/legal/cases.jsonl"
    assert "# top comment" in out and "# keep me" in out
    flow = yaml.safe_load(params_text("domains: [a, b]  # note\nconstruct:\n  a: {}\nevaluate:\n  a: {}\n", "c"))
    assert flow["domains"] == ["a", "b", "c"] and set(flow["construct"]) == {"a", "c"}
    dumped = yaml.safe_dump({"domains": ["a"], "construct": {"a": {"seed": 0}}, "evaluate": {"a": {}}}, sort_keys=False)
    unindented = yaml.safe_load(params_text(dumped, "b"))  # yaml.safe_dump writes list items at column 0
    assert unindented["domains"] == ["a", "b"] and set(unindented["evaluate"]) == {"a", "b"}


def _files(root):
    return sorted(p for p in root.rglob("*") if ".git" not in p.parts and "__pycache__" not in p.parts)


@pytest.mark.parametrize("name", ["analytics", "swe", "../escape", "Bad-Name", "x", "template", "question_template",
                                  "class"])
def test_existing_or_unsafe_names_are_refused_with_one_line(project, name):
    before = (project / "params.yaml").read_text()
    files = _files(project)
    proc = python(project, "-m", "flows.new_domain", name, check=False)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and proc.stderr.startswith("error: "), proc.stderr
    assert (project / "params.yaml").read_text() == before
    assert _files(project) == files


def test_params_entries_of_the_real_params_file_add_lines_only():
    """Scaffolding into the shipped params.yaml inserts the new lines and changes no other byte."""
    before = (ROOT / "params.yaml").read_text(encoding="utf-8")
    for evaluation in ("episodes", "questions"):
        after = params_text(before, "legal", evaluation)
        old, new = before.splitlines(), after.splitlines()
        changed = [line for line in difflib.ndiff(old, new) if line[:1] in "+-"]
        assert [line for line in changed if line.startswith("-")] == [
            "- " + next(line for line in old if line.startswith("domains:"))]
        assert len(changed) == 1 + 1 + 12 + (14 if evaluation == "questions" else 15)
        parsed = yaml.safe_load(after)
        assert parsed["domains"][-1] == "legal" and list(parsed["construct"])[-1] == "legal"
        assert list(parsed["evaluate"])[-1] == "legal"


@pytest.mark.prefect
def test_a_scaffolded_domain_builds_and_evaluates(project, prefect_api):
    out = python(project, "-m", "flows.new_domain", NAME).stdout
    assert f"new domain '{NAME}'" in out
    python(project, "-m", "flows.new_domain", QNAME, "--evaluation", "questions")
    for name in (NAME, QNAME):
        for rel in (f"tasks/domains/{name}/__init__.py", f"tasks/domains/{name}/domain.py",
                    f"data/samples/{name}/records.jsonl", f"data/samples/{name}/README.md",
                    f"tests/test_domain_{name}.py"):
            assert (project / rel).is_file(), rel
    # `make test` lints first, so the scaffold must pass it as written
    python(project, "-m", "ruff", "check", "--config", str(ROOT / "pyproject.toml"), f"tasks/domains/{NAME}",
           f"tests/test_domain_{NAME}.py", f"tasks/domains/{QNAME}", f"tests/test_domain_{QNAME}.py")
    params = yaml.safe_load((project / "params.yaml").read_text())
    for name in (NAME, QNAME):
        assert name in params["domains"] and name in params["construct"] and name in params["evaluate"]
    order = python(project, "-m", "flows.pipeline", "--list").stdout.split()
    for name in (NAME, QNAME):
        assert f"construct@{name}" in order and f"evaluate@{name}" in order
        assert order.index(f"construct@{name}") < order.index(f"evaluate@{name}")

    tests = python(project, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"tests/test_domain_{NAME}.py",
                   f"tests/test_domain_{QNAME}.py")
    assert "7 passed" in tests.stdout, tests.stdout  # 3 of the episode domain, 4 of the question domain

    # both domains' construct@ and evaluate@, as `python -m flows.construct / flows.evaluate` run them, in one process
    # (one start-up instead of four)
    stages = " or ".join(f"{flow}.main(['--domain', '{name}'])" for flow in ("construct", "evaluate")
                         for name in (NAME, QNAME))
    built = python(project, "-c", f"import sys; from flows import construct, evaluate; sys.exit({stages})").stdout
    assert f"construct@{NAME}: 3 cases" in built, built
    cases = (project / "data" / "cases" / NAME / "cases.jsonl").read_text().splitlines()
    assert len(cases) == 3 and all(json.loads(c)["metadata"]["domain"] == NAME for c in cases)
    summary = json.loads((project / "data" / "eval" / NAME / "summary.json").read_text())
    assert set(summary["rows"]) == {"open::freeqa", "mc_d::mc_d", "open::interopt", "mc_d::interopt"}
    metrics = json.loads((project / "data" / "metrics" / "stages" / "evaluate" / f"{NAME}.json").read_text())
    assert metrics["episodes"] == 3 * 4 * 3  # cases x (method, protocol) rows x repeats
    assert sum(r["AllSlotExactRestoreRate"] for r in metrics["rows"].values()) > 0  # the agents recover slots

    # the question-list domain: records become cases hiding whole categories, scored by the question kind
    assert f"construct@{QNAME}: 4 cases" in built, built
    cases = [json.loads(c) for c in (project / "data" / "cases" / QNAME / "cases.jsonl").read_text().splitlines()]
    assert len(cases) == 4 and all(c["hidden_categories"] for c in cases)
    folder = project / "data" / "eval" / QNAME
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["method_order"] == ["ask_everything", "evpi"]  # ranked; evpi's prior: the training split
    assert summary["reference_order"] == ["no_questions", "oracle_template"]
    evaluated = {c["metadata"]["case_id"] for c in cases if c["metadata"]["split"] == "heldout"}
    assert 0 < len(evaluated) < len(cases)  # evaluate.<name> scores the held-out cases, evpi learns on the rest
    rows = [json.loads(r) for r in (folder / "rows.jsonl").read_text().splitlines()]
    assert {(r["method"], r["case_id"]) for r in rows} == {(m, c) for m in ("no_questions", "oracle_template",
                                                                            "ask_everything", "evpi")
                                                           for c in evaluated}
    recovered = {m: sum(len(r["recovered"]) for r in rows if r["method"] == m) for m in ("no_questions",
                                                                                         "oracle_template")}
    assert recovered["no_questions"] == 0 < recovered["oracle_template"], recovered
    assert not (folder / "bridge").exists()  # no repositories: no SWE-bench-style export
    metrics = json.loads((project / "data" / "metrics" / "stages" / "evaluate" / f"{QNAME}.json").read_text())
    assert metrics["cases"] == len(evaluated) and set(metrics["rows"]) == {"ask_everything", "evpi"}
    assert set(metrics["reference_rows"]) == {"no_questions", "oracle_template"}

