"""The runs table: simulated outcomes, the three builders, and the checks that stop a bad table."""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tasks.categories import Category
from tasks.errors import InputError
from tasks.infovalue import COLUMNS, FEATURES, KEY, RunRow, runs
from tasks.records import Brief, Case, CaseMetadata, HiddenSlot, Unit
from tests.conftest import SHARED

PAPER_ORDER = ["error_info", "implementation", "version_env", "expected_behavior", "reproduction", "external_refs"]


@pytest.fixture(scope="module")
def big() -> pd.DataFrame:
    return runs.simulate_runs(n_variants=5000, agent_models=["sim-a", "sim-b"], seed=0)


# ---- simulated outcomes ----------------------------------------------------------------------------------------------


def test_simulated_table_shape_and_types():
    df = runs.simulate_runs(n_variants=40, agent_models=["m1", "m2", "m3"], seed=1)
    assert list(df.columns) == list(COLUMNS)
    assert len(df) == 120
    assert df["variant_id"].iloc[0] == "sim-000000" and df["instance_id"].iloc[-1] == "sim-i000039"
    assert set(df["condition"]) == {"simulated"} and set(df["repo"]) == {""}
    assert set(df["agent_model"]) == {"m1", "m2", "m3"}
    for column in (*FEATURES, "resolved"):
        assert df[column].dtype == np.int64 and set(df[column]) <= {0, 1}
    assert not df.duplicated(subset=list(KEY)).any()
    assert (df[list(FEATURES)].sum(axis=1) <= len(FEATURES) - 1).all(), "every variant hides at least one category"
    RunRow(**df.iloc[0].to_dict())
    # every model sees the same variant
    assert (df.groupby("variant_id")[list(FEATURES)].nunique() == 1).all().all()
    assert "simulated outcomes" in df.attrs["source"]


def test_simulated_is_deterministic():
    a = runs.simulate_runs(n_variants=300, agent_models=["x", "y"], seed=7)
    b = runs.simulate_runs(n_variants=300, agent_models=["x", "y"], seed=7)
    c = runs.simulate_runs(n_variants=300, agent_models=["x", "y"], seed=8)
    pd.testing.assert_frame_equal(a, b)
    assert not a["resolved"].equals(c["resolved"])


def test_defaults_plant_the_papers_ranking():
    assert runs.planted_ranking() == PAPER_ORDER
    effects = [runs.DEFAULT_EFFECTS[c] for c in PAPER_ORDER]
    assert min(a - b for a, b in pairwise(effects)) >= 0.39


def test_planted_ordering_is_visible_in_raw_success_rates(big):
    gap = {c: big.loc[big[c] == 1, "resolved"].mean() - big.loc[big[c] == 0, "resolved"].mean() for c in FEATURES}
    assert sorted(FEATURES, key=gap.get, reverse=True) == PAPER_ORDER
    assert gap["external_refs"] > -0.02
    assert 0.3 < big["resolved"].mean() < 0.7
    assert abs(big["error_info"].mean() - 0.5) < 0.03


def test_per_model_offsets(big):
    offsets = runs.model_offsets(["sim-a", "sim-b"], seed=0)
    assert offsets == big.attrs["model_offsets"]
    assert all(abs(v) <= runs.MODEL_OFFSET_RANGE for v in offsets.values())
    assert runs.model_offsets(["sim-b"], seed=0)["sim-b"] == offsets["sim-b"], "a model's offset ignores the others"
    assert runs.model_offsets(["sim-a"], seed=1)["sim-a"] != offsets["sim-a"]
    rate = big.groupby("agent_model")["resolved"].mean()
    high, low = sorted(offsets, key=offsets.get, reverse=True)
    assert offsets[high] - offsets[low] > 0.2
    assert rate[high] > rate[low] + 0.03


