"""The held-out discipline: one seeded split per domain by source id, recorded in every case; training sees only the
train split and records its source ids; evaluation never scores a trained policy on a source id it was trained on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml

from tasks.domains.swe import DOMAIN as SWE
from tasks.domains.swe import mask_issue
from tasks.errors import InputError
from tasks.llm.records import RoleConfig
from tasks.params import section
from tasks.rewards.weights import CLARITI_WEIGHTS
from tasks.sftdata import build_rows
from tasks.splits import (
    TRAINING_SOURCES,
    construct_split,
    select,
    split_counts,
    split_frame,
    split_of,
    training_record,
)
from tasks.store import atomic_write_json, jsonl_text
from tasks.swe_samples import load_samples
from tests.conftest import ROOT

PARAMS = yaml.safe_load((ROOT / "params.yaml").read_text())
SWE_PARAMS = {**PARAMS["evaluate"]["swe"], "compare": [["grpo_policy", "sft_policy"]], "methods": [
    {"name": "no_questions"},
    {"name": "sft_policy", "method": "policy", "options": {"adapter": "data/models/sft/adapter"}},
    {"name": "grpo_policy", "method": "policy", "options": {"adapter": "data/models/grpo/adapter"}}]}
"""The default evaluate.swe section with both trained policies (the default run scores only the final one)."""


def default_swe_cases(**overrides):
    """The default SWE cases as construct@swe builds them (params.yaml: construct.swe, the sample issues)."""
    cfg = SWE.parse_params(ROOT / "params.yaml", {**PARAMS["construct"]["swe"], **overrides})
    issues = load_samples(ROOT / cfg.samples_path)
    cases = sorted((c for issue in issues for c in mask_issue(issue, cfg)[0]), key=lambda c: c.case_id)
    return construct_split(cases, cfg.heldout_fraction, cfg.split_seed)


@pytest.fixture(scope="module")
def swe():
    return default_swe_cases()


def test_split_is_deterministic_by_source_id_and_recorded_in_every_case(swe):
    cases, metrics = swe
    assert all(c.metadata.split in ("train", "heldout") for c in cases)
    by_source: dict[str, set] = {}
    for case in cases:
        by_source.setdefault(case.metadata.source_id, set()).add(case.metadata.split)
        assert case.metadata.split == split_of(case.metadata.source_id, 0.3, 2)
    assert all(len(s) == 1 for s in by_source.values())  # every variant of an issue shares its split
    again, _ = default_swe_cases()
    assert [c.metadata.split for c in again] == [c.metadata.split for c in cases]
    other, _ = default_swe_cases(split_seed=7)
    assert [c.metadata.split for c in other] != [c.metadata.split for c in cases]
    assert split_frame(cases)["one_split_per_source"].all()
    # the stage metrics count cases and source ids per split
    assert metrics == {"heldout_fraction": 0.3, "split_seed": 2, **split_counts(cases)}
    assert metrics["train"]["cases"] + metrics["heldout"]["cases"] == len(cases)
    assert metrics["train"]["source_ids"] + metrics["heldout"]["source_ids"] == len(by_source)


def test_default_swe_split_holds_out_enough_issues_and_never_trains_on_them(swe, tmp_path):
    cases, _ = swe
    heldout = [c for c in cases if c.metadata.split == "heldout"]
    assert len(heldout) >= 24 and len({c.metadata.source_id for c in heldout}) >= 8
    rows, failed = build_rows(cases, CLARITI_WEIGHTS, RoleConfig())
    assert failed == 0 and [r.split for r in rows] == [c.metadata.split for c in cases]
    train_ids = {r.instance_id for r in rows if r.split == "train"}
    heldout_ids = {c.metadata.source_id for c in heldout}
    assert train_ids and not train_ids & heldout_ids

    # evaluate@swe with the default split: held-out cases only, enough of them, no overlap with the adapters' ids
    from tasks.evaluation.question_inputs import QuestionSettings, load_question_inputs

    root = project_with_adapters(tmp_path, cases, [r for r in rows if r.split == "train"])
    settings = section(ROOT / "params.yaml", QuestionSettings, SWE_PARAMS, "evaluate.swe")
    inputs = load_question_inputs(root, settings, domain="swe")
    evaluated = {c.metadata.source_id for c in inputs.cases}
    assert len(inputs.cases) >= 24 and len(evaluated) >= 8
    assert all(c.metadata.split == "heldout" for c in inputs.cases) and not evaluated & train_ids
    assert inputs.trained == {"sft_policy": {"trained_on_source_ids": len(train_ids), "overlap": 0},
                              "grpo_policy": {"trained_on_source_ids": len(train_ids), "overlap": 0}}


def train_split_rows(cases) -> list:
    """The SFT rows built from ``cases`` that belong to the training split (what the stand-in adapters learnt)."""
    rows, _ = build_rows(cases, CLARITI_WEIGHTS, RoleConfig())
    return [r for r in rows if r.split == "train"]


def project_with_adapters(tmp_path: Path, cases, train_rows, planted: str | None = None) -> Path:
    """A project folder with the cases and stand-in SFT / GRPO adapters (config + training record, no weights);
    ``planted`` is a source id added to GRPO's record."""
    root = tmp_path / "proj"
    (root / "data" / "cases" / "swe").mkdir(parents=True)
    (root / "data" / "cases" / "swe" / "cases.jsonl").write_text(jsonl_text(cases))
    sft = training_record("sft", train_rows)
    grpo = training_record("grpo", train_rows[:2], inherited=sft["source_ids"] + ([planted] if planted else []))
    for stage, record in (("sft", sft), ("grpo", grpo)):
        atomic_write_json(root / "data" / "models" / stage / "adapter" / "adapter_config.json",
                          {"base_model_name_or_path": "smollm2-135m-instruct"})
        atomic_write_json(root / "data" / "models" / stage / TRAINING_SOURCES, record)
    atomic_write_json(root / "data" / "models" / "grpo" / "stacked_on.json", {"adapters": ["../sft/adapter"]})
    return root


