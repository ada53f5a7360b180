"""The combined report: the HTML page opens offline, Markdown and HTML carry the same tables, absent stages read
"not run yet", reruns are byte-identical, and the report flow works in a project copy."""

from __future__ import annotations

import base64
import json
import re
import struct
import zlib
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tasks.llm.records import RoleConfig
from tasks.reporting import ReportInputs, build_report, flatten, render_html, render_markdown, write_report
from tasks.reporting.inputs import load_gate_results
from tasks.reporting.model import Table
from tasks.roles.config import RolesParams, describe_roles
from tasks.text import fmt

STAGES = ["construct@swe", "construct@optimization", "shap", "sft_data", "sft", "grpo", "evaluate@optimization",
          "evaluate@swe"]


def tiny_png(red: int = 200) -> bytes:
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(bytes([0, red, 10, 10])))
            + chunk(b"IEND", b""))


def _write(root: Path, rel: str, content: object) -> None:
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content if isinstance(content, str) else json.dumps(content, indent=2, sort_keys=True))


def _gate_result(suite: str, failed: list[tuple[str, str]] = (), passed: int = 3) -> dict:
    results = [{"success": True, "expectation_config": {"type": "expect_table_row_count_to_be_between", "kwargs": {}}}]
    results += [{"success": False, "expectation_config": {"type": t, "kwargs": {"column": c}}} for t, c in failed]
    return {"suite_name": suite, "success": not failed, "results": results,
            "statistics": {"evaluated_expectations": passed + len(failed), "successful_expectations": passed},
            "meta": {"batch_markers": {"ge_load_time": "20260101T000000.000000Z"}}}


def seed_outputs(root: Path, *, with_swe_eval: bool = False) -> None:
    """Stage outputs as the stages write them (numbers made up for the test), one stage per kind of section."""
    stages = root / "data" / "metrics" / "stages"
    _write(stages, "construct/swe.json", {"backend": "rules: span removal", "cases": 8, "issues": 4,
                                          "source": "samples",
                                          "hidden_per_category": {"error_info": 3, "reproduction": 2}})
    _write(stages, "construct/optimization.json", {
        "backend": "rules: eligibility filter", "cases": 4, "problems": 4, "hidden_slots": 9, "source": "samples",
        "roles": {"decomposer": {"backend": "local", "requests": 4, "cache_hits": 0},
                  "slot_annotator": {"backend": "llm", "requests": 9, "cache_hits": 2, "cost_usd": 0.0125}}})
    _write(stages, "shap.json", {"backend": "lightgbm + TreeSHAP on simulated outcomes", "source": "simulated",
                                 "runs": 600, "cv": {"auc": 0.81234, "brier": 0.17, "folds": 5},
                                 "weights": {"error_info": 1.0, "reproduction": 0.25}})
    _write(stages, "sft_data.json", {"backend": "question_writer role (local)", "rows": 8, "train": 6, "heldout": 2})
    _write(stages, "sft.json", {"backend": "TRL SFT + LoRA, profile cpu", "steps": 1, "final_loss": 2.5})
    _write(stages, "grpo.json", {"backend": "TRL GRPO + LoRA, profile cpu", "steps": 1,
                                 "final_rewards": {"staged_total": 0.41, "diversity": 0.5}})
    _write(stages, "evaluate/optimization.json", {
        "backend": "local backends for every evaluation role, served at http://10.1.2.3:8000",
        "cases": 2, "episodes": 6,
        "rows": {"open::freeqa": {"RunCount": 2, "AllSlotExactRestoreRate": 0.5, "PrematureStopRate": None},
                 "open::interopt": {"RunCount": 2, "AllSlotExactRestoreRate": 1.0, "PrematureStopRate": 0.0}},
        "reference_rows": {"open::oracle": {"RunCount": 2, "AllSlotExactRestoreRate": 1.0, "PrematureStopRate": 0.0,
                                            "reference": {"kind": "privileged", "reads": "the hidden slots"}}}})
    _write(stages, "scheduler.json", {"backend": "cron", "runs_per_day": 1})  # a stage with no dedicated section
    _write(root, "data/shap/weights.json", {
        "source": "simulated outcomes", "categories": {
            "error_info": {"weight": 1.0, "ci_low": 1.0, "ci_high": 1.0, "rank": 1},
            "reproduction": {"weight": 0.25, "ci_low": 0.2, "ci_high": 0.3, "rank": 2}},
        "exact_shapley": {"weights": {"error_info": 1.0, "reproduction": 0.3}},
        "paper_weights_for_comparison": {"error_info": 1.0, "reproduction": 0.42}})
    for rel in ("data/shap/plots/weights.png", "data/shap/plots/beeswarm.png", "data/models/sft/loss.png",
                "data/models/grpo/loss.png", "data/models/grpo/rewards.png", "data/eval/optimization/recovery.png"):
        _write(root, rel, tiny_png(len(rel)))
    _write(root, "data/shap/plots/notes.png", b"not a png")  # skipped: the page embeds PNGs only
    _write(root, "data/eval/optimization/summary.json", {"rows": {
        "open::freeqa": {"RunCount": 2, "CI95": {"AllSlotExactRestoreRate": [0.25, 0.75]}},
        "open::interopt": {"RunCount": 2, "CI95": {"AllSlotExactRestoreRate": [1.0, 1.0]}}}, "reference_rows": {
        "open::oracle": {"RunCount": 2, "CI95": {"AllSlotExactRestoreRate": [0.9, 1.0]},
                         "reference": {"kind": "privileged", "reads": "the hidden slots"}}}})
    _write(root, "data/eval/optimization/run_config.json", {
        "cases": "data/cases/optimization/cases.jsonl", "repeats": 3,
        "methods": [{"name": "freeqa"}, {"name": "interopt"}]})
    _write(root, "data/eval/optimization/report.md", "# InterOPT Evaluation Report\n")
    if with_swe_eval:
        _write(stages, "evaluate/swe.json", {"backend": "swe_user (local)", "methods": {
            "oracle": {"questions_per_issue": {"mean": 2.0, "ci_low": 1.5, "ci_high": 2.5},
                       "distinct_intents": {"mean": 0.75, "ci_low": 0.5, "ci_high": 1.0},
                       "category_share": {"error_info": 0.4}}}})
        _write(root, "data/eval/swe/categories.png", tiny_png(7))
    results = root / ".cache" / "gx" / "results"
    _write(results, "data_cases_swe.json", _gate_result("swe_cases"))
    _write(results, "data_shap_runs.csv.json",
           _gate_result("shap_runs", [("expect_column_values_to_be_in_set", "resolved")]))
    _write(results, "data_report.json", _gate_result("report_metrics"))
    (root / "data" / "cases" / "swe").mkdir(parents=True, exist_ok=True)
    _write(root, "data/shap/runs.csv", "a\n")