def test_custom_effects_and_bad_simulation_params():
    flat = dict.fromkeys(FEATURES, 0.0)
    df = runs.simulate_runs(n_variants=2000, agent_models=["m"], effects={**flat, "external_refs": 3.0},
                            intercept=-1.5, noise=0.0, seed=3)
    gap = {c: df.loc[df[c] == 1, "resolved"].mean() - df.loc[df[c] == 0, "resolved"].mean() for c in FEATURES}
    assert max(gap, key=gap.get) == "external_refs"
    with pytest.raises(InputError) as err:
        runs.simulate_runs(10, ["m"], effects={**flat, "difficulty": 1.0})
    assert err.value.field == "effects"
    with pytest.raises(InputError) as err:
        runs.simulate_runs(10, ["m", "m"])
    assert err.value.field == "agent_models"


# ---- validation ------------------------------------------------------------------------------------------------------


def _small(n: int = 40) -> pd.DataFrame:
    return runs.simulate_runs(n_variants=n, agent_models=["m1", "m2"], seed=2)


def _raises(df: pd.DataFrame, field: str, **kw) -> InputError:
    with pytest.raises(InputError) as err:
        runs.validate_runs(df, "runs.csv", **kw)
    assert err.value.field == field, str(err.value)
    assert str(err.value).startswith("runs.csv") and "\n" not in str(err.value)
    return err.value


def test_valid_table_passes_and_is_typed():
    df = _small()
    loose = df.astype(dict.fromkeys(FEATURES, "float64"))
    out = runs.validate_runs(loose, "runs.csv", min_per_class=5)
    assert list(out.columns) == list(COLUMNS)
    assert out["error_info"].dtype == np.int64
    pd.testing.assert_frame_equal(out, df)


def test_missing_column():
    _raises(_small().drop(columns=["reproduction"]), "reproduction", min_per_class=1)
    _raises(_small().drop(columns=["agent_model"]), "agent_model", min_per_class=1)


@pytest.mark.parametrize("bad", [2, "yes", 0.5, None])
def test_non_binary_feature(bad):
    df = _small().astype({"version_env": object})
    df.loc[3, "version_env"] = bad
    err = _raises(df, "version_env", min_per_class=1)
    assert "non-binary" in err.message and err.record.startswith("row 4")


@pytest.mark.parametrize("bad", [2, "yes", -1])
def test_non_binary_label(bad):
    df = _small().astype({"resolved": object})
    df.loc[0, "resolved"] = bad
    _raises(df, "resolved", min_per_class=1)


def test_unknown_category_column():
    err = _raises(_small().assign(stacktrace_info=0), "stacktrace_info", min_per_class=1)
    assert "unknown category" in err.message
    assert "unknown category" in _raises(_small().assign(Screenshots=1), "Screenshots", min_per_class=1).message
    assert "unexpected column" in _raises(_small().assign(notes="x"), "notes", min_per_class=1).message


def test_duplicate_keys():
    df = _small()
    df = pd.concat([df, df.iloc[[5]]], ignore_index=True)
    err = _raises(df, ",".join(KEY), min_per_class=1)
    assert "sim-000002" in err.message


def test_empty_id():
    df = _small()
    df.loc[2, "variant_id"] = ""
    _raises(df, "variant_id", min_per_class=1)


def test_only_one_class():
    err = _raises(_small().assign(resolved=1), "resolved", min_per_class=1)
    assert "only one class" in err.message
    _raises(_small().assign(resolved=0), "resolved", min_per_class=1)
    _raises(_small().iloc[0:0], "resolved")


def test_too_few_of_a_class():
    df = _small(40).assign(resolved=0)
    df.loc[:4, "resolved"] = 1
    err = _raises(df, "resolved")  # default min_per_class = 10
    assert "5 resolved" in err.message
    assert runs.validate_runs(df, "runs.csv", min_per_class=5)["resolved"].sum() == 5


def test_gx_expectations_are_plain_dicts():
    frame, expectations = runs.runs_table_for_gx(_small(), min_per_class=10)
    assert all(isinstance(e, dict) and e["type"].startswith("expect_") for e in expectations)
    in_set = {e["column"] for e in expectations if e["type"] == "expect_column_values_to_be_in_set"}
    assert in_set == {*FEATURES, "resolved"}
    assert {"type": "expect_compound_columns_to_be_unique", "column_list": list(KEY)} in expectations
    assert (frame["unresolved"] == 1 - frame["resolved"]).all()


# ---- harness results -------------------------------------------------------------------------------------------------


