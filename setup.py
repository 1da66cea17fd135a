"""Two optional C extensions, built where a C compiler (and, for the first, libyaml's headers) is at
hand; elsewhere the install goes on without them and the same results come from Python:
- the compiled reader of plain YAML (linter/_plainyaml.c; else PyYAML's node trees: linter/plainload.py);
- the check that an object fits its schema (policies/schemas/_fits.c; else the walk of validate.py).
Everything else about the package is in pyproject.toml.

FIELDWARDEN_PURE_WHEEL=1 leaves them out: the release's wheel stays one wheel for every platform and
Python (.ci/release-check); an install from the sdist or the repository (pre-commit, the action)
builds them.
"""

import os

from setuptools import Extension, setup

EXTENSIONS = [
    Extension("fieldwarden.linter._plainyaml", ["linter/_plainyaml.c"], libraries=["yaml"], optional=True),
    Extension("fieldwarden.policies.schemas._fits", ["policies/schemas/_fits.c"], optional=True),
]

setup(ext_modules=[] if os.environ.get("FIELDWARDEN_PURE_WHEEL") == "1" else EXTENSIONS)
