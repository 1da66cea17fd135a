"""The explicit registry of rules: adding a rule is one module plus one line here.

A line holds what every run needs of its rule (code, name, default severity, scope), so that a
run imports only the rule modules it uses: a one-file lint, the object and set rules it runs,
not the input, admission and live rules whose codes and severities it merely knows.
"""

from __future__ import annotations

import sys
from types import ModuleType

from .kube import WORKLOADS

TYPE_CHECKING = False  # (typing.TYPE_CHECKING without importing typing)
if TYPE_CHECKING:
    from typing import Any


class Rule(ModuleType):
    # A rule module as the registry hands it out: its line's metadata at once, the rest of the
    # module (check, options, the documentation page that is its docstring) imported when first
    # asked for. A ModuleType, so that it stands wherever a rule module does.

    CODE: str
    NAME: str
    SEVERITY: str  # the default severity (configuration may change it)
    SCOPE: str  # policies.rule's OBJECT, SET, INPUT, ADMISSION or LIVE
    KINDS: frozenset[tuple[str, str]]  # an object rule's (group, kind)s, when it judges only those

    def __init__(self, code: str, name: str, severity: str, scope: str, module: str,
                 kinds: frozenset[tuple[str, str]] | None = None) -> None:
        super().__init__(f"{__package__}.rules.{module}")
        self.CODE, self.NAME, self.SEVERITY, self.SCOPE = code, name, severity, scope
        if kinds is not None:  # (else KINDS comes from the module, if it has one)
            self.KINDS = kinds

    @property
    def module(self) -> ModuleType:
        """The rule's own module, imported on first use."""
        __import__(self.__name__)  # (not importlib.import_module: importlib itself is ~0.3 ms of a one-file lint)
        return sys.modules[self.__name__]

    def __getattr__(self, attribute: str) -> Any:
        """What the line does not hold, from the module; kept, so that the next lookup (a check
        called on every object) finds it here."""
        value = getattr(self.module, attribute)
        setattr(self, attribute, value)
        return value

    @property  # (read-only here: the module's docstring is the rule's documentation page)
    def __doc__(self) -> str | None:  # type: ignore[override]
        return self.module.__doc__


# One line per rule: code, name, default severity, scope, module, and an object rule's KINDS
# (analyse imports the module when it meets an object of one of them) (tests/policies/test_registry.py
# checks each against its module).
_APPS = frozenset({("apps", "Deployment"), ("apps", "StatefulSet"), ("apps", "DaemonSet")})
_LINES: tuple[Rule, ...] = (
    Rule("FW001", "yaml-syntax-error", "error", "input", "yaml_syntax_error"),
    Rule("FW002", "duplicate-key", "error", "input", "duplicate_key"),
    Rule("FW003", "unused-suppression", "warning", "input", "unused_suppression"),
    Rule("FW004", "unreadable-file", "error", "input", "unreadable_file"),
    Rule("FW005", "document-too-complex", "error", "input", "document_too_complex"),
    Rule("FW006", "render-failed", "error", "input", "render_failed"),
    Rule("FW007", "unit-not-linted", "error", "input", "unit_not_linted"),
    Rule("FW101", "selector-missing", "error", "object", "selector_missing", WORKLOADS),
    Rule("FW102", "selector-template-mismatch", "error", "object", "selector_template_mismatch", WORKLOADS),
    Rule("FW103", "service-selects-nothing", "warning", "set", "service_selects_nothing"),
    Rule("FW104", "pdb-selects-nothing", "warning", "set", "pdb_selects_nothing"),
    Rule("FW105", "selector-overlap", "error", "set", "selector_overlap"),
    Rule("FW201", "strategy-type-missing", "info", "object", "strategy_type_missing", _APPS),
    Rule("FW202", "rolling-update-without-rolling-type", "error", "object", "rolling_update_without_rolling_type", _APPS),
    Rule("FW203", "rollout-cannot-progress", "error", "object", "rollout_cannot_progress",
         frozenset({("apps", "Deployment"), ("apps", "DaemonSet")})),
    Rule("FW204", "strategy-value-invalid", "error", "object", "strategy_value_invalid", _APPS),
    Rule("FW205", "partition-above-replicas", "warning", "object", "partition_above_replicas",
         frozenset({("apps", "StatefulSet")})),
    Rule("FW301", "replicas-owned-by-hpa", "error", "set", "replicas_owned_by_hpa"),
    Rule("FW302", "multiple-hpas", "error", "set", "multiple_hpas"),
    Rule("FW303", "autoscaler-target-missing", "warning", "set", "autoscaler_target_missing"),
    Rule("FW304", "resources-owned-by-vpa", "warning", "set", "resources_owned_by_vpa"),
    Rule("FW305", "duplicate-object", "error", "set", "duplicate_object"),
    Rule("FW306", "live-object-export", "error", "object", "live_object_export"),
    Rule("FW307", "managed-field-conflict", "warning", "object", "managed_field_conflict"),
    Rule("FW401", "pod-update-not-image-only", "error", "admission", "pod_update_not_image_only"),
    Rule("FW402", "pod-without-readiness-gate", "info", "admission", "pod_without_readiness_gate"),
    Rule("FW403", "autoscaler-owned-field-reset", "warning", "admission", "autoscaler_owned_field_reset"),
    Rule("FW501", "apply-rejected-invalid", "error", "live", "apply_rejected_invalid"),
    Rule("FW502", "apply-changes-immutable-field", "error", "live", "apply_changes_immutable_field"),
    Rule("FW503", "apply-conflicts-with-manager", "error", "live", "apply_conflicts_with_manager"),
    Rule("FW504", "apply-denied-by-admission", "error", "live", "apply_denied_by_admission"),
    Rule("FW505", "apply-resets-autoscaled-field", "warning", "live", "apply_resets_autoscaled_field"),
    Rule("FW506", "apply-takes-over-field", "warning", "live", "apply_takes_over_field"),
    Rule("FW507", "defaulted-field-left-behind", "warning", "live", "defaulted_field_left_behind"),
    Rule("FW508", "namespace-missing", "error", "live", "namespace_missing"),
    Rule("FW509", "kind-not-served", "error", "live", "kind_not_served"),
    Rule("FW510", "apply-keeps-removed-field", "warning", "live", "apply_keeps_removed_field"),
    Rule("FW601", "unknown-kind", "error", "object", "unknown_kind"),
    Rule("FW602", "schema-mismatch", "error", "object", "schema_mismatch"),
    Rule("FW603", "kind-not-validated", "info", "object", "kind_not_validated"),
)

RULES: dict[str, Rule] = {rule.CODE: rule for rule in sorted(_LINES, key=lambda r: r.CODE)}
BY_NAME: dict[str, Rule] = {rule.NAME: rule for rule in _LINES}


def resolve(code_or_name: str) -> Rule | None:
    """The rule with this code (case-insensitive) or kebab-case name."""
    return RULES.get(code_or_name.upper()) or BY_NAME.get(code_or_name.lower())
