"""Abstain with warning (evaluate.swe.abstain): a method's ``+abstain`` variant asks nothing on the cases whose
staged reward is under the threshold, flags them "information insufficient" in its rows and bridge exports, and
the summary sets it beside its method (abstention rate, and the change in recall, recovery, reward, questions)."""

from __future__ import annotations

import json

import pytest

from tests.test_swe_eval import METHODS, FakePolicy, project, run


@pytest.fixture(scope="module")
def evaluated(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("abstain")
    root, settings = project(tmp, METHODS[:4], abstain={"threshold": 0.9})
    summary = run(root, settings, tmp / "out", FakePolicy())
    rows = [json.loads(line) for line in (tmp / "out" / "rows.jsonl").read_text().splitlines()]
    return summary, rows, tmp / "out"


def test_the_variant_asks_nothing_under_the_threshold_and_flags_the_task(evaluated):
    summary, rows, out = evaluated
    # the variants read the full issue (their abstention uses the staged reward): reference rows, never ranked
    assert summary["method_order"] == ["ask_everything", "base_policy"]
    assert [n for n in summary["reference_order"] if n.endswith("+abstain")] == ["ask_everything+abstain",
                                                                                  "base_policy+abstain"]
    for name in ("ask_everything+abstain", "base_policy+abstain"):
        assert summary["reference_methods"][name]["reference"]["kind"] == "privileged"
        assert "full issue" in summary["reference_methods"][name]["reference"]["reads"]
    assert not any(n.endswith("+abstain+abstain") for n in summary["reference_order"])  # no variant of a variant
    by_key = {r["key"]: r for r in rows}
    for r in rows:
        if not r["method"].endswith("+abstain"):
            assert r["information_insufficient"] is False
            continue
        base = by_key[r["key"].replace("+abstain::", "::", 1)]
        low = base["reward"] is None or base["reward"]["total"] < 0.9
        assert r["information_insufficient"] is low
        assert r["n_questions"] == (0 if low else base["n_questions"])
    def exported(method: str) -> list[dict]:  # every round's file
        return [json.loads(line) for path in sorted((out / "bridge").glob(f"{method}__r*.jsonl"))
                for line in path.read_text().splitlines()]

    flagged, plain = exported("base_policy+abstain"), exported("base_policy")
    assert len(flagged) == len(plain) == 4
    assert {r.get("clarifyflow_warning") for r in plain} == {None}
    n_low = sum(r["information_insufficient"] for r in rows if r["method"] == "base_policy+abstain")
    assert sum(r.get("clarifyflow_warning") == "information insufficient" for r in flagged) == n_low


def test_the_summary_says_what_abstaining_costs_and_saves(evaluated):
    summary, rows, out = evaluated
    block = summary["abstention"]
    assert block["threshold"] == 0.9 and set(block["methods"]) == {"ask_everything", "base_policy"}
    for name, row in block["methods"].items():
        mine = [r for r in rows if r["method"] == name + "+abstain"]
        assert row["abstained"] == sum(r["information_insufficient"] for r in mine)
        assert row["abstention_rate"] == pytest.approx(row["abstained"] / row["cases"], abs=1e-4)
        recall = row["hidden_recall"]
        assert recall["abstaining"] <= recall["asking"] and recall["change"] == pytest.approx(
            recall["abstaining"] - recall["asking"], abs=1e-4)
        assert row["questions_per_issue"]["change"] <= 0
    assert "Abstain with warning: threshold 0.9" in (out / "report.md").read_text()


def test_a_zero_threshold_never_abstains_and_changes_nothing(tmp_path):
    root, settings = project(tmp_path, METHODS[2:3], abstain={"threshold": 0.0})
    summary = run(root, settings, tmp_path / "out", FakePolicy())
    row = summary["abstention"]["methods"]["ask_everything"]
    assert row["abstained"] == 0 and all(row[m]["change"] == 0 for m in ("hidden_recall", "reward_mean"))


def test_the_gates_and_the_stage_metrics_accept_the_variants(evaluated):
    from tasks.evaluation.question_kind import headline as _swe_headline
    from tasks.evaluation.question_report import rows_frame, summary_frame
    from tasks.evaluation.stage import metric_rows
    from tasks.validation.gate import validate
    from tasks.validation.stage_metrics import check_stage_metrics

    summary, _, out = evaluated
    assert validate("swe_eval_summary", summary_frame(summary)).success
    assert validate("swe_eval_rows", rows_frame(out)).success
    metrics = {"backend": "local", "cases": summary["cases"],
               **metric_rows(summary["methods"], summary["reference_methods"], _swe_headline),
               "abstention": summary["abstention"]["methods"]}
    check_stage_metrics("evaluate/swe", metrics, counts={"cases": summary["cases"]})


def test_an_unknown_abstaining_method_is_an_input_error(tmp_path):
    from tasks.errors import InputError

    root, settings = project(tmp_path, METHODS[2:3], abstain={"threshold": 0.5, "methods": ["nope"]})
    with pytest.raises(InputError, match=r"evaluate\.swe\.abstain\.methods"):
        run(root, settings, tmp_path / "out", FakePolicy())


def test_the_report_shows_the_abstention_table(evaluated):
    from tasks.reporting.sections import abstention_table

    summary, _, _ = evaluated
    table = abstention_table(summary["abstention"], "local")
    assert [r[0] for r in table.rows] == ["ask_everything", "base_policy"] and table.header[-1] == "backend"
    assert "information insufficient" in table.caption
