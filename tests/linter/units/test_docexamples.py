"""Files an MkDocs page embeds are examples, each a unit of its own (linter/units/docexamples.py).

The shape is argoproj/argo-cd's at 37ee0097cf (tests/fixtures/repos/argocd-docs): two pages embed
`argocd-repo-creds.yaml` and `argocd-repositories.yaml` with `{!path!}`, both show the Secret
`private-oci-repo`.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from fieldwarden.linter.units.docexamples import docs_dir, embedded, read
from tests.helpers import FIXTURES, WEB_DEPLOYMENT, git_repo, lint

ARGOCD = FIXTURES / "repos" / "argocd-docs"
MANUAL = "docs/operator-manual"


def test_the_configuration_says_where_the_docs_are_and_whether_pages_embed_files() -> None:
    assert docs_dir("site_name: x\nmarkdown_extensions:\n- markdown_include.include\n") == "docs"
    assert docs_dir("docs_dir: site/src\nmarkdown_extensions:\n  - pymdownx.snippets:\n      base_path: .\n") == "site/src"
    assert docs_dir("site_name: x\nmarkdown_extensions:\n- admonition\n") is None  # nothing embeds a file
    assert docs_dir("docs_dir: ../elsewhere\nmarkdown_extensions: [markdown_include.include]\n") is None


def test_both_include_syntaxes_are_read() -> None:
    page = f"{MANUAL}/page.md"
    text = '{!docs/a.yaml!}\n--8<-- "docs/b.yaml"\n--8<-- \'c.yaml:3:9\'\n--8<-- "https://x/y.yaml"\n'
    assert set(embedded(page, text)) == {"docs/a.yaml", f"{MANUAL}/docs/a.yaml", "docs/b.yaml", f"{MANUAL}/docs/b.yaml",
                                         "c.yaml", f"{MANUAL}/c.yaml"}


def test_argocds_embedded_examples_are_units_of_their_own() -> None:
    files = sorted(p.relative_to(ARGOCD).as_posix() for p in ARGOCD.rglob("*.y*ml"))
    assert read(ARGOCD, files) == {f"{MANUAL}/argocd-repo-creds.yaml": "docs example argocd-repo-creds.yaml",
                                   f"{MANUAL}/argocd-repositories.yaml": "docs example argocd-repositories.yaml"}


def test_an_example_is_still_linted_and_a_file_outside_the_docs_is_no_example(tmp_path: Path) -> None:
    root = tmp_path / "argo-cd"
    shutil.copytree(ARGOCD, root)
    git_repo(root, {f"{MANUAL}/broken.yaml": WEB_DEPLOYMENT.replace("  selector:\n    matchLabels: {app: web}\n", ""),
                    f"{MANUAL}/broken-yaml.md": "{!docs/operator-manual/broken.yaml!}\n",
                    "manifests/install.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: private-oci-repo\n"
                                              "  namespace: argocd\n---\napiVersion: v1\nkind: Secret\nmetadata:\n"
                                              "  name: private-oci-repo\n  namespace: argocd\n",
                    f"{MANUAL}/install.md": "{!manifests/install.yaml!}\n"})
    run = lint(["--select", "FW101,FW305"], cwd=root)
    assert sorted((f["file"], f["line"], f["code"]) for f in run.findings) == [
        (f"{MANUAL}/broken.yaml", 5, "FW101"), ("manifests/install.yaml", 4, "FW305"), ("manifests/install.yaml", 10, "FW305")]
