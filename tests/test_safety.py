"""Fail safely (issue 21): output folders stay inside their stage's root, keys never reach artifacts or logs, and
cached task results load as plain JSON only."""

from __future__ import annotations

import shutil

import pytest

from tasks.errors import InputError
from tasks.store import contained_dir, sha256_tree
from tests.conftest import ROOT, python


@pytest.mark.parametrize("out", ["data/samples", ".", "data/eval/optimization/../../samples", "ABSOLUTE"])
def test_evaluate_refuses_an_out_folder_outside_its_output_root(project, tmp_path, out):
    cases = project / "data" / "cases" / "optimization"
    cases.mkdir(parents=True)
    shutil.copy(ROOT / "tests" / "data" / "or_cases.jsonl", cases / "cases.jsonl")  # valid inputs: only --out is bad
    outside = tmp_path / "elsewhere"
    out = str(outside) if out == "ABSOLUTE" else out
    before = sha256_tree(project / "data" / "samples")
    proc = python(project, "-m", "flows.evaluate", "--domain", "optimization", "--out", out, check=False)
    lines = proc.stderr.strip().splitlines()
    assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: --out: "), proc.stderr
    assert "outside data/eval/optimization/" in lines[0]
    assert sha256_tree(project / "data" / "samples") == before
    assert (project / ".git").is_dir() and (project / "flows" / "evaluate.py").is_file()
    assert not outside.exists() and not (project / "data" / "eval").exists()


def test_an_out_folder_may_not_escape_through_a_symlink(tmp_path):
    root = tmp_path / "repo"
    (root / "data" / "eval" / "swe").mkdir(parents=True)
    (root / "data" / "samples").mkdir()
    (root / "data" / "eval" / "swe" / "escape").symlink_to(root / "data" / "samples")
    with pytest.raises(InputError, match=r"^--out: 'data/eval/swe/escape' resolves to data/samples, outside"):
        contained_dir(root, "data/eval/swe", "data/eval/swe/escape", flag="--out")
    assert contained_dir(root, "data/eval/swe", None, flag="--out") == root / "data" / "eval" / "swe"
    inside = contained_dir(root, "data/eval/swe", str(root / "data" / "eval" / "swe" / "try2"), flag="--out")
    assert inside == root / "data" / "eval" / "swe" / "try2"
