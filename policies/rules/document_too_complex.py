"""A document nests too deeply or its aliases expand too far, or a file holds too many documents.

## What it does
Reports documents nested deeper than 256 levels, documents whose YAML aliases expand to more than 100,000 nodes (a "billion laughs" alias bomb), and files of more than 10,000 documents (empty ones, a bare `---`, count too). The finding is where the limit is crossed; the linter reads nothing of the file past a nesting limit or the 10,000th document.

## Why is this bad?
Such documents are attacks or accidents; the API server limits request size and parsers crash or hang on them. A file of 10 MB of `---` lines is 2.6 million empty documents: read whole, it would take gigabytes of memory.

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
