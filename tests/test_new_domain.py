"""``python -m flows.new_domain``: a scaffolded domain gets its module, params entries, samples and test, shows up
in the DAG, and its construct and evaluate stages run; bad names are refused before anything is written."""

from __future__ import annotations

import json

import pytest
import yaml

from flows.new_domain import params_text
from tests.conftest import ROOT, python

NAME = "demo_requests"


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


@pytest.mark.parametrize("name", ["analytics", "swe", "../escape", "Bad-Name", "x", "template", "class"])
def test_existing_or_unsafe_names_are_refused_with_one_line(project, name):
    before = (project / "params.yaml").read_text()
    files = _files(project)
    proc = python(project, "-m", "flows.new_domain", name, check=False)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and proc.stderr.startswith("error: "), proc.stderr
    assert (project / "params.yaml").read_text() == before
    assert _files(project) == files


@pytest.mark.prefect
def test_a_scaffolded_domain_builds_and_evaluates(project, prefect_api):
    out = python(project, "-m", "flows.new_domain", NAME).stdout
    assert f"new domain '{NAME}'" in out
    for rel in (f"tasks/domains/{NAME}/__init__.py", f"tasks/domains/{NAME}/domain.py",
                f"data/samples/{NAME}/records.jsonl", f"data/samples/{NAME}/README.md",
                f"tests/test_domain_{NAME}.py"):
        assert (project / rel).is_file(), rel
    # `make test` lints first, so the scaffold must pass it as written
    python(project, "-m", "ruff", "check", "--config", str(ROOT / "pyproject.toml"), f"tasks/domains/{NAME}",
           f"tests/test_domain_{NAME}.py")
    params = yaml.safe_load((project / "params.yaml").read_text())
    assert NAME in params["domains"] and NAME in params["construct"] and NAME in params["evaluate"]
    order = python(project, "-m", "flows.pipeline", "--list").stdout.split()
    assert f"construct@{NAME}" in order and f"evaluate@{NAME}" in order
    assert order.index(f"construct@{NAME}") < order.index(f"evaluate@{NAME}")

    tests = python(project, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"tests/test_domain_{NAME}.py")
    assert "3 passed" in tests.stdout, tests.stdout

    built = python(project, "-m", "flows.construct", "--domain", NAME).stdout
    assert f"construct@{NAME}: 3 cases" in built, built
    cases = (project / "data" / "cases" / NAME / "cases.jsonl").read_text().splitlines()
    assert len(cases) == 3 and all(json.loads(c)["metadata"]["domain"] == NAME for c in cases)
    python(project, "-m", "flows.evaluate", "--domain", NAME)
    summary = json.loads((project / "data" / "eval" / NAME / "summary.json").read_text())
    assert set(summary["rows"]) == {"open::freeqa", "mc_d::mc_d", "open::interopt", "mc_d::interopt"}
    metrics = json.loads((project / "data" / "metrics" / "stages" / "evaluate" / f"{NAME}.json").read_text())
    assert metrics["episodes"] == 3 * 4 * 3  # cases x (method, protocol) rows x repeats
    assert sum(r["AllSlotExactRestoreRate"] for r in metrics["rows"].values()) > 0  # the agents recover slots
