"""The bad-input corpus (issue 21): every entry point refuses bad input the same way.

Each CLI case runs a flow in-process (``flows.<x>.main([...])``) in a throwaway project that already holds earlier
outputs, and asserts: exit code 2, exactly one ``error:`` line on stderr naming the file (or flag) and the field,
and the project tree byte-identical afterwards (nothing written, earlier outputs untouched). Loader cases (TOML,
SWE-bench datasets, harness reports, adapters) assert the same one-line ``InputError``. No case gets past
validation, so none starts Prefect or plays an episode: the whole corpus takes a few seconds.
"""

from __future__ import annotations

import hashlib
import importlib
import json
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import yaml

from tasks.errors import InputError
from tests.conftest import MINI, ROOT, tiny_params

GOOD_ISSUES = [json.loads(line) for line in MINI.read_text().splitlines()]

# ---- a small, synthetic OR-Clarify 0.3 case (written here, not copied from any data set) ----------------------------

GOOD_TOML = '''[metadata]
schema_version = "0.3"
benchmark = "OR-Clarify"
case_id = "toy_case_001"

[[problem_units]]
id = "U1"
kind = "context"
content = "A bakery plans how many loaves of two breads to bake tomorrow."

[[problem_units]]
id = "U2"
kind = "data"
content = "Rye needs 2 kg of flour per batch and wheat 1 kg; 40 kg of flour are in stock."

[[problem_units]]
id = "U3"
kind = "objective"
content = "Maximise the total profit of the day's baking."

[[hidden_slots]]
slot_id = "H1"
name = "profit_objective"
severity = "P0"
severity_reason = "Without the objective the plan cannot be chosen."
problem_unit_id = "U3"
reference_acceptable_questions = ["What should the plan optimise?", "Is the goal profit or volume?"]
semantic_hit_rule = "Asks what the plan should maximise or minimise."
failure_modes = ["assumes volume"]
simulator_answer = "We want the most profit from the day's baking."

[initial_brief]
visible_unit_ids = ["U1", "U2"]
content = "A bakery plans two breads for tomorrow. Rye needs 2 kg of flour per batch, wheat 1 kg; 40 kg in stock."
'''


def toml_with(old: str, new: str) -> str:
    assert old in GOOD_TOML, old
    return GOOD_TOML.replace(old, new, 1)


PROBLEM = {"problem_id": "toy_problem_1", "title": "Toy", "text": "Plan the bakery's bread for tomorrow."}
UNITS = [{"id": "U1", "kind": "context", "content": "A bakery plans bread."},
         {"id": "U2", "kind": "objective", "content": "Maximise profit."}]
REQUEST = {"id": "toy_request_1", "title": "Toy", "text": "Count the orders placed last week, by country."}


# ---- the throwaway project ---------------------------------------------------------------------------------------


def _jsonl(rows: list) -> str:
    return "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows)


def _swe_cases() -> list[dict]:
    from tasks.domains.swe import mask_issue
    from tasks.params import SweConstructParams
    from tasks.records import IssueRecord

    cases, _ = mask_issue(IssueRecord.model_validate(GOOD_ISSUES[0]), SweConstructParams(variants_per_issue=1))
    return [c.model_dump(mode="json") for c in cases]


@pytest.fixture(scope="module")
def swe_cases() -> list[dict]:
    return _swe_cases()


