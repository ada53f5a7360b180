"""The README stays short, every page under docs/ is reachable from it, and no link in them is broken or leaves the
repository except to a public site. Also: every maintained benchmark is listed and runs in ``make bench``."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = ROOT / "docs"
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
NOT_BENCHMARKS = {"siblings", "files", "train_annotator"}  # two helpers, the annotator's trainer (a shipped artifact)


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


def _flow_run_names() -> dict[str, str | None]:
    """``flow_run_name`` of every ``flow(...)`` call in flows/, by file (None where a flow has none)."""
    import ast

    names: dict[str, str | None] = {}
    for path in sorted((ROOT / "flows").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "flow":
                kw = {k.arg: k.value for k in node.keywords}
                value = kw.get("flow_run_name")
                names[path.name] = value.value if isinstance(value, ast.Constant) else None
    return names


def test_every_prefect_flow_run_is_named_after_its_dvc_stage():
    import yaml

    dvc = yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))["stages"]
    domains = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))["domains"]
    stages = {f"{s}@{d}" if "matrix" in spec else s for s, spec in dvc.items()
              for d in (domains if "matrix" in spec else [None])}
    names = _flow_run_names()
    assert len(names) >= 8, names  # construct, evaluate, train, shap, sft_data, question_analysis, report, pipeline
    for file, template in names.items():
        assert template, f"flows/{file}: flow(...) without flow_run_name (Prefect would name the run at random)"
        runs = {template.format(domain=d, stage=t) for d in domains for t in ("sft", "grpo")}
        assert runs <= stages | {"pipeline"}, f"flows/{file}: run names {runs - stages} are not DVC stages"


def test_every_benchmark_row_has_a_figure_and_a_status_and_every_result_is_cited():
    text = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    rows = [r for r in text.splitlines() if re.match(r"^\| `\w+\.py", r)]
    cells = [[c.strip() for c in r.strip().strip("|").split(" | ")] for r in rows]
    bad = [c[0] for c in cells if len(c) != 5 or not c[3] or not c[4]]
    assert not bad, f"benchmarks/README.md rows without a latest figure or a status: {bad}"
    results = [p.name for p in (ROOT / "benchmarks" / "results").iterdir() if p.is_dir()]
    uncited = [name for name in results if f"results/{name}/" not in text]
    assert not uncited, f"benchmarks/results/ folders not cited in benchmarks/README.md: {uncited}"


RETIRED_MODELS = ("claude-3-5-haiku-20241022", "claude-3-5-sonnet-20240620", "claude-3-opus-20240229",
                  "claude-3-sonnet-20240229")
"""Provider model ids whose calls now fail (Anthropic retired them); an example that names one fails on its first
call."""


def test_no_example_names_a_retired_model():
    pages = [*_pages(), ROOT / "params.yaml"]
    named = [f"{p.relative_to(ROOT)}:{i}" for p in pages
             for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), start=1)
             if any(m in line for m in RETIRED_MODELS) and "retired" not in line]
    assert not named, f"retired model ids outside a sentence saying so: {named}"
