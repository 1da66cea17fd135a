"""The admission rules as in-tree admission policies: what `fieldwarden export` writes.

`export(settings, target(version), Scope())` turns the same configuration the webhook reads
into plain objects: FW401 as a ValidatingAdmissionPolicy (policies/export/fw401.py), FW402
and FW403 as MutatingAdmissionPolicies (fw402.py, fw403.py), each with its
binding, plus an exactness report for every rule of the registry: exact, approximate (and
how), or not exportable (and why). Pure: no files, no cluster; the command is
fieldwarden/export.py, the chart's template is generated from the same builders
(helm/sync_policies.py).

Which API versions: ValidatingAdmissionPolicy `admissionregistration.k8s.io/v1` (GA in
1.30; older versions are refused); MutatingAdmissionPolicy `v1alpha1` in 1.32-1.33 and
`v1beta1` in 1.34-1.35 (both behind the MutatingAdmissionPolicy feature gate and the
version's runtime-config, said in the YAML), `v1` from 1.36; before 1.32 FW402 and FW403
cannot be exported at all, which is an error unless they are disabled.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple, Sequence

from . import fw401, fw402, fw403
from ..config import Settings
from .cel import Policy, literal
from ..registry import RULES
from ..rule import ADMISSION, INPUT, LIVE, OBJECT, SET

GROUP = "admissionregistration.k8s.io"
EXPORTERS: dict[str, Any] = {"FW401": fw401, "FW402": fw402, "FW403": fw403}
ENFORCEMENT_ACTIONS = {"deny": ["Deny"], "warn": ["Warn"], "dryrun": ["Audit"]}
FAILURE_POLICIES = ("Ignore", "Fail")
EXACT, APPROXIMATE, NOT_EXPORTABLE, DISABLED = "exact", "approximate", "not exportable", "disabled"


class ExportError(Exception):
    """What cannot be exported for this version or configuration, worded for the user."""


@dataclass(frozen=True)
class Target:
    """The Kubernetes version exported for, and the admission APIs it serves."""

    version: tuple[int, int]
    mutating_api: str | None  # None: no MutatingAdmissionPolicy in this version
    mutating_note: str = ""  # what the API server needs for it (feature gate, runtime-config)
    validating_api: str = f"{GROUP}/v1"

    @property
    def name(self) -> str:
        return f"{self.version[0]}.{self.version[1]}"


def target(version: str) -> Target:
    """The Target of `1.32`, `v1.34.2`, ...; an ExportError for what is no version or has no ValidatingAdmissionPolicy v1."""
    found = re.fullmatch(r"v?(\d+)\.(\d+)(?:\.\d+)?(?:[-+].*)?", version.strip())
    if found is None:
        raise ExportError(f"--k8s-version {version!r}: expected a Kubernetes version such as 1.32")
    major, minor = int(found.group(1)), int(found.group(2))
    if (major, minor) < (1, 30):
        raise ExportError(
            f"Kubernetes {major}.{minor} has no ValidatingAdmissionPolicy admissionregistration.k8s.io/v1 (GA in 1.30; "
            "beta and off by default in 1.28-1.29) and no MutatingAdmissionPolicy: use the webhook")
    if (major, minor) < (1, 32):
        return Target((major, minor), None)
    if (major, minor) < (1, 34):
        return Target((major, minor), f"{GROUP}/v1alpha1", _gate_note("v1alpha1", "alpha", major, minor))
    if (major, minor) < (1, 36):
        return Target((major, minor), f"{GROUP}/v1beta1", _gate_note("v1beta1", "beta", major, minor))
    return Target((major, minor), f"{GROUP}/v1")


def _gate_note(version: str, stage: str, major: int, minor: int) -> str:
    return (f"MutatingAdmissionPolicy is {stage} in Kubernetes {major}.{minor}: kube-apiserver needs "
            f"--feature-gates=MutatingAdmissionPolicy=true --runtime-config={GROUP}/{version}=true")


@dataclass(frozen=True)
class Scope:
    """Where the policies act, and how a policy that cannot be evaluated fails."""

    excluded_namespaces: tuple[str, ...] = ("kube-system",)  # never matched (as the chart's webhooks exclude them)
    opt_out_label: tuple[str, str] | None = ("fieldwarden.io/admission", "disabled")  # namespaces and objects
    failure_policy: str = "Ignore"  # Ignore: as the webhook fails open; Fail: a policy error refuses the request
    prefix: str = "fieldwarden"  # object names: <prefix>-fw401-pod-update-not-image-only, ...


class Exactness(NamedTuple):
    """How faithfully one rule is exported."""

    code: str
    name: str
    verdict: str  # exact | approximate | not exportable | disabled
    notes: tuple[str, ...]
    objects: tuple[str, ...] = ()  # "Kind/name" of what was written for it


class Export(NamedTuple):
    target: Target
    objects: list[dict[str, Any]]
    report: list[Exactness]


class ResolvedOptions:
    """The rules' options of a Settings, as CEL literals (policies/export/cel.py Options)."""

    def __init__(self, settings: Settings, opt_out_label: tuple[str, str] | None = None) -> None:
        self.settings = settings
        self.opt_out_label = opt_out_label  # the bindings' (Scope): FW401 protects the label they honour

    def cel(self, code: str, option: str) -> str:
        value = self.settings.rule_conf(code)[option]
        if (code, option) == ("FW401", "opt-out-label") and self.opt_out_label is not None:
            value = {"key": self.opt_out_label[0], "value": self.opt_out_label[1]}
        if (code, option) == ("FW403", "custom-resources"):
            value = fw403.custom_paths(value)
        return literal(value)

    def custom_groups(self, code: str) -> list[str]:
        entries = self.settings.rule_conf(code).get("custom-resources") or ()
        return sorted({str(entry.get("group", "")) for entry in entries})


