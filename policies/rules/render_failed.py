"""A kustomization or Helm chart does not render.

## What it does
Reports the error kustomize or Helm gives when it builds an apply unit (a kustomization no
other one includes, a chart with one of its value sets), on the line to fix: the
kustomization entry naming a missing or duplicate resource, the template line that fails.
The unit's objects are then not linted. FW006 is for what the repository must fix (a file its
kustomization names that does not exist, a path out of the project, a template error), worded the
same every run (kustomize's log prefix, times, PIDs and temporary folders left out). What is not
the repository's fault is FW007 (unit-not-linted) instead: no renderer installed, a unit that does
build without its remote bases or resources, or a chart without its dependencies not built (whether
the rest renders or not: `--allow-network` lets kustomize fetch them and Helm build them, or
`helm dependency build` before linting).
An empty values file (`---` and comments) is `{}`, as for Helm. It also reports what fieldwarden's
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
