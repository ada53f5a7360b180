"""The combined report read in a browser (docs/stages.md "report"): every table scrolls sideways in its own box, a
number cell keeps its interval on one line, a table too wide for the page says so, the headline says how many rows
tie at the best value and why, and the figures the page embeds are drawn at most a page wide with text of 9 pt or
more (the held-out GRPO curve in rows of four panels, the persona robustness bars down the page)."""

from __future__ import annotations

import re
import struct
from html.parser import HTMLParser

import pytest

from tasks.reporting import build_report, render_html
from tasks.reporting.model import Report, Table, Text
from tasks.reporting.sections import headline_blocks, identical_groups, tie_sentence
from tasks.reporting.to_html import PAGE_WIDTH_PX, STYLE, wider_than_page
from tests.test_report_html import _write, inputs_for, seed_outputs

MIN_FONT_PT = 9


class Boxes(HTMLParser):
    """Each ``<table>``'s enclosing element (tag, class), each ``<td>``'s class, and the caption texts."""

    def __init__(self, text: str):
        super().__init__()
        self.open: list[tuple[str, str]] = []
        self.parents: list[tuple[str, str]] = []
        self.cells: list[tuple[str, str]] = []
        self.captions: list[str] = []
        self._cell: list[str] | None = None
        self._class = ""
        self._caption: list[str] | None = None
        self.feed(text)

    def handle_starttag(self, tag, attrs):
        css = dict(attrs).get("class") or ""
        if tag == "table":
            self.parents.append(self.open[-1])
        elif tag == "td":
            self._cell, self._class = [], css
        elif tag == "caption":
            self._caption = []
        self.open.append((tag, css))

    def handle_endtag(self, tag):
        while self.open and self.open.pop()[0] != tag:
            pass
        if tag == "td":
            self.cells.append(("".join(self._cell), self._class))
            self._cell = None
        elif tag == "caption":
            self.captions.append("".join(self._caption))
            self._caption = None

    def handle_data(self, data):
        for part in (self._cell, self._caption):
            if part is not None:
                part.append(data)


def png_size(data: bytes) -> tuple[int, int]:
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    return struct.unpack(">II", data[16:24])


