"""The compiled reader of plain YAML (linter/_plainyaml.c), built where a C compiler and libyaml's
headers are at hand; elsewhere the install goes on without it and the linter reads every file with
PyYAML (linter/plainload.py). Everything else about the package is in pyproject.toml.

FIELDWARDEN_PURE_WHEEL=1 leaves it out: the release's wheel stays one wheel for every platform and
Python (.ci/release-check); an install from the sdist or the repository (pre-commit, the action)
builds it.
"""

import os

from setuptools import Extension, setup

READER = Extension("fieldwarden.linter._plainyaml", ["linter/_plainyaml.c"], libraries=["yaml"], optional=True)

setup(ext_modules=[] if os.environ.get("FIELDWARDEN_PURE_WHEEL") == "1" else [READER])
