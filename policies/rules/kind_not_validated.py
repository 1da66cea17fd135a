"""A custom resource's kind has no schema at hand: it is not validated.

## What it does
Custom resources are validated (FW602) against the CustomResourceDefinitions found among the
linted files: the project's, and those a chart or kustomization renders for its own objects.
A custom resource whose CRD is not among them (installed by another repository, by an operator
at run time) cannot be checked offline; this rule says so, **once per kind and apiVersion** in a
run, on the first object of it, as info: it never fails a run (with the default `fail-on`).

Built-in kinds are the Kubernetes schemas' business (FW601, FW602); a kind or version that the
project's CRDs of its group do not serve is FW601's. Files that tools read and no API server
serves are left alone: a group without a dot (no CRD can have one: `skaffold/v4beta6`), component
configurations (`*.config.k8s.io`, `config.kubernetes.io`), kind's and kubeadm's. Without the schemas installed
(`fieldwarden[schemas]`), the rule does nothing.

## Why is this bad?
Nothing is wrong with the object as far as anyone can tell, and that is the point: a typo in a
custom resource's field passes this lint silently, and the API server refuses it at apply time.

## Example
```yaml
apiVersion: monitoring.coreos.com/v1   # its CRD is installed by the operator's chart, elsewhere
kind: ServiceMonitor
```

## Use instead
Lint with the CRD at hand: keep a copy of it in the repository (a `crds/` folder beside the
custom resources; a file holding it anywhere in the project counts), or ignore the rule for
that kind's files if you choose not to validate them
(`# fieldwarden: ignore[FW603]`, or `ignore: [FW603]` in the configuration).
"""

from __future__ import annotations

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing: a one-file lint does without it)
if TYPE_CHECKING:
    from typing import Any, Iterator, Mapping

from ..model import INFO, Violation
from ..rule import OBJECT

CODE = "FW603"
NAME = "kind-not-validated"
SEVERITY = INFO
SCOPE = OBJECT
FIXABLE = False
OPTIONS: dict[str, Any] = {}
DEFAULTS: dict[str, Any] = {}


def check(obj: Mapping[str, Any], conf: Mapping[str, Any]) -> Iterator[Violation]:
    """The object, when it is a custom resource of a kind no CRD at hand describes (conf["crds"]: the run's CRDs)."""
    from ..schemas import builtin
    from .unknown_kind import REMOVED_GROUPS

    api_version, kind = obj.get("apiVersion"), obj.get("kind")
    if not isinstance(api_version, str) or not isinstance(kind, str):
        return
    group = api_version.rpartition("/")[0]
    try:
        built_in = builtin.groups(conf.get("kubernetes-version", builtin.DEFAULT_VERSION))
    except (builtin.SchemasMissing, KeyError):
        return
    if group in built_in or group in REMOVED_GROUPS:
        return  # a built-in group: FW601 and FW602
    if "." not in group or group.endswith(_CLIENT_CONFIGS):
        return  # no CRD can serve it: a tool's own file (skaffold/v4, a component or kind configuration)
    crds = conf.get("crds")
    if crds is not None and ((api_version, kind) in crds.schemas or group in crds.groups()):
        return  # validated (FW602), or a kind its group's CRDs do not serve (FW601)
    yield Violation(("kind",), f"{kind} {api_version} is not validated: no CRD for it among the linted files",
                    "add the CRD to the project (a copy under crds/), or ignore FW603 for this kind")


# Groups of files that tools read and no API server serves (a CRD's group has a dot, and is none of these)
_CLIENT_CONFIGS = ("config.k8s.io", "config.kubernetes.io", "kind.x-k8s.io", "kubeadm.k8s.io",
                   "audit.k8s.io")  # (an API server's audit policy file: metallb's dev-env/audit-policy.yaml)
