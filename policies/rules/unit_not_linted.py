"""An apply unit of the project was not linted.

## What it does
Reports each kustomization, chart value set or GitOps-declared unit that fieldwarden found but
could not lint, once per unit, on its defining file (the `kustomization.yaml`, the `Chart.yaml`,
the Argo CD Application or Flux object: on the object's first line, or on the `valueFiles` entry
that cannot be read), saying why and what to do: no renderer installed
(`pip install 'fieldwarden[render]'`, or kubectl/kustomize on PATH), a path that leads out of
the project, a values file that cannot be read, remote kustomize bases or resources not fetched
or chart dependencies not built (also when the rest of the unit renders and is linted: what they
would bring is not; `--allow-network` lets kustomize fetch them and Helm build them), or a
kustomization's `helmCharts` (kustomize inflates them only with `--enable-helm`, which runs Helm:
the chart is linted as a unit of its own instead). A run that
leaves a unit unchecked therefore
never ends in "All checks passed!". What the repository itself must fix (a kustomization entry
naming a missing file, a template error) is `FW006` instead.

## Why is this bad?
A green run on a unit that was never looked at is a false promise: the objects that unit
applies may carry any of the errors the other rules catch. A CI gate should fail (or at least
say so) until the unit is linted, or until the team decides, in configuration, that it may go
unchecked (`severity: {FW007: warning}`, or `ignore: [FW007]`).

## Example
```yaml
# charts/web/Chart.yaml, linted where helm-python-sdk is not installed
apiVersion: v2
name: web
version: 1.0.0
```

## Use instead
Do what the message says: install the renderers (`pip install 'fieldwarden[render]'`), fix the
path, make the values file readable; or lower the severity for a unit that cannot be linted
in this environment.
"""

from __future__ import annotations

from typing import Any

from ..model import ERROR
from ..rule import INPUT

CODE = "FW007"
NAME = "unit-not-linted"
SEVERITY = ERROR
SCOPE = INPUT
FIXABLE = False
OPTIONS: dict[str, Any] = {}
DEFAULTS: dict[str, Any] = {}
