"""The file is not valid YAML (or JSON).

## What it does
Reports the first syntax error of a file at its line and column. Documents before the error are still linted.

## Why is this bad?
kubectl, Argo CD and Flux refuse the whole file; nothing in it gets applied.

## Example
```yaml
metadata:
  name: web
   labels: {app: web}   # indented one space too far
```

## Use instead
Fix the syntax at the reported position.
"""

from __future__ import annotations

from typing import Any

from ..model import ERROR
from ..rule import INPUT

CODE = "FW001"
NAME = "yaml-syntax-error"
SEVERITY = ERROR
SCOPE = INPUT
FIXABLE = False
OPTIONS: dict[str, Any] = {}
DEFAULTS: dict[str, Any] = {}
