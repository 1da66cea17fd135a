"""`lint --cluster` without a cluster: what a plain lint loads, errors worded for people, the request plan.

What the API server answers is tested against a real one (tests/e2e/test_live_lint.py); here
only what does not depend on it: imports, options and configuration, the exit code and message
when there is no cluster or no client, and the requests planned (a recording sender that answers
discovery and lists with fixed data, not a model of the API server).
"""

from __future__ import annotations

import io
import json
import os
import socket
import subprocess
import sys
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Sequence

import pytest

from fieldwarden.cli import main
from fieldwarden.linter.live.checks import LiveObject, LiveOptions, Request, Response, check
from fieldwarden.policies.config import ConfigError, Settings, validate
from tests.helpers import git_repo, lint, web_deployment, write
from tests.linter.test_imports import DEPLOYMENT, WEBHOOK_STACK, imported
from tests.linter.units.test_units import needs_kustomize

LIVE_MODULES = {"fieldwarden.linter.live.checks", "fieldwarden.linter.live.run", "fieldwarden.linter.live.units",
                "fieldwarden.linter.live.cluster", "fieldwarden.linter.live.client_apply"}


def test_a_plain_lint_loads_neither_the_live_checks_nor_the_kubernetes_client(tmp_path: Path) -> None:
    write(tmp_path, "deploy.yaml", DEPLOYMENT)
    modules = imported(["-m", "fieldwarden", "lint", "deploy.yaml"], tmp_path)
    assert not modules & LIVE_MODULES and not modules & set(WEBHOOK_STACK)


def closed_port() -> int:
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = int(probe.getsockname()[1])
    probe.close()
    return port


def kubeconfig(folder: Path, server: str) -> Path:
    config = {"apiVersion": "v1", "kind": "Config", "current-context": "c",
              "clusters": [{"name": "c", "cluster": {"server": server, "insecure-skip-tls-verify": True}}],
              "users": [{"name": "u", "user": {"token": "t"}}],
              "contexts": [{"name": "c", "context": {"cluster": "c", "user": "u"}}]}
    return write(folder, "kubeconfig", json.dumps(config))


def run(args: list[str], cwd: Path, env: dict[str, str] | None = None, prelude: str = "") -> subprocess.CompletedProcess[str]:
    code = f"{prelude}\nimport sys\nfrom fieldwarden.cli import main\nraise SystemExit(main(sys.argv[1:]))"
    environment = {k: v for k, v in os.environ.items() if k not in ("KUBECONFIG", "GIT_DIR")}
    environment.update(env or {}, HOME=str(cwd), NO_PROXY="127.0.0.1")
    return subprocess.run([sys.executable, "-c", code, "lint", "--no-context", *args], cwd=cwd, env=environment,
                          capture_output=True, text=True, timeout=60)