@pytest.fixture
def repo(tmp_path, monkeypatch, swe_cases) -> Path:
    """dvc.yaml, tiny params, the samples, and earlier outputs of every stage a case could touch."""
    import tomllib

    from tasks.domains.optimization.or_toml import case_from_toml

    root = tmp_path / "repo"
    shutil.copytree(ROOT / "data" / "samples", root / "data" / "samples")
    shutil.copy(ROOT / "dvc.yaml", root / "dvc.yaml")
    params = tiny_params()
    params["evaluate"]["swe"]["methods"] = [{"name": "no_questions"}, {"name": "oracle_template"}]
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    opt_case = case_from_toml(tomllib.loads(GOOD_TOML), Path("toy.toml"))
    earlier = {
        "data/cases/swe/cases.jsonl": _jsonl(swe_cases),
        "data/cases/optimization/cases.jsonl": _jsonl([opt_case.model_dump(mode="json")]),
        "data/cases/optimization/toml/toy_case_001.toml": GOOD_TOML,
        "data/cases/analytics/cases.jsonl": "earlier output\n",
        "data/eval/optimization/metrics.json": '{"earlier": true}\n',
        "data/eval/swe/metrics.json": '{"earlier": true}\n',
        "data/metrics/stages/construct/swe.json": '{"earlier": true}\n',
        "data/sft/train.jsonl": "earlier output\n",
    }
    for rel, text in earlier.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    monkeypatch.chdir(root)
    return root


def tree_hash(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else "dir"
            for p in sorted(root.rglob("*"))}


def edit_params(root: Path, change: Callable[[dict], None]) -> None:
    params = yaml.safe_load((root / "params.yaml").read_text())
    change(params)
    (root / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))


def write(root: Path, rel: str, text: str | bytes) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode())


def samples(domain: str, rows: list) -> Callable[[Path], None]:
    name = {"swe": "swe/issues.jsonl", "optimization": "optimization/problems.jsonl",
            "analytics": "analytics/requests.jsonl"}[domain]
    return lambda root: write(root, f"data/samples/{name}", _jsonl(rows))


def params(change: Callable[[dict], None]) -> Callable[[Path], None]:
    return lambda root: edit_params(root, change)


def set_key(dotted: str, value) -> Callable[[Path], None]:
    def change(p: dict) -> None:
        *parents, last = dotted.split(".")
        for key in parents:
            p = p[key]
        p[last] = value

    return params(change)


def orclarify(*files: str) -> Callable[[Path], None]:
    """OR-Clarify TOML files as construct@optimization's source (``source: orclarify``)."""

    def setup(root: Path) -> None:
        for i, text in enumerate(files, start=1):
            write(root, f"inputs/toml/case_{i}.toml", text)
        edit_params(root, lambda p: p["construct"]["optimization"].update(
            {"source": "orclarify", "orclarify_path": "inputs/toml"}))

    return setup


def measured(report: str | None = '["acme__widgets-t01"]', *, method: str = "no_questions",
             case_id: str | None = None) -> Callable[[Path], None]:
    """A harness report for an exported file of evaluate@swe (``evaluate.swe.measured``)."""

    def setup(root: Path) -> None:
        case = json.loads((root / "data/cases/swe/cases.jsonl").read_text().splitlines()[0])
        row = {"instance_id": GOOD_ISSUES[0]["instance_id"], "problem_statement": case["brief"]["content"],
               "clarifyflow_case_id": case_id or case["metadata"]["case_id"], "clarifyflow_method": method}
        write(root, "inputs/export.jsonl", _jsonl([row]))
        if report is not None:
            write(root, "inputs/report.json", report)
        entry = {"method": "no_questions", "export": "inputs/export.jsonl", "report": "inputs/report.json"}
        edit_params(root, lambda p: p["evaluate"]["swe"].update({"measured": [entry]}))

    return setup


def policy_adapter(config: str | None) -> Callable[[Path], None]:
    """evaluate@swe with a policy method whose adapter folder lacks (None) or holds ``config`` as adapter_config."""

    def setup(root: Path) -> None:
        (root / "inputs/adapter").mkdir(parents=True)
        if config is not None:
            write(root, "inputs/adapter/adapter_config.json", config)
        edit_params(root, lambda p: p["evaluate"]["swe"]["methods"].append(
            {"name": "grpo_policy", "method": "policy", "options": {"adapter": "inputs/adapter"}}))

    return setup


def nothing(root: Path) -> None:
    pass


def both(*steps: Callable[[Path], None]) -> Callable[[Path], None]:
    def setup(root: Path) -> None:
        for step in steps:
            step(root)

    return setup


