"""The stylesheets, scripts and fonts GX Data Docs take from CDNs, vendored at set-up time so the pages render offline.

GX's page templates (great_expectations 1.24) link Bootstrap, bootstrap-table, the datepicker, Font Awesome, jQuery,
Popper and Vega from CDNs, and no installed package ships those files. ``make setup`` runs
``python -m tasks.validation.docs_assets``, which takes each file from its npm package, at the exact version the
template names (``npm pack``, so npm checks the registry's integrity hash), into ``.cache/docs-assets/``;
:func:`localise_assets` (run by ``make docs``) copies them into the site and points every page at its copy. Without
the vendored files (no npm, no registry) the links stay remote and the pages are styled only where the CDNs answer.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path
from typing import NamedTuple

VENDOR = Path(".cache") / "docs-assets"
SITE_FOLDER = Path("static") / "vendor"


class Asset(NamedTuple):
    url: str
    """The link exactly as GX's templates write it."""
    package: str
    """``name@version`` on npm."""
    path: str
    """The file inside the package."""
    alongside: tuple[str, ...] = ()
    """Folders of the package the file refers to by relative path (Font Awesome's ``../webfonts``)."""


ASSETS: tuple[Asset, ...] = (
    Asset("https://maxcdn.bootstrapcdn.com/bootstrap/4.3.1/css/bootstrap.min.css", "bootstrap@4.3.1",
          "dist/css/bootstrap.min.css"),
    Asset("https://stackpath.bootstrapcdn.com/bootstrap/4.3.1/js/bootstrap.min.js", "bootstrap@4.3.1",
          "dist/js/bootstrap.min.js"),
    Asset("https://cdn.jsdelivr.net/npm/@forevolve/bootstrap-dark@1.1.0/dist/css/bootstrap-prefers-dark.css",
          "@forevolve/bootstrap-dark@1.1.0", "dist/css/bootstrap-prefers-dark.css"),
    Asset("https://cdnjs.cloudflare.com/ajax/libs/bootstrap-datepicker/1.9.0/css/bootstrap-datepicker.min.css",
          "bootstrap-datepicker@1.9.0", "dist/css/bootstrap-datepicker.min.css"),
    Asset("https://cdnjs.cloudflare.com/ajax/libs/bootstrap-datepicker/1.9.0/js/bootstrap-datepicker.min.js",
          "bootstrap-datepicker@1.9.0", "dist/js/bootstrap-datepicker.min.js"),
    Asset("https://cdnjs.cloudflare.com/ajax/libs/font-awesome/6.6.0/css/all.min.css",
          "@fortawesome/fontawesome-free@6.6.0", "css/all.min.css", ("webfonts",)),
    Asset("https://cdnjs.cloudflare.com/ajax/libs/popper.js/1.12.9/umd/popper.min.js", "popper.js@1.12.9",
          "dist/umd/popper.min.js"),
    Asset("https://code.jquery.com/jquery-3.7.1.min.js", "jquery@3.7.1", "dist/jquery.min.js"),
    Asset("https://unpkg.com/bootstrap-table@1.19.1/dist/bootstrap-table.min.css", "bootstrap-table@1.19.1",
          "dist/bootstrap-table.min.css"),
    Asset("https://unpkg.com/bootstrap-table@1.19.1/dist/bootstrap-table.min.js", "bootstrap-table@1.19.1",
          "dist/bootstrap-table.min.js"),
    Asset("https://unpkg.com/bootstrap-table@1.19.1/dist/extensions/filter-control/bootstrap-table-filter-control.min.js",
          "bootstrap-table@1.19.1", "dist/extensions/filter-control/bootstrap-table-filter-control.min.js"),
    Asset("https://unpkg.com/bootstrap-table@1.19.0/dist/extensions/filter-control/bootstrap-table-filter-control.css",
          "bootstrap-table@1.19.0", "dist/extensions/filter-control/bootstrap-table-filter-control.css"),
    Asset("https://unpkg.com/bootstrap-table@1.19.0/dist/extensions/filter-control/"
          "bootstrap-table-filter-control.min.css",
          "bootstrap-table@1.19.0", "dist/extensions/filter-control/bootstrap-table-filter-control.min.css"),
    # jsdelivr serves a package's "jsdelivr" file for a bare major version; pinned here to the newest release of it
    Asset("https://cdn.jsdelivr.net/npm/vega@5", "vega@5.33.1", "build/vega.min.js"),
    Asset("https://cdn.jsdelivr.net/npm/vega-lite@5", "vega-lite@5.23.0", "build/vega-lite.min.js"),
    Asset("https://cdn.jsdelivr.net/npm/vega-embed@6", "vega-embed@6.29.0", "build/vega-embed.min.js"),
)
LINK = re.compile(r'(<(?:link[^>]*\shref|script[^>]*\ssrc)=")(https?://[^"]+)(")')


