"""The policy configuration: discovery, schema validation, select/ignore, severities, and load_settings
(the one loader of `serve`, the gate controller, `set-image` and `export`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from fieldwarden.policies.config import ConfigError, Settings, load_settings, schema_json, SCHEMA_FILE
from tests.helpers import lint, write

BROKEN = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
---
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
"""


def test_shipped_schema_is_current() -> None:
    assert Path(SCHEMA_FILE).read_text() == schema_json(), "run `fieldwarden schema > policies/config.schema.json`"


def test_longest_prefix_wins_and_ties_go_to_ignore() -> None:
    settings = Settings({"select": ["FW2", "FW305"], "ignore": ["FW20", "FW3"]})
    assert not settings.enabled("FW201")  # FW20 is longer than FW2
    assert settings.enabled("FW305")  # the full code beats the FW3 prefix
    assert not settings.enabled("FW301")
    assert not Settings({"select": ["FW2"], "ignore": ["FW2"]}).enabled("FW201")
    assert Settings({"select": ["strategy-type-missing"], "ignore": ["FW2"]}).enabled("FW201")


def test_config_found_upward_and_applied(tmp_path: Path) -> None:
    write(tmp_path, ".fieldwarden.yaml", "select: [FW201, FW305]\nrules:\n  FW201: {severity: error}\n")
    path = write(tmp_path, "deep/er/web.yaml", BROKEN)
    run = lint([str(path.name)], cwd=path.parent)
    assert run.hits() == [
        ("web.yaml", 4, 3, "FW305"), ("web.yaml", 5, 1, "FW201"), ("web.yaml", 8, 1, "FW201"), ("web.yaml", 11, 3, "FW305")
    ]
    assert {f["severity"] for f in run.findings if f["code"] == "FW201"} == {"error"}


def test_pyproject_table(tmp_path: Path) -> None:
    write(tmp_path, "pyproject.toml", '[project]\nname = "x"\n\n[tool.fieldwarden]\nselect = ["FW305"]\n')
    write(tmp_path, "web.yaml", BROKEN)
    assert {h[3] for h in lint(["web.yaml"], cwd=tmp_path).hits()} == {"FW305"}


def test_bad_config_names_the_key_and_exits_2(tmp_path: Path) -> None:
    write(tmp_path, ".fieldwarden.yaml", "rules:\n  FW201:\n    severity: fatal\n")
    write(tmp_path, "web.yaml", BROKEN)
    run = lint(["web.yaml"], cwd=tmp_path)
    assert run.code == 2
    assert "rules.FW201.severity" in run.stderr and "Traceback" not in run.stderr


def test_unknown_key_and_unknown_rule_are_named(tmp_path: Path) -> None:
    write(tmp_path, ".fieldwarden.yaml", "selct: [FW2]\n")
    write(tmp_path, "web.yaml", BROKEN)
    run = lint(["web.yaml"], cwd=tmp_path)
    assert run.code == 2 and "'selct'" in run.stderr
    write(tmp_path, ".fieldwarden.yaml", "rules:\n  no-such-rule: {}\n")
    run = lint(["web.yaml"], cwd=tmp_path)
    assert run.code == 2 and "'no-such-rule'" in run.stderr


def test_config_that_is_not_yaml_or_not_a_mapping(tmp_path: Path) -> None:
    write(tmp_path, "web.yaml", BROKEN)
    write(tmp_path, ".fieldwarden.yaml", "select: [FW2\n")
    run = lint(["web.yaml"], cwd=tmp_path)
    assert run.code == 2 and ".fieldwarden.yaml:2:1: not valid YAML" in run.stderr
    write(tmp_path, ".fieldwarden.yaml", "- FW2\n")
    run = lint(["web.yaml"], cwd=tmp_path)
    assert run.code == 2 and "mapping" in run.stderr


def test_cli_select_ignore_fail_on(tmp_path: Path) -> None:
    write(tmp_path, "web.yaml", BROKEN)
    assert {h[3] for h in lint(["--no-context", "--select", "FW3", "web.yaml"], cwd=tmp_path).hits()} == {"FW305"}
    # (FW602: the first Deployment has no spec.template)
    assert {h[3] for h in lint(["--no-context", "--ignore", "FW3", "web.yaml"], cwd=tmp_path).hits()} == {"FW101", "FW201", "FW602"}
    only_warnings = lint(["--no-context", "--select", "FW201", "--fail-on", "error", "web.yaml"], cwd=tmp_path)
    assert (only_warnings.code, len(only_warnings.hits())) == (0, 2)
    bad = lint(["--select", "FW9", "web.yaml"], cwd=tmp_path)
    assert bad.code == 2 and "FW9" in bad.stderr


def test_exclude_from_config_and_cli(tmp_path: Path) -> None:
    write(tmp_path, ".fieldwarden.yaml", "exclude: [vendor/]\n")
    write(tmp_path, "vendor/web.yaml", BROKEN)
    write(tmp_path, "app/web.yaml", BROKEN.replace("name: web", "name: app"))
    files = {f["file"] for f in lint(["."], cwd=tmp_path).findings}
    assert files == {"app/web.yaml"}
    assert lint([".", "--exclude", "app"], cwd=tmp_path).findings == []


