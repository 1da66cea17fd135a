"""A suppression comment or annotation suppresses nothing.

## What it does
Reports a `# fieldwarden: ignore[...]` comment or a `fieldwarden.io/ignore` annotation entry that matched no finding of an enabled rule, or that names an unknown rule.

## Why is this bad?
Stale suppressions hide the next real problem on that line or object, and unknown codes are usually typos.

## Example
```yaml
spec:
  replicas: 3  # fieldwarden: ignore[FW201]   (FW201 is not reported here)
```

## Use instead
Delete the suppression, or name the rule that actually fires.
"""

from __future__ import annotations

from typing import Any

from ..model import WARNING
from ..rule import INPUT

CODE = "FW003"
NAME = "unused-suppression"
SEVERITY = WARNING
SCOPE = INPUT
FIXABLE = False
OPTIONS: dict[str, Any] = {}
DEFAULTS: dict[str, Any] = {}
