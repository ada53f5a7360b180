"""The report as one static HTML page (``report.html``): inline CSS, figures as ``data:image/png;base64`` URIs,
no script and no external reference, so it opens offline. Text that looks like a URL is written with an entity
(``http&#58;//``) so the page source holds no ``http://`` at all; a browser shows it unchanged, as plain text.

Read in a browser (checked headless at 1280x900, docs/stages.md "report"): every table sits in its own
``<div class="table-scroll">``, which scrolls sideways when the table is wider than the page, so a wide table is never
cut at the right and never widens the page; a number cell (``0.39 [0.25, 0.54]``) does not wrap, so an interval stays
on one line; figures shrink to the page width (``PAGE_WIDTH_PX``), which is why the stages draw theirs at most about
that wide with text of at least 8 pt (tests/test_figure_legibility.py)."""

from __future__ import annotations

import base64
import html
import re

from tasks.reporting.model import Block, Figure, Report, Section, Table, Text

PAGE_WIDTH_PX = 1100
"""Width of the page's text column (``main``'s ``max-width``): a wider figure is shown scaled down to it."""
_URL = re.compile(r"(?i)\b(https?):")
_NUMBER = re.compile(r"[-+]?(\d[\d.,]*(e[-+]?\d+)?%?|–|inf|nan)( \[[^\]]*\])?( \(\w+\))?")
"""A number cell: a value, optionally its ``[low, high]`` interval and a short source mark."""
LONG_CELL, LONG_MIN_EM = 40, 18
"""A text cell longer than ``LONG_CELL`` characters keeps a minimum width of ``LONG_MIN_EM`` (``td.long``), so the
number columns, which never wrap, do not squeeze it into a column one word wide; the table scrolls instead."""
CHAR_PX, CELL_PX = 6.6, 17
"""Rough width of a 13 px table character and of a cell's padding and border, for :func:`wider_than_page`."""
STYLE = """
body { font: 15px/1.5 system-ui, sans-serif; color: #1d1d1f; margin: 0; background: #fafafa; }
main { max-width: PAGE_WIDTHpx; margin: 0 auto; padding: 1.5em 2em 4em; background: #fff; }
h1 { border-bottom: 2px solid #333; padding-bottom: .3em; }
h2 { border-bottom: 1px solid #ccc; margin-top: 2em; }
section section { margin-left: .5em; }
nav > ul { columns: 2; }
.table-scroll { overflow-x: auto; max-width: 100%; margin: .6em 0 1.2em; }
table { border-collapse: collapse; font-size: 13px; }
caption { text-align: left; font-weight: 600; padding: .3em 0; }
th, td { border: 1px solid #ddd; padding: .25em .6em; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
td.num { white-space: nowrap; }
td.long { min-width: LONG_MIN_EMem; }
.scroll-hint { font-weight: normal; color: #555; }
tbody tr:nth-child(even) { background: #f8f8f8; }
details { margin: .6em 0 1.2em; }
summary { cursor: pointer; font-weight: 600; }
figure { margin: 1em 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption { font-size: 13px; color: #555; }
.note { color: #555; border-left: 3px solid #ccc; padding-left: .8em; }
.missing { color: #8a4b00; font-weight: 600; }
""".replace("PAGE_WIDTH", str(PAGE_WIDTH_PX)).replace("LONG_MIN_EM", str(LONG_MIN_EM))


def esc(text: str) -> str:
    return _URL.sub(r"\1&#58;", html.escape(text, quote=True))


def render_html(report: Report) -> str:
    parts = ["<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
             '<meta name="viewport" content="width=device-width, initial-scale=1">',
             f"<title>{esc(report.title)}</title>",
             f"<style>{STYLE}</style>", "</head>", "<body>", "<main>", f"<h1>{esc(report.title)}</h1>"]
    for block in report.intro:
        parts += _block(block)
    parts += ["<nav>", "<h2>Contents</h2>", *_contents(report.sections), "</nav>"]
    for section in report.sections:
        parts += _section(section, 2)
    parts += ["</main>", "</body>", "</html>"]
    return "\n".join(parts) + "\n"