@dataclass
class Bad:
    flow: str
    argv: list[str]
    setup: Callable[[Path], None]
    expect: tuple[str, ...]
    """Substrings of the one error line: the file (or flag) and the field."""
    limits: dict[str, int] = field(default_factory=dict)
    """``tasks.store`` limits lowered for the case (so a test needs no huge file)."""


C_SWE = ["--domain", "swe"]
C_OPT = ["--domain", "optimization"]
C_ANA = ["--domain", "analytics"]
E_OPT = ["--domain", "optimization"]
E_SWE = ["--domain", "swe"]
ISSUE = GOOD_ISSUES[0]
LONG = "x" * 600_000
HUGE_LINE = json.dumps({**ISSUE, "text": ISSUE["text"] + "y" * (9 * 1024 * 1024)})

CORPUS: dict[str, Bad] = {
    # ---- CLI flags --------------------------------------------------------------------------------------------
    "construct_no_domain": Bad("construct", [], nothing, ("flows.construct", "--domain")),
    "construct_unknown_domain": Bad("construct", ["--domain", "legal"], nothing, ("params.yaml", "'domains'")),
    "construct_missing_params": Bad("construct", [*C_SWE, "--params", "nope.yaml"], nothing,
                                    ("nope.yaml", "file not found")),
    "construct_unknown_flag": Bad("construct", [*C_SWE, "--fast"], nothing, ("flows.construct", "--fast")),
    "evaluate_out_outside": Bad("evaluate", [*E_OPT, "--out", "data/samples"], nothing, ("--out", "data/samples")),
    "evaluate_out_dotdot": Bad("evaluate", [*E_OPT, "--out", "data/eval/optimization/../../cases"], nothing,
                               ("--out", "outside data/eval/optimization")),
    "evaluate_out_absolute": Bad("evaluate", [*E_OPT, "--out", "/tmp"], nothing, ("--out", "/tmp")),
    "evaluate_bad_runner": Bad("evaluate", [*E_OPT, "--runner", "gpu"], nothing, ("flows.evaluate", "--runner")),
    "evaluate_unknown_domain": Bad("evaluate", ["--domain", "legal"], nothing, ("params.yaml", "'evaluate'")),
    "train_bad_stage": Bad("train", ["--stage", "rlhf"], nothing, ("flows.train", "--stage")),
    "new_domain_dotdot": Bad("new_domain", ["../evil"], nothing, ("../evil", "not a valid domain name")),
    "new_domain_absolute": Bad("new_domain", ["/tmp/evil"], nothing, ("/tmp/evil", "not a valid domain name")),
    # ---- params.yaml ------------------------------------------------------------------------------------------
    "params_malformed_yaml": Bad("construct", C_SWE, lambda r: write(r, "params.yaml", "domains: [swe\n"),
                                 ("params.yaml", "malformed YAML")),
    "params_not_a_mapping": Bad("construct", C_SWE, lambda r: write(r, "params.yaml", "- swe\n"),
                                ("params.yaml", "mapping")),
    "params_unknown_top_key": Bad("construct", C_SWE, set_key("bogus", 1), ("params.yaml", "field 'bogus'")),
    "params_unknown_section_key": Bad("construct", C_SWE, set_key("construct.swe.colour", "red"),
                                      ("params.yaml", "field 'construct.swe.colour'")),
    "params_wrong_type": Bad("construct", C_SWE, set_key("construct.swe.limit", "many"),
                             ("params.yaml", "field 'construct.swe.limit'")),
    "params_unknown_source": Bad("construct", C_SWE, set_key("construct.swe.source", "github"),
                                 ("params.yaml", "field 'construct.swe.source'")),
    "params_out_of_range": Bad("construct", C_OPT, set_key("construct.optimization.hide_fraction", 1.5),
                               ("params.yaml", "field 'construct.optimization.hide_fraction'")),
    "params_min_over_max": Bad("construct", C_ANA, set_key("construct.analytics.min_hidden", 9),
                               ("params.yaml", "field 'construct.analytics'", "min_hidden")),
    "params_no_domains": Bad("construct", C_SWE, set_key("domains", []), ("params.yaml", "field 'domains'")),
    "params_removed_key": Bad("sft_data", [], set_key("sft_data.heldout_fraction", 0.2),
                              ("params.yaml", "field 'sft_data'", "heldout_fraction")),
    "params_shap_folds": Bad("shap_stage", [], set_key("shap.folds", 1), ("params.yaml", "field 'shap.folds'")),
    "params_question_analysis_folds": Bad("question_analysis", [], set_key("question_analysis.folds", 1),
                                          ("params.yaml", "field 'question_analysis.folds'")),
    "question_rows_missing": Bad("question_analysis", [], set_key("question_analysis.eval_rows", "inputs/none.jsonl"),
                                 ("none.jsonl", "file not found", "question_analysis.eval_rows")),
    "question_rows_malformed": Bad("question_analysis", [], both(
        lambda root: write(root, "inputs/rows.jsonl", '{"method": "m", "case_id": "c"}\n'),
        set_key("question_analysis.eval_rows", "inputs/rows.jsonl")), ("rows.jsonl", "line 1", "source_id")),
    "question_workbook_required": Bad("question_analysis", [], both(
        lambda root: write(root, "inputs/rows.jsonl", ""), set_key("question_analysis.eval_rows", "inputs/rows.jsonl"),
        set_key("question_analysis.use_workbook", "always"), set_key("question_analysis.workbook", "inputs/no.xlsx")),
        ("no.xlsx", "file not found", "question_analysis.workbook")),
    "params_training_profile": Bad("train", ["--stage", "sft"], set_key("training.profile", "tpu"),
                                   ("params.yaml", "field 'training.profile'")),
    "params_eval_repeats": Bad("evaluate", E_OPT, set_key("evaluate.optimization.repeats", 0),
                               ("params.yaml", "field 'evaluate.optimization.repeats'")),
    "params_eval_runner": Bad("evaluate", E_OPT, set_key("evaluate.optimization.task_runner", "gpu"),
                              ("params.yaml", "field 'evaluate.optimization.task_runner'")),
    "params_eval_missing_section": Bad("evaluate", E_OPT, params(lambda p: p["evaluate"].pop("optimization")),
                                       ("params.yaml", "field 'evaluate.optimization'")),
    "params_eval_unknown_method": Bad("evaluate", E_OPT, set_key("evaluate.optimization.methods",
                                                                 [{"name": "telepathy", "protocols": ["open"]}]),
                                      ("params.yaml", "field 'evaluate.optimization.methods.0'")),
    "params_eval_unknown_case_id": Bad("evaluate", E_OPT, set_key("evaluate.optimization.case_ids", ["nope"]),
                                       ("cases.jsonl", "field 'evaluate.optimization.case_ids'")),
    # ---- unsafe ids that become file names -----------------------------------------------------------------------
    "unsafe_method_dotdot": Bad("evaluate", E_OPT, set_key("evaluate.optimization.methods",
                                                           [{"name": "../up", "method": "freeqa",
                                                             "protocols": ["open"]}]),
                                ("params.yaml", "field 'evaluate.optimization.methods.0.name'", "unsafe id")),
    "unsafe_method_separator": Bad("evaluate", E_SWE, set_key("evaluate.swe.methods",
                                                              [{"name": "a/b", "method": "no_questions"}]),
                                   ("params.yaml", "field 'evaluate.swe.methods.0.name'", "unsafe id")),
    "unsafe_instance_id": Bad("construct", C_SWE, samples("swe", [{**ISSUE, "instance_id": "../etc/passwd"}]),
                              ("issues.jsonl", "record line 1", "field 'instance_id'", "unsafe id")),
    "unsafe_problem_id_separator": Bad("construct", C_OPT, samples("optimization", [{**PROBLEM, "problem_id": "a/b"}]),
                                       ("problems.jsonl", "record line 1", "field 'problem_id'", "unsafe id")),
    "unsafe_problem_id_absolute": Bad("construct", C_OPT,
                                      samples("optimization", [{**PROBLEM, "problem_id": "/etc/x"}]),
                                      ("problems.jsonl", "record line 1", "field 'problem_id'", "unsafe id")),
    "unsafe_record_id_nul": Bad("construct", C_ANA, samples("analytics", [{**REQUEST, "id": "a\u0000b"}]),
                                ("requests.jsonl", "record line 1", "field 'id'", "unsafe id")),
    "unsafe_record_id_newline": Bad("construct", C_ANA, samples("analytics", [{**REQUEST, "id": "a\n"}]),
                                    ("requests.jsonl", "record line 1", "field 'id'", "unsafe id")),
    "unsafe_toml_case_id": Bad("construct", C_OPT, orclarify(toml_with('"toy_case_001"', '"../../escape"')),
                               ("case_1.toml", "field 'metadata.case_id'")),
    "unsafe_export_case_id": Bad("evaluate", E_SWE, measured(case_id=".."),
                                 ("export.jsonl", "record line 1", "field 'clarifyflow_case_id'", "unsafe id")),
    # ---- samples of each domain ------------------------------------------------------------------------------
    "swe_malformed_json": Bad("construct", C_SWE, samples("swe", [ISSUE, '{"instance_id": ']),
                              ("issues.jsonl", "record line 2", "malformed JSON")),
    "swe_not_an_object": Bad("construct", C_SWE, samples("swe", ["[1, 2]"]),
                             ("issues.jsonl", "record line 1", "JSON object")),
    "swe_unknown_field": Bad("construct", C_SWE, samples("swe", [{**ISSUE, "severity": "high"}]),
                             ("issues.jsonl", "record line 1", "field 'severity'")),
    "swe_text_too_long": Bad("construct", C_SWE, samples("swe", [{**ISSUE, "text": LONG, "spans": []}]),
                             ("issues.jsonl", "record line 1", "field 'text'", "at most 500000")),
    "swe_record_too_large": Bad("construct", C_SWE, samples("swe", [HUGE_LINE]),
                                ("issues.jsonl", "record line 1", "field '(record)'", "limit")),
    "swe_too_many_records": Bad("construct", C_SWE, samples("swe", GOOD_ISSUES[:3]),
                                ("issues.jsonl", "record line 3", "more than 2 records"), limits={"MAX_RECORDS": 2}),
    "swe_file_too_large": Bad("construct", C_SWE, nothing,
                              ("issues.jsonl", "over the 100000 bytes limit on input files"),
                              limits={"MAX_FILE_BYTES": 100_000}),
    "swe_non_utf8": Bad("construct", C_SWE, lambda r: write(r, "data/samples/swe/issues.jsonl", b'{"a": "\xe9"}\n'),
                        ("issues.jsonl", "not valid UTF-8")),
    "swe_empty_file": Bad("construct", C_SWE, samples("swe", []), ("issues.jsonl", "no records")),
    "opt_units_empty": Bad("construct", C_OPT, samples("optimization", [{**PROBLEM, "units": []}]),
                           ("problems.jsonl", "record 1 (toy_problem_1)", "field 'units'", "no units")),
    "opt_units_duplicate_id": Bad("construct", C_OPT, samples("optimization", [{**PROBLEM,
                                                                                "units": [UNITS[0], UNITS[0]]}]),
                                  ("problems.jsonl", "record 1 (toy_problem_1)", "field 'units.1.id'")),
    "opt_units_unknown_kind": Bad("construct", C_OPT,
                                  samples("optimization", [{**PROBLEM, "units": [{**UNITS[0], "kind": "wish"}]}]),
                                  ("problems.jsonl", "record 1 (toy_problem_1)", "field 'units.0.kind'")),
    "opt_units_blank_content": Bad("construct", C_OPT,
                                   samples("optimization", [{**PROBLEM, "units": [UNITS[0],
                                                                                  {**UNITS[1], "content": "  "}]}]),
                                   ("problems.jsonl", "record 1 (toy_problem_1)", "field 'units.1.content'")),
    "opt_duplicate_problem": Bad("construct", C_OPT, samples("optimization", [PROBLEM, PROBLEM]),
                                 ("problems.jsonl", "record 2", "field 'problem_id'", "duplicate")),
    "opt_empty_text": Bad("construct", C_OPT, samples("optimization", [{**PROBLEM, "text": " \n"}]),
                          ("problems.jsonl", "record line 1", "field 'text'")),
    "ana_units_empty": Bad("construct", C_ANA, samples("analytics", [{**REQUEST, "units": []}]),
                           ("requests.jsonl", "record 1 (toy_request_1)", "field 'units'", "no units")),
    "ana_units_unknown_kind": Bad("construct", C_ANA,
                                  samples("analytics", [{**REQUEST, "units": [{**UNITS[0], "kind": "wish"}]}]),
                                  ("requests.jsonl", "record 1 (toy_request_1)", "field 'units.0.kind'")),
    "ana_missing_text": Bad("construct", C_ANA, samples("analytics", [{"id": "toy_request_1"}]),
                            ("requests.jsonl", "record line 1", "field 'text'")),
    "ana_text_too_long": Bad("construct", C_ANA, samples("analytics", [{**REQUEST, "text": LONG}]),
                             ("requests.jsonl", "record line 1", "field 'text'", "at most 500000")),
    # ---- OR-Clarify TOML (construct.optimization.source: orclarify) --------------------------------------------
    "toml_unknown_schema_version": Bad("construct", C_OPT, orclarify(toml_with('"0.3"', '"9.9"')),
                                       ("case_1.toml", "field 'metadata.schema_version'", "'9.9'")),
    "toml_schema_version_not_a_string": Bad("construct", C_OPT, orclarify(toml_with('"0.3"', "0.3")),
                                            ("case_1.toml", "field 'metadata.schema_version'")),
    "toml_malformed": Bad("construct", C_OPT, orclarify("[metadata\n"), ("case_1.toml", "malformed TOML")),
    "toml_unknown_kind": Bad("construct", C_OPT, orclarify(toml_with('kind = "objective"', 'kind = "wish"')),
                             ("case_1.toml", "field 'problem_units.2.kind'")),
    "toml_hidden_unit_missing": Bad("construct", C_OPT, orclarify(toml_with('problem_unit_id = "U3"',
                                                                            'problem_unit_id = "U9"')),
                                    ("case_1.toml", "field 'hidden_slots.0.problem_unit_id'")),
    "toml_hidden_also_visible": Bad("construct", C_OPT, orclarify(toml_with('["U1", "U2"]', '["U1", "U3"]')),
                                    ("case_1.toml", "field 'initial_brief.visible_unit_ids'")),
    "toml_unknown_severity": Bad("construct", C_OPT, orclarify(toml_with('severity = "P0"', 'severity = "P9"')),
                                 ("case_1.toml", "field 'hidden_slots.0.severity'")),
    "toml_duplicate_case": Bad("construct", C_OPT, orclarify(GOOD_TOML, GOOD_TOML),
                               ("case_2.toml", "field 'metadata.case_id'", "duplicate")),
    "toml_empty_content": Bad("construct", C_OPT, orclarify(toml_with('"Maximise the total profit of the day\'s '
                                                                      'baking."', '"  "')),
                              ("case_1.toml", "field 'problem_units.2.content'")),
    # ---- evaluation inputs: cases, harness reports, adapters ---------------------------------------------------
    "eval_case_hidden_unit_missing": Bad("evaluate", E_OPT, lambda r: write(
        r, "data/cases/optimization/cases.jsonl",
        (r / "data/cases/optimization/cases.jsonl").read_text().replace('"unit_ids":["U3"]', '"unit_ids":["U9"]')
        .replace('"unit_ids": ["U3"]', '"unit_ids": ["U9"]')),
        ("cases.jsonl", "record 1 (toy_case_001)", "field 'hidden_slots.0.unit_ids'")),
    "harness_report_malformed": Bad("evaluate", E_SWE, measured("{not json"), ("report.json", "malformed JSON")),
    "harness_report_wrong_shape": Bad("evaluate", E_SWE, measured('{"ok": 1}'),
                                      ("report.json", "field 'resolved_ids'")),
    "harness_report_ids_not_strings": Bad("evaluate", E_SWE, measured("[1, 2]"),
                                          ("report.json", "field '(top-level list)'")),
    "harness_report_missing": Bad("evaluate", E_SWE, measured(None), ("report.json", "file not found")),
    "harness_export_wrong_method": Bad("evaluate", E_SWE, measured(method="oracle_template"),
                                       ("export.jsonl", "field 'clarifyflow_method'")),
    "adapter_without_config": Bad("evaluate", E_SWE, policy_adapter(None),
                                  ("inputs/adapter", "field 'evaluate.swe.methods.2.options.adapter'")),
    "adapter_corrupt_config": Bad("evaluate", E_SWE, policy_adapter("{not json"),
                                  ("adapter_config.json", "malformed JSON")),
    "adapter_config_not_object": Bad("evaluate", E_SWE, policy_adapter("[]"),
                                     ("adapter_config.json", "expected a JSON object")),
    "adapter_missing_episodes": Bad("evaluate", E_OPT, set_key("evaluate.optimization.methods", [
        {"name": "grpo_policy", "method": "policy", "protocols": ["open"], "options": {"adapter": "no/such"}}]),
        ("evaluate.methods.grpo_policy", "field 'adapter'", "folder not found")),
}