def test_evaluate_swe_refuses_a_policy_trained_on_an_evaluated_issue(swe, tmp_path):
    from tasks.evaluation.question_inputs import QuestionSettings, load_question_inputs

    cases, _ = swe
    train = train_split_rows(cases)
    leaked = next(c.metadata.source_id for c in cases if c.metadata.split == "heldout")
    root = project_with_adapters(tmp_path, cases, train, planted=leaked)
    settings = section(ROOT / "params.yaml", QuestionSettings, SWE_PARAMS, "evaluate.swe")
    with pytest.raises(InputError) as err:
        load_question_inputs(root, settings, domain="swe")
    message = str(err.value)
    assert "grpo_policy" in message and leaked in message and TRAINING_SOURCES in message
    assert "\n" not in message
    # the training split evaluated with a trained policy is refused too, not silently scored
    train_settings = settings.model_copy(update={"split": "train"})
    root_clean = project_with_adapters(tmp_path / "clean", cases, train)
    with pytest.raises(InputError, match="sft_policy"):
        load_question_inputs(root_clean, train_settings, domain="swe")


def test_an_adapter_without_a_training_record_is_refused(swe, tmp_path):
    from tasks.evaluation.question_inputs import QuestionSettings, load_question_inputs

    cases, _ = swe
    root = project_with_adapters(tmp_path, cases, train_split_rows(cases))
    (root / "data" / "models" / "sft" / TRAINING_SOURCES).unlink()
    settings = section(ROOT / "params.yaml", QuestionSettings, SWE_PARAMS, "evaluate.swe")
    with pytest.raises(InputError, match="records no training source ids"):
        load_question_inputs(root, settings, domain="swe")