def package_dir(vendor: Path, package: str) -> Path:
    """``vendor/<name@version>`` with the scope's slash replaced (``@fortawesome/x@1`` -> ``@fortawesome+x@1``)."""
    return vendor / package.replace("/", "+")


def missing(vendor: Path) -> list[Asset]:
    return [a for a in ASSETS if not (package_dir(vendor, a.package) / a.path).is_file()]


def fetch(vendor: Path, *, npm: str = "npm", timeout: float = 300.0) -> list[str]:
    """Vendor every package that is not there yet; returns the packages fetched. One ``npm pack`` per package into
    a temporary folder; only the files the pages use are kept, and a package's folder appears whole or not at all."""
    fetched = []
    vendor.mkdir(parents=True, exist_ok=True)
    for package in sorted({a.package for a in missing(vendor)}):
        wanted = [a for a in ASSETS if a.package == package]
        with tempfile.TemporaryDirectory(prefix=".fetch-", dir=vendor) as tmp:
            done = subprocess.run([npm, "pack", package, "--silent", "--pack-destination", tmp], capture_output=True,
                                  text=True, timeout=timeout)
            tarballs = sorted(Path(tmp).glob("*.tgz"))
            if done.returncode != 0 or not tarballs:
                detail = (done.stderr or done.stdout).strip().splitlines()
                raise RuntimeError(f"npm pack {package} failed: {detail[-1] if detail else done.returncode}")
            staged = Path(tmp) / "staged"
            _extract(tarballs[0], staged, [a.path for a in wanted], [d for a in wanted for d in a.alongside])
            target = package_dir(vendor, package)
            if target.exists():
                shutil.rmtree(target)
            os.replace(staged, target)
        fetched.append(package)
    return fetched


def _extract(tarball: Path, dest: Path, files: list[str], folders: list[str]) -> None:
    with tarfile.open(tarball) as tar:
        for member in tar.getmembers():
            name = member.name.removeprefix("package/")
            if not member.isfile() or not (name in files or any(name.startswith(f"{d}/") for d in folders)):
                continue
            out = dest / name
            if not out.resolve().is_relative_to(dest.resolve()):
                raise RuntimeError(f"{tarball.name}: {member.name} leaves the package folder")
            out.parent.mkdir(parents=True, exist_ok=True)
            source = tar.extractfile(member)
            assert source is not None
            out.write_bytes(source.read())
    absent = [f for f in files if not (dest / f).is_file()]
    if absent:
        raise RuntimeError(f"{tarball.name} has no {', '.join(absent)}")


def localise_assets(site: Path, vendor: Path) -> tuple[int, int]:
    """Copy the vendored files into ``site/static/vendor`` and point each page's links at them (relative links).
    Returns (links changed, links left remote). A link with no vendored file keeps its URL."""
    from tasks.store import atomic_write_text

    by_url = {a.url: a for a in ASSETS if a not in missing(vendor)}
    if by_url:
        for package in sorted({a.package for a in by_url.values()}):
            shutil.copytree(package_dir(vendor, package), package_dir(site / SITE_FOLDER, package), dirs_exist_ok=True)
    changed = left = 0
    for page in sorted(site.rglob("*.html")):
        text = page.read_text(encoding="utf-8")
        parts, end = [], 0
        for match in LINK.finditer(text):
            asset = by_url.get(match[2])
            if asset is None:
                left += 1
                continue
            changed += 1
            copy = package_dir(site / SITE_FOLDER, asset.package) / asset.path
            parts += [text[end:match.start(2)], os.path.relpath(copy, page.parent).replace(os.sep, "/")]
            end = match.end(2)
        if parts:
            atomic_write_text(page, "".join([*parts, text[end:]]))
    return changed, left


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tasks.validation.docs_assets", description=__doc__.splitlines()[0])
    parser.add_argument("--vendor", type=Path, default=None, help=f"default: <repo>/{VENDOR.as_posix()}")
    args = parser.parse_args(argv)
    from tasks.store import repo_root

    vendor = args.vendor or repo_root() / VENDOR
    if not missing(vendor):
        print(f"docs assets: all {len(ASSETS)} files vendored in {VENDOR.as_posix()}")
        return 0
    npm = shutil.which("npm")
    if npm is None:
        print("docs assets: npm not found; GX Data Docs keep their CDN links (styled only where the CDNs answer)")
        return 1
    try:
        fetched = fetch(vendor, npm=npm)
    except (RuntimeError, OSError, subprocess.TimeoutExpired) as err:
        print(f"docs assets: {err}; GX Data Docs keep their CDN links for what is not vendored")
        return 1
    print(f"docs assets: vendored {', '.join(fetched)} into {VENDOR.as_posix()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