def _run(flow: str, argv: list[str]) -> int:
    module = importlib.import_module(f"flows.{flow}")
    try:
        return module.main(argv)
    except SystemExit as stop:
        return stop.code


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_bad_input_is_refused_with_one_line_and_nothing_written(repo, name, capsys, monkeypatch):
    case = CORPUS[name]
    case.setup(repo)
    for limit, value in case.limits.items():
        monkeypatch.setattr(f"tasks.store.{limit}", value)
    before = tree_hash(repo)
    capsys.readouterr()
    prefect_before = "prefect" in sys.modules  # another test in this worker process may have imported it
    flow_module = importlib.import_module(f"flows.{case.flow}")
    if hasattr(flow_module, "build_flow"):
        def reached_prefect():
            raise AssertionError("a bad input got past validation into Prefect")

        monkeypatch.setattr(flow_module, "build_flow", reached_prefect)
    code = _run(case.flow, case.argv)
    out = capsys.readouterr()
    lines = out.err.strip().splitlines()
    assert code == 2, out.err
    assert len(lines) == 1, out.err
    assert lines[0].startswith("error: "), lines[0]
    for part in case.expect:
        assert part in lines[0], (part, lines[0])
    assert tree_hash(repo) == before, "the flow wrote or changed files"
    assert prefect_before or "prefect" not in sys.modules, "a bad input got past validation into Prefect"


