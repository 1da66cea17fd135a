"""The documentation site: `mkdocs build --strict` passes (no broken link, no missing page), every
rule has its page (the text `fieldwarden explain` prints), and from the front page every page of
the site (each rule, the option reference, each recipe) is at most two clicks away, following the
links in the pages' own text (the navigation bar would make that trivially true)."""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
from pathlib import Path, PurePosixPath

import pytest

from fieldwarden.policies.config import build_schema
from fieldwarden.policies.registry import RULES
from fieldwarden.policies.rule import summary

REPO = Path(__file__).resolve().parent.parent

pytest.importorskip("mkdocs", reason="the docs site needs the docs extra: pip install -e '.[docs]' (.ci/docs runs it)")
pytest.importorskip("material", reason="the docs site needs the docs extra: pip install -e '.[docs]' (.ci/docs runs it)")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", str(REPO / "mkdocs.yml"), "-d", str(out)],
                         cwd=REPO, capture_output=True, text=True, timeout=300, env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    assert run.returncode == 0, run.stderr[-4000:]
    assert "WARNING" not in run.stderr, run.stderr[-4000:]
    return out


def _page(site: Path, url: str) -> str:
    return (site / url / "index.html").read_text() if url else (site / "index.html").read_text()


def _text_links(site: Path, url: str) -> set[str]:
    """The site pages (as URLs like `rules/FW101/`) that the page at `url` links to from its text."""
    article = re.search(r'<article class="md-content__inner.*?</article>', _page(site, url), re.S)
    assert article, url
    found = set()
    for href in re.findall(r'href="([^"]*)"', article.group(0)):
        href = html.unescape(href).split("#", 1)[0]
        if not href or re.match(r"[a-z]+:", href) or href.startswith("/"):
            continue
        parts: list[str] = []
        for part in PurePosixPath(url, href).parts:
            if part == "..":
                parts.pop()
            elif part not in (".", "index.html"):
                parts.append(part)
        found.add("".join(p + "/" for p in parts))
    return found


def _all_pages(site: Path) -> set[str]:
    pages = {str(p.parent.relative_to(site)) + "/" for p in site.rglob("index.html")}
    return {"" if p == "./" else p for p in pages} - {"search/", "assets/"}


def test_the_site_builds_strictly_and_every_rule_has_its_page(site: Path) -> None:
    for code, rule in RULES.items():
        page = _page(site, f"rules/{code}/")
        assert f"{code} {rule.NAME} ({rule.SEVERITY})" in page
        assert html.escape(summary(rule), quote=False).split("`")[0] in page
        for heading in ("What it does", "Why is this bad?", "Example", "Use instead"):
            assert heading in page, (code, heading)
    index = _page(site, "rules/")
    assert all(f'href="{code}/"' in index for code in RULES)


def test_every_page_is_two_clicks_from_the_front_page(site: Path) -> None:
    one = _text_links(site, "")
    assert {"rules/", "options/", "configuration/", "security/", "comparison/"} <= one
    two = set(one)
    for url in one:
        if (site / url / "index.html").is_file():
            two |= _text_links(site, url)
    missing = _all_pages(site) - two - {""}
    assert not missing, f"more than two clicks from the front page: {sorted(missing)}"


def test_the_option_reference_lists_every_option(site: Path) -> None:
    page = _page(site, "options/")
    schema = build_schema()
    keys = [key for key in schema["properties"] if key not in ("rules", "webhook", "cluster")]
    keys += [f"{section}.{key}" for section in ("webhook", "cluster") for key in schema["properties"][section]["properties"]]
    keys += [f"rules.{code}.{key}" for code in RULES for key in schema["$defs"][code]["properties"] if key != "severity"]
    assert len(keys) > 40
    for key in keys:
        assert f"<code>{key}</code>" in page, key
