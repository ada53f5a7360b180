"""Gate on the combined report (``data/report/report.{md,html}``) in the staging folder, before it is published:
every section of the page (and every section the report always has) is in both files, no file loads an asset
from the network (``src=``/``href=``/``url(`` to a URL, a Markdown image of a URL: URLs in text are fine), and
every figure is embedded (HTML: a ``data:image/`` URI; Markdown: a PNG next to the report)."""

from __future__ import annotations

import html
import re
from pathlib import Path
from typing import Any

from tasks.errors import GateError

REQUIRED_SECTIONS = {"roles": "Model roles", "construction": "Construction", "validation": "Validation gates",
                     "shap": "Information value (SHAP)", "sft-data": "SFT data", "training": "Training",
                     "evaluation": "Evaluation"}
"""Section id -> title: the sections ``tasks.reporting.sections.build_report`` always builds."""
PNG = b"\x89PNG\r\n\x1a\n"
REMOTE = re.compile(r"""(?:\b(?:src|href|srcset|poster|data)\s*=\s*["']?\s*|url\(\s*["']?\s*)(?:https?:)?//""",
                    re.IGNORECASE)
MD_IMAGE = re.compile(r"!\[[^\]]*\]\(\s*<?([^)>\s]+)")
HTML_IMG = re.compile(r"<img\b[^>]*?\bsrc\s*=\s*[\"']?([^\"'\s>]+)", re.IGNORECASE)


def gate_report(folder: Path, page: Any | None = None, *, artifact: str = "data/report") -> None:
    """``page``: the :class:`tasks.reporting.model.Report` the files were rendered from (its sections and figures
    must all be there); without it only the always-built sections are required."""
    folder = Path(folder)
    md_artifact, html_artifact = f"{artifact}/report.md", f"{artifact}/report.html"
    md, page_html = _read(folder / "report.md", md_artifact), _read(folder / "report.html", html_artifact)
    sections = [(s.key, s.title) for s in page.walk()] if page is not None else []
    keys = {key for key, _ in sections}
    for key, title in REQUIRED_SECTIONS.items():
        if page is not None and key not in keys:
            raise GateError(artifact, f"the report has no {title!r} section (id {key!r})")
        if page is None:
            sections.append((key, title))
    for key, title in sections:
        if f'id="{html.escape(key)}"' not in page_html:
            raise GateError(html_artifact, f"section {title!r} (id {key!r}) missing")
        heading = re.compile(rf"^#{{1,6}} {re.escape(title)}" + ("$" if page is not None else ""), re.MULTILINE)
        if not heading.search(md):
            raise GateError(md_artifact, f"section {title!r} missing")
    for name, text in ((md_artifact, md), (html_artifact, page_html)):
        if found := REMOTE.search(text):
            raise GateError(name, f"loads a remote asset: {text[found.start():found.end() + 40].splitlines()[0]!r}")
    images = MD_IMAGE.findall(md)
    for target in images:
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):
            raise GateError(md_artifact, f"image {target[:60]!r} is not a file next to the report")
        path = folder / target
        if not path.is_file() or path.read_bytes()[:8] != PNG:
            raise GateError(md_artifact, f"image {target!r} is not a PNG in the report folder")
    sources = HTML_IMG.findall(page_html)
    if bad := [s for s in sources if not s.startswith("data:image/")]:
        raise GateError(html_artifact, f"image {bad[0][:60]!r} is not embedded (data:image/ URI)")
    expected = len(page.figures()) if page is not None else len(images)
    if len(sources) != expected or len(images) != expected:
        raise GateError(artifact, f"{expected} figures, but report.md shows {len(images)} and report.html embeds "
                                  f"{len(sources)}")


def _read(path: Path, artifact: str) -> str:
    if not path.is_file():
        raise GateError(artifact, "file missing")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise GateError(artifact, f"not UTF-8 text: {err}") from None
