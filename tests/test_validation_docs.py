"""`make docs`: GX Data Docs of every gate's latest result as the pipeline saved it, built offline in a file-backed
context, without validating anything again."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tasks.domains.swe import mask_issue
from tasks.params import SweConstructParams
from tasks.swe_samples import load_samples
from tasks.validation import docs, docs_assets
from tests.conftest import MINI

SITE = Path("gx") / "uncommitted" / "data_docs" / "local_site"
CDNS = {"cdn.jsdelivr.net", "cdnjs.cloudflare.com", "maxcdn.bootstrapcdn.com", "stackpath.bootstrapcdn.com",
        "unpkg.com", "code.jquery.com"}
"""Where GX's templates take Bootstrap, bootstrap-table, Font Awesome, jQuery, Popper and Vega from: without the
vendored copies (tasks/validation/docs_assets.py) these links stay."""


def _vendor_fakes(vendor: Path) -> None:
    """Every vendored file, as a stand-in (the real ones come from npm at set-up time)."""
    for asset in docs_assets.ASSETS:
        path = docs_assets.package_dir(vendor, asset.package) / asset.path
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(f"/* {asset.package} {asset.path} */\n")
        for folder in asset.alongside:
            (path.parents[1] / folder).mkdir(exist_ok=True)
            (path.parents[1] / folder / "font.woff2").write_bytes(b"wOF2")


def _gate_swe_cases(repo: Path, cfg: SweConstructParams) -> None:
    """What construct@swe does: its two gates on data/cases/swe, each saving its latest result."""
    from tasks.domains import ConstructResult, get_domain
    from tasks.splits import construct_split, split_frame
    from tasks.validation.gate import gate

    cases, _ = construct_split([c for issue in load_samples(MINI) for c in mask_issue(issue, cfg)[0]], 0.3, 2)
    assert cases
    suite, table = get_domain("swe").validation_table(ConstructResult(cases=cases, metrics={}))
    results = repo / ".cache" / "gx" / "results"
    gate(suite, table, artifact="data/cases/swe", results_dir=results)
    gate("case_splits", split_frame(cases), artifact="data/cases/swe", results_dir=results)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "dvc.yaml").write_text("stages: {}\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_docs_render_published_cases(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _gate_swe_cases(repo, SweConstructParams(variants_per_issue=2))
    (repo / "data" / "cases").mkdir(parents=True)  # nothing is read from the artifacts themselves

    assert docs.main([]) == 0

    assert (repo / SITE / "index.html").is_file()
    pages = sorted((repo / SITE / "validations" / "swe_cases").rglob("*.html"))
    assert pages, "no validation-result page for swe_cases"
    assert "swe_cases" in pages[0].read_text(encoding="utf-8")
    out = capsys.readouterr().out
    assert (SITE / "index.html").as_posix() in out
    assert "data/cases/swe: suite swe_cases passed" in out and "data/cases/swe: suite case_splits passed" in out
    assert "2 gate results" in out  # both gates on the one artifact, each its own latest result


def test_pages_show_local_images_and_take_only_the_known_cdns(repo: Path) -> None:
    _gate_swe_cases(repo, SweConstructParams(variants_per_issue=1))
    assert docs.main([]) == 0

    pages = sorted((repo / SITE).rglob("*.html"))
    assert len(pages) >= 3  # the index and the two validation results
    for page in pages:
        html = page.read_text(encoding="utf-8")
        assert "dataContextId" not in html, page
        shipped = {f.name for f in (repo / SITE / "static" / "images").iterdir()}
        remote_images = set(re.findall(r"great-expectations-web-assets[^/]*/([\w.-]+)", html))
        assert not remote_images & shipped, (page, remote_images)  # left remote: what GX does not ship (a CSS logo)
        images = re.findall(r'<img[^>]*\ssrc="([^"]+)"', html)
        assert images, page
        for src in images:  # GX's logo, from the copy the site holds
            assert not src.startswith(("http:", "https:")) and (page.parent / src).is_file(), (page, src)
        remote = re.findall(r'<(?:link[^>]*\shref|script[^>]*\ssrc)="(https?://[^"]+)"', html)
        assert {urlparse(url).hostname for url in remote} <= CDNS, (page, remote)


def test_with_vendored_assets_no_page_loads_a_stylesheet_or_script_from_elsewhere(repo: Path, capsys) -> None:
    _vendor_fakes(repo / docs_assets.VENDOR)
    _gate_swe_cases(repo, SweConstructParams())
    assert docs.main([]) == 0
    assert "stay on CDNs" not in capsys.readouterr().out
    pages = sorted((repo / SITE).rglob("*.html"))
    assert len(pages) >= 3
    linked = 0
    for page in pages:
        html = page.read_text(encoding="utf-8")
        links = re.findall(r'<(?:link[^>]*\shref|script[^>]*\ssrc)="([^"]+)"', html)
        assert not [u for u in links if u.startswith(("http:", "https:", "//"))], page
        for link in [u for u in links if "static/vendor/" in u]:  # (GX's own favicon link is broken on deep pages)
            assert (page.parent / link).is_file(), (page, link)
            linked += 1
    assert linked >= len(pages)
    fonts = repo / SITE / "static" / "vendor" / "@fortawesome+fontawesome-free@6.6.0" / "webfonts" / "font.woff2"
    assert fonts.is_file()  # all.min.css takes its fonts from ../webfonts


def test_every_cdn_link_of_the_installed_templates_has_a_vendored_asset() -> None:
    """A GX upgrade that links another file (or another version) fails here, not silently online."""
    import great_expectations

    templates = Path(great_expectations.__file__).parent / "render" / "view" / "templates"
    found = set()
    for template in templates.rglob("*.j2"):
        found |= {m[2] for m in docs_assets.LINK.finditer(template.read_text(encoding="utf-8"))}
    assert found, "no CDN links found in GX's templates: the pattern no longer matches them"
    assert found <= {a.url for a in docs_assets.ASSETS}, sorted(found - {a.url for a in docs_assets.ASSETS})


def test_fetch_keeps_only_the_linked_files_of_each_npm_package(tmp_path: Path) -> None:
    """``npm pack`` stood in by a script that writes each package's tarball (the real one needs the registry)."""
    import tarfile

    packs = tmp_path / "packs"
    packs.mkdir()
    for package in {a.package for a in docs_assets.ASSETS}:
        tarball = packs / (package.replace("/", "+") + ".tgz")
        with tarfile.open(tarball, "w:gz") as tar:
            for asset in [a for a in docs_assets.ASSETS if a.package == package]:
                for name in (asset.path, *(f"{d}/x.woff2" for d in asset.alongside)):
                    src = tmp_path / "src" / package.replace("/", "+") / name
                    src.parent.mkdir(parents=True, exist_ok=True)
                    src.write_text(name)
                    tar.add(src, arcname=f"package/{name}")
            readme = tmp_path / "README.md"
            readme.write_text("not linked")
            tar.add(readme, arcname="package/README.md")
    npm = tmp_path / "npm"
    npm.write_text(f'#!/bin/sh\n# npm pack <package> --silent --pack-destination <dir>\n'
                   f'cp "{packs}/$(echo "$2" | tr / +).tgz" "$5/"\n')
    npm.chmod(0o755)
    vendor = tmp_path / "vendor"
    fetched = docs_assets.fetch(vendor, npm=str(npm))
    assert sorted(fetched) == sorted({a.package for a in docs_assets.ASSETS})
    assert docs_assets.missing(vendor) == []
    assert not list(vendor.rglob("README.md")) and not list(vendor.glob(".fetch-*"))
    assert (docs_assets.package_dir(vendor, "@fortawesome/fontawesome-free@6.6.0") / "webfonts" / "x.woff2").is_file()
    assert docs_assets.fetch(vendor, npm=str(npm)) == []  # nothing missing: no npm call