def _contents(sections: list[Section]) -> list[str]:
    lines = ["<ul>"]
    for s in sections:
        flag = " (not run yet)" if s.missing else ""
        lines.append(f'<li><a href="#{esc(s.key)}">{esc(s.title)}</a>{flag}')
        if s.children:
            lines += _contents(s.children)
        lines.append("</li>")
    return [*lines, "</ul>"]


def _section(section: Section, level: int) -> list[str]:
    attrs = f' id="{esc(section.key)}"'
    if section.stage:
        attrs += f' data-stage="{esc(section.stage)}"'
    attrs += f' data-status="{"missing" if section.missing else "ok"}"'
    tag = f"h{min(level, 6)}"
    parts = [f"<section{attrs}>", f"<{tag}>{esc(section.title)}</{tag}>"]
    for block in section.blocks:
        parts += _block(block)
    for child in section.children:
        parts += _section(child, level + 1)
    return [*parts, "</section>"]


def _block(block: Block) -> list[str]:
    if isinstance(block, Text):
        css = {"p": "", "note": ' class="note"', "missing": ' class="missing"'}[block.kind]
        return [f"<p{css}>{esc(block.text)}</p>"]
    if isinstance(block, Figure):
        data = base64.b64encode(block.data).decode("ascii")
        return ["<figure>", f'<img src="data:image/png;base64,{data}" alt="{esc(block.caption)}">',
                f"<figcaption>{esc(block.caption)}</figcaption>", "</figure>"]
    if isinstance(block, Table):
        return _table(block)
    raise TypeError(f"unknown block {block!r}")


def _cell(text: str) -> str:
    if _NUMBER.fullmatch(text):
        return f'<td class="num">{esc(text)}</td>'
    return f'<td class="long">{esc(text)}</td>' if len(text) > LONG_CELL else f"<td>{esc(text)}</td>"


def _min_chars(text: str) -> float:
    """Characters a cell needs at least: a number cell all of them (it never wraps), a long text cell its
    ``td.long`` minimum width, any other its longest word."""
    if _NUMBER.fullmatch(text):
        return len(text)
    if len(text) > LONG_CELL:
        return LONG_MIN_EM * 13 / CHAR_PX
    return max((len(word) for word in text.split()), default=0)


def wider_than_page(table: Table) -> bool:
    """Whether the table cannot fit the page even with every wrappable cell wrapped (its narrowest layout is wider
    than ``PAGE_WIDTH_PX``): then its caption says to scroll sideways."""
    widths = [max(_min_chars(str(row[i])) for row in (table.header, *table.rows) if i < len(row))
              for i in range(len(table.header))]
    return sum(CELL_PX + CHAR_PX * w for w in widths) > PAGE_WIDTH_PX


def _table(table: Table) -> list[str]:
    """The table inside its own sideways-scrolling box (folded in ``<details>`` when ``collapsed``)."""
    head = "".join(f"<th>{esc(h)}</th>" for h in table.header)
    body = ["<tr>" + "".join(_cell(c) for c in row) + "</tr>" for row in table.rows]
    hint = (f' <span class="scroll-hint">({len(table.header)} columns: scroll sideways for all of them)</span>'
            if wider_than_page(table) else "")
    caption = f"<caption>{esc(table.caption)}{hint}</caption>" if table.caption and not table.collapsed else ""
    scroll = ['<div class="table-scroll">', "<table>", caption, f"<thead><tr>{head}</tr></thead>", "<tbody>", *body,
              "</tbody>", "</table>", "</div>"]
    if table.collapsed:
        return ["<details>", f"<summary>{esc(table.caption)}</summary>", *scroll, "</details>"]
    return scroll