def roles() -> dict:
    llm = RoleConfig(backend="llm", model="openai/gpt-4o-mini", temperature=0.2)
    return describe_roles(RolesParams(slot_annotator=llm))


def inputs_for(root: Path) -> ReportInputs:
    return ReportInputs.load(root, roles(), ["swe", "optimization"])


class Page(HTMLParser):
    """Sections, images, links and table rows of an HTML page."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.sections: dict[str, dict] = {}
        self.stack: list[str] = []
        self.imgs: list[str] = []
        self.refs: list[str] = []
        self.tables: list[list[list[str]]] = []
        self.tags: set[str] = set()
        self.section_tags = 0
        self._row: list[str] | None = None
        self._cell: list[str] | None = None
        self.feed(text)
        self.close()

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        self.tags.add(tag)
        self.refs += [v for k, v in attrs if k in ("href", "src", "action", "srcset", "data")]
        if tag == "section":
            self.section_tags += 1
            self.sections[a["id"]] = {"stage": a.get("data-stage"), "status": a.get("data-status"), "text": []}
            self.stack.append(a["id"])
        elif tag == "img":
            self.imgs.append(a.get("src", ""))
        elif tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag == "section":
            self.stack.pop()
        elif tag in ("td", "th"):
            self._row.append("".join(self._cell))
            self._cell = None
        elif tag == "tr":
            self.tables[-1].append(self._row)

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)
        for key in self.stack:
            self.sections[key]["text"].append(data)

    def stages(self) -> dict[str, dict]:
        return {s["stage"]: s for s in self.sections.values() if s["stage"]}

    def text(self, key: str) -> str:
        return " ".join(" ".join(self.sections[key]["text"]).split())


def markdown_tables(text: str) -> list[list[list[str]]]:
    tables, current = [], None
    for line in text.splitlines():
        if not line.startswith("|"):
            current = None
            continue
        if re.fullmatch(r"\|(---\|)+", line):
            continue
        if current is None:
            current = []
            tables.append(current)
        cells = re.split(r"(?<!\\)\|", line)[1:-1]
        current.append([c.strip().replace("\\|", "|").replace("\\\\", "\\") for c in cells])
    return tables


@pytest.fixture
def outputs(tmp_path) -> Path:
    root = tmp_path / "project"
    seed_outputs(root)
    return root


def test_html_opens_offline_with_every_stage_and_the_roles(outputs, tmp_path):
    write_report("clarifyflow report", inputs_for(outputs), tmp_path / "report")
    text = (tmp_path / "report" / "report.html").read_text()
    assert not re.search(r"(?i)https?://", text)
    page = Page(text)
    assert "script" not in page.tags and "link" not in page.tags and "iframe" not in page.tags
    assert page.imgs and all(src.startswith("data:image/png;base64,") for src in page.imgs)
    for src in page.imgs:
        assert base64.b64decode(src.split(",", 1)[1]).startswith(b"\x89PNG")
    # shap plots (2 PNGs; the non-PNG file is skipped), sft loss, grpo loss + rewards, OR recovery, hidden categories
    assert len(page.imgs) == 7
    assert all(ref.startswith(("#", "data:image/png;base64,")) for ref in page.refs)
    assert set(STAGES) | {"scheduler"} <= set(page.stages())
    assert page.section_tags == len(page.sections)  # ids are unique
    assert page.stages()["evaluate@swe"]["status"] == "missing"
    assert "Not run yet" in page.text("evaluate-swe")
    assert all(page.stages()[s]["status"] == "ok" for s in STAGES if s != "evaluate@swe")
    roles_table = next(t for t in page.tables if t[0] == ["role", "backend", "model / implementation", "temperature"])
    assert ["slot_annotator", "llm", "openai/gpt-4o-mini", "0.2"] in roles_table
    assert len(roles_table) == 1 + len(roles())
    # the text of a URL is kept (as plain text, not a link)
    assert "served at http://10.1.2.3:8000" in page.text("evaluate-optimization")


def test_markdown_and_html_carry_the_same_tables_and_every_metric_with_its_backend(outputs, tmp_path):
    inputs = inputs_for(outputs)
    write_report("T", inputs, tmp_path / "report")
    md = (tmp_path / "report" / "report.md").read_text()
    page = Page((tmp_path / "report" / "report.html").read_text())
    assert markdown_tables(md) == page.tables
    metric_rows = {tuple(r) for t in page.tables if t[0] == ["metric", "value", "backend"] for r in t[1:]}
    for row in flatten(inputs.metrics):
        stage = next(s for s in inputs.metrics if row["key"].startswith(s + "."))
        assert (row["key"].removeprefix(stage + "."), fmt(row["value"]), row["backend"]) in metric_rows
    assert ("roles.slot_annotator.cost_usd", "0.0125", "llm") in metric_rows  # a nested block names its backend
    # figures: linked by path in the Markdown, written next to it
    for name in re.findall(r"!\[[^]]*\]\(([^)]+)\)", md):
        assert (tmp_path / "report" / name).read_bytes().startswith(b"\x89PNG")
    assert json.loads((tmp_path / "report" / "metrics.json").read_text())["construct@swe.cases"] == 8


def test_sections_show_what_each_stage_wrote(outputs):
    report = build_report("T", inputs_for(outputs))
    md, page = render_markdown(report), Page(render_html(report))
    tables = markdown_tables(md)

    def table(header_start: list[str], exact: bool = False) -> list[list[str]]:
        return next(t for t in tables if (t[0] if exact else t[0][: len(header_start)]) == header_start)

    assert table(["domain", "source", "inputs", "cases", "hidden slots"])[1:] == [
        ["swe", "samples", "4", "8", "5", "rules: span removal"],
        ["optimization", "samples", "4", "4", "9", "rules: eligibility filter"]]
    assert ["slot_annotator", "llm", "9", "2", "0.0125"] in table(["role", "backend", "requests"])
    gates = table(["artifact", "suite", "result"])
    assert gates[1:] == [
        ["data/cases/swe", "swe_cases", "passed", "3", "0", "–"],
        ["data/shap/runs.csv", "shap_runs", "FAILED", "3", "1", "expect_column_values_to_be_in_set(resolved)"]]
    # simulated outcomes: planted effects, said so in the title, and no paper weights beside them
    weights = table(["category", "weight"])
    assert weights == [["category", "weight", "95% interval", "rank", "exact Shapley weight"],
                       ["error_info", "1", "[1, 1]", "1", "1"], ["reproduction", "0.25", "[0.2, 0.3]", "2", "0.3"]]
    assert "## Information value (SHAP): planted effects (simulated outcomes)" in md and "0.42" not in md
    assert ["auc", "0.8123"] in table(["metric", "value"], exact=True)
    # the oracle is a reference row: never in the methods table, apart with what it reads
    assert table(["method", "AllSlotExactRestoreRate"])[1:] == [
        ["open::freeqa", "0.5 [0.25, 0.75]", "–", "2"], ["open::interopt", "1 [1, 1]", "0", "2"]]
    assert table(["method", "reference", "reads"])[1:] == [
        ["open::oracle", "privileged", "the hidden slots", "1 [0.9, 1]", "0", "2"]]
    assert "**Reference rows (not ranked)**" in md and "<caption>Reference rows (not ranked)</caption>" in render_html(
        report)
    assert "Roles behind these numbers: decomposer: local; slot_annotator: llm." in md
    # the OR evaluation names every OR role it calls; the SWE one is not run yet
    assert "or_open_user" in page.text("evaluate-optimization") \
        and "slot_hit_judge" in page.text("evaluate-optimization")
    assert "The evaluation's own report, with every table: data/eval/optimization/report.md." in md
    assert "Not run yet: no data/metrics/stages/evaluate/swe.json" in md
    # a stage without a dedicated section keeps its metric table, under "Other stages"
    assert "| runs_per_day | 1 | cron |" in md and page.sections["scheduler"]["status"] == "ok"
    assert "Other stages" in md


def test_real_shap_outcomes_keep_the_paper_weights_beside_the_measured_ones(outputs):
    _write(outputs, "data/metrics/stages/shap.json", {"backend": "lightgbm + TreeSHAP on Ambig-SWE agent outcomes",
                                                      "source": "ambig_swe", "runs": 1500, "cv": {"auc": 0.6}})
    md = render_markdown(build_report("T", inputs_for(outputs)))
    weights = next(t for t in markdown_tables(md) if t[0][:2] == ["category", "weight"])
    assert weights[0][-1] == "paper weight" and weights[2] == ["reproduction", "0.25", "[0.2, 0.3]", "2", "0.3", "0.42"]
    assert "## Information value (SHAP)\n" in md and "planted" not in md


def test_reference_rows_are_never_ranked_even_from_summary_json_alone(outputs):
    """Without stage metrics the section reads summary.json: an SWE summary's reference methods stay apart too."""
    (outputs / "data" / "metrics" / "stages" / "evaluate" / "optimization.json").unlink()
    _write(outputs, "data/eval/swe/summary.json", {
        "methods": {"ask_everything": {"questions_per_issue": 6.0, "CI95": {"questions_per_issue": [6.0, 6.0]}}},
        "reference_methods": {"oracle_template": {"questions_per_issue": 2.0, "reference": {
            "kind": "privileged", "reads": "the case's hidden categories"}}}})
    tables = markdown_tables(render_markdown(build_report("T", inputs_for(outputs))))
    ranked = [t for t in tables if t[0][0] == "method" and t[0][1] != "reference"]
    reference = [t for t in tables if t[0][:3] == ["method", "reference", "reads"]]
    assert {row[0] for t in ranked for row in t[1:]} == {"open::freeqa", "open::interopt", "ask_everything"}
    assert {row[0]: row[1] for t in reference for row in t[1:]} == {"open::oracle": "privileged",
                                                                   "oracle_template": "privileged"}