def test_episode_policy_rows_play_heldout_cases_only_and_stop_on_overlap(swe, tmp_path):
    from tasks.evaluation.runs import EvalSettings, check_policies, plan_units

    cases, _ = swe
    train = train_split_rows(cases)
    root = project_with_adapters(tmp_path, cases, train)
    adapter = str(root / "data" / "models" / "grpo" / "adapter")
    settings = EvalSettings.model_validate({"repeats": 1, "methods": [
        {"name": "freeqa", "protocols": ["open"]},
        {"name": "grpo_policy", "method": "policy", "protocols": ["open"], "options": {"adapter": adapter}}]})
    units = plan_units(cases, settings)
    split_of_case = {c.case_id: c.metadata.split for c in cases}
    assert {split_of_case[u.case_id] for u in units if u.method == "grpo_policy"} == {"heldout"}
    assert len([u for u in units if u.method == "freeqa"]) == len(cases)
    played = check_policies(cases, settings)
    assert played["grpo_policy"]["split"] == "heldout" and played["grpo_policy"]["overlap"] == 0
    assert played["grpo_policy"]["cases"] == len(select(cases, "heldout")) and played["freeqa"]["split"] == "all"
    with pytest.raises(InputError, match="no held-out case"):  # never a policy row that silently plays nothing
        check_policies(select(cases, "train"), settings)

    leaked = next(c.metadata.source_id for c in cases if c.metadata.split == "heldout")
    planted = project_with_adapters(tmp_path / "planted", cases, train, planted=leaked)
    bad = settings.model_copy(update={"methods": [settings.methods[0], settings.methods[1].model_copy(
        update={"options": {"adapter": str(planted / "data" / "models" / "grpo" / "adapter")}})]})
    with pytest.raises(InputError, match=f"grpo_policy.*{leaked}"):
        check_policies(cases, bad)


def test_training_records_only_train_rows_and_grpo_adds_sfts_ids(swe):
    cases, _ = swe
    rows, _ = build_rows(cases, CLARITI_WEIGHTS, RoleConfig())
    train = [r for r in rows if r.split == "train"]
    sft = training_record("sft", train)
    assert sft["source_ids"] == sorted({r.instance_id for r in train}) and len(sft["case_ids"]) == len(train)
    grpo = training_record("grpo", train[:3], inherited=sft["source_ids"])
    assert grpo["source_ids"] == sft["source_ids"] and grpo["case_ids"] == sorted(r.case_id for r in train[:3])
    with pytest.raises(InputError, match="not in the train split"):
        training_record("sft", rows)  # a held-out row among the training rows


def test_the_split_gate_refuses_a_source_with_two_splits(swe):
    from tasks.errors import GateError
    from tasks.validation import gate

    cases, _ = swe
    assert gate("case_splits", split_frame(cases), artifact="data/cases/swe").success
    first = cases[0]
    flipped = first.model_copy(update={"metadata": first.metadata.model_copy(update={
        "case_id": first.case_id + "x", "split": "heldout" if first.metadata.split == "train" else "train"})})
    with pytest.raises(GateError, match="one_split_per_source"):
        gate("case_splits", split_frame([*cases, flipped]), artifact="data/cases/swe")


def test_published_toml_never_carries_the_split():
    from tasks.domains.optimization.or_toml import case_to_toml, read_case

    path = ROOT / "tests" / "data" / "or" / "bakery_001.toml"
    case = read_case(path)
    assert case.metadata.split is None
    assert select([case], "heldout") == [case]  # no split: never trained on, so a policy may play it
    split = case.model_copy(update={"metadata": case.metadata.model_copy(update={"split": "heldout"})})
    published = path.read_text(encoding="utf-8").split("\n", 1)[1]  # the fixture's first line is a comment
    assert case_to_toml(split) == case_to_toml(case) == published
    assert "split" not in case_to_toml(split)


def test_old_sft_split_keys_give_a_migration_error(tmp_path):
    from tasks.params import load_params

    for key, value in (("heldout_fraction", 0.2), ("seed", 0)):
        params = yaml.safe_load((ROOT / "params.yaml").read_text())
        params["sft_data"][key] = value
        path = tmp_path / "params.yaml"
        path.write_text(yaml.safe_dump(params))
        with pytest.raises(InputError) as err:
            load_params(path)
        message = str(err.value)
        assert f"sft_data.{key} was removed" in message and "construct.swe.heldout_fraction" in message
        assert "construct.swe.split_seed" in message and "\n" not in message