def test_an_unreachable_api_server_is_exit_2_with_a_message(tmp_path: Path) -> None:
    write(tmp_path, "deploy.yaml", DEPLOYMENT)
    config = kubeconfig(tmp_path, f"https://127.0.0.1:{closed_port()}")
    done = run(["--cluster", "--kubeconfig", str(config), "deploy.yaml"], tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr.startswith("fieldwarden: --cluster: cannot reach the API server at https://127.0.0.1:")
    assert "Traceback" not in done.stderr


def test_no_kubeconfig_and_a_broken_one_are_exit_2(tmp_path: Path) -> None:
    write(tmp_path, "deploy.yaml", DEPLOYMENT)
    done = run(["--cluster", "deploy.yaml"], tmp_path)
    assert done.returncode == 2
    assert "--cluster needs a cluster: no kubeconfig" in done.stderr and "Traceback" not in done.stderr
    write(tmp_path, "bad", "clusters: [")
    done = run(["--cluster", "--kubeconfig", "bad", "deploy.yaml"], tmp_path)
    assert done.returncode == 2 and done.stderr.startswith("fieldwarden: --cluster: the kubeconfig does not load")


def test_without_the_kubernetes_client_cluster_says_how_to_install_it(tmp_path: Path) -> None:
    write(tmp_path, "deploy.yaml", DEPLOYMENT)
    done = run(["--cluster", "deploy.yaml"], tmp_path, prelude="import sys; sys.modules['kubernetes'] = None")
    assert done.returncode == 2
    assert done.stderr.strip() == ("fieldwarden: --cluster needs the Kubernetes client (kubernetes is not installed): "
                                   "pip install 'fieldwarden[cluster]'")


def test_cluster_options_without_cluster_are_a_usage_error(tmp_path: Path) -> None:
    write(tmp_path, "deploy.yaml", DEPLOYMENT)
    found = lint(["--no-context", "--read-only", "deploy.yaml"], cwd=tmp_path)
    assert found.code == 2 and "go with --cluster" in found.stderr


def test_the_cluster_section_of_the_configuration() -> None:
    validate({"cluster": {"context": "prod", "apply-mode": "client", "field-manager": "helm", "read-only": True,
                          "force-conflicts": False, "timeout": 10, "parallel": 4}}, "c.yaml")
    with pytest.raises(ConfigError, match="unknown key 'contxt'"):
        validate({"cluster": {"contxt": "prod"}}, "c.yaml")
    with pytest.raises(ConfigError, match="apply-mode"):
        validate({"cluster": {"apply-mode": "kubectl"}}, "c.yaml")
    from fieldwarden.linter.live.run import options_from

    settings = Settings({"cluster": {"kubeconfig": "kube/ci.yaml", "apply-mode": "client", "read-only": True}},
                        source="/repo/.fieldwarden.yaml")
    args = type("Args", (), {"apply_mode": None, "kubeconfig": None, "context": "prod", "field_manager": None,
                             "read_only": False, "force_conflicts": False})()
    options = options_from(args, settings)
    # the configuration's kubeconfig is ignored (see the tests below), the command line's context taken
    assert (options.apply_mode, options.kubeconfig, options.context, options.read_only, options.manager) == (
        "client", None, "prod", True, "kubectl-client-side-apply")
    args.apply_mode = "server"
    assert options_from(args, settings).manager == "kubectl"


def test_a_configuration_file_never_chooses_the_cluster_and_only_turns_read_only_on() -> None:
    from fieldwarden.linter.live.run import options_from

    args = type("Args", (), {"apply_mode": None, "kubeconfig": None, "context": None, "field_manager": None,
                             "read_only": True, "force_conflicts": False})()
    tree = Settings({"cluster": {"kubeconfig": "kube.yaml", "context": "prod", "read-only": False}},
                    source="/repo/.fieldwarden.yaml")
    options = options_from(args, tree)
    assert (options.kubeconfig, options.context, options.read_only) == (None, None, True)
    assert options.notices == ("--cluster: /repo/.fieldwarden.yaml: cluster.kubeconfig and cluster.context ignored: a "
                               "configuration file never chooses the cluster or the credentials (use --kubeconfig, "
                               "--context or $KUBECONFIG)",)
    args.kubeconfig, args.context = "/home/ci/kube.yaml", "staging"
    assert options_from(args, tree)[4:6] == ("/home/ci/kube.yaml", "staging")
    assert options_from(args, Settings({"cluster": {"apply-mode": "client"}})).notices == ()


def live_settings(data: dict[str, object] | None = None) -> Settings:
    """Settings of a `lint --cluster` run: the live rules are on."""
    settings = Settings(data)
    settings.live = True
    return settings


def test_live_rules_are_off_unless_the_run_is_live() -> None:
    assert not Settings().enabled("FW501") and Settings().enabled("FW101")
    assert live_settings().enabled("FW501") and not live_settings({"ignore": ["FW5"]}).enabled("FW501")


class Recorder:
    """Answers discovery and lists with fixed data, and records what is asked (no API semantics)."""

    server = "https://127.0.0.1:1"

    def __init__(self, pages: int = 1) -> None:
        self.requests: list[Request] = []
        self.batches: list[int] = []
        self.pages = pages

    def send(self, requests: Sequence[Request]) -> list[Response]:
        self.requests.extend(requests)
        self.batches.append(len(requests))
        return [self.answer(r) for r in requests]

    def answer(self, request: Request) -> Response:
        if request.path == "/api":
            return Response(200, {"versions": ["v1"]})
        if request.path == "/apis":
            return Response(200, {"groups": [{"name": "apps", "versions": [{"version": "v1"}]}]})
        if request.path == "/api/v1":
            return Response(200, {"resources": [{"name": "configmaps", "kind": "ConfigMap", "namespaced": True}]})
        if request.path == "/apis/apps/v1":
            return Response(200, {"resources": [{"name": "deployments", "kind": "Deployment", "namespaced": True},
                                                {"name": "deployments/scale", "kind": "Scale", "namespaced": True}]})
        if request.path.startswith("/api/v1/namespaces/") and request.path.count("/") == 4:
            return Response(200, {"metadata": {"name": request.path.rsplit("/", 1)[1]}})
        if request.method == "GET" and request.path.endswith("/configmaps"):
            page = int(dict(request.query).get("continue") or 0)
            more = {"continue": str(page + 1)} if page + 1 < self.pages else {}
            namespace = request.path.split("/")[4]
            return Response(200, {"metadata": more, "items": [{"metadata": {"name": f"c{page}", "namespace": namespace}}]})
        return Response(404, {"kind": "Status", "code": 404, "reason": "NotFound", "message": "not found"})


def objects(count: int, kind: str = "ConfigMap", namespace: str = "shop") -> list[LiveObject]:
    api_version = "v1" if kind == "ConfigMap" else "apps/v1"
    return [LiveObject({"apiVersion": api_version, "kind": kind, "metadata": {"name": f"c{n}", "namespace": namespace}},
                       "f.yaml", n, (), f"{kind}/{namespace}/c{n}", lambda path: ("f.yaml", 1, 1))
            for n in range(count)]


def test_one_paged_list_per_kind_and_namespace_where_it_is_cheaper_than_gets() -> None:
    sender = Recorder(pages=3)
    result = check(objects(10) + objects(2, namespace="other"), LiveOptions(read_only=True), lambda f: live_settings(), sender)
    gets = [(r.path, dict(r.query)) for r in sender.requests if r.method == "GET" and "configmaps" in r.path]
    assert gets == [
        ("/api/v1/namespaces/other/configmaps/c0", {}), ("/api/v1/namespaces/other/configmaps/c1", {}),
        ("/api/v1/namespaces/shop/configmaps", {"limit": "500"}),
        ("/api/v1/namespaces/shop/configmaps", {"limit": "500", "continue": "1"}),
        ("/api/v1/namespaces/shop/configmaps", {"limit": "500", "continue": "2"}),
    ]
    assert not [r for r in sender.requests if r.method != "GET"]  # read-only: no dry run
    assert any("9 objects not in the cluster yet" in n for n in result.notices)  # c0..c2 of shop exist


def test_requests_go_in_a_few_batches_whatever_the_number_of_objects() -> None:
    sender = Recorder()
    check(objects(300), LiveOptions(), lambda f: live_settings(), sender)
    dry_runs = [r for r in sender.requests if r.method == "PATCH"]
    assert len(dry_runs) == 300 and {dict(r.query)["dryRun"] for r in dry_runs} == {"All"}
    assert all(r.content_type == "application/apply-patch+yaml" and dict(r.query)["fieldManager"] == "kubectl"
               for r in dry_runs)
    assert len(sender.batches) <= 6  # discovery (2), namespaces, lists, dry runs: each batch in parallel


def test_an_unserved_kind_and_unnamed_objects_are_not_requested() -> None:
    sender = Recorder()
    unnamed = LiveObject({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "x-"}}, "f.yaml", 0, (),
                         "ConfigMap/x-*", lambda path: ("f.yaml", 1, 1))
    widget = LiveObject({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}, "f.yaml", 1, (),
                        "Widget/w", lambda path: ("f.yaml", 3, 1))
    result = check([unnamed, widget], LiveOptions(), lambda f: live_settings(), sender)
    assert [(f.code, f.line) for f in result.findings] == [("FW509", 3)]
    assert not [r for r in sender.requests if r.method != "GET" or "widgets" in r.path]
    assert any("1 object without metadata.name not checked" in n for n in result.notices)