def test_a_stage_named_like_a_section_gets_its_own_id(outputs):
    _write(outputs, "data/metrics/stages/training.json", {"backend": "x", "n": 1})
    page = Page(render_html(build_report("T", inputs_for(outputs))))
    assert page.section_tags == len(page.sections)
    assert page.sections["training-stage"]["stage"] == "training" and "sft" in page.stages()


def test_swe_evaluation_is_shown_once_it_has_run(outputs):
    seed_outputs(outputs, with_swe_eval=True)
    report = build_report("T", inputs_for(outputs))
    page = Page(render_html(report))
    assert page.stages()["evaluate@swe"]["status"] == "ok"
    rows = next(t for t in page.tables if t[0][0] == "method" and "questions_per_issue" in t[0])
    header = rows[0]
    assert rows[1][header.index("questions_per_issue")] == "2 [1.5, 2.5]"
    assert rows[1][header.index("distinct_intents")] == "0.75 [0.5, 1]"
    assert rows[1][header.index("category_share.error_info")] == "0.4"
    assert "Roles behind these numbers (all local backends, see Model roles): swe_user" in page.text("evaluate-swe")
    assert len(page.imgs) == 8


def test_nothing_run_yet_renders_every_section_as_not_run(tmp_path):
    root = tmp_path / "empty"
    root.mkdir()
    inputs = ReportInputs.load(root, roles(), ["swe", "optimization"])
    report = write_report("T", inputs, tmp_path / "report")
    page = Page((tmp_path / "report" / "report.html").read_text())
    stages = [*STAGES, "question_analysis"]
    assert {s: page.stages()[s]["status"] for s in stages} == dict.fromkeys(stages, "missing")
    assert page.sections["validation"]["status"] == "missing"
    assert "No validation results on disk yet" in page.text("validation")
    md = (tmp_path / "report" / "report.md").read_text()
    assert md.count("Not run yet") == len(stages)
    assert sorted(s.stage for s in report.walk() if s.missing and s.stage) == sorted(stages)
    assert not page.imgs


