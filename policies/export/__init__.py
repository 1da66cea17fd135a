"""The exporter: the admission rules as in-tree admission policies (`fieldwarden export`, the Helm chart).

`assemble` turns a Settings into ValidatingAdmissionPolicies and MutatingAdmissionPolicies with
their bindings, and says how exactly each rule is rendered; `fw401`, `fw402` and `fw403` each
export one rule; `cel` holds the CEL text they share.

It may import the policy core (policies/: config, registry, rule, rules, autoscalers,
suppression, ...) and the standard library and PyYAML; never the linter, the webhook or
fieldwarden's command-line modules (cli, commands, export), which call it.
Nothing is imported here, so that importing a module of this package costs only that module.
"""
