"""Documentation examples: manifests of an MkDocs site's `docs_dir` that one of its pages embeds.

A page that writes `{!docs/operator-manual/argocd-repo-creds.yaml!}` (markdown-include) or
`--8<-- "docs/example.yaml"` (pymdownx.snippets) shows that file as an example on its own: a reader
copies it, nobody applies the documentation folder as one. Each such file is a unit of its own,
still linted (a broken example is a real bug), but never joined with the other examples of its
folder (Argo CD's argocd-repo-creds.yaml and argocd-repositories.yaml both show the Secret
`private-oci-repo`: no duplicate).

Only with an `mkdocs.yml` (or `mkdocs.yaml`) at the project's root that enables one of those
extensions, and only for files inside its `docs_dir` (default `docs`): a page that embeds a
release manifest from outside the documentation does not make it an example. Reading is bounded
(MAX_PAGES pages of MAX_PAGE_BYTES each); the configuration is matched, not loaded (MkDocs files
carry `!!python/name` tags).
"""

from __future__ import annotations

import os
import posixpath
import re
from pathlib import Path

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: policies/records.py)
if TYPE_CHECKING:
    from typing import Iterable, Sequence

from .reading import small_text

MKDOCS_FILES = ("mkdocs.yml", "mkdocs.yaml")
EXTENSIONS = ("markdown_include", "pymdownx.snippets")
MAX_PAGES = 5000
MAX_PAGE_BYTES = 1 << 20
# (patterns, compiled on first use through re's cache: most runs read no documentation)
_DOCS_DIR = r"^docs_dir:\s*['\"]?([^'\"\s#]+)"
# {!path!} (markdown-include); --8<-- "path" or 'path' (snippets; a `path:lines` suffix aside)
_INCLUDES = r"\{!\s*([^!\s]+?)\s*!\}|--8<--\s+[\"']([^\"':]+)(?::[\d:,-]*)?[\"']"


def docs_dir(config: str) -> str | None:
    """The documentation folder an MkDocs configuration names, None when no page can embed a file."""
    if not any(extension in config for extension in EXTENSIONS):
        return None
    match = re.search(_DOCS_DIR, config, re.M)
    folder = posixpath.normpath(match.group(1)) if match else "docs"
    return None if folder.startswith(("/", "..")) or folder == "." else folder


def embedded(page: str, text: str) -> Iterable[str]:
    """The project-relative paths a page embeds (relative to the root, as MkDocs runs there, else to the page)."""
    if "{!" not in text and "--8<--" not in text:
        return
    for match in re.finditer(_INCLUDES, text):
        path = (match.group(1) or match.group(2) or "").strip()
        if path and "://" not in path and not path.startswith("/"):
            yield posixpath.normpath(path)
            yield posixpath.normpath(posixpath.join(posixpath.dirname(page), path))


def read(root: Path, files: Sequence[str]) -> dict[str, str]:
    """Manifests (among `files`) the documentation embeds: file -> its unit's label."""
    config = next((name for name in MKDOCS_FILES if name in files), None)
    if config is None:
        return {}
    folder = docs_dir(_text(root / config))
    if folder is None:
        return {}
    manifests = {path for path in files if path.startswith(folder + "/")}
    if not manifests:
        return {}
    found: dict[str, str] = {}
    for page in _pages(root, folder):
        for path in embedded(page, _text(root / page)):
            if path in manifests:
                found.setdefault(path, f"docs example {path.rpartition('/')[2]}")
    return found


def _pages(root: Path, folder: str) -> list[str]:
    pages: list[str] = []
    for current, folders, names in os.walk(root / folder):
        folders[:] = sorted(name for name in folders if not name.startswith("."))
        relative = os.path.relpath(current, root).replace(os.sep, "/")
        pages.extend(f"{relative}/{name}" for name in sorted(names) if name.endswith(".md"))
        if len(pages) >= MAX_PAGES:
            return pages[:MAX_PAGES]
    return pages


def _text(path: Path) -> str:
    return small_text(path, MAX_PAGE_BYTES)
