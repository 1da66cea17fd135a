"""Go tests name their test data by paths inside their package folder (linter/units/gotests.py).

The shape is argoproj/argo-cd's at 37ee0097cf (tests/fixtures/repos/argocd-go-tests):
`reposerver/repository/repository_test.go` names `"./testdata2/out-of-bounds-chart"` and
`"../../manifests/base"`, `server/notification/notification_test.go` names
`"../../notifications_catalog/install.yaml"`.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from fieldwarden.linter.units.gotests import data_among, literals, named, read
from fieldwarden.linter.units.testruns import read as read_tests
from tests.helpers import FIXTURES

ARGOCD = FIXTURES / "repos" / "argocd-go-tests"
CHART = "reposerver/repository/testdata2/out-of-bounds-chart"
MANIFESTS = sorted(p.relative_to(ARGOCD).as_posix() for p in ARGOCD.rglob("*.yaml"))
GO_FILES = sorted(p.relative_to(ARGOCD).as_posix() for p in ARGOCD.rglob("*.go"))


def test_only_literals_that_look_like_relative_paths() -> None:
    source = 'x := "./testdata2/chart"\ny := `fixtures/a.yaml`\nz := "config"\nu := "https://x/y"\nv := "/etc/k.yaml"\nw := "a b/c"'
    assert list(literals(source)) == ["./testdata2/chart", "fixtures/a.yaml"]


def test_paths_that_leave_the_package_folder_or_name_it_are_not_its_data() -> None:
    source = '"./testdata2/chart" "../../manifests/base" "./" "../sibling/x.yaml" "sub/../../up/a.yaml"'
    assert named("reposerver/repository", source) == {"reposerver/repository/testdata2/chart"}
    assert named("", '"./deploy/app.yaml" "../out/x.yaml"') == {"deploy/app.yaml"}


def test_a_named_folder_or_file_with_go_code_is_a_package_not_data() -> None:
    manifests = ["pkg/data/a.yaml", "pkg/sub/b.yaml", "pkg/c.yaml", "pkg/data/deep/d.yaml"]
    paths = {"pkg/data", "pkg/sub", "pkg/c.yaml"}
    go_files = ["pkg/pkg.go", "pkg/pkg_test.go", "pkg/sub/sub.go"]
    assert data_among(manifests, paths, go_files) == {"pkg/data/a.yaml", "pkg/data/deep/d.yaml"}


def test_argocd_test_data_is_found_and_its_deliverables_are_not() -> None:
    found = read(ARGOCD, MANIFESTS, GO_FILES)
    assert found == {f"{CHART}/Chart.yaml", f"{CHART}/templates/deployment.yaml"}
    assert read(ARGOCD, MANIFESTS, None) == found  # outside git: the folders are scanned instead
    assert read_tests(ARGOCD, MANIFESTS).fixtures >= found  # the test manifests' fixtures include them


def test_a_test_file_too_large_is_not_read(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    shutil.copytree(ARGOCD, root)
    test = root / "reposerver/repository/repository_test.go"
    test.write_text(test.read_text() + "// " + "x" * (1 << 20) + "\n")
    assert read(root, MANIFESTS, GO_FILES) == frozenset()
