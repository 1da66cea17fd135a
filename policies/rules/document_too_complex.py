"""A document nests too deeply or its aliases expand too far.

## What it does
Reports documents nested deeper than 256 levels and documents whose YAML aliases expand to more than 100,000 nodes (a "billion laughs" alias bomb).

## Why is this bad?
Such documents are attacks or accidents; the API server limits request size and parsers crash or hang on them.

## Example
```yaml
a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]
b: &b [*a,*a,*a,*a,*a,*a,*a,*a,*a]
c: &c [*b,*b,*b,*b,*b,*b,*b,*b,*b]   # ... and so on
```

## Use instead
Write the data out plainly; use anchors only for small repeated blocks.
"""

from __future__ import annotations

from typing import Any

from ..model import ERROR
from ..rule import INPUT

CODE = "FW005"
NAME = "document-too-complex"
SEVERITY = ERROR
SCOPE = INPUT
FIXABLE = False
OPTIONS: dict[str, Any] = {}
DEFAULTS: dict[str, Any] = {}
