"""The file could not be read as text.

## What it does
Reports files that cannot be opened (permissions, symlink loops), binary files, files that are not UTF-8 (or UTF-16/32 with a byte order mark), and files larger than `max-file-size`.

## Why is this bad?
Kubernetes tools read manifests as UTF-8 JSON or YAML; such a file is either not a manifest or will fail to apply.

## Example
```yaml
# a Latin-1 encoded file with the byte 0xE9 in a label value
```

## Use instead
Save manifests as UTF-8; move binary files out of manifest folders or exclude them.
"""

from __future__ import annotations

from typing import Any

from ..model import ERROR
from ..rule import INPUT

CODE = "FW004"
NAME = "unreadable-file"
SEVERITY = ERROR
SCOPE = INPUT
FIXABLE = False
OPTIONS: dict[str, Any] = {}
DEFAULTS: dict[str, Any] = {}