def test_rerun_writes_the_same_bytes(outputs, tmp_path):
    for name in ("a", "b"):
        write_report("T", inputs_for(outputs), tmp_path / name)
    files = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    assert Path("report.html") in files and Path("figures/shap-weights.png") in files
    assert files == sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*") if p.is_file())
    for rel in files:
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes(), rel


def test_gate_results_name_their_artifact_and_skip_the_reports_own_gate(outputs):
    gates = load_gate_results(outputs / ".cache" / "gx" / "results", outputs)
    assert [(g.artifact, g.suite, g.success) for g in gates] == [
        ("data/cases/swe", "swe_cases", True), ("data/shap/runs.csv", "shap_runs", False)]
    (outputs / ".cache" / "gx" / "results" / "data_sft.json").write_text("{not json")
    gates = load_gate_results(outputs / ".cache" / "gx" / "results", outputs)
    assert ("data_sft", None) in [(g.artifact, g.success) for g in gates]  # unreadable: shown, never fatal


@pytest.mark.prefect
def test_report_flow_in_a_project_copy(project, prefect_api, monkeypatch):
    seed_outputs(project)
    monkeypatch.chdir(project)
    from flows.report import build_flow, describe

    summary = build_flow()(params="params.yaml")
    out = project / "data" / "report"
    assert (out / "report.md").read_text().startswith("# clarifyflow report")
    assert (out / "hidden_categories.png").stat().st_size > 1000
    first = {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()}
    assert Path("report.html") in first and Path("figures/grpo-rewards.png") in first
    assert summary["not_run"] == ["construct@analytics", "evaluate@analytics", "evaluate@swe", "question_analysis"]
    assert "not run yet: construct@analytics, evaluate@analytics, evaluate@swe, question_analysis" in describe(summary)
    metrics = json.loads((project / "data" / "metrics" / "report.json").read_text())
    assert metrics == {"stages": 8, "metrics": len(flatten(inputs_for(project).metrics)), "figures": 7,
                       "sections_not_run": 4}
    build_flow()(params="params.yaml")
    assert {p.relative_to(out): p.read_bytes() for p in out.rglob("*") if p.is_file()} == first