def test_the_corpus_covers_every_entry_point():
    assert len(CORPUS) >= 40
    flows = {c.flow for c in CORPUS.values()}
    assert {"construct", "evaluate", "sft_data", "shap_stage", "train", "new_domain"} <= flows


# ---- in-process loaders ----------------------------------------------------------------------------------------


def _one_line(err: InputError, *parts: str) -> None:
    text = str(err)
    assert "\n" not in text, text
    for part in parts:
        assert part in text, (part, text)


def _swebench_rows(**changes) -> list[dict]:
    row = {"instance_id": "acme__widgets-1", "repo": "acme/widgets", "problem_statement": ISSUE["text"],
           "hints_text": ""}
    row.update(changes)
    return [row]


SWEBENCH = {
    "jsonl_unsafe_id": ("jsonl", _swebench_rows(instance_id="a/../b"), "field 'instance_id'"),
    "parquet_unsafe_id": ("parquet", _swebench_rows(instance_id="/abs"), "field 'instance_id'"),
    "parquet_missing_column": ("parquet", [{"instance_id": "acme__widgets-1", "text": "x"}],
                               "field 'problem_statement'"),
    "jsonl_text_too_long": ("jsonl", _swebench_rows(problem_statement=LONG), "field 'text'"),
    "jsonl_bad_category_mapping": ("jsonl", _swebench_rows(category_mapping="{not json"), "field 'category_mapping'"),
    "unsupported_suffix": ("txt", _swebench_rows(), "unsupported data file"),
}


