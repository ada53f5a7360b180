"""The fine-tuning probe's inputs and blend (benchmarks/annotator_finetune_probe.py), without training anything."""

from __future__ import annotations

import numpy as np
import pytest

from tasks.roles.annotator import segment
from tests.conftest import load_benchmark


@pytest.fixture(scope="module")
def probe():
    pytest.importorskip("scipy")
    return load_benchmark("annotator_finetune_probe")


def test_unit_pairs_carry_the_nearest_heading_and_the_previous_unit(probe) -> None:
    units = segment("## Expected behavior\n\nIt should   return 3.\n\nThanks.\n\n## Versions\n\nnumpy 1.26")
    pairs = probe.unit_pairs(units)
    assert len(pairs) == len(units)
    assert pairs[0] == (f"{units[0].kind}: ## Expected behavior", " | ")
    by_text = {a.split(": ", 1)[1]: b for a, b in pairs}
    assert by_text["It should return 3."] == "## Expected behavior | ## Expected behavior"
    assert by_text["Thanks."] == "## Expected behavior | It should return 3."
    assert by_text["numpy 1.26"] == "## Versions | ## Versions"


def test_blend_is_the_weighted_mean_of_the_two_probabilities(probe) -> None:
    a = np.array([[0.1, 0.8], [0.9, 0.2]])
    b = np.array([[0.5, 0.0], [0.3, 1.0]])
    assert np.array_equal(probe.blend(a, b, 0.0), a) and np.array_equal(probe.blend(a, b, 1.0), b)
    assert np.allclose(probe.blend(a, b, 0.25), [[0.2, 0.6], [0.75, 0.4]])


def test_missing_workbook_and_bad_fold_are_one_line_and_exit_2(probe, tmp_path, capsys) -> None:
    assert probe.main(["--data", str(tmp_path / "absent.xlsx")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "absent.xlsx" in err[0]
    workbook = tmp_path / "data.xlsx"
    workbook.write_bytes(b"")
    assert probe.main(["--data", str(workbook), "--fold", "7"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--fold" in err[0]
