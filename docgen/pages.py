"""The docs site's generated pages, as Markdown: one page per rule (the text `fieldwarden explain`
prints), the rules index, and the configuration reference built from the configuration's JSON
Schema. Pure functions over the registry and the schema; docgen/hooks.py hands them to MkDocs."""

from __future__ import annotations

import json
from typing import Any, Iterator

from fieldwarden.commands import rule_page
from fieldwarden.policies.config import Settings, build_schema
from fieldwarden.policies.registry import RULES
from fieldwarden.policies.rule import summary

SCOPES = {
    "input": "the file as read (syntax, keys, size, rendering)",
    "object": "one object at a time",
    "set": "the objects of one apply unit together",
    "admission": "the webhook (and `fieldwarden export`), on an admission request",
    "live": "`lint --cluster`, against the live cluster",
}


def rule_pages() -> dict[str, str]:
    """`rules/<CODE>.md` -> the rule's page."""
    return {f"rules/{code}.md": rule_page(rule) for code, rule in RULES.items()}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def rules_index() -> str:
    """The rules index: code (a link to the rule's page), name, severity, scope, one line."""
    lines = [
        "# Rules",
        "",
        "Every rule fieldwarden has, by code. Each code links to the rule's page, the text "
        "`fieldwarden explain CODE` prints; `--select` and `--ignore` take codes, code prefixes "
        "(`FW3`) or names, and the [configuration](../configuration.md) sets a rule's severity and "
        "options ([every option](../options.md#rules)).",
        "",
        "| code | name | severity | scope | what it flags |",
        "|---|---|---|---|---|",
    ]
    for code, rule in RULES.items():
        lines.append(f"| [{code}]({code}.md) | {rule.NAME} | {rule.SEVERITY} | {rule.SCOPE} | {_cell(summary(rule))} |")
    lines += ["", "Scopes: " + "; ".join(f"**{scope}**: {what}" for scope, what in SCOPES.items()) + "."]
    return "\n".join(lines) + "\n"


def _type(schema: dict[str, Any]) -> str:
    if "enum" in schema:
        return " | ".join(f"`{json.dumps(value)}`" for value in schema["enum"])
    kind = schema.get("type", "")
    if kind == "array":
        return f"list of {_type(schema.get('items', {}))}"
    if isinstance(kind, list):
        return " or ".join(kind)
    return str(kind) or "any"


def _default(value: Any) -> str:
    if value is None:
        return "—"
    return f"`{json.dumps(list(value) if isinstance(value, tuple) else value)}`"


def _rows(properties: dict[str, Any], defaults: dict[str, Any], prefix: str = "") -> Iterator[str]:
    for key, schema in properties.items():
        yield (f"| `{prefix}{key}` | {_cell(_type(schema))} | {_cell(_default(defaults.get(key)))} | "
               f"{_cell(schema.get('description', ''))} |")


def _defaults() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """What an empty configuration means: top level, `webhook:` and `cluster:`."""
    settings = Settings({})
    top = {"select": settings.select, "ignore": settings.ignore, "fail-on": settings.fail_on,
           "exclude": settings.exclude, "units": (), "default-namespace": settings.default_namespace,
           "max-file-size": settings.max_file_size, "kubernetes-version": settings.kubernetes_version,
           "context": settings.context}
    webhook = {"on-stale-inventory": settings.webhook.on_stale_inventory,
               "max-request-bytes": settings.webhook.max_request_bytes}
    from fieldwarden.linter.live.run import options_from

    live = options_from(None, settings)
    cluster = {"apply-mode": live.apply_mode, "field-manager": live.field_manager, "force-conflicts": live.force_conflicts,
               "read-only": live.read_only, "sensitive-fields": live.sensitive, "timeout": live.timeout,
               "parallel": live.parallel}
    return top, webhook, cluster


HEADER = ["| option | type | default | description |", "|---|---|---|---|"]


def options_page() -> str:
    """Every configuration option, with its type, default and description, from the JSON Schema."""
    schema = build_schema()
    properties = schema["properties"]
    top, webhook, cluster = _defaults()
    plain = {key: value for key, value in properties.items() if key not in ("rules", "webhook", "cluster")}
    lines = [
        "# Configuration options",
        "",
        "Every key of `.fieldwarden.yaml` (or `[tool.fieldwarden]` in `pyproject.toml`), generated from "
        "the configuration's JSON Schema (`fieldwarden schema` prints it; the Helm chart's `config` value "
        "is checked against it too). How configurations are found, inherited and combined: "
        "[Configuration](configuration.md). \"—\": not set.",
        "",
        "## Top level",
        "",
        *HEADER,
        *_rows(plain, top),
        "",
        "## webhook",
        "",
        _cell(properties["webhook"].get("description", "")) + ".",
        "",
        *HEADER,
        *_rows(properties["webhook"]["properties"], webhook, "webhook."),
        "",
        "## cluster",
        "",
        properties["cluster"].get("description", "") + ".",
        "",
        *HEADER,
        *_rows(properties["cluster"]["properties"], cluster, "cluster."),
        "",
        "## rules",
        "",
        "`rules:` maps a rule's code or name to its options; every rule takes `severity` "
        f"({_type(schema['$defs']['FW001']['properties']['severity'])}; default: the rule's own).",
        "",
    ]
    bare = []
    for code, rule in RULES.items():
        options = {key: value for key, value in schema["$defs"][code]["properties"].items() if key != "severity"}
        if not options:
            bare.append(f"[{code}](rules/{code}.md) {rule.NAME}")
            continue
        lines += [f"### {code} {rule.NAME}", "", f"[{code}](rules/{code}.md), severity {rule.SEVERITY} by default.", "",
                  *HEADER, *_rows(options, dict(rule.DEFAULTS), f"rules.{code}."), ""]
    lines += ["### Rules with no options but `severity`", "", ", ".join(bare) + ".", ""]
    return "\n".join(lines).rstrip("\n") + "\n"
