"""Configuration per file: the nearest configuration above each file, `extend`, `--config`,
`--show-settings`, and cross-file rules across configurations (issue 11)."""

from __future__ import annotations

import io
from contextlib import redirect_stdout
from pathlib import Path

from fieldwarden.cli import main
from tests.helpers import hpa_for, lint, scaled_deployment, write

# FW201 (strategy type missing, info by default) on line 5 (`spec:`); nothing else.
NO_STRATEGY = """\
apiVersion: apps/v1
kind: Deployment
metadata:
  name: {name}
spec:
  selector:
    matchLabels: {{app: {name}}}
  template:
    metadata:
      labels: {{app: {name}}}
    spec:
      containers: [{{name: app, image: nginx}}]
"""
# scaled_deployment(name) (tests.helpers): FW301 on `replicas` (line 6) when an HPA, hpa_for(name), scales it.


def severities(run_findings: list[dict[str, object]]) -> dict[tuple[str, str], str]:
    """{(file, code): severity} of the unsuppressed findings."""
    return {(str(f["file"]), str(f["code"])): str(f["severity"]) for f in run_findings if not f["suppressed"]}


def show(args: list[str], cwd: Path) -> tuple[int, str]:
    import os

    out = io.StringIO()
    old = os.getcwd()
    os.chdir(cwd)
    try:
        with redirect_stdout(out):
            code = main(["lint", *args])
    finally:
        os.chdir(old)
    return code, out.getvalue()


def test_each_file_obeys_the_nearest_configuration_from_the_parent(tmp_path: Path) -> None:
    write(tmp_path, ".fieldwarden.yaml", "rules:\n  FW201: {severity: error}\n")
    write(tmp_path, "top.yaml", NO_STRATEGY.format(name="top"))
    write(tmp_path, "sub/.fieldwarden.yaml", "ignore: [FW201]\n")
    write(tmp_path, "sub/a.yaml", NO_STRATEGY.format(name="a"))
    write(tmp_path, "other/.fieldwarden.yaml", "rules:\n  strategy-type-missing: {severity: info}\nfail-on: error\n")
    write(tmp_path, "other/b.yaml", NO_STRATEGY.format(name="b"))
    run = lint(["top.yaml", "sub/a.yaml", "other/b.yaml"], cwd=tmp_path)
    assert run.hits() == [("b.yaml", 5, 1, "FW201"), ("top.yaml", 5, 1, "FW201")]
    assert severities(run.findings) == {("top.yaml", "FW201"): "error", ("other/b.yaml", "FW201"): "info"}
    assert run.code == 1  # top.yaml's error fails the run under the root configuration
    # sub/a.yaml alone: ignored there, even run from the parent (the bug of issue 11)
    assert lint(["sub/a.yaml"], cwd=tmp_path).hits() == []
    # other/b.yaml alone: an info finding does not reach other/'s fail-on: error
    alone = lint(["other/b.yaml"], cwd=tmp_path)
    assert (alone.code, alone.hits()) == (0, [("b.yaml", 5, 1, "FW201")])
    # a folder given as a whole: every file still gets its own configuration
    assert lint(["."], cwd=tmp_path).hits() == [("b.yaml", 5, 1, "FW201"), ("top.yaml", 5, 1, "FW201")]


def test_pyproject_in_a_subfolder_counts(tmp_path: Path) -> None:
    write(tmp_path, "svc/pyproject.toml", '[project]\nname = "svc"\n\n[tool.fieldwarden]\nignore = ["FW2"]\n')
    write(tmp_path, "svc/k8s/a.yaml", NO_STRATEGY.format(name="a"))
    write(tmp_path, "b.yaml", NO_STRATEGY.format(name="b"))
    assert lint(["."], cwd=tmp_path).hits() == [("b.yaml", 5, 1, "FW201")]


