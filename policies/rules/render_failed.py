"""A kustomization or Helm chart does not render.

## What it does
Reports the error kustomize or Helm gives when it builds an apply unit (a kustomization no
other one includes, a chart with one of its value sets), on the line to fix: the
kustomization entry naming a missing or duplicate resource, the template line that fails.
The unit's objects are then not linted. (When no renderer is installed, the unit is skipped
with a notice instead: `pip install 'fieldwarden[render]'`.) It also reports what fieldwarden's
limits on an untrusted chart leave out: a values.schema.json not provably self-contained (the
chart renders without it), a subchart archive too large to unpack, a value set cut by a Helm
time budget (named, on the chart's Chart.yaml).

## Why is this bad?
What does not render cannot be applied: `kubectl apply -k`, Argo CD and Flux stop at the
same error, and nothing of the unit reaches the cluster.

## Example
```yaml
# overlays/prod/kustomization.yaml
resources:
- ../../base
- deployment.yaml   # the base defines Deployment web too: kustomize refuses the id twice
```

## Use instead
Fix what the message names: a path, a duplicate, a template or a values file; check with
`kubectl kustomize DIR` or `helm template CHART`.
"""

from __future__ import annotations

from typing import Any

from ..model import ERROR
from ..rule import INPUT

CODE = "FW006"
NAME = "render-failed"
SEVERITY = ERROR
SCOPE = INPUT
FIXABLE = False
OPTIONS: dict[str, Any] = {}
DEFAULTS: dict[str, Any] = {}