def export(settings: Settings, where: Target, scope: Scope = Scope(),
           options: Callable[[Settings], Any] = ResolvedOptions) -> Export:
    """The policies and bindings of the enabled admission rules, and the exactness report of every rule."""
    if scope.failure_policy not in FAILURE_POLICIES:
        raise ExportError(f"failure policy {scope.failure_policy!r}: expected Ignore or Fail")
    enabled = [code for code in EXPORTERS if settings.enabled(code)]
    mutating = [code for code in enabled if code != "FW401"]
    if mutating and where.mutating_api is None:
        raise ExportError(
            f"Kubernetes {where.name} has no MutatingAdmissionPolicy (alpha from 1.32), which "
            f"{' and '.join(mutating)} need: disable {'them' if len(mutating) > 1 else 'it'} "
            f"(--ignore {','.join(mutating)}) to export FW401 alone, or keep the webhook")
    resolved = options(settings)
    if isinstance(resolved, ResolvedOptions):
        resolved.opt_out_label = scope.opt_out_label
    objects: list[dict[str, Any]] = []
    report: list[Exactness] = []
    for code, rule in RULES.items():
        exporter = EXPORTERS.get(code)
        if exporter is None:
            report.append(Exactness(code, rule.NAME, NOT_EXPORTABLE, (_why_not(rule.SCOPE),)))
        elif code not in enabled:
            report.append(Exactness(code, rule.NAME, DISABLED, ("disabled by the configuration: not exported",)))
        else:
            written: list[str] = []
            for policy in exporter.build(resolved):
                pair = policy_objects(policy, where, scope, settings.rule_conf(code))
                objects += pair
                written += [f"{o['kind']}/{o['metadata']['name']}" for o in pair]
            report.append(Exactness(code, rule.NAME, exporter.EXACTNESS, exporter.NOTES, tuple(written)))
    return Export(where, objects, report)


def _why_not(scope: str) -> str:
    return {
        OBJECT: "a linter rule: it judges manifests before they are merged, and flags what the API server "
                "accepts (nothing to admit or refuse)",
        SET: "a cross-object linter rule: it joins objects of one apply unit (an HPA in one file, its "
             "Deployment in another), which an admission policy, seeing one request, cannot",
        INPUT: "a rule of the linter's input (YAML syntax, files): there is nothing of it in a request",
        LIVE: "a live-lint rule: it compares a manifest with the cluster's object and a dry run, before an apply",
        ADMISSION: "an admission rule without an exporter",
    }.get(scope, "not an admission rule")


def policy_objects(policy: Policy, where: Target, scope: Scope, conf: dict[str, Any]) -> list[dict[str, Any]]:
    """The policy object and its binding."""
    validating = policy.kind == "ValidatingAdmissionPolicy"
    api = where.validating_api if validating else where.mutating_api
    assert api is not None
    name = f"{scope.prefix}-{policy.suffix}"
    code = policy.suffix.split("-", 1)[0].upper()
    labels = {"app.kubernetes.io/part-of": "fieldwarden", "fieldwarden.io/rule": code}
    spec = {"failurePolicy": policy.failure_policy_fixed or scope.failure_policy, **policy.spec}
    binding_spec: dict[str, Any] = {"policyName": name}
    if validating:
        binding_spec["validationActions"] = ENFORCEMENT_ACTIONS[str(conf.get("enforcement", "deny"))]
    if policy.param_kind is not None:
        # Every autoscaler of the request's namespace is a param; none means nothing to do.
        binding_spec["paramRef"] = {"selector": {}, "parameterNotFoundAction": "Allow"}
    resources = match_resources(scope)
    if resources:
        binding_spec["matchResources"] = resources
    return [
        {"apiVersion": api, "kind": policy.kind, "metadata": {"name": name, "labels": labels}, "spec": spec},
        {"apiVersion": api, "kind": f"{policy.kind}Binding", "metadata": {"name": name, "labels": dict(labels)},
         "spec": binding_spec},
    ]


