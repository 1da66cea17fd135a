"""MkDocs hooks (mkdocs.yml `hooks:`): add the generated pages (docgen/pages.py) to the site as
virtual files, so that nothing generated is committed and nothing is copied by hand."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from mkdocs.structure.files import File, Files

sys.path.insert(0, str(Path(__file__).resolve().parent))  # (pages.py beside this file; MkDocs loads hooks by path)
import pages  # noqa: E402


def on_config(config: Any) -> Any:
    """Snippets' paths are from the repository root (mkdocs.yml's folder), wherever mkdocs runs."""
    snippets = config.mdx_configs.setdefault("pymdownx.snippets", {})
    snippets["base_path"] = [str(Path(config.config_file_path).resolve().parent)]
    return config


def on_files(files: Files, config: Any) -> Files:
    generated = {"rules/index.md": pages.rules_index(), "options.md": pages.options_page(), **pages.rule_pages()}
    for path, content in generated.items():
        files.append(File.generated(config, path, content=content))
    return files