def test_unknown_key_suggests_the_known_one(tmp_path: Path) -> None:
    write(tmp_path, "web.yaml", BROKEN)
    write(tmp_path, ".fieldwarden.yaml", "selct: [FW2]\nrules:\n  FW201: {severty: error}\n")
    run = lint(["web.yaml"], cwd=tmp_path)
    assert run.code == 2
    assert "(top level): unknown key 'selct' (did you mean 'select'?)" in run.stderr
    write(tmp_path, ".fieldwarden.yaml", "rules:\n  strategy-type-mising: {}\n  FW201: {severty: error}\n")
    run = lint(["web.yaml"], cwd=tmp_path)
    assert "rules: unknown key 'strategy-type-mising' (did you mean 'strategy-type-missing'?)" in run.stderr
    write(tmp_path, ".fieldwarden.yaml", "rules:\n  FW201: {severty: error}\n")
    assert "rules.FW201: unknown key 'severty' (did you mean 'severity'?)" in lint(["web.yaml"], cwd=tmp_path).stderr
    write(tmp_path, ".fieldwarden.yaml", "zzz: 1\n")
    assert "unknown key 'zzz'\n" in lint(["web.yaml"], cwd=tmp_path).stderr + "\n"  # nothing close: no guess


def test_yaml_error_gives_line_and_column(tmp_path: Path) -> None:
    write(tmp_path, "web.yaml", BROKEN)
    write(tmp_path, ".fieldwarden.yaml", "select: [FW2]\nrules:\n  FW201: {severity: error\nfail-on: info\n")
    run = lint(["web.yaml"], cwd=tmp_path)
    assert run.code == 2
    assert ".fieldwarden.yaml:4:8: not valid YAML:" in run.stderr and "Traceback" not in run.stderr


def test_pyproject_errors_name_the_table(tmp_path: Path) -> None:
    write(tmp_path, "web.yaml", BROKEN)
    write(tmp_path, "pyproject.toml", '[tool.fieldwarden]\nselect = ["FW305"]\nfail_on = "info"\n')
    run = lint(["web.yaml"], cwd=tmp_path)
    assert run.code == 2
    assert "pyproject.toml: [tool.fieldwarden]: unknown key 'fail_on' (did you mean 'fail-on'?)" in run.stderr
    write(tmp_path, "pyproject.toml", '[tool.fieldwarden.rules.FW201]\nseverity = "fatal"\n')
    assert "pyproject.toml: [tool.fieldwarden] rules.FW201.severity: " in lint(["web.yaml"], cwd=tmp_path).stderr


# --- load_settings: the programs that take one --config file -------------------------------


def test_load_settings_without_a_file_gives_the_defaults() -> None:
    settings = load_settings(None)
    assert settings.source is None and settings.select == ("FW",) and settings.webhook == ("allow", 8 * 1024 * 1024)


def test_load_settings_reads_a_valid_file(tmp_path: Path) -> None:
    config = write(tmp_path, ".fieldwarden.yaml", "ignore: [FW402]\nrules:\n  FW401: {enforcement: warn}\n"
                   "webhook: {on-stale-inventory: deny}\n")
    settings = load_settings(config)
    assert settings.source == str(config) and not settings.enabled("FW402") and settings.enabled("FW401")
    assert settings.rule_conf("FW401")["enforcement"] == "warn" and settings.webhook.on_stale_inventory == "deny"
    toml = write(tmp_path, "pyproject.toml", "[tool.fieldwarden]\nignore = [\"FW401\"]\n")
    assert not load_settings(toml).enabled("FW401")


def test_load_settings_follows_the_extend_chain_relative_to_each_file(tmp_path: Path) -> None:
    write(tmp_path, "base.yaml", "ignore: [FW402]\nrules: {FW401: {enforcement: warn}}\n")
    write(tmp_path, "team/middle.yaml", "extend: ../base.yaml\nwebhook: {on-stale-inventory: deny}\n")
    config = write(tmp_path, "team/webhook/config.yaml",
                   "extend: ../middle.yaml\nrules: {FW401: {exempt-namespaces: [batch]}}\n")
    settings = load_settings(config)
    assert not settings.enabled("FW402") and settings.webhook.on_stale_inventory == "deny"
    assert settings.rule_conf("FW401")["enforcement"] == "warn"  # merged option by option
    assert settings.rule_conf("FW401")["exempt-namespaces"] == ["batch"]
    write(tmp_path, "base.yaml", "extend: team/webhook/config.yaml\n")
    with pytest.raises(ConfigError, match="cycle"):
        load_settings(config)


def test_load_settings_refuses_what_it_cannot_read_naming_the_file(tmp_path: Path) -> None:
    missing = tmp_path / "missing.yaml"
    with pytest.raises(ConfigError, match="cannot read the configuration") as refused:
        load_settings(missing)
    assert str(missing) in str(refused.value)
    with pytest.raises(ConfigError, match="cannot read the configuration"):
        load_settings(tmp_path)  # a folder
    latin1 = tmp_path / "latin1.yaml"
    latin1.write_bytes("ignore: [FW402]  # caf\u00e9\n".encode("latin-1"))
    with pytest.raises(ConfigError, match="not UTF-8 text") as refused:
        load_settings(latin1)
    assert str(latin1) in str(refused.value)


def test_load_settings_validates_against_the_schema(tmp_path: Path) -> None:
    config = write(tmp_path, ".fieldwarden.yaml", "rules:\n  FW401: {enforcement: maybe}\n")
    with pytest.raises(ConfigError, match="enforcement"):
        load_settings(config)