def smallest_font(fig) -> float:
    """The smallest font size (pt) of any visible, non-empty text of a drawn figure (titles, labels, ticks, legend)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.text import Text as MplText

    FigureCanvasAgg(fig).draw()
    sizes = [t.get_fontsize() for t in fig.findobj(MplText) if t.get_visible() and t.get_text().strip()]
    assert sizes
    return min(sizes)


def test_every_table_sits_in_its_own_sideways_scrolling_box(tmp_path):
    root = tmp_path / "project"
    seed_outputs(root, with_swe_eval=True)
    page = render_html(build_report("T", inputs_for(root)))
    boxes = Boxes(page)
    assert len(boxes.parents) == page.count("<table>") > 5
    assert set(boxes.parents) == {("div", "table-scroll")}
    assert re.search(r"\.table-scroll \{[^}]*overflow-x: auto", STYLE)
    assert f"max-width: {PAGE_WIDTH_PX}px" in STYLE and "figure img { max-width: 100%; height: auto;" in STYLE
    # a folded table scrolls inside its <details> too
    folded = render_html(Report("T", [Table(["metric", "value"], [["a", "1"]], caption="All", collapsed=True)], []))
    assert re.search(r'<details>\s*<summary>All</summary>\s*<div class="table-scroll">\s*<table>', folded)


def test_number_cells_keep_their_interval_on_one_line_and_long_text_keeps_a_width():
    table = Table(["method", "WSS", "reads", "n"],
                  [["mc_d::interopt", "0.3909 [0.2545, 0.5377]", "the hidden slots: asks each slot's reference "
                    "question", "66"], ["x", "82.0% [71.5, 90.2] (surrogate)", "–", "1e-05"]])
    cells = dict(Boxes(render_html(Report("T", [table], []))).cells)
    assert cells["0.3909 [0.2545, 0.5377]"] == cells["66"] == cells["1e-05"] == cells["–"] == "num"
    assert cells["82.0% [71.5, 90.2] (surrogate)"] == "num"  # the source mark stays beside its number
    assert cells["mc_d::interopt"] == "" and cells["x"] == ""
    assert cells["the hidden slots: asks each slot's reference question"] == "long"
    assert re.search(r"td\.num \{ white-space: nowrap; \}", STYLE) and re.search(r"td\.long \{ min-width: \d+em", STYLE)


def test_a_table_too_wide_for_the_page_says_to_scroll_sideways():
    wide = Table(["method", *(f"Metric{i}RestoreRate" for i in range(12))],
                 [["mc_d::interopt", *["0.09091 [0, 0.2273]"] * 12]], caption="Headline metrics per method")
    narrow = Table(["stage", "status", "backend"], [["shap", "ran", "lightgbm + TreeSHAP on simulated outcomes "
                                                     "(planted effects, not real agent runs)"]], caption="Stages")
    assert wider_than_page(wide) and not wider_than_page(narrow)
    captions = Boxes(render_html(Report("T", [wide, narrow], []))).captions
    assert captions == ["Headline metrics per method (13 columns: scroll sideways for all of them)", "Stages"]


def _episode_eval(root, rows: dict, reference: dict | None = None) -> None:
    _write(root / "data" / "metrics" / "stages", "evaluate/optimization.json", {
        "backend": "local backends", "rows": rows,
        "reference_rows": reference or {"open::oracle": {"WeightedSlotScore_macro": 1.0}}})


def test_the_headline_says_how_many_rows_tie_at_the_best_value_and_why(tmp_path):
    root = tmp_path / "project"
    seed_outputs(root)
    same = {"WeightedSlotScore_macro": 0.39, "AverageTurns": 10.27, "RunCount": 66}
    _episode_eval(root, {"mc_d::interopt": same, "mc_d::interopt_aligned": dict(same), "mc_d::interopt_wo_stage2":
                         dict(same), "open::freeqa": {**same, "WeightedSlotScore_macro": 0.29}})
    notes = [b.text for b in headline_blocks(inputs_for(root)) if isinstance(b, Text) and b.kind == "note"]
    assert notes[0].startswith("evaluate@optimization: 3 of 4 ranked rows tie at the best WSS (macro), 0.39, because "
                               "they are identical on all 3 metrics")
    assert "evaluate.optimization.sanity.allowed_ties" in notes[0]
    # equal on the ranked metric only: the sentence names what tells them apart
    _episode_eval(root, {"a::x": same, "a::y": {**same, "AverageTurns": 4.0}, "a::z": {**same, "RunCount": 3}})
    notes = [b.text for b in headline_blocks(inputs_for(root)) if isinstance(b, Text) and b.kind == "note"]
    assert notes[0] == ("evaluate@optimization: 3 of 3 ranked rows tie at the best WSS (macro), 0.39, on that metric "
                        "only: they differ on 2 others (AverageTurns, RunCount).")
    # no tie, no sentence; only the held-out line (GRPO vs SFT) stays
    _episode_eval(root, {"a::x": same, "a::y": {**same, "WeightedSlotScore_macro": 0.1}})
    notes = [b.text for b in headline_blocks(inputs_for(root)) if isinstance(b, Text) and b.kind == "note"]
    assert len(notes) == 1 and notes[0].startswith("GRPO against SFT on held-out rows: not measured in this run")


def test_identical_rows_are_named_in_their_section_and_grouped():
    rows = {"a": {"x": 1, "y": 2}, "b": {"x": 1, "y": 2}, "c": {"x": 1, "y": 3}, "d": {"y": 3, "x": 1},
            "e": {"x": 0, "y": 0}}
    assert identical_groups(rows) == [["a", "b"], ["c", "d"]]
    assert tie_sentence("evaluate@swe", "weighted recovery", "0.7", {"a": rows["a"], "c": rows["c"]}, 5) == (
        "evaluate@swe: 2 of 5 ranked rows tie at the best weighted recovery, 0.7, on that metric only: they differ "
        "on 1 others (y).")


def test_the_section_says_which_rows_are_identical(tmp_path):
    root = tmp_path / "project"
    seed_outputs(root)
    same = {"WeightedSlotScore_macro": 0.39, "AverageTurns": 10.27}
    _episode_eval(root, {"mc::mc": same, "mc_d::mc_d": dict(same), "open::freeqa": {"WeightedSlotScore_macro": 0.2}})
    section = next(s for top in build_report("T", inputs_for(root)).sections for s in top.walk()
                   if s.key == "evaluate-optimization")
    notes = [b.text for b in section.blocks if isinstance(b, Text)]
    assert ("2 of 3 ranked rows are identical on every metric, in 1 group(s): mc::mc, mc_d::mc_d. Their curves in the "
            "figures below lie on top of each other.") in notes


def test_the_headline_gives_grpo_against_sft_on_held_out_rows(tmp_path):
    root = tmp_path / "project"
    seed_outputs(root)
    _write(root / "data" / "metrics" / "stages", "grpo.json", {"backend": "TRL GRPO", "heldout": {
        "cases": 30, "issues": 10, "sft": {"total": 0.21}, "grpo": {"total": 0.35},
        "gain": {"total": {"mean": 0.13, "low": 0.03, "high": 0.24}}}})
    text = render_html(build_report("T", inputs_for(root)))
    line = ("GRPO against SFT on held-out rows (30 cases from 10 issues never trained on): staged reward 0.21 -&gt; "
            "0.35, gain 0.13 [0.03, 0.24] (95% paired bootstrap; Training section).")
    assert line in text and text.index(line) < text.index("<caption>Stages</caption>")


def test_source_marks_of_the_stage_reports_are_kept(tmp_path):
    root = tmp_path / "project"
    seed_outputs(root)
    _write(root / "data" / "metrics" / "stages", "evaluate/swe.json", {
        "backend": "local backends", "rows": {"ask_everything": {"weighted_recovery": 0.7,
                                                                 "predicted_resolution_surrogate_planted": 0.82}}})
    page = render_html(build_report("T", inputs_for(root)))
    assert "<th>predicted_resolution_surrogate_planted</th>" in page
    assert "simulated outcomes with planted effects" in page
    assert "Information value (SHAP): planted effects (simulated outcomes)" in page


# ---- figures ----------------------------------------------------------------------------------------------------

def _heldout_curve(stages: int = 4):
    from tasks.training.heldout import HeldoutCurve, HeldoutPoint

    names = ["non_redundancy", "diversity", "answerability", "task_relevance"][:stages]
    points = [HeldoutPoint(step=step, total=0.2 + step / 100, stages=dict.fromkeys(names, 0.3 + step / 50),
                           per_case={}, per_case_stages={}, questions=3.0, asking_rate=1.0,
                           measures={"ungated": 0.4, "paper": 0.3}) for step in (0, 10, 20)]
    return HeldoutCurve(cases=30, issues=10, every=10, max_new_tokens=128, points=points)


def test_the_heldout_figure_is_readable_at_page_width(tmp_path):
    from tasks.training.heldout import CURVE_PNG, PANELS_PER_ROW, curve_figure, curve_lines, write_curve

    curve = _heldout_curve()
    assert len(curve_lines(curve)) == 7  # total, 4 stages, 2 measures: the figure the report showed at half size
    fig = curve_figure(curve)
    panels = [ax for ax in fig.axes if ax.axison]
    assert len(panels) == 7 and len({round(ax.get_position().y0, 3) for ax in panels}) == 2  # two rows
    assert max(sum(1 for ax in panels if round(ax.get_position().y0, 3) == y)
               for y in {round(ax.get_position().y0, 3) for ax in panels}) == PANELS_PER_ROW
    assert smallest_font(fig) >= MIN_FONT_PT
    write_curve(tmp_path, curve)
    width, height = png_size((tmp_path / CURVE_PNG).read_bytes())
    assert 0.9 * PAGE_WIDTH_PX <= width <= PAGE_WIDTH_PX and height < width


@pytest.mark.parametrize("rows", [4, 20])
def test_the_robustness_figure_grows_down_the_page_not_across_it(tmp_path, rows):
    from tasks.evaluation.robustness import BAR_IN, FIGURE_DPI, robustness_figure, robustness_plot

    personas = ["cooperative", "mistaken", "uncooperative"]
    cell = {"WSS": 0.39, "CI95": {"WSS": [0.25, 0.54]}}
    table = {"personas": personas,
             "rows": {f"mc_d::interopt_variant_{i}": {p: dict(cell) for p in personas} for i in range(rows)}}
    assert smallest_font(robustness_figure(table)) >= MIN_FONT_PT
    robustness_plot(table, tmp_path / "robustness.png")
    width, height = png_size((tmp_path / "robustness.png").read_bytes())
    assert 0.9 * PAGE_WIDTH_PX <= width <= PAGE_WIDTH_PX  # 20 rows x 3 personas drew 4320 px before
    assert height >= FIGURE_DPI * BAR_IN * rows * len(personas)  # each bar keeps its height: more rows, taller