def test_the_report_opens_with_its_answer_and_where_it_comes_from(outputs):
    _write(outputs / "data" / "metrics" / "stages", "evaluate/swe.json", {
        "backend": "local backends for every evaluation role",
        "rows": {"ask_everything": {"weighted_recovery": 0.7}, "grpo_policy": {"weighted_recovery": 0.7},
                 "silent": {"weighted_recovery": 0.1}},
        "reference_rows": {"oracle_template": {"weighted_recovery": 1.0}}})
    _write(outputs, "data/eval/swe/summary.json", {"methods": {
        "ask_everything": {"CI95": {"weighted_recovery": [0.6, 0.8]}}}})
    report = build_report("T", inputs_for(outputs))
    markdown = render_markdown(report)
    headline = markdown.index("**Headline**")
    assert headline < markdown.index("**Stages**") and headline < markdown.index("## ")  # before every section
    assert "Where these numbers come from: evaluate@swe: " in markdown  # the domains in the order given
    assert "shap weights and the predicted resolution: simulated outcomes with planted effects" in markdown
    table = next(t for t in report.intro if isinstance(t, Table) and t.caption == "Headline")
    by_stage = {row[0]: row for row in table.rows}
    assert set(by_stage) == {"evaluate@optimization", "evaluate@swe"}
    opt = by_stage["evaluate@optimization"]
    assert opt[1:5] == ["All-Slot Exact", "open::interopt", "1 [1, 1]", "1 of 2"]
    assert opt[5] == "open::oracle 1"  # reference rows beside, never ranked
    swe = by_stage["evaluate@swe"]
    assert swe[1:6] == ["weighted recovery", "ask_everything, grpo_policy", "0.7 [0.6, 0.8]", "2 of 3",
                        "oracle_template 1"]