def test_extend_inherits_and_overrides(tmp_path: Path) -> None:
    write(tmp_path, "base/common.yaml", "select: [FW2, FW3]\nrules:\n  FW201: {severity: error}\n  FW301: {severity: info}\n")
    write(tmp_path, "app/.fieldwarden.yaml", "extend: ../base/common.yaml\nrules:\n  FW301: {severity: warning}\n")
    write(tmp_path, "app/deploy.yaml", scaled_deployment("web") + "---\n" + NO_STRATEGY.format(name="api"))
    write(tmp_path, "app/hpa.yaml", hpa_for("web"))
    run = lint(["app/deploy.yaml"], cwd=tmp_path)
    # FW201 inherited (error); FW301 overridden (warning); FW1 not selected by the base
    assert run.hits() == [("deploy.yaml", 6, 3, "FW301"), ("deploy.yaml", 20, 1, "FW201")]
    assert severities(run.findings) == {("app/deploy.yaml", "FW301"): "warning", ("app/deploy.yaml", "FW201"): "error"}
    # a chain of three; the nearest wins key by key
    write(tmp_path, "app/strict/.fieldwarden.yaml", "extend: ../.fieldwarden.yaml\nselect: [FW201]\n")
    write(tmp_path, "app/strict/x.yaml", scaled_deployment("web") + "---\n" + NO_STRATEGY.format(name="api"))
    strict = lint(["app/strict/x.yaml", "--no-context"], cwd=tmp_path)
    assert strict.hits() == [("x.yaml", 20, 1, "FW201")]
    assert severities(strict.findings) == {("app/strict/x.yaml", "FW201"): "error"}


def test_extend_cycle_is_exit_2_naming_the_files(tmp_path: Path) -> None:
    write(tmp_path, "a/.fieldwarden.yaml", "extend: ../b/.fieldwarden.yaml\n")
    write(tmp_path, "b/.fieldwarden.yaml", "extend: ../a/.fieldwarden.yaml\n")
    write(tmp_path, "a/x.yaml", NO_STRATEGY.format(name="x"))
    run = lint(["a/x.yaml"], cwd=tmp_path)
    assert run.code == 2 and run.findings == []
    assert "cycle" in run.stderr and "Traceback" not in run.stderr
    assert "a/.fieldwarden.yaml" in run.stderr and "b/.fieldwarden.yaml" in run.stderr
    write(tmp_path, "c/.fieldwarden.yaml", "extend: .fieldwarden.yaml\n")  # itself
    write(tmp_path, "c/x.yaml", NO_STRATEGY.format(name="x"))
    run = lint(["c/x.yaml"], cwd=tmp_path)
    assert run.code == 2 and "cycle" in run.stderr
    write(tmp_path, "d/.fieldwarden.yaml", "extend: nowhere.yaml\n")
    write(tmp_path, "d/x.yaml", NO_STRATEGY.format(name="x"))
    run = lint(["d/x.yaml"], cwd=tmp_path)
    assert run.code == 2 and "nowhere.yaml" in run.stderr


def test_an_extended_file_is_validated_too(tmp_path: Path) -> None:
    write(tmp_path, "base.yaml", "selct: [FW2]\n")
    write(tmp_path, "sub/.fieldwarden.yaml", "extend: ../base.yaml\n")
    write(tmp_path, "sub/x.yaml", NO_STRATEGY.format(name="x"))
    run = lint(["sub/x.yaml"], cwd=tmp_path)
    assert run.code == 2 and "base.yaml" in run.stderr and "'selct'" in run.stderr


def test_a_bad_nested_configuration_is_exit_2(tmp_path: Path) -> None:
    write(tmp_path, "sub/.fieldwarden.yaml", "rules:\n  FW201: {severity: fatal}\n")
    write(tmp_path, "sub/x.yaml", NO_STRATEGY.format(name="x"))
    run = lint(["."], cwd=tmp_path)
    assert run.code == 2 and "rules.FW201.severity" in run.stderr


def test_config_option_wins_for_every_file(tmp_path: Path) -> None:
    write(tmp_path, "sub/.fieldwarden.yaml", "ignore: [FW201]\n")
    write(tmp_path, "sub/a.yaml", NO_STRATEGY.format(name="a"))
    write(tmp_path, "top.yaml", NO_STRATEGY.format(name="top"))
    write(tmp_path, "ci/fieldwarden.yaml", "rules:\n  FW201: {severity: info}\n")
    run = lint(["--config", "ci/fieldwarden.yaml", "."], cwd=tmp_path)
    assert run.hits() == [("a.yaml", 5, 1, "FW201"), ("top.yaml", 5, 1, "FW201")]
    assert set(severities(run.findings).values()) == {"info"}
    # command-line choices apply on top of each file's own configuration
    assert lint(["--ignore", "FW3", "."], cwd=tmp_path).hits() == [("a.yaml", 5, 1, "FW201"), ("top.yaml", 5, 1, "FW201")]
    missing = lint(["--config", "nope.yaml", "."], cwd=tmp_path)
    assert missing.code == 2 and "nope.yaml" in missing.stderr