def test_settings_decide_which_live_rules_report(tmp_path: Path) -> None:
    sender = Recorder()
    widget = LiveObject({"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}}, "f.yaml", 0, (),
                        "Widget/w", lambda path: ("f.yaml", 3, 1))
    quiet = live_settings({"ignore": ["kind-not-served"]})
    assert check([widget], LiveOptions(), lambda f: quiet, sender).findings == []
    loud = live_settings({"rules": {"FW509": {"severity": "warning"}}})
    assert [f.severity for f in check([widget], LiveOptions(), lambda f: loud, sender).findings] == ["warning"]


def test_options_are_checked() -> None:
    from fieldwarden.linter.live.checks import LiveError

    with pytest.raises(LiveError, match="--apply-mode must be one of server, client"):
        check([], LiveOptions(apply_mode="kubectl"), lambda f: live_settings(), Recorder())


def test_the_webhook_runs_no_live_rule_and_accepts_the_cluster_section() -> None:
    from fieldwarden.webhook.server.handlers import admission_rules

    codes = {rule.CODE for function in ("validate", "mutate") for rule in admission_rules(function)}
    assert codes and not {code for code in codes if code.startswith("FW5")}
    validate({"cluster": {"context": "prod"}, "webhook": {"on-stale-inventory": "deny"}}, "config.yaml")


# --- the objects of each unit, as applied ------------------------------------------------------------

class Applier(Recorder):
    """A Recorder whose dry runs succeed, answering the object sent (no API semantics)."""

    def answer(self, request: Request) -> Response:
        if request.method == "PATCH":
            return Response(200, json.loads(request.body))
        return super().answer(request)


@pytest.fixture
def sender(monkeypatch: pytest.MonkeyPatch) -> Applier:
    """`lint --cluster` in this test talks to an Applier instead of a cluster."""
    from fieldwarden.linter.live import cluster

    recorder = Applier()

    class Fake:
        server = recorder.server

        def __init__(self, *args: object) -> None:
            pass

        def send(self, requests: Sequence[Request]) -> list[Response]:
            return recorder.send(requests)

        def close(self) -> None:
            pass

    monkeypatch.setattr(cluster, "Cluster", Fake)
    return recorder


def dry_runs(sender: Recorder) -> list[tuple[str, dict[str, object]]]:
    """(path, object sent) of each dry run, in order."""
    return [(r.path, json.loads(r.body)) for r in sender.requests if r.method == "PATCH"]


WEB = web_deployment(image="registry.example/web:1.0")
WIDGET = "apiVersion: example.com/v1\nkind: Widget\nmetadata:\n  name: w\n"


@needs_kustomize
def test_overlays_are_checked_as_rendered_once_per_distinct_object_and_fragments_never(
        tmp_path: Path, sender: Applier) -> None:
    root = git_repo(tmp_path, {
        "base/deploy.yaml": WEB,
        "base/widget.yaml": WIDGET,
        "base/kustomization.yaml": "resources: [deploy.yaml, widget.yaml]\n",
        # two overlays rendering the same objects, one rendering them elsewhere with a patch
        "overlays/a/kustomization.yaml": "resources: [../../base]\n",
        "overlays/b/kustomization.yaml": "resources: [../../base]\n",
        "overlays/prod/kustomization.yaml": "namespace: prod\nresources: [../../base]\npatches:\n  - path: replicas.yaml\n",
        "overlays/prod/replicas.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 5\n",
    })
    run = lint(["--cluster", "--select", "FW5"], cwd=root)
    assert [(path, sent["spec"].get("replicas")) for path, sent in dry_runs(sender)] == [
        ("/apis/apps/v1/namespaces/default/deployments/web", None),
        ("/apis/apps/v1/namespaces/prod/deployments/web", 5),
    ]
    assert "--cluster: 4 objects checked" in run.stderr  # 2 Deployments, 2 Widgets: no base, no patch alone
    [finding] = run.findings  # the Widget the cluster does not serve, in both namespaces: one place, one finding
    assert (finding["file"], finding["line"], finding["code"]) == ("base/widget.yaml", 1, "FW509")
    assert finding["units"] == ["overlays/a (kustomize)", "overlays/b (kustomize)", "overlays/prod (kustomize)"]


@needs_kustomize
def test_a_changed_patch_checks_its_whole_overlay_and_reports_in_the_base(tmp_path: Path, sender: Applier) -> None:
    root = git_repo(tmp_path, {
        "base/deploy.yaml": WEB,
        "base/widget.yaml": WIDGET,
        "base/kustomization.yaml": "resources: [deploy.yaml, widget.yaml]\n",
        "overlays/prod/kustomization.yaml": "namespace: prod\nresources: [../../base]\npatches:\n  - path: replicas.yaml\n",
        "overlays/prod/replicas.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 5\n",
    })
    # pre-commit passing the changed patch: what the overlay applies is the patch's doing (issue 22,
    # item 8): every object of it is checked, and what lands in the base is reported there
    run = lint(["--cluster", "--select", "FW5", "overlays/prod/replicas.yaml"], cwd=root)
    assert [path for path, _ in dry_runs(sender)] == ["/apis/apps/v1/namespaces/prod/deployments/web"]
    assert "--cluster: 2 objects checked" in run.stderr
    assert [(f["file"], f["line"], f["code"], f["suppressed"]) for f in run.findings] == [
        ("base/widget.yaml", 1, "FW509", None)]
    # the base's own ignore comment holds there too
    write(root, "base/widget.yaml", "# fieldwarden: ignore[FW509]\n" + WIDGET)
    run = lint(["--cluster", "--select", "FW5", "overlays/prod/replicas.yaml"], cwd=root)
    assert (run.code, [(f["file"], f["line"], f["suppressed"]) for f in run.findings]) == (
        0, [("base/widget.yaml", 2, "comment at line 1")])


def test_units_put_objects_in_their_gitops_namespaces(tmp_path: Path, sender: Applier) -> None:
    root = git_repo(tmp_path, {
        # Argo CD: objects naming no namespace go to the destination's
        "argocd/web.yaml": "\n".join([
            "apiVersion: argoproj.io/v1alpha1", "kind: Application", "metadata: {name: web, namespace: argocd}",
            "spec:", "  project: default", "  source: {repoURL: https://example.com/deploy.git, path: apps/web}",
            "  destination: {server: https://kubernetes.default.svc, namespace: shop}"]) + "\n",
        "apps/web/deploy.yaml": WEB,
        # Flux: targetNamespace puts every namespaced object there, whatever it names
        "clusters/prod/api.yaml": "\n".join([
            "apiVersion: kustomize.toolkit.fluxcd.io/v1", "kind: Kustomization",
            "metadata: {name: api, namespace: flux-system}", "spec:", "  path: ./apps/api", "  targetNamespace: team",
            "  sourceRef: {kind: GitRepository, name: flux-system}"]) + "\n",
        "apps/api/deploy.yaml": WEB.replace("name: web\n", "name: api\n  namespace: elsewhere\n", 1),
        # a plain folder: as written
        "apps/plain/deploy.yaml": WEB.replace("name: web\n", "name: plain\n  namespace: own\n", 1),
    })
    run = lint(["--cluster", "--select", "FW5"], cwd=root)
    assert sorted((path, sent["metadata"].get("namespace")) for path, sent in dry_runs(sender)) == [
        ("/apis/apps/v1/namespaces/own/deployments/plain", "own"),
        ("/apis/apps/v1/namespaces/shop/deployments/web", "shop"),
        ("/apis/apps/v1/namespaces/team/deployments/api", "team"),
    ]
    # the GitOps objects themselves are applied too, and the cluster serves neither kind
    assert sorted((f["file"], f["code"], f["unit"]) for f in run.findings) == [
        ("argocd/web.yaml", "FW509", "argocd"), ("clusters/prod/api.yaml", "FW509", "clusters/prod")]


def test_an_object_in_two_units_alike_is_checked_once_naming_both(tmp_path: Path, sender: Applier) -> None:
    app = "\n".join([
        "apiVersion: argoproj.io/v1alpha1", "kind: Application", "metadata: {{name: {name}, namespace: argocd}}",
        "spec:", "  project: default", "  source: {{repoURL: https://example.com/deploy.git, path: shared}}",
        "  destination: {{server: https://kubernetes.default.svc, namespace: {namespace}}}"]) + "\n"
    root = git_repo(tmp_path, {
        "argocd/one.yaml": app.format(name="one", namespace="shop"),
        "argocd/two.yaml": app.format(name="two", namespace="other"),
        "clusters/prod/shared.yaml": "\n".join([
            "apiVersion: kustomize.toolkit.fluxcd.io/v1", "kind: Kustomization",
            "metadata: {name: shared, namespace: flux-system}", "spec:", "  path: ./shared", "  targetNamespace: shop",
            "  sourceRef: {kind: GitRepository, name: flux-system}"]) + "\n",
        "shared/widget.yaml": WIDGET,
        "shared/role.yaml": "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: reader\n",
    })
    run = lint(["--cluster", "--select", "FW5", "shared"], cwd=root)  # pre-commit: the GitOps objects are context
    # the Widget goes to shop through Argo CD's one and Flux (one object), to other through two; the
    # ClusterRole is in no namespace: one object whichever unit applies it
    assert "--cluster: 3 objects checked" in run.stderr
    role, finding = sorted(run.findings, key=lambda f: f["file"])  # the same place, the same words: said once
    assert (role["file"], role["object"], len(role["units"])) == ("shared/role.yaml", "ClusterRole/reader", 3)
    assert (finding["file"], finding["code"]) == ("shared/widget.yaml", "FW509")
    assert finding["units"] == ["shared (Argo CD Application argocd/two, namespace other)",
                                "shared (Argo CD Application argocd/one, namespace shop)",
                                "shared (Flux Kustomization flux-system/shared, namespace shop)"]
    assert finding["object"] == "Widget/other/w"  # as the first unit names it


class Refuser(Applier):
    """An Applier that refuses every ConfigMap's apply as invalid on its `data` (a Status of the API's shape)."""

    def answer(self, request: Request) -> Response:
        if request.method == "PATCH" and "/configmaps/" in request.path:
            return Response(422, {"kind": "Status", "status": "Failure", "code": 422, "reason": "Invalid",
                                  "message": "ConfigMap is invalid: data: Too long: must have at most 1048576 bytes",
                                  "details": {"causes": [{"reason": "FieldValueTooLong", "field": "data",
                                                          "message": "Too long: must have at most 1048576 bytes"}]}})
        return super().answer(request)


@needs_kustomize
def test_a_finding_placed_approximately_on_a_rendered_object_says_so(tmp_path: Path, sender: Applier,
                                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sender, "answer", Refuser().answer)
    # a generated ConfigMap: kustomize writes `data` from the generator, whose own line is known
    root = git_repo(tmp_path, {"app/kustomization.yaml": "configMapGenerator:\n  - name: settings\n    literals: [a=1]\n"})
    run = lint(["--cluster", "--select", "FW5"], cwd=root)
    [finding] = run.findings
    assert (finding["file"], finding["line"], finding["column"], finding["code"], finding["approximate"]) == (
        "app/kustomization.yaml", 2, 5, "FW501", True)
    assert finding["unit"] == "app (kustomize)"
    out = io.StringIO()
    monkeypatch.chdir(root)
    with redirect_stdout(out), redirect_stderr(io.StringIO()):
        assert main(["lint", "--cluster", "--select", "FW5", "--format", "text"]) == 1
    assert out.getvalue().startswith("app/kustomization.yaml:2:5: FW501 error: ConfigMap/default/settings-")
    assert out.getvalue().splitlines()[0].endswith("[apply-rejected-invalid] (place approximate)")


# --- request paths: names checked and encoded; only reads and dry runs leave -------------------------

HOSTILE = "x/../../../../../apis/apps/v1/namespaces/shop/deployments/web#"


def test_the_issues_hostile_namespace_sends_nothing_for_its_objects_and_is_fw501(tmp_path: Path, sender: Applier) -> None:
    root = git_repo(tmp_path, {
        ".fieldwarden.yaml": "cluster: {apply-mode: client}\n",
        "argocd/web.yaml": "\n".join([
            "apiVersion: argoproj.io/v1alpha1", "kind: Application", "metadata: {name: web, namespace: argocd}",
            "spec:", "  project: default", "  source: {repoURL: https://example.com/deploy.git, path: app}",
            f"  destination: {{server: https://kubernetes.default.svc, namespace: '{HOSTILE}'}}"]) + "\n",
        "app/deploy.yaml": web_deployment(image="attacker.example/backdoor:1"),
    })
    run = lint(["--cluster", "--select", "FW5"], cwd=root)
    assert not [r for r in sender.requests if "deployments" in r.path or r.method != "GET"]
    assert all("#" not in r.path and ".." not in r.path for r in sender.requests)
    assert ("app/deploy.yaml", "FW501") in [(f["file"], f["code"]) for f in run.findings]
    message = next(f["message"] for f in run.findings if f["file"] == "app/deploy.yaml")
    assert "not a valid DNS-1123 label" in message and "no request sent" in message
    assert "1 object with a name or namespace the API server refuses not checked" in run.stderr


@pytest.mark.parametrize("kind, name, namespace", [
    ("ConfigMap", "../secrets/dbpass", "shop"),  # climbs to another resource
    ("ConfigMap", "..", "shop"),
    ("ConfigMap", "web#", "shop"),  # cuts the query off
    ("ConfigMap", "web?dryRun=None", "shop"),
    ("ConfigMap", "a%2F..", "shop"),
    ("ConfigMap", "Web", "shop"),  # what the API server refuses anyway
    ("ConfigMap", "web", "shop/../kube-system"),
    ("ConfigMap", "web", "Shop"),
])
def test_a_name_or_namespace_the_api_server_refuses_is_never_requested(kind: str, name: str, namespace: str) -> None:
    sender = Applier()
    obj = LiveObject({"apiVersion": "v1", "kind": kind, "metadata": {"name": name, "namespace": namespace}},
                     "f.yaml", 0, (), f"{kind}/{name}", lambda path: ("f.yaml", 4 if path else 1, 3))
    result = check([obj], LiveOptions(), lambda f: live_settings(), sender)
    assert [r.path for r in sender.requests] == ["/api", "/apis", "/api/v1"]  # discovery only
    assert [(f.code, f.line) for f in result.findings] == [("FW501", 4)]
    assert any("name or namespace the API server refuses" in n for n in result.notices)


def test_rbac_names_are_path_segments_and_are_encoded() -> None:
    from fieldwarden.linter.live.paths import item_path, name_problem

    assert name_problem("rbac.authorization.k8s.io", "ClusterRole", "system:aggregate-to-view") is None
    assert name_problem("", "ConfigMap", "system:aggregate-to-view") is not None
    assert name_problem("rbac.authorization.k8s.io", "ClusterRole", "..") is not None
    assert item_path("/apis/rbac.authorization.k8s.io/v1", "clusterroles", "", "a b:c") == (
        "/apis/rbac.authorization.k8s.io/v1/clusterroles/a%20b:c")


@pytest.mark.parametrize("request_, allowed", [
    (Request("GET", "/api/v1/namespaces/shop/configmaps/web"), True),
    (Request("PATCH", "/api/v1/namespaces/shop/configmaps/web", (("dryRun", "All"),)), True),
    (Request("POST", "/api/v1/namespaces/shop/configmaps", (("fieldManager", "x"), ("dryRun", "All"))), True),
    (Request("PATCH", "/api/v1/namespaces/shop/configmaps/web"), False),
    (Request("POST", "/api/v1/namespaces/shop/configmaps", (("dryRun", "all"),)), False),
    (Request("DELETE", "/api/v1/namespaces/shop/configmaps/web", (("dryRun", "None"),)), False),
    (Request("PUT", "/api/v1/namespaces/shop/configmaps/web", (("dryrun", "All"),)), False),
    (Request("GET", "/api/v1/namespaces/x/../../apis/apps/v1/namespaces/shop/deployments/web"), False),
    (Request("GET", "/api/v1/namespaces/shop/configmaps/web#"), False),
    (Request("GET", "/api/v1/namespaces/shop/configmaps/web?dryRun=All"), False),
    (Request("GET", "/api/v1/namespaces/shop/configmaps/a%2F%2e%2e"), False),
    (Request("GET", "api/v1"), False),
])
def test_the_gate_lets_out_only_clean_paths_and_no_write_without_dry_run(request_: Request, allowed: bool) -> None:
    from fieldwarden.linter.live.paths import PathError, guard

    if allowed:
        guard(request_)
    else:
        with pytest.raises(PathError, match="refusing to send"):
            guard(request_)


def test_the_cluster_edge_sends_no_write_without_dry_run(tmp_path: Path) -> None:
    """Whatever planned it, Cluster.send refuses before connecting (a listening socket sees nothing)."""
    from fieldwarden.linter.live.cluster import Cluster
    from fieldwarden.linter.live.paths import PathError

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(0.3)
    try:
        cluster = Cluster(str(kubeconfig(tmp_path, f"https://127.0.0.1:{listener.getsockname()[1]}")), None)
        with pytest.raises(PathError, match="without dryRun=All"):
            cluster.send([Request("PATCH", "/apis/apps/v1/namespaces/shop/deployments/web", (), "{}")])
        with pytest.raises(PathError, match="not a clean request path"):
            cluster.send([Request("GET", "/api/v1/namespaces/x/../y"), Request("GET", "/api")])
        cluster.close()
        with pytest.raises(socket.timeout):
            listener.accept()
    finally:
        listener.close()


class Elsewhere(Applier):
    """An Applier whose answers are about another object than the one asked about (a misrouting proxy)."""

    def answer(self, request: Request) -> Response:
        if request.method == "GET" and request.path.endswith("/configmaps/c0"):
            return Response(200, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "c0", "namespace": "shop"}})
        if request.method == "GET" and request.path.endswith("/configmaps/c1"):
            return Response(200, {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c1", "namespace": "x"}})
        if request.method == "PATCH":
            return Response(200, {"apiVersion": "apps/v1", "kind": "ConfigMap",
                                  "metadata": {"name": "c2", "namespace": "shop"}})
        return super().answer(request)


@pytest.mark.parametrize("which, said", [(0, '"v1"/"Secret"/"shop"/"c0"'), (1, '"v1"/"ConfigMap"/"x"/"c1"'),
                                         (2, '"apps/v1"/"ConfigMap"/"shop"/"c2"')])
def test_an_answer_about_another_object_stops_the_run(which: int, said: str) -> None:
    from fieldwarden.linter.live.checks import LiveError

    with pytest.raises(LiveError, match=f"ConfigMap/shop/c{which}, the API server answered about {said}: refusing"):
        check(objects(3)[which:which + 1], LiveOptions(), lambda f: live_settings(), Elsewhere())


# --- the linted tree never chooses the cluster or the credentials -----------------------------------

def listening() -> socket.socket:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    listener.settimeout(0.3)
    return listener


def connected(listener: socket.socket) -> bool:
    """Whether anything connected to the listener (the kernel queues a connection until it is accepted)."""
    try:
        listener.accept()[0].close()
        return True
    except socket.timeout:
        return False


def test_a_kubeconfig_in_the_tree_with_an_exec_plugin_is_not_loaded(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    plugin = {"apiVersion": "client.authentication.k8s.io/v1", "command": "/bin/sh", "interactiveMode": "Never",
              "args": ["-c", f"touch {marker}; echo '{{\"apiVersion\":\"client.authentication.k8s.io/v1\","
                             "\"kind\":\"ExecCredential\",\"status\":{\"token\":\"t\"}}'"]}
    config = json.loads(kubeconfig(tmp_path, f"https://127.0.0.1:{closed_port()}").read_text())
    config["users"][0]["user"] = {"exec": plugin}
    write(tmp_path, "kube.yaml", json.dumps(config))
    write(tmp_path, ".fieldwarden.yaml", "cluster: {kubeconfig: kube.yaml}\n")
    write(tmp_path, "deploy.yaml", DEPLOYMENT)
    for extra in ([], ["--read-only"]):
        done = run(["--cluster", *extra, "deploy.yaml"], tmp_path)  # no $KUBECONFIG, no ~/.kube/config
        assert done.returncode == 2 and "--cluster needs a cluster: no kubeconfig" in done.stderr
        assert "cluster.kubeconfig ignored: a configuration file never chooses the cluster" in done.stderr
        assert not marker.exists()


def test_a_token_file_in_a_tree_kubeconfig_is_sent_nowhere(tmp_path: Path) -> None:
    listener = listening()
    try:
        tree = json.loads(kubeconfig(tmp_path, f"https://127.0.0.1:{listener.getsockname()[1]}").read_text())
        tree["users"][0]["user"] = {"tokenFile": "/etc/hostname"}
        write(tmp_path, "repo/kube.yaml", json.dumps(tree))
        write(tmp_path, "repo/.fieldwarden.yaml", "cluster: {kubeconfig: kube.yaml}\n")
        write(tmp_path, "repo/deploy.yaml", DEPLOYMENT)
        ours = kubeconfig(tmp_path / "ci", f"https://127.0.0.1:{closed_port()}")
        done = run(["--cluster", "deploy.yaml"], tmp_path / "repo", env={"KUBECONFIG": str(ours)})
        assert done.returncode == 2 and "cannot reach the API server at https://127.0.0.1:" in done.stderr
        assert "cluster.kubeconfig ignored" in done.stderr
        assert not connected(listener)
    finally:
        listener.close()


def test_a_context_in_the_tree_does_not_switch_the_ci_kubeconfigs_context(tmp_path: Path) -> None:
    listener = listening()
    try:
        config = json.loads(kubeconfig(tmp_path, f"https://127.0.0.1:{closed_port()}").read_text())
        config["clusters"].append({"name": "prod", "cluster": {"server": f"https://127.0.0.1:{listener.getsockname()[1]}",
                                                               "insecure-skip-tls-verify": True}})
        config["users"].append({"name": "prod-admin", "user": {"token": "prod-token"}})
        config["contexts"].append({"name": "prod", "context": {"cluster": "prod", "user": "prod-admin"}})
        ours = write(tmp_path, "ci/kubeconfig", json.dumps(config))
        write(tmp_path, "repo/.fieldwarden.yaml", "cluster: {context: prod}\n")
        write(tmp_path, "repo/deploy.yaml", DEPLOYMENT)
        done = run(["--cluster", "deploy.yaml"], tmp_path / "repo", env={"KUBECONFIG": str(ours)})
        assert done.returncode == 2 and "cannot reach the API server" in done.stderr
        assert "cluster.context ignored" in done.stderr
        assert not connected(listener)
    finally:
        listener.close()


# --- Secret values and sensitive fields are never printed --------------------------------------------

def test_sensitive_fields_are_shown_redacted() -> None:
    from fieldwarden.policies.live import LiveCase, redact, secret_texts, show_at

    secret = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db"},
              "data": {"password": "aHVudGVyMi1saXZl"}, "stringData": {"token": "tok"}}  # hunter2-live
    case = LiveCase(secret, None, None, None)
    assert show_at(case, ("data", "password"), "aHVudGVyMi1saXZl") == "<redacted>"
    assert show_at(case, ("data",), secret["data"]) == "<redacted>"  # holds one
    assert show_at(case, (), secret) == "<redacted>"
    assert show_at(case, ("metadata", "annotations", "kubectl.kubernetes.io/last-applied-configuration"), "{}") == (
        "<redacted>")
    assert show_at(case, ("metadata", "name"), "db") == '"db"'
    texts = secret_texts(case)
    assert redact('Invalid value: "hunter2-live" and aHVudGVyMi1saXZl, "tok", tokens', texts) == (
        'Invalid value: "<redacted>" and <redacted>, "<redacted>", tokens')
    config = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"a": "1"},
              "spec": {"containers": [{"env": [{"name": "K", "value": "v"}]}]}}
    plain = LiveCase(config, None, None, None)
    assert show_at(plain, ("data", "a"), "1") == '"1"'
    marked = plain._replace(sensitive=("ConfigMap:data", "*:spec.containers[*].env[*].value", "Secret:spec"))
    assert show_at(marked, ("data", "a"), "1") == "<redacted>"
    assert show_at(marked, ("spec", "containers", 0, "env", 0, "value"), "v") == "<redacted>"
    assert show_at(marked, ("spec", "containers", 0, "env", 0, "name"), "K") == '"K"'


