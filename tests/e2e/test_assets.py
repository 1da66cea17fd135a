"""Finding the binaries (no cluster needed): envtest's variable, the shared folder's checked decompression, etcd."""

from __future__ import annotations

import hashlib
import lzma
import os
from pathlib import Path

import pytest

from tests.e2e import assets
from tests.e2e.assets import AssetsMissing, find_assets

SCRIPT = b"#!/bin/sh\necho fake\n"


def executable(path: Path, data: bytes = SCRIPT) -> Path:
    path.write_bytes(data)
    path.chmod(0o755)
    return path


def shared_folder(folder: Path, digest: str | None = None) -> Path:
    folder.mkdir()
    (folder / "kube-apiserver.xz").write_bytes(lzma.compress(SCRIPT))
    (folder / "SHA256SUMS").write_text(f"{digest or hashlib.sha256(SCRIPT).hexdigest()}  kube-apiserver\n")
    return folder


def test_the_shared_folder_is_decompressed_once_into_the_cache_and_etcd_comes_from_etcd_variable(
        tmp_path: Path) -> None:
    shared = shared_folder(tmp_path / "kube")
    etcd = executable(tmp_path / "my-etcd")
    env = {"ETCD": str(etcd), "FIELDWARDEN_KUBE_CACHE": str(tmp_path / "cache"), "PATH": ""}
    found = find_assets(env=env, shared=shared)
    assert found.apiserver == tmp_path / "cache" / hashlib.sha256(SCRIPT).hexdigest() / "kube-apiserver"
    assert found.apiserver.read_bytes() == SCRIPT and os.access(found.apiserver, os.X_OK)
    assert found.etcd == etcd and found.controller_manager is None and found.kubectl is None
    written = found.apiserver.stat().st_mtime_ns
    assert find_assets(env=env, shared=shared).apiserver.stat().st_mtime_ns == written  # reused, not rewritten


def test_a_binary_that_does_not_match_its_checksum_is_refused_and_not_cached(tmp_path: Path) -> None:
    shared = shared_folder(tmp_path / "kube", digest="0" * 64)
    env = {"ETCD": str(executable(tmp_path / "etcd")), "FIELDWARDEN_KUBE_CACHE": str(tmp_path / "cache")}
    with pytest.raises(AssetsMissing, match="SHA256SUMS says 0+: the file is damaged"):
        find_assets(env=env, shared=shared)
    assert not list((tmp_path / "cache").rglob("kube-apiserver*"))


def test_without_etcd_the_message_says_how_to_get_it(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(assets, "ETCD_FALLBACK", str(tmp_path / "no-etcd"))
    env = {"PATH": str(tmp_path), "FIELDWARDEN_KUBE_CACHE": str(tmp_path / "cache")}
    with pytest.raises(AssetsMissing, match="there is no etcd.*apt-get install etcd-server"):
        find_assets(env=env, shared=shared_folder(tmp_path / "kube"))


def test_envtest_folders_are_used_as_they_are_and_fieldwarden_variable_wins(tmp_path: Path) -> None:
    envtest, ours = tmp_path / "envtest", tmp_path / "ours"
    for folder in (envtest, ours):
        folder.mkdir()
        for name in ("kube-apiserver", "etcd", "kubectl"):
            executable(folder / name)
    executable(ours / "kube-controller-manager")
    found = find_assets(env={"KUBEBUILDER_ASSETS": str(envtest)}, shared=tmp_path / "absent")
    assert (found.apiserver, found.etcd, found.kubectl, found.controller_manager) == (
        envtest / "kube-apiserver", envtest / "etcd", envtest / "kubectl", None)
    found = find_assets(env={"KUBEBUILDER_ASSETS": str(envtest), "FIELDWARDEN_KUBE_ASSETS": str(ours)},
                        shared=tmp_path / "absent")
    assert found.apiserver == ours / "kube-apiserver" and found.controller_manager == ours / "kube-controller-manager"


def test_missing_binaries_are_named_with_how_to_provide_them(tmp_path: Path) -> None:
    (tmp_path / "envtest").mkdir()
    executable(tmp_path / "envtest" / "kube-apiserver")
    with pytest.raises(AssetsMissing, match=r"has no executable etcd; set KUBEBUILDER_ASSETS"):
        find_assets(env={"KUBEBUILDER_ASSETS": str(tmp_path / "envtest")}, shared=tmp_path / "absent")
    with pytest.raises(AssetsMissing, match=r"KUBEBUILDER_ASSETS is not set and .*absent does not exist"):
        find_assets(env={}, shared=tmp_path / "absent")