def _case(instance: str, hidden: list[Category], visible: list[Category]) -> Case:
    cid = f"{instance}__{'+'.join(c.key for c in hidden)}"
    units = [Unit(id=f"U{i}", kind=c.key, content=f"made-up {c.key} text", category=c)
             for i, c in enumerate(hidden + visible, start=1)]
    return Case(
        metadata=CaseMetadata(benchmark="test", case_id=cid, domain="swe", source_id=instance),
        units=units,
        hidden_slots=[HiddenSlot(slot_id=f"H{i}", name=c.key, category=c, unit_ids=[f"U{i}"],
                                 simulator_answer=f"made-up {c.key} text") for i, c in enumerate(hidden, start=1)],
        brief=Brief(content="A toy widget crashes.", visible_unit_ids=[]),
        full_text="A toy widget crashes. More words.",
        present_categories=hidden + visible,
        hidden_categories=hidden,
        visible_categories=visible,
        extra={"repo": "toy/widgets"},
    )


def _write_cases(path: Path, cases: list[Case]) -> Path:
    path.write_text("".join(c.model_dump_json() + "\n" for c in cases))
    return path


E, R, X, I = Category.ERROR, Category.REPRODUCTION, Category.EXPECTED, Category.IMPLEMENTATION  # noqa: E741


@pytest.fixture
def variant_cases(tmp_path: Path) -> Path:
    return _write_cases(tmp_path / "cases.jsonl", [
        _case("toy__w-1", [E], [R, X]),
        _case("toy__w-1", [R], [E, X]),
        _case("toy__w-2", [I], [E]),
    ])


@pytest.mark.parametrize("shape", ["list", "report", "old"])
def test_harness_case_ids_in_each_shape(tmp_path, variant_cases, shape):
    ids = ["toy__w-1__reproduction", "toy__w-2__implementation"]
    data = {"list": ids, "report": {"resolved_ids": ids, "resolved_instances": 2}, "old": {"resolved": ids}}[shape]
    report = tmp_path / "report.json"
    report.write_text(json.dumps(data))
    df = runs.harness_runs(variant_cases, report, "toy-agent")
    assert list(df.columns) == list(COLUMNS)
    assert df.attrs["matched_on"] == "case_id"
    got = dict(zip(df["variant_id"], df["resolved"]))
    assert got == {"toy__w-1__error_info": 0, "toy__w-1__reproduction": 1, "toy__w-2__implementation": 1}
    row = df.set_index("variant_id").loc["toy__w-1__error_info"]
    assert (row["error_info"], row["reproduction"], row["expected_behavior"], row["implementation"]) == (0, 1, 1, 0)
    assert row["instance_id"] == "toy__w-1" and row["repo"] == "toy/widgets" and row["agent_model"] == "toy-agent"


def test_harness_submitted_ids_restrict_the_rows(tmp_path, variant_cases):
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"resolved_ids": ["toy__w-2__implementation"],
                                  "submitted_ids": ["toy__w-2__implementation", "toy__w-1__error_info"]}))
    df = runs.harness_runs(variant_cases, report, "toy-agent")
    assert sorted(df["variant_id"]) == ["toy__w-1__error_info", "toy__w-2__implementation"]
    assert df.attrs["dropped"] == {"not_submitted": 1}


def test_harness_instance_ids(tmp_path):
    cases = _write_cases(tmp_path / "cases.jsonl", [_case("toy__w-1", [E], [R]), _case("toy__w-2", [X], [E])])
    report = tmp_path / "report.json"
    report.write_text(json.dumps({"toy__w-2": {"resolved": True}, "toy__w-1": {"resolved": False}}))
    df = runs.harness_runs(cases, report, "toy-agent")
    assert df.attrs["matched_on"] == "source_id"
    assert dict(zip(df["instance_id"], df["resolved"])) == {"toy__w-1": 0, "toy__w-2": 1}


def test_harness_instance_ids_with_several_variants_are_ambiguous(tmp_path, variant_cases):
    report = tmp_path / "report.json"
    report.write_text(json.dumps(["toy__w-1"]))
    with pytest.raises(InputError, match="several variants") as err:
        runs.harness_runs(variant_cases, report, "toy-agent")
    assert err.value.field == "resolved_ids"