def test_exclude_is_relative_to_the_configuration_that_says_it(tmp_path: Path) -> None:
    write(tmp_path, ".fieldwarden.yaml", "exclude: [build/gen/**]\n")
    write(tmp_path, "build/gen/x.yaml", NO_STRATEGY.format(name="g1"))
    write(tmp_path, "sub/.fieldwarden.yaml", "exclude: [build/gen/**]\n")
    write(tmp_path, "sub/build/gen/y.yaml", NO_STRATEGY.format(name="g2"))  # sub's pattern: sub/build/gen
    write(tmp_path, "sub/deep/build/gen/z.yaml", NO_STRATEGY.format(name="g3"))  # neither: not relative to deep/
    write(tmp_path, "sub/keep.yaml", NO_STRATEGY.format(name="k"))
    files = {f["file"] for f in lint(["."], cwd=tmp_path).findings}
    assert files == {"sub/deep/build/gen/z.yaml", "sub/keep.yaml"}
    # the same from inside sub/: the answer does not depend on where the run starts
    files = {f["file"] for f in lint(["."], cwd=tmp_path / "sub").findings}
    assert files == {"deep/build/gen/z.yaml", "keep.yaml"}
    # an extended file's patterns stay relative to the extended file's folder
    write(tmp_path, "sub/.fieldwarden.yaml", "extend: ../.fieldwarden.yaml\n")
    files = {f["file"] for f in lint(["."], cwd=tmp_path).findings}
    assert files == {"sub/build/gen/y.yaml", "sub/deep/build/gen/z.yaml", "sub/keep.yaml"}
    # a pattern without a slash names a folder or file anywhere below, as before
    write(tmp_path, "sub/.fieldwarden.yaml", "exclude: [gen]\n")
    files = {f["file"] for f in lint(["."], cwd=tmp_path).findings}
    assert files == {"sub/keep.yaml"}


def test_set_rule_across_configurations_is_judged_where_it_is_reported(tmp_path: Path) -> None:
    # one HPA in hpa/ scales two Deployments' names; FW301 is reported on each Deployment
    # (the whole project is one apply unit: `units: [.]`)
    write(tmp_path, ".fieldwarden.yaml", "units: [.]\nrules:\n  FW301: {severity: warning}\n")
    write(tmp_path, "hpa/.fieldwarden.yaml", "ignore: [FW301]\n")  # not the HPA's file that decides
    write(tmp_path, "hpa/hpas.yaml", hpa_for("web") + "---\n" + hpa_for("api"))
    write(tmp_path, "web/deploy.yaml", scaled_deployment("web"))
    write(tmp_path, "api/.fieldwarden.yaml", "ignore: [FW301]\n")
    write(tmp_path, "api/deploy.yaml", scaled_deployment("api"))
    run = lint(["web/deploy.yaml", "api/deploy.yaml"], cwd=tmp_path)
    assert run.hits("FW3") == [("deploy.yaml", 6, 3, "FW301")]
    assert severities(run.findings) == {("web/deploy.yaml", "FW301"): "warning"}
    # severity under api/'s configuration once it selects the rule
    write(tmp_path, "api/.fieldwarden.yaml", "rules:\n  FW301: {severity: info}\n")
    run = lint(["web/deploy.yaml", "api/deploy.yaml"], cwd=tmp_path)
    assert severities(run.findings) == {("web/deploy.yaml", "FW301"): "warning", ("api/deploy.yaml", "FW301"): "info"}


def test_context_false_in_a_nested_configuration(tmp_path: Path) -> None:
    write(tmp_path, ".fieldwarden.yaml", "context: true\nunits: [.]\n")  # the project: tmp_path, one unit
    write(tmp_path, "hpa.yaml", hpa_for("web"))
    write(tmp_path, "sub/.fieldwarden.yaml", "context: false\n")
    write(tmp_path, "sub/deploy.yaml", scaled_deployment("web"))
    write(tmp_path, "deploy.yaml", scaled_deployment("web2") + "---\n" + hpa_for("web2"))
    assert lint(["sub/deploy.yaml"], cwd=tmp_path).hits("FW301") == []
    assert lint(["deploy.yaml", "sub/deploy.yaml"], cwd=tmp_path).hits("FW301") == [("deploy.yaml", 6, 3, "FW301")]
    write(tmp_path, "sub/.fieldwarden.yaml", "context: true\n")
    assert lint(["sub/deploy.yaml"], cwd=tmp_path).hits("FW301") == [("deploy.yaml", 6, 3, "FW301")]


