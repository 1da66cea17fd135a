"""Where fieldwarden's documentation lives: the one place that names the docs site.

The site is built by MkDocs from docs/ (its `site_url` in mkdocs.yml is `DOCS`), with a page
per rule at `rules/<CODE>/`, generated from the rule module's docstring (what `explain` prints).
"""

from __future__ import annotations

DOCS = "https://fieldwarden.github.io/fieldwarden/"
REPOSITORY = "https://github.com/fieldwarden/fieldwarden"


def rule_page(code: str) -> str:
    """The URL of a rule's page on the docs site, e.g. `.../rules/FW101/`."""
    return f"{DOCS}rules/{code}/"
