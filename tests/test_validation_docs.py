"""`make docs`: GX Data Docs for the published artifacts, built offline in a file-backed context."""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import urlparse

import pytest

from tasks import store
from tasks.domains.swe import mask_issue
from tasks.domains.swe.samples import load_samples
from tasks.params import SweConstructParams
from tasks.validation import docs
from tests.conftest import MINI

SITE = Path("gx") / "uncommitted" / "data_docs" / "local_site"
CDNS = {"cdn.jsdelivr.net", "cdnjs.cloudflare.com", "maxcdn.bootstrapcdn.com", "stackpath.bootstrapcdn.com",
        "unpkg.com", "code.jquery.com"}
"""Where GX's templates take Bootstrap, bootstrap-table, Font Awesome, jQuery, Popper and Vega from: nothing installed
ships those files, so these links stay (tasks/validation/docs.py)."""


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    (tmp_path / "dvc.yaml").write_text("stages: {}\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_docs_render_published_cases(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    cfg = SweConstructParams(variants_per_issue=2)
    cases = [case for issue in load_samples(MINI) for case in mask_issue(issue, cfg)[0]]
    assert cases
    store.atomic_write_text(repo / "data" / "cases" / "swe" / "cases.jsonl", store.jsonl_text(cases))

    assert docs.main([]) == 0

    assert (repo / SITE / "index.html").is_file()
    pages = sorted((repo / SITE / "validations" / "swe_cases").rglob("*.html"))
    assert pages, "no validation-result page for swe_cases"
    assert "swe_cases" in pages[0].read_text(encoding="utf-8")
    out = capsys.readouterr().out
    assert (SITE / "index.html").as_posix() in out
    assert "swe_cases passed" in out


def test_pages_show_local_images_and_take_only_the_known_cdns(repo: Path) -> None:
    cfg = SweConstructParams(variants_per_issue=1)
    cases = [case for issue in load_samples(MINI) for case in mask_issue(issue, cfg)[0]]
    store.atomic_write_text(repo / "data" / "cases" / "swe" / "cases.jsonl", store.jsonl_text(cases))
    assert docs.main([]) == 0

    pages = sorted((repo / SITE).rglob("*.html"))
    assert len(pages) >= 3  # the index, the suite, a validation result
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


def test_nothing_published_returns_1(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert docs.main([]) == 1
    assert "nothing to document" in capsys.readouterr().out
    assert not (repo / "gx").exists()