def test_the_frontier_and_persona_tables_reach_the_combined_report(outputs):
    """Both kinds: the episode frontier / robustness JSON (WSS) and the SWE ones (recall, weighted recovery)."""
    opt = {"questions": [0, 1, 2, 3], "rows": {
        "open::freeqa": {"wss": [0, 0.25, 0.5, 0.5], "low": [0] * 4, "high": [1] * 4, "area": 0.3125,
                         "area_ci": [0.1, 0.5], "questions": 2.0, "runs": 2},
        "open::oracle": {"wss": [0, 1, 1, 1], "low": [0] * 4, "high": [1] * 4, "area": 0.75, "area_ci": [0.75, 0.75],
                         "questions": 1.0, "runs": 2}}}
    robust = {"personas": ["cooperative", "mistaken"], "source": "simulated user or_open_user: local rules",
              "rows": {"open::freeqa": {
                  "cooperative": {"WSS": 0.5, "CI95": {"WSS": [0.25, 0.75]}, "Received": 0.6},
                  "mistaken": {"WSS": 0.25, "CI95": {"WSS": [0.0, 0.5]}, "WSSDrop": 0.25, "WSSDropCI95": [0.0, 0.5],
                               "Received": 0.3, "CorrectionRate": 0.5}}}}
    swe = {"questions": [0, 1, 2], "y": "hidden-category recall", "rows": {
        "evpi": {"recall": [0, 0.5, 0.75], "low": [0] * 3, "high": [1] * 3, "area": 0.4167, "area_ci": [0.2, 0.6],
                 "questions": 2.0, "cases": 2, "reference": False}}}
    swe_robust = {"personas": ["cooperative", "terse"], "source": "simulated user swe_user: local rules", "rows": {
        "evpi": {"cooperative": {"weighted_recovery": 0.6, "CI95": {"weighted_recovery": [0.4, 0.8]},
                                 "facts_received": 0.5},
                 "terse": {"weighted_recovery": 0.6, "CI95": {"weighted_recovery": [0.4, 0.8]}, "drop": 0.0,
                           "drop_CI95": [0.0, 0.0], "facts_received": 0.1}}}}
    _write(outputs, "data/eval/optimization/frontier.json", opt)
    _write(outputs, "data/eval/optimization/robustness.json", robust)
    _write(outputs, "data/eval/swe/frontier.json", swe)
    _write(outputs, "data/eval/swe/robustness.json", swe_robust)
    tables = markdown_tables(render_markdown(build_report("T", inputs_for(outputs))))
    frontiers = [t for t in tables if t[0][:2] == ["row", "questions"] and t[0][-1] == "area [95%]"]
    swe_f, opt_f = frontiers  # the evaluations in the order of the domains given: swe, optimization
    assert opt_f[0][2:5] == ["WSS@1", "WSS@2", "WSS@3"] and swe_f[0][2:4] == ["recall@1", "recall@2"]
    assert opt_f[1] == ["open::freeqa", "2.00", "0.250", "0.500", "0.500", "0.312 [0.100, 0.500]"]
    assert opt_f[2][0] == "open::oracle (reference)"  # a reference row of the stage metrics
    swe_p, opt_p = [t for t in tables if t[0][:2] == ["row", "persona"]]
    assert opt_p[0][2] == "WSS" and swe_p[0][2] == "weighted recovery"
    assert opt_p[2] == ["open::freeqa", "mistaken", "0.250 [0.000, 0.500]", "0.250 [0.000, 0.500]", "0.300", "0.500"]
    assert swe_p[2] == ["evpi", "terse", "0.600 [0.400, 0.800]", "0.000 [0.000, 0.000]", "0.100", "–"]