@pytest.mark.parametrize("name", sorted(SWEBENCH))
def test_swebench_dataset_is_refused(tmp_path, name):
    import pandas as pd

    from tasks.domains.swe import load_swebench

    kind, rows, expected = SWEBENCH[name]
    path = tmp_path / f"data.{kind}"
    if kind == "parquet":
        pd.DataFrame(rows).to_parquet(path)
    else:
        path.write_text(_jsonl(rows))
    before = tree_hash(tmp_path)
    with pytest.raises(InputError) as err:
        load_swebench(str(path), "test", tmp_path)
    _one_line(err.value, path.name, expected)
    assert tree_hash(tmp_path) == before


def test_toml_with_unknown_schema_version_is_never_rewritten(tmp_path):
    from tasks.domains.optimization.or_toml import read_case

    path = tmp_path / "case.toml"
    path.write_text(toml_with('"0.3"', '"9.9"'))
    with pytest.raises(InputError) as err:
        read_case(path)
    _one_line(err.value, "case.toml", "field 'metadata.schema_version'", "unsupported schema version '9.9'")
    assert path.read_text() == toml_with('"0.3"', '"9.9"')


def test_eval_cases_with_visible_and_hidden_unit_are_refused(tmp_path):
    import tomllib

    from tasks.domains.optimization.or_toml import case_from_toml
    from tasks.evaluation.runs import load_cases

    case = case_from_toml(tomllib.loads(GOOD_TOML), Path("toy.toml")).model_dump(mode="json")
    case["brief"]["visible_unit_ids"] = ["U1", "U3"]
    path = tmp_path / "cases.jsonl"
    path.write_text(_jsonl([case]))
    with pytest.raises(InputError) as err:
        load_cases(path)
    _one_line(err.value, "cases.jsonl", "record 1 (toy_case_001)", "field 'brief.visible_unit_ids.1'", "both")


