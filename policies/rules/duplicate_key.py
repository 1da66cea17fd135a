"""A mapping has the same key twice.

## What it does
Reports the second occurrence of a key inside one mapping, naming the line of the first.

## Why is this bad?
YAML parsers disagree on which value wins, and Kubernetes' own YAML decoding rejects the manifest (`key already set in map`).

## Example
```yaml
containers:
- name: app
  image: app:1
  image: app:2
```

## Use instead
Keep one key with the value you mean.
"""

from __future__ import annotations

from typing import Any

from ..model import ERROR
from ..rule import INPUT

CODE = "FW002"
NAME = "duplicate-key"
SEVERITY = ERROR
SCOPE = INPUT
FIXABLE = False
OPTIONS: dict[str, Any] = {}
DEFAULTS: dict[str, Any] = {}
