"""What each extra installs is enough, and the image's pins agree with pyproject.toml.

The test environment has every extra and the test tools, so an import that only works
because pytest brought a package (gunicorn 27's gevent worker needs `packaging`, which only
gunicorn's `gevent` extra declares) goes unseen by the other tests. Here the packages an
extra brings are worked out from pyproject.toml and the installed packages' own metadata,
and the extra's modules are imported in a Python that refuses every other installed package.
.ci/clean-install does the same for real, from PyPI, in fresh virtualenvs.
"""

from __future__ import annotations

import importlib.metadata
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

REPO = Path(__file__).resolve().parent.parent
CONSTRAINTS = REPO / "constraints" / "webhook.txt"
DOCKERFILE = REPO / "Dockerfile"


def project_requirements(extra: str) -> list[Requirement]:
    """The base requirements and those of `extra` ("" for none), as pyproject.toml says now."""
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    lines = list(project["dependencies"]) + (list(project["optional-dependencies"][extra]) if extra else [])
    return [Requirement(line) for line in lines]


def applies(requirement: Requirement, extras: set[str], environment: dict[str, str]) -> bool:
    if requirement.marker is None:
        return True
    return any(requirement.marker.evaluate({**environment, "extra": extra}) for extra in extras | {""})


def installed_closure(extra: str) -> set[str]:
    """Every distribution `pip install 'fieldwarden[extra]'` brings, by the installed packages' metadata."""
    environment = dict(default_environment())
    found: set[str] = set()
    todo = [(r, set(r.extras)) for r in project_requirements(extra) if applies(r, set(), environment)]
    while todo:
        requirement, extras = todo.pop()
        name = canonicalize_name(requirement.name)
        key = f"{name}[{','.join(sorted(extras))}]"
        if key in found:
            continue
        found.add(key)
        for line in importlib.metadata.distribution(name).requires or []:
            child = Requirement(line)
            if applies(child, extras, environment):
                todo.append((child, set(child.extras)))
    return {key.partition("[")[0] for key in found}


# Imports only what `allowed` (distribution names) holds, besides the standard library and fieldwarden.
GUARDED_IMPORT = r"""
import importlib.abc, importlib.metadata, json, re, sys
allowed = set(json.loads(sys.argv[1])) | {"fieldwarden"}
owners = importlib.metadata.packages_distributions()
canonical = lambda name: re.sub(r"[-_.]+", "-", name).lower()

class Refuse(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        top = name.partition(".")[0]
        dists = owners.get(top)
        if dists and not any(canonical(d) in allowed for d in dists):
            raise ModuleNotFoundError(f"No module named {top!r} (from {dists[0]}, which the extra does not bring)",
                                      name=top)
        return None

sys.meta_path.insert(0, Refuse())
for module in json.loads(sys.argv[2]):
    importlib.import_module(module)
print("imported")
"""

MODULES = {
    "": ["fieldwarden.cli", "fieldwarden.linter.cli"],
    "cluster": ["fieldwarden.linter.live.checks", "kubernetes.client", "kubernetes.config"],
    "webhook": [
        "fieldwarden.webhook.server.serve", "fieldwarden.webhook.server.worker", "fieldwarden.webhook.server.app",
        "fieldwarden.webhook.server.certs", "fieldwarden.webhook.server.gunicorn_conf",
        "fieldwarden.webhook.inventory.cluster", "gevent.monkey", "gunicorn.workers.ggevent",
    ],
}


@pytest.mark.parametrize("extra", sorted(MODULES))
def test_an_install_of_the_extra_alone_imports_what_it_runs(extra: str) -> None:
    brought = sorted(installed_closure(extra))
    done = subprocess.run([sys.executable, "-c", GUARDED_IMPORT, json.dumps(brought), json.dumps(MODULES[extra])],
                          capture_output=True, text=True, timeout=120, cwd=REPO)
    assert done.returncode == 0 and done.stdout.strip() == "imported", done.stderr[-2000:]


def pins() -> dict[str, Version]:
    """constraints/webhook.txt: one `name==version` a line, besides comments."""
    found: dict[str, Version] = {}
    for number, line in enumerate(CONSTRAINTS.read_text(encoding="utf-8").splitlines(), 1):
        text = line.split("#", 1)[0].strip()
        if not text:
            continue
        match = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)==([0-9][^\s;]*)", text)
        assert match, f"constraints/webhook.txt:{number}: not an exact pin: {line!r}"
        name = canonicalize_name(match.group(1))
        assert name not in found, f"constraints/webhook.txt:{number}: {name} pinned twice"
        found[name] = Version(match.group(2))
    return found


def image_environment() -> dict[str, str]:
    """The marker environment of the image: the Dockerfile's python:X.Y base, on Linux."""
    match = re.search(r"^FROM python:(\d+)\.(\d+)", DOCKERFILE.read_text(encoding="utf-8"), re.MULTILINE)
    assert match, "the Dockerfile's base image is not python:X.Y"
    version = f"{match.group(1)}.{match.group(2)}"
    return {**default_environment(), "python_version": version, "python_full_version": f"{version}.0",
            "sys_platform": "linux", "platform_system": "Linux", "os_name": "posix",
            "implementation_name": "cpython", "platform_python_implementation": "CPython"}