def test_every_construct_section_has_split_keys_with_comments():
    text = (ROOT / "params.yaml").read_text()
    for domain in PARAMS["domains"]:
        assert {"heldout_fraction", "split_seed"} <= set(PARAMS["construct"][domain]), domain
    for line in text.splitlines():
        if line.strip().startswith(("heldout_fraction:", "split_seed:", "split: heldout")):
            assert "#" in line, line
    assert json.loads(json.dumps(PARAMS["evaluate"]["swe"]))["split"] == "heldout"


def test_swe_summary_report_and_stage_metrics_state_the_split(swe, tmp_path):
    from tasks.clarifiers.question_methods import PolicyQuestioner, QuestionContext, QuestionPolicyOptions
    from tasks.evaluation.question_inputs import QuestionSettings, load_question_inputs
    from tasks.evaluation.question_lists import evaluate_questions, split_metrics
    from tasks.reporting.sections import split_line
    from tasks.roles.config import RolesParams
    from tests.test_swe_eval import FakePolicy

    cases, _ = swe
    train = train_split_rows(cases)
    root = project_with_adapters(tmp_path, cases, train)
    settings = QuestionSettings.model_validate({"limit": 3, "bootstrap": 50, "methods": [
        {"name": "no_questions"},
        {"name": "sft_policy", "method": "policy", "options": {"adapter": "data/models/sft/adapter"}}]})
    inputs = load_question_inputs(root, settings, domain="swe")
    context = QuestionContext(roles=RolesParams(), weights=inputs.weights, root=root)
    policy = PolicyQuestioner("sft_policy", context, QuestionPolicyOptions(), loader=FakePolicy)
    summary = evaluate_questions(inputs.cases, settings, RolesParams(), tmp_path / "out", root=root, inputs=inputs,
                           methods={"sft_policy": policy})
    n_train = len({r.instance_id for r in train})
    assert summary["split"]["evaluated"] == "heldout" and summary["split"]["heldout"]["cases"] == 3
    assert summary["split"]["train"] == {"cases": 0, "source_ids": 0}
    assert summary["methods"]["sft_policy"]["trained_on_source_ids"] == n_train
    assert summary["methods"]["sft_policy"]["training_overlap"] == 0
    assert "trained_on_source_ids" not in summary["reference_methods"]["no_questions"]  # a bound: a reference row
    report = (tmp_path / "out" / "report.md").read_text()
    assert f"Split: heldout evaluated (3 heldout cases from {summary['issues']} issues); sft_policy trained on " \
           f"{n_train} issues (overlap with the evaluated ones: 0)." in report
    metrics = split_metrics(summary, inputs, settings)
    assert metrics["policies"]["sft_policy"] == {"split": "heldout", "cases": 3, "source_ids": summary["issues"],
                                                 "trained_on_source_ids": n_train, "overlap": 0}
    line = split_line(metrics).text
    assert line.startswith("Split evaluated: heldout (3 heldout cases from") and f"trained on {n_train}" in line
    assert "overlap 0" in line


def test_sft_publishes_its_training_record_with_the_adapter(swe, tmp_path):
    from tasks.splits import read_training_sources
    from tasks.training.prompts import sft_row
    from tasks.training.trainers import train_sft
    from tests.test_training import _tiny_llama, _tiny_profile, _tokenizer

    cases, _ = swe
    rows, _ = build_rows(cases[:12], CLARITI_WEIGHTS, RoleConfig())
    train = [r for r in rows if r.split == "train"]
    record = training_record("sft", train)
    tokenizer = _tokenizer()
    out = tmp_path / "sft"
    train_sft(_tiny_llama(tokenizer), tokenizer, [sft_row(r.incomplete_issue, r.completion[0]["content"])
                                                  for r in train], _tiny_profile(), out,
              records={TRAINING_SOURCES: record})
    assert (out / "adapter" / "adapter_config.json").is_file()
    assert read_training_sources(out / "adapter").model_dump() == record
    assert not set(record["source_ids"]) & {c.metadata.source_id for c in cases if c.metadata.split == "heldout"}
