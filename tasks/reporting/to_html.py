"""The report as one static HTML page (``report.html``): inline CSS, figures as ``data:image/png;base64`` URIs,
no script and no external reference, so it opens offline. Text that looks like a URL is written with an entity
(``http&#58;//``) so the page source holds no ``http://`` at all; a browser shows it unchanged, as plain text."""

from __future__ import annotations

import base64
import html
import re

from tasks.reporting.model import Block, Figure, Report, Section, Table, Text

STYLE = """
body { font: 15px/1.5 system-ui, sans-serif; color: #1d1d1f; margin: 0; background: #fafafa; }
main { max-width: 1100px; margin: 0 auto; padding: 1.5em 2em 4em; background: #fff; }
h1 { border-bottom: 2px solid #333; padding-bottom: .3em; }
h2 { border-bottom: 1px solid #ccc; margin-top: 2em; }
section section { margin-left: .5em; }
nav ul { columns: 2; }
table { border-collapse: collapse; margin: .6em 0 1.2em; font-size: 13px; }
caption { text-align: left; font-weight: 600; padding: .3em 0; }
th, td { border: 1px solid #ddd; padding: .25em .6em; text-align: left; vertical-align: top; }
th { background: #f0f0f0; }
tbody tr:nth-child(even) { background: #f8f8f8; }
details { margin: .6em 0 1.2em; }
summary { cursor: pointer; font-weight: 600; }
figure { margin: 1em 0; }
figure img { max-width: 100%; border: 1px solid #eee; }
figcaption { font-size: 13px; color: #555; }
.note { color: #555; border-left: 3px solid #ccc; padding-left: .8em; }
.missing { color: #8a4b00; font-weight: 600; }
"""
_URL = re.compile(r"(?i)\b(https?):")


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


def _table(table: Table) -> list[str]:
    head = "".join(f"<th>{esc(h)}</th>" for h in table.header)
    body = ["<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in table.rows]
    if table.collapsed:
        return ["<details>", f"<summary>{esc(table.caption)}</summary>", "<table>", f"<thead><tr>{head}</tr></thead>",
                "<tbody>", *body, "</tbody>", "</table>", "</details>"]
    caption = f"<caption>{esc(table.caption)}</caption>" if table.caption else ""
    return ["<table>", caption, f"<thead><tr>{head}</tr></thead>", "<tbody>", *body, "</tbody>", "</table>"]