def match_resources(scope: Scope) -> dict[str, Any]:
    """The bindings' namespace and object selectors: the excluded namespaces and the opt-out label."""
    namespace: list[dict[str, Any]] = []
    objects: list[dict[str, Any]] = []
    if scope.excluded_namespaces:
        namespace.append({"key": "kubernetes.io/metadata.name", "operator": "NotIn",
                          "values": list(scope.excluded_namespaces)})
    if scope.opt_out_label is not None:
        key, value = scope.opt_out_label
        namespace.append({"key": key, "operator": "NotIn", "values": [value]})
        objects.append({"key": key, "operator": "NotIn", "values": [value]})
    found: dict[str, Any] = {}
    if namespace:
        found["namespaceSelector"] = {"matchExpressions": namespace}
    if objects:
        found["objectSelector"] = {"matchExpressions": objects}
    return found


# --- text -------------------------------------------------------------------------------


def report_text(result: Export) -> str:
    """The exactness report: each exported rule with how faithful it is, then the others by reason."""
    lines = [f"fieldwarden export for Kubernetes {result.target.name}: how exactly each rule is exported", ""]
    skipped: dict[str, list[str]] = {}
    for entry in result.report:
        if entry.verdict == NOT_EXPORTABLE:
            skipped.setdefault(entry.notes[0], []).append(entry.code)
            continue
        lines.append(f"{entry.code} {entry.name}: {entry.verdict}")
        lines += [f"  writes {obj}" for obj in entry.objects]
        lines += [_wrapped(f"- {note}", "  ") for note in entry.notes]
        lines.append("")
    for why, codes in skipped.items():
        lines.append(_wrapped(f"not exportable: {', '.join(codes)}: {why}", ""))
        lines.append("")
    counts = {verdict: sum(1 for e in result.report if e.verdict == verdict)
              for verdict in (EXACT, APPROXIMATE, NOT_EXPORTABLE, DISABLED)}
    lines.append(", ".join(f"{n} {verdict}" for verdict, n in counts.items() if n) + ".")
    return "\n".join(lines) + "\n"


def _wrapped(text: str, indent: str, width: int = 100) -> str:
    import textwrap

    return textwrap.fill(text, width=width, initial_indent=indent, subsequent_indent=indent + "  ",
                         break_long_words=False, break_on_hyphens=False)


def yaml_text(result: Export, version: str, notes: Sequence[str] = ()) -> str:
    """The objects as one YAML stream, with what the API server needs said in comments.

    CEL expressions are written as literal blocks (`|-`): no quoting, as they read.
    """
    head = [f"# fieldwarden {version} export for Kubernetes {result.target.name}: in-tree admission policies",
            "# and their bindings, from the same configuration as the webhook. Exactness: exactness.txt.",
            *(f"# {note}" for note in notes)]
    if result.target.mutating_note and any(o["kind"].startswith("Mutating") for o in result.objects):
        head.append(f"# {result.target.mutating_note}")
    documents = []
    for obj in result.objects:
        if obj["kind"].startswith("Mutating") and result.target.mutating_note:
            documents.append(f"---\n# {result.target.mutating_note}\n{dump(obj)}")
        else:
            documents.append(f"---\n{dump(obj)}")
    return "\n".join(head) + "\n" + "".join(documents)


def dump(obj: Any) -> str:
    """YAML of one object, its expressions as literal blocks."""
    import yaml

    class Dumper(yaml.SafeDumper):
        pass

    def string(dumper: yaml.SafeDumper, text: str) -> yaml.ScalarNode:
        block = ("'" in text or '"' in text or len(text) > 60) and "\n" not in text and text == text.strip()
        return dumper.represent_scalar("tag:yaml.org,2002:str", text, style="|" if block else None)

    Dumper.add_representer(str, string)
    return yaml.dump(obj, Dumper=Dumper, sort_keys=False, default_flow_style=False, width=float("inf"),
                     allow_unicode=True)
