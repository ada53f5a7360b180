"""The report as Markdown (``report.md``); figures are linked by their path inside the report folder."""

from __future__ import annotations

from tasks.reporting.model import Block, Figure, Report, Section, Table, Text


def render_markdown(report: Report) -> str:
    lines = [f"# {report.title}", ""]
    for block in report.intro:
        lines += _block(block)
    for section in report.sections:
        lines += _section(section, 2)
    return "\n".join(lines).rstrip() + "\n"


def _section(section: Section, level: int) -> list[str]:
    lines = [f"{'#' * min(level, 6)} {section.title}", ""]
    for block in section.blocks:
        lines += _block(block)
    for child in section.children:
        lines += _section(child, level + 1)
    return lines


def _block(block: Block) -> list[str]:
    if isinstance(block, Text):
        return [f"> {block.text}" if block.kind == "note" else block.text, ""]
    if isinstance(block, Figure):
        return [f"![{block.caption}]({block.name})", ""]
    if isinstance(block, Table):
        return [*([f"**{block.caption}**", ""] if block.caption else []), *markdown_table(block), ""]
    raise TypeError(f"unknown block {block!r}")


def markdown_table(table: Table) -> list[str]:
    lines = ["| " + " | ".join(_cell(h) for h in table.header) + " |",
             "|" + "|".join("---" for _ in table.header) + "|"]
    return lines + ["| " + " | ".join(_cell(c) for c in row) + " |" for row in table.rows]


def _cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")