def test_a_nested_configuration_does_not_narrow_the_project(tmp_path: Path) -> None:
    # run from sub/, which has its own configuration: the root configuration's folder is
    # still the project, so the HPA beside it is context (the project being one unit)
    write(tmp_path, ".fieldwarden.yaml", "select: [FW]\nunits: [.]\n")
    write(tmp_path, "hpa.yaml", hpa_for("web"))
    write(tmp_path, "sub/.fieldwarden.yaml", "ignore: [FW2]\n")
    write(tmp_path, "sub/deploy.yaml", scaled_deployment("web"))
    assert lint(["deploy.yaml"], cwd=tmp_path / "sub").hits() == [("deploy.yaml", 6, 3, "FW301")]
    code, out = show(["--show-settings", "deploy.yaml"], tmp_path / "sub")
    assert code == 0 and f"project root: {tmp_path.resolve()}\n" in out


def test_nested_default_namespace_and_the_context_cache(tmp_path: Path) -> None:
    # context large enough to go through the cache; the Deployment lands in sub/'s namespace
    write(tmp_path, ".fieldwarden.yaml", "select: [FW303]\nunits: [.]\n")
    write(tmp_path, "hpa.yaml", hpa_for("web").replace("name: web\n", "name: web\n  namespace: team\n", 1))
    write(tmp_path, "sub/.fieldwarden.yaml", "extend: ../.fieldwarden.yaml\ndefault-namespace: team\n")
    write(tmp_path, "sub/deploy.yaml", scaled_deployment("web"))
    for index in range(12):
        write(tmp_path, f"pad/p{index}.yaml", "# padding\n" * 200 + NO_STRATEGY.format(name=f"p{index}"))
    for attempt in range(2):  # cold, then warm from .fieldwarden_cache
        assert lint(["hpa.yaml"], cwd=tmp_path).hits() == [], attempt
        assert (tmp_path / ".fieldwarden_cache").is_dir()
    # the same bytes under another namespace: the cache must not answer with the old one
    write(tmp_path, "sub/.fieldwarden.yaml", "extend: ../.fieldwarden.yaml\ndefault-namespace: other\n")
    assert [hit[3] for hit in lint(["hpa.yaml"], cwd=tmp_path).hits()] == ["FW303"]


def test_show_settings(tmp_path: Path) -> None:
    write(tmp_path, ".fieldwarden.yaml", "ignore: [FW303]\nexclude: [vendor/]\n")
    write(tmp_path, "sub/.fieldwarden.yaml", "extend: ../.fieldwarden.yaml\nrules:\n  FW201: {severity: error}\n"
          "  managed-field-conflict: {field-managers: [kubectl]}\n")
    code, out = show(["--show-settings", "sub/a.yaml"], tmp_path)
    assert code == 0
    lines = out.splitlines()
    assert lines[:3] == ["file: sub/a.yaml", "configuration: sub/.fieldwarden.yaml", "  extends: .fieldwarden.yaml"]
    assert "ignore: FW303" in lines and "fail-on: warning" in lines
    assert "exclude: vendor/ (relative to .)" in lines
    assert "  FW201 on  error   strategy-type-missing" in lines
    assert any(line.startswith("  FW303 off warning autoscaler-target-missing") for line in lines)
    assert any(line.startswith("  FW307 on  warning managed-field-conflict field-managers=['kubectl']") for line in lines)
    code, out = show(["--show-settings", "top.yaml"], tmp_path)
    assert "configuration: .fieldwarden.yaml" in out.splitlines() and "  FW201 on  info    strategy-type-missing" in out
    code, out = show(["--config", "sub/.fieldwarden.yaml", "--select", "FW1", "--show-settings", "top.yaml"], tmp_path)
    assert "configuration: sub/.fieldwarden.yaml" in out.splitlines() and "select: FW1" in out.splitlines()
    code, out = show(["--show-settings", "vendor/x.yaml"], tmp_path)
    assert "excluded: yes" in out.splitlines()


def test_stdin_gets_the_configuration_of_the_file_it_stands_for(tmp_path: Path) -> None:
    write(tmp_path, "sub/.fieldwarden.yaml", "ignore: [FW201]\n")
    text = NO_STRATEGY.format(name="a").encode()
    assert lint(["--stdin-filename", "sub/a.yaml", "-"], cwd=tmp_path, stdin=text).hits() == []
    assert lint(["--stdin-filename", "a.yaml", "-"], cwd=tmp_path, stdin=text).hits() == [("a.yaml", 5, 1, "FW201")]