@pytest.mark.parametrize("content", ['{"total": 3}', '["unrelated__x-9"]', "{not json", '{"resolved_ids": [1, 2]}'])
def test_harness_bad_report(tmp_path, variant_cases, content):
    report = tmp_path / "report.json"
    report.write_text(content)
    with pytest.raises(InputError) as err:
        runs.harness_runs(variant_cases, report, "toy-agent")
    assert str(err.value).startswith(str(report))


# ---- Ambig-SWE (toy files written here; the real ones below are realdata) -------------------------------------------


def test_ambig_swe_missing_model_column(tmp_path):
    for cond in runs.CONDITIONS:
        pd.DataFrame({"instance_id": ["toy__w-1"], "problem_statement": ["A toy widget crashes."],
                      "agent-x": [1]}).to_csv(tmp_path / f"{cond}.csv", index=False)
    with pytest.raises(InputError) as err:
        runs.ambig_swe_runs(tmp_path, tmp_path / "none.xlsx", models=["agent-y"])
    assert err.value.field == "agent-y"
    pd.DataFrame({"instance_id": ["toy__w-1"], "problem_statement": ["x"], "agent-x": ["yes"]}).to_csv(
        tmp_path / "underspecified.csv", index=False)
    with pytest.raises(InputError) as err:
        runs.ambig_swe_runs(tmp_path, tmp_path / "none.xlsx")
    assert err.value.field == "agent-x" and "underspecified.csv" in err.value.path


@pytest.mark.realdata
def test_ambig_swe_with_workbook_presence():
    ambig, workbook = SHARED / "data" / "ambig-swe", SHARED / "data" / "clariti" / "data.xlsx"
    removed = ["error_info", "reproduction", "expected_behavior"]
    df = runs.ambig_swe_runs(ambig, workbook, presence="workbook", removed_in_underspecified=removed, models=None)
    assert list(df.columns) == list(COLUMNS)
    counts = df.groupby(["condition", "agent_model"]).size()
    assert len(counts) == 12
    assert counts.between(480, 500).all(), counts
    assert set(df["resolved"]) == {0, 1}
    for column in (*FEATURES, "resolved"):
        assert set(df[column]) <= {0, 1}
    assert (df.loc[df["condition"] != "fully-specified", removed] == 0).all().all()
    full = df[df["condition"] == "fully-specified"]
    assert full[removed].to_numpy().sum() > 0
    assert (df["variant_id"] == df["instance_id"] + "__" + df["condition"]).all()
    assert df.attrs["dropped"].get("unannotated_in_workbook", 0) > 0
    checked = runs.validate_runs(df, ambig)
    assert len(checked) == len(df)


def _gx_run(frame: pd.DataFrame, expectations: list[dict]) -> dict[str, bool]:
    import great_expectations as gx

    from tasks.validation.gate import _quiet_context

    ctx = _quiet_context()
    batch = (ctx.data_sources.add_pandas("runs_src").add_dataframe_asset("runs_asset")
             .add_batch_definition_whole_dataframe("runs_batch").get_batch(batch_parameters={"dataframe": frame}))
    suite = gx.ExpectationSuite(name="runs_test", expectations=runs.gx_expectation_objects(expectations))
    result = batch.validate(suite, result_format="SUMMARY")
    return {f"{r.expectation_config.type}:{r.expectation_config.kwargs.get('column', '')}": r.success
            for r in result.results}


@pytest.mark.slow  # GX import and an ephemeral context: several seconds
def test_gx_expectations_pass_on_a_good_table_and_catch_a_bad_one():
    good = _small()
    results = _gx_run(*runs.runs_table_for_gx(good, min_per_class=5))
    assert all(results.values()), [k for k, ok in results.items() if not ok]
    bad = good.astype({"implementation": object}).assign(resolved=1)
    bad.loc[0, "implementation"] = "yes"
    results = _gx_run(*runs.runs_table_for_gx(bad, min_per_class=5))
    failed = {k for k, ok in results.items() if not ok}
    assert {"expect_column_values_to_be_in_set:implementation", "expect_column_distinct_values_to_equal_set:resolved",
            "expect_column_sum_to_be_between:unresolved"} <= failed
