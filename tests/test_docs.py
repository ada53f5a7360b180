"""The README stays short, every page under docs/ is reachable from it, and no link in them is broken or leaves the
repository except to a public site. Also: every maintained benchmark is listed and runs in ``make bench``."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
NOT_BENCHMARKS = {"siblings", "train_annotator"}  # a loader and the annotator's trainer (a shipped artifact)


def _links(path: Path) -> list[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)  # links in code blocks don't count
    return LINK.findall(text)


def _pages() -> list[Path]:
    return [README, ROOT / "benchmarks" / "README.md", *sorted(DOCS.glob("*.md"))]


def test_readme_is_at_most_250_lines():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 250


def test_every_docs_page_is_linked_from_the_readme():
    linked = {(README.parent / t.split("#")[0]).resolve() for t in _links(README) if "://" not in t}
    missing = [p.name for p in DOCS.glob("*.md") if p.resolve() not in linked]
    assert not missing, f"docs pages not linked from README.md: {missing}"


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", path.read_text(encoding="utf-8"), flags=re.S)
    return {_slug(m) for m in re.findall(r"^#+\s+(.*)$", text, flags=re.M)}


def test_relative_links_resolve_and_none_leaves_the_repository():
    broken = []
    for page in _pages():
        for target in _links(page):
            if re.match(r"https?://", target):
                continue
            path, _, anchor = target.partition("#")
            dest = (page.parent / path).resolve() if path else page.resolve()
            inside = dest == ROOT or ROOT in dest.parents
            if not inside or "shared/" in path:
                broken.append(f"{page.relative_to(ROOT)}: {target} leaves the repository")
            elif path and not dest.exists() and not _written_by_another_page(dest):
                broken.append(f"{page.relative_to(ROOT)}: {target} does not exist")
            elif anchor and dest.suffix == ".md" and dest.exists() and anchor not in _anchors(dest):
                broken.append(f"{page.relative_to(ROOT)}: {target}: no heading #{anchor}")
    assert not broken, "\n".join(broken)


# Pages other helpers write on their own branches; once merged they exist and are checked like every other page.
PENDING = {"faults.md", "providers.md", "served-models.md", "clariti-protocol.md", "policy-update.md",
           "interopt-protocol.md", "personas.md"}


def _written_by_another_page(dest: Path) -> bool:
    return dest.parent == DOCS and dest.name in PENDING


def test_the_readme_image_is_committed_in_the_repository():
    images = [t for t in _links(README) if t.endswith(".png")]
    assert images and all((ROOT / t).is_file() for t in images)


def test_every_maintained_benchmark_is_listed_and_runs_in_make_bench():
    scripts = {p.stem for p in (ROOT / "benchmarks").glob("*.py")} - NOT_BENCHMARKS
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    bench = re.search(r"^BENCH \?=(.*?)(?:\n\n)", makefile, flags=re.M | re.S)
    assert bench, "Makefile has no BENCH list"
    in_make = set(bench.group(1).replace("\\", " ").split())
    listed = set(re.findall(r"^\| `(\w+)\.py", (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8"),
                            flags=re.M))
    assert scripts == in_make, f"make bench: missing {scripts - in_make}, unknown {in_make - scripts}"
    assert scripts == listed, f"benchmarks/README.md: missing {scripts - listed}, unknown {listed - scripts}"