class SecretConflict(Applier):
    """Answers a live Secret owned by another manager, and a 409 and a 422 quoting its value (the API's shapes)."""

    LIVE = {"apiVersion": "v1", "kind": "Secret", "metadata": {
        "name": "db", "namespace": "shop",
        "managedFields": [{"manager": "vault", "operation": "Apply", "apiVersion": "v1", "fieldsType": "FieldsV1",
                           "fieldsV1": {"f:data": {"f:password": {}}}}]},
        "data": {"password": "bGl2ZS1zZWNyZXQtdmFsdWU="}}  # live-secret-value

    def answer(self, request: Request) -> Response:
        if request.path == "/api/v1":
            return Response(200, {"resources": [{"name": "secrets", "kind": "Secret", "namespaced": True}]})
        if request.method == "GET" and request.path == "/api/v1/namespaces/shop/secrets/db":
            return Response(200, self.LIVE)
        if request.method == "PATCH" and dict(request.query).get("force") != "true":
            return Response(409, {"kind": "Status", "code": 409, "reason": "Conflict", "message": "Apply failed",
                                  "details": {"causes": [{"reason": "FieldManagerConflict", "field": ".data.password",
                                                          "message": 'conflict with "vault"'}]}})
        if request.method == "PATCH":
            return Response(422, {"kind": "Status", "code": 422, "reason": "Invalid", "message": "Secret is invalid",
                                  "details": {"causes": [{"reason": "FieldValueInvalid", "field": "data[password]",
                                                          "message": 'Invalid value: "live-secret-value": no, '
                                                                     'and "bWFuaWZlc3Qtc2VjcmV0" neither'}]}})
        return super().answer(request)


@pytest.mark.parametrize("options", [LiveOptions(), LiveOptions(read_only=True), LiveOptions(force_conflicts=True)])
def test_a_secrets_values_are_in_no_finding(options: LiveOptions) -> None:
    manifest = {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "db", "namespace": "shop"},
                "data": {"password": "bWFuaWZlc3Qtc2VjcmV0"}}  # manifest-secret
    obj = LiveObject(manifest, "f.yaml", 0, (), "Secret/shop/db", lambda path: ("f.yaml", 7, 3))
    result = check([obj], options, lambda f: live_settings(), SecretConflict())
    text = json.dumps([f._asdict() for f in result.findings]) + "\n".join(result.notices)
    assert result.findings and "<redacted>" in text
    assert not [s for s in ("bGl2ZS1zZWNyZXQtdmFsdWU=", "live-secret-value", "bWFuaWZlc3Qtc2VjcmV0", "manifest-secret")
                if s in text], text
