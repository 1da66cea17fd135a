"""The release as written: the license, the one place of the version, the pre-commit `rev:` the docs give.

.ci/release-check builds the sdist and the wheel, runs `twine check --strict`, and installs each face;
these are the checks that need no network.
"""

from __future__ import annotations

import hashlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from packaging.requirements import Requirement
from packaging.version import Version

import fieldwarden

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

REPO = Path(__file__).resolve().parent.parent
PYPROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
VERSION = fieldwarden.__version__
# SHA-256 of https://www.apache.org/licenses/LICENSE-2.0.txt, the license's own text (Debian's
# /usr/share/common-licenses/Apache-2.0 and the LICENSE of Apache-licensed wheels are the same bytes).
APACHE_2_0 = "cfc7749b96f63bd31c3c42b5c471bf756814053e847c10f3eb003417bc523d30"
# Where the docs give the pre-commit snippet users copy.
PRE_COMMIT_DOCS = ("docs/pre-commit.md", "README.md")


def test_the_license_file_is_the_unmodified_apache_2_0_text() -> None:
    assert hashlib.sha256((REPO / "LICENSE").read_bytes()).hexdigest() == APACHE_2_0


def test_pyproject_states_the_license_the_current_way() -> None:
    project = PYPROJECT["project"]
    assert project["license"] == "Apache-2.0"  # an SPDX expression, not the deprecated {text = ...} table
    assert project["license-files"] == ["LICENSE"]
    assert not [c for c in project.get("classifiers", []) if c.startswith("License ::")]  # refused beside it
    (setuptools,) = [Requirement(r) for r in PYPROJECT["build-system"]["requires"] if r.startswith("setuptools")]
    floors = [Version(s.version) for s in setuptools.specifier if s.operator == ">="]
    assert floors and min(floors) >= Version("77.0.3"), "the SPDX license and license-files need setuptools 77.0.3"


def test_the_version_is_written_once() -> None:
    assert "version" not in PYPROJECT["project"] and "version" in PYPROJECT["project"]["dynamic"]
    assert PYPROJECT["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "fieldwarden.__version__"}
    Version(VERSION)  # a PEP 440 version
    pattern = re.compile(rf"(?<![\w.]){re.escape(VERSION)}(?![\w.])")
    written = []
    for folder in ("fieldwarden", "policies", "linter", "webhook", ".ci"):
        for path in sorted((REPO / folder).rglob("*")):
            if path.is_file() and path.suffix in ("", ".py", ".json", ".sh") and "__pycache__" not in path.parts:
                if pattern.search(path.read_text(encoding="utf-8", errors="replace")):
                    written.append(str(path.relative_to(REPO)))
    for name in ("pyproject.toml", "Dockerfile"):
        if pattern.search((REPO / name).read_text(encoding="utf-8")):
            written.append(name)
    assert written == ["fieldwarden/__init__.py"]


def test_the_chart_runs_the_image_of_this_version() -> None:
    # Helm needs the version in Chart.yaml (the image tag defaults to appVersion): it must agree.
    chart = yaml.safe_load((REPO / "helm" / "fieldwarden" / "Chart.yaml").read_text(encoding="utf-8"))
    assert chart["appVersion"] == VERSION


def test_version_prints_the_version_and_the_installed_metadata_agrees() -> None:
    import importlib.metadata

    done = subprocess.run([sys.executable, "-m", "fieldwarden", "--version"], capture_output=True, text=True,
                          timeout=60, cwd=REPO)
    assert (done.returncode, done.stdout, done.stderr) == (0, f"fieldwarden {VERSION}\n", "")
    assert importlib.metadata.version("fieldwarden") == VERSION, "the installed metadata is stale: pip install -e ."


def pre_commit_revs() -> list[tuple[str, str]]:
    """(file, rev) of each `rev:` of a fieldwarden repository in the docs' YAML snippets."""
    found = []
    for name in PRE_COMMIT_DOCS:
        path = REPO / name
        if not path.is_file():
            continue
        text = path.read_text(encoding="utf-8")
        for match in re.finditer(r"-\s+repo:\s*\S*fieldwarden\S*\s*\n\s+rev:\s*['\"]?([^'\"\s#]+)", text):
            found.append((name, match.group(1)))
    return found


def git(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", *args], capture_output=True, text=True, cwd=REPO, timeout=60)


def test_the_docs_give_the_tag_of_this_version_as_the_pre_commit_rev() -> None:
    revs = pre_commit_revs()
    assert revs, f"no `repo: .../fieldwarden` + `rev:` snippet in {PRE_COMMIT_DOCS}"
    assert {rev for _, rev in revs} == {f"v{VERSION}"}, revs


@pytest.mark.skipif(shutil.which("git") is None or not (REPO / ".git").exists(), reason="not a git checkout")
def test_the_pre_commit_rev_exists_and_is_this_release() -> None:
    # What a user copying the snippet gets: pre-commit clones the repository at that rev. It must be
    # a tag (pre-commit autoupdate moves tags), in this history, of a commit with this version and
    # the hooks. Made at release time by .ci/tag-release on the release commit.
    tag = f"v{VERSION}"
    if not git("tag", "--list").stdout.strip():  # (a clone made without tags: nothing to check against)
        pytest.skip("this clone has no tags (e.g. a shallow CI checkout); .ci/tag-release checks the rev when tagging")
    commit = git("rev-parse", "--verify", "--quiet", f"refs/tags/{tag}^{{commit}}")
    assert commit.returncode == 0, f"no tag {tag}: run .ci/tag-release on the release commit"
    assert git("merge-base", "--is-ancestor", commit.stdout.strip(), "HEAD").returncode == 0, (
        f"{tag} is not in this branch's history")
    at_tag = git("show", f"{tag}:fieldwarden/__init__.py").stdout
    assert f'__version__ = "{VERSION}"' in at_tag, f"{tag}'s fieldwarden/__init__.py says another version"
    assert git("cat-file", "-e", f"{tag}:.pre-commit-hooks.yaml").returncode == 0, f"{tag} has no hooks"