def test_the_webhook_configuration_honours_extend(tmp_path: Path) -> None:
    from fieldwarden.policies.config import ConfigError
    from fieldwarden.policies.config import load_settings

    write(tmp_path, "base.yaml", "ignore: [FW402]\nwebhook: {on-stale-inventory: deny}\n")
    config = write(tmp_path, "webhook/config.yaml", "extend: ../base.yaml\nwebhook: {max-request-bytes: 65536}\n")
    settings = load_settings(config)
    assert not settings.enabled("FW402")
    assert settings.webhook == ("deny", 65536)
    write(tmp_path, "base.yaml", "extend: webhook/config.yaml\n")
    try:
        load_settings(config)
    except ConfigError as exc:
        assert "cycle" in str(exc)
    else:
        raise AssertionError("a cycle must be refused")


def test_in_a_git_repository_as_pre_commit_runs_it(tmp_path: Path) -> None:
    # pre-commit runs from the repository's root with the changed files; no root configuration
    import subprocess

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    write(tmp_path, "team-a/.fieldwarden.yaml", "ignore: [FW201]\nrules:\n  FW301: {severity: info}\nfail-on: error\n")
    write(tmp_path, "team-a/deploy.yaml", scaled_deployment("web") + "---\n" + NO_STRATEGY.format(name="api"))
    write(tmp_path, "team-b/.fieldwarden.yaml", "rules:\n  FW201: {severity: warning}\n")
    write(tmp_path, "team-b/deploy.yaml", NO_STRATEGY.format(name="b"))
    write(tmp_path, "team-a/hpa.yaml", hpa_for("web"))  # context, in the Deployment's apply unit
    run = lint(["team-a/deploy.yaml", "team-b/deploy.yaml"], cwd=tmp_path)
    assert run.hits() == [("deploy.yaml", 5, 1, "FW201"), ("deploy.yaml", 6, 3, "FW301")]
    assert severities(run.findings) == {("team-a/deploy.yaml", "FW301"): "info", ("team-b/deploy.yaml", "FW201"): "warning"}
    assert run.code == 1  # team-b's warning fails under the default fail-on; team-a's info would not
    alone = lint(["team-a/deploy.yaml"], cwd=tmp_path)
    assert (alone.code, alone.hits()) == (0, [("deploy.yaml", 6, 3, "FW301")])


def test_a_repository_configuration_cannot_reach_files_outside_the_repository(tmp_path: Path) -> None:
    # A pull request's configuration must not make CI read (and echo in an error) a file elsewhere.
    import subprocess

    secret = write(tmp_path, "home/secret.yaml", "fail-on: TOKEN-abc123\n")
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    write(repo, "x.yaml", NO_STRATEGY.format(name="x"))
    write(repo, "base.yaml", "select: [FW2]\n")
    for extend in (str(secret), "../home/secret.yaml", "link.yaml"):
        (repo / "link.yaml").unlink(missing_ok=True)
        (repo / "link.yaml").symlink_to(secret)
        write(repo, ".fieldwarden.yaml", f"extend: {extend}\n")
        run = lint(["x.yaml"], cwd=repo)
        assert run.code == 2 and "outside the repository" in run.stderr, extend
        assert "TOKEN-abc123" not in run.stderr
    (repo / ".fieldwarden.yaml").unlink()
    (repo / ".fieldwarden.yaml").symlink_to(secret)  # the configuration itself a link out
    run = lint(["x.yaml"], cwd=repo)
    assert run.code == 2 and "outside the repository" in run.stderr and "TOKEN-abc123" not in run.stderr
    # inside the repository, extend works as before
    (repo / ".fieldwarden.yaml").unlink()
    write(repo, "sub/.fieldwarden.yaml", "extend: ../base.yaml\n")
    write(repo, "sub/y.yaml", NO_STRATEGY.format(name="y"))
    assert lint(["sub/y.yaml"], cwd=repo).hits() == [("y.yaml", 5, 1, "FW201")]


def test_an_oversized_configuration_is_refused_not_read_whole(tmp_path: Path) -> None:
    write(tmp_path, ".fieldwarden.yaml", "select: [FW2]\n" + "#" * (2 << 20) + "\n")
    write(tmp_path, "x.yaml", NO_STRATEGY.format(name="x"))
    run = lint(["x.yaml"], cwd=tmp_path)
    assert run.code == 2 and "not a configuration file" in run.stderr and "Traceback" not in run.stderr