def test_the_image_pins_every_requirement_of_the_webhook_within_pyproject_ranges() -> None:
    pinned = pins()
    environment = image_environment()
    for requirement in project_requirements("webhook"):
        if not applies(requirement, set(), environment):
            continue
        name = canonicalize_name(requirement.name)
        assert name in pinned, f"constraints/webhook.txt does not pin {requirement}"
        assert requirement.specifier.contains(pinned[name], prereleases=True), (
            f"constraints/webhook.txt pins {name}=={pinned[name]}, outside pyproject.toml's {requirement}")


def test_the_image_pins_what_the_extras_of_its_requirements_bring() -> None:
    # e.g. gunicorn[gevent]: gevent and packaging. Known from the metadata of the pinned
    # version when the test environment has that version.
    pinned = pins()
    environment = image_environment()
    checked = 0
    for requirement in project_requirements("webhook"):
        name = canonicalize_name(requirement.name)
        if not requirement.extras or importlib.metadata.version(name) != str(pinned.get(name)):
            continue
        for line in importlib.metadata.distribution(name).requires or []:
            child = Requirement(line)
            if child.marker is not None and applies(child, set(requirement.extras), environment) \
                    and not applies(child, set(), environment):
                assert canonicalize_name(child.name) in pinned, f"constraints/webhook.txt does not pin {child.name} " \
                                                                f"(from {requirement})"
                checked += 1
    if not checked:
        pytest.skip("no requirement with extras has its pinned version installed here")


def test_the_image_installs_under_the_pins() -> None:
    text = DOCKERFILE.read_text(encoding="utf-8")
    assert re.search(r"^COPY [^\n]*constraints/", text, re.MULTILINE), "the Dockerfile does not copy constraints/"
    assert re.search(r"pip install[^\n]* -c constraints/webhook\.txt[^\n]* '\.\[webhook\]'", text), (
        "the Dockerfile does not install '.[webhook]' under constraints/webhook.txt")


def test_the_pins_satisfy_one_another_as_far_as_the_installed_metadata_tells() -> None:
    # Walk what '.[webhook]' brings in the image's environment; where this environment has a pinned
    # version installed, its own requirements are known: each must be pinned, within its range.
    pinned = pins()
    environment = image_environment()
    todo = [(r, set(r.extras)) for r in project_requirements("webhook") if applies(r, set(), environment)]
    seen: set[str] = set()
    read = 0
    while todo:
        requirement, extras = todo.pop()
        name = canonicalize_name(requirement.name)
        assert name in pinned, f"constraints/webhook.txt does not pin {name} (required as {requirement})"
        assert requirement.specifier.contains(pinned[name], prereleases=True), (
            f"constraints/webhook.txt pins {name}=={pinned[name]}, outside {requirement}")
        key = f"{name}[{','.join(sorted(extras))}]"
        if key in seen:
            continue
        seen.add(key)
        try:
            installed = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        if Version(installed.version) != pinned[name]:
            continue
        read += 1
        for line in installed.requires or []:
            child = Requirement(line)
            if applies(child, extras, environment):
                todo.append((child, set(child.extras)))
    if read == 0:  # (.ci/lowest-deps installs the floors, not the image's pins: there is no pinned metadata to read)
        pytest.skip("no pinned version is installed in this environment (e.g. .ci/lowest-deps)")
    assert read >= len(project_requirements("webhook")) // 2, f"only {read} pinned versions' metadata could be read"


def test_the_constraints_are_for_the_images_python() -> None:
    header = re.search(r"on CPython (\d+\.\d+)", CONSTRAINTS.read_text(encoding="utf-8"))
    bases = set(re.findall(r"^FROM python:(\d+\.\d+)", DOCKERFILE.read_text(encoding="utf-8"), re.MULTILINE))
    assert header and bases == {header.group(1)}, (
        f"constraints/webhook.txt is resolved for CPython {header and header.group(1)}, the Dockerfile's stages "
        f"use python:{sorted(bases)}")


def test_the_dockerfile_copies_every_file_the_build_reads() -> None:
    # `pip install .` in the image builds the sdist's way: pyproject's readme and license files and
    # every package folder must be in the build context it copies (LICENSE was once missing).
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    needed = {project["project"]["readme"], *project["project"].get("license-files", [])}
    needed |= {folder.split("/")[0] + "/" for folder in project["tool"]["setuptools"]["package-dir"].values()}
    copied: set[str] = set()
    for line in re.findall(r"^COPY (?!--from)([^\n]+)$", DOCKERFILE.read_text(encoding="utf-8"), re.MULTILINE):
        copied |= set(line.split()[:-1])  # (folders are written `name/`)
    assert needed <= copied, f"the Dockerfile does not copy {sorted(needed - copied)}"