def test_a_failing_npm_leaves_no_partial_package(tmp_path: Path) -> None:
    npm = tmp_path / "npm"
    npm.write_text("#!/bin/sh\necho 'npm error 404 Not Found' >&2\nexit 1\n")
    npm.chmod(0o755)
    with pytest.raises(RuntimeError, match="404"):
        docs_assets.fetch(tmp_path / "vendor", npm=str(npm))
    assert list((tmp_path / "vendor").iterdir()) == []


def test_nothing_published_returns_1(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert docs.main([]) == 1
    assert "nothing to document" in capsys.readouterr().out
    assert not (repo / "gx").exists()


def test_two_gates_on_one_artifact_each_keep_their_latest_result(tmp_path: Path) -> None:
    from tasks.reporting.inputs import load_gate_results
    from tasks.validation.gate import write_result

    results = tmp_path / "results"
    results.mkdir()
    (results / "data_cases_swe.json").write_text("{}")  # a result saved before they were kept per suite
    raw = {"suite_name": "swe_cases", "success": True, "results": [],
           "statistics": {"successful_expectations": 9, "evaluated_expectations": 9}}
    write_result(results, "data/cases/swe", "swe_cases", raw)
    write_result(results, "data/cases/swe", "case_splits", {**raw, "suite_name": "case_splits"})
    assert sorted(p.name for p in results.iterdir()) == ["data_cases_swe__case_splits.json",
                                                         "data_cases_swe__swe_cases.json"]
    gates = load_gate_results(results, tmp_path)  # what the report shows
    assert [(g.artifact, g.suite, g.passed) for g in gates] == [("data/cases/swe", "case_splits", 9),
                                                                ("data/cases/swe", "swe_cases", 9)]