def test_adapter_base_refuses_a_corrupt_config(tmp_path):
    from tasks.training.policy import adapter_base, stacked_on

    (tmp_path / "adapter").mkdir()
    (tmp_path / "adapter" / "adapter_config.json").write_text("{oops")
    with pytest.raises(InputError) as err:
        adapter_base(tmp_path / "adapter")
    _one_line(err.value, "adapter_config.json", "malformed JSON")
    (tmp_path / "stacked_on.json").write_text('{"adapters": "sft"}')
    with pytest.raises(InputError) as err:
        stacked_on(tmp_path / "adapter")
    _one_line(err.value, "stacked_on.json", "field 'adapters'")


def test_malformed_llm_reply_is_a_recorded_failure_not_a_crash():
    """A litellm reply that is not JSON (mock provider): retried, then one RoleFailure per item, no exception."""
    import time

    from tasks.domains.swe import annotate_chunk
    from tasks.llm.providers import ensure_registered
    from tasks.llm.providers.mock import MockScript, register
    from tasks.llm.records import RoleConfig

    ensure_registered()
    model = register(f"corpus-bad-json-{time.time_ns()}", MockScript(outputs=['{"spans": [', "not json at all"]))
    raw = [{k: v for k, v in ISSUE.items() if k not in ("spans", "present")}]
    out = annotate_chunk(raw, RoleConfig(backend="llm", model=model, max_regenerations=1).model_dump(mode="json"))
    assert out["issues"] == []
    assert [f["kind"] for f in out["failures"]] == ["invalid_output"]
