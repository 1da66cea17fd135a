"""The explicit registry of rules: adding a rule is one module plus one line here."""

from __future__ import annotations

from types import ModuleType

from .rules import (
    apply_changes_immutable_field, apply_conflicts_with_manager, apply_denied_by_admission, apply_rejected_invalid,
    apply_resets_autoscaled_field, apply_takes_over_field, defaulted_field_left_behind, kind_not_served,
    namespace_missing,
    autoscaler_owned_field_reset,
    autoscaler_target_missing,
    document_too_complex,
    duplicate_key,
    duplicate_object,
    live_object_export,
    managed_field_conflict,
    multiple_hpas,
    pod_update_not_image_only,
    pod_without_readiness_gate,
    render_failed,
    replicas_owned_by_hpa,
    resources_owned_by_vpa,
    strategy_type_missing,
    rolling_update_without_rolling_type, rollout_cannot_progress, strategy_value_invalid, partition_above_replicas,
    unreadable_file,
    unit_not_linted,
    unused_suppression,
    yaml_syntax_error,
    selector_missing, selector_template_mismatch, service_selects_nothing, pdb_selects_nothing, selector_overlap,
)

_MODULES: tuple[ModuleType, ...] = (
    autoscaler_owned_field_reset,
    replicas_owned_by_hpa,
    multiple_hpas,
    autoscaler_target_missing,
    resources_owned_by_vpa,
    yaml_syntax_error,
    duplicate_key,
    unused_suppression,
    unreadable_file,
    document_too_complex,
    render_failed,
    unit_not_linted,
    strategy_type_missing,
    rolling_update_without_rolling_type, rollout_cannot_progress, strategy_value_invalid, partition_above_replicas,
    duplicate_object,
    live_object_export,
    managed_field_conflict,
    selector_missing, selector_template_mismatch, service_selects_nothing, pdb_selects_nothing, selector_overlap,
    pod_update_not_image_only,
    pod_without_readiness_gate,
    apply_rejected_invalid, apply_changes_immutable_field, apply_conflicts_with_manager, apply_denied_by_admission,
    apply_resets_autoscaled_field, apply_takes_over_field, defaulted_field_left_behind, namespace_missing,
    kind_not_served,
)

RULES: dict[str, ModuleType] = {module.CODE: module for module in sorted(_MODULES, key=lambda m: m.CODE)}
BY_NAME: dict[str, ModuleType] = {module.NAME: module for module in _MODULES}


def resolve(code_or_name: str) -> ModuleType | None:
    """The rule with this code (case-insensitive) or kebab-case name."""
    return RULES.get(code_or_name.upper()) or BY_NAME.get(code_or_name.lower())
