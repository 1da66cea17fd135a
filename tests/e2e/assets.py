"""Where kube-apiserver, etcd and kube-controller-manager come from, found the way envtest finds them.

1. `$FIELDWARDEN_KUBE_ASSETS`, else `$KUBEBUILDER_ASSETS` (controller-runtime's name; `setup-envtest`
   fills such a folder): a folder holding `kube-apiserver` and `etcd`, perhaps `kube-controller-manager`
   and `kubectl` too;
2. else `../shared/kube` beside the repository: `kube-apiserver.xz` (and `kube-controller-manager.xz`),
   decompressed once with lzma into a cache and checked against its `SHA256SUMS`; etcd from `$ETCD`,
   `PATH` or `/usr/bin/etcd`.

The cache is `$FIELDWARDEN_KUBE_CACHE`, else `$XDG_CACHE_HOME/fieldwarden-kube` (`~/.cache/...`), one
folder per checksum: the layout `../shared/kube/start-apiserver` uses, so both share it.
"""

from __future__ import annotations

import hashlib
import lzma
import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping

REPO = Path(__file__).resolve().parents[2]
SHARED_KUBE = REPO.parent / "shared" / "kube"
ASSET_VARIABLES = ("FIELDWARDEN_KUBE_ASSETS", "KUBEBUILDER_ASSETS")
HOW_TO = ("set KUBEBUILDER_ASSETS to a folder with kube-apiserver and etcd (e.g. "
          "`setup-envtest use -p path 1.32.x`), or put the shared kube folder at ../shared/kube beside the "
          "repository and install etcd (`apt-get install etcd-server`, or set $ETCD)")
CHUNK = 1 << 20
ETCD_FALLBACK = "/usr/bin/etcd"  # Debian's etcd-server


class AssetsMissing(Exception):
    """The binaries are not there; the message says what is missing and how to provide them."""


@dataclass(frozen=True)
class Assets:
    apiserver: Path
    etcd: Path
    controller_manager: Path | None  # None: not available (envtest's folders have none)
    kubectl: Path | None  # a kubectl shipped beside the binaries (envtest's folders have one)
    source: str  # where they were found, for messages


def find_assets(controller_manager: bool = True, env: Mapping[str, str] | None = None,
                shared: Path = SHARED_KUBE) -> Assets:
    """The binaries; `controller_manager=False` does not look for (or decompress) kube-controller-manager."""
    env = os.environ if env is None else env
    for variable in ASSET_VARIABLES:
        if env.get(variable):
            return _from_folder(Path(env[variable]), f"${variable}", controller_manager)
    if (shared / "kube-apiserver.xz").is_file():
        return _from_shared(shared, env, controller_manager)
    raise AssetsMissing(f"no kube-apiserver: KUBEBUILDER_ASSETS is not set and {shared} does not exist; {HOW_TO}")


def _executable(path: Path) -> bool:
    return path.is_file() and os.access(path, os.X_OK)


def _from_folder(folder: Path, source: str, controller_manager: bool) -> Assets:
    found = {name: folder / name for name in ("kube-apiserver", "etcd", "kube-controller-manager", "kubectl")}
    missing = [name for name in ("kube-apiserver", "etcd") if not _executable(found[name])]
    if missing:
        raise AssetsMissing(f"{source} = {folder} has no executable {' or '.join(missing)}; {HOW_TO}")
    manager = found["kube-controller-manager"]
    return Assets(found["kube-apiserver"], found["etcd"],
                  manager if controller_manager and _executable(manager) else None,
                  found["kubectl"] if _executable(found["kubectl"]) else None, f"{source} ({folder})")


def _from_shared(shared: Path, env: Mapping[str, str], controller_manager: bool) -> Assets:
    etcd = find_etcd(env)
    if etcd is None:
        raise AssetsMissing(f"{shared} has kube-apiserver but there is no etcd ($ETCD, PATH, /usr/bin/etcd); {HOW_TO}")
    sums = read_sums(shared / "SHA256SUMS")
    cache = cache_root(env)
    apiserver = unpack(shared / "kube-apiserver.xz", sums, cache)
    manager = None
    if controller_manager and (shared / "kube-controller-manager.xz").is_file():
        manager = unpack(shared / "kube-controller-manager.xz", sums, cache)
    return Assets(apiserver, etcd, manager, None, str(shared))


def find_etcd(env: Mapping[str, str]) -> Path | None:
    for candidate in (env.get("ETCD"), shutil.which("etcd", path=env.get("PATH")), ETCD_FALLBACK):
        if candidate and _executable(Path(candidate)):
            return Path(candidate)
    return None


def cache_root(env: Mapping[str, str]) -> Path:
    if env.get("FIELDWARDEN_KUBE_CACHE"):
        return Path(env["FIELDWARDEN_KUBE_CACHE"])
    base = env.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "fieldwarden-kube"


def read_sums(path: Path) -> dict[str, str]:
    """`sha256  name` lines (sha256sum's format) as {name: digest}."""
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise AssetsMissing(f"cannot read {path}: {exc.strerror or exc}") from None
    sums = {}
    for line in lines:
        parts = line.split()
        if len(parts) == 2:
            sums[parts[1].lstrip("*")] = parts[0].lower()
    return sums


def unpack(compressed: Path, sums: Mapping[str, str], cache: Path) -> Path:
    """`compressed` (NAME.xz) decompressed into `cache/<sha256>/NAME`, once; the digest checked first."""
    name = compressed.name.removesuffix(".xz")
    if name not in sums:
        raise AssetsMissing(f"{compressed.parent / 'SHA256SUMS'} lists no checksum for {name}")
    digest = sums[name]
    target = cache / digest / name
    if _executable(target):
        return target  # only ever renamed into place after its digest matched
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        handle, partial = tempfile.mkstemp(dir=target.parent, prefix=f".{name}.")
    except OSError as exc:
        raise AssetsMissing(f"cannot write the binaries' cache {target.parent}: {exc.strerror or exc} "
                            "(set FIELDWARDEN_KUBE_CACHE to a writable folder)") from None
    try:
        hasher = hashlib.sha256()
        with lzma.open(compressed) as source, os.fdopen(handle, "wb") as out:
            while chunk := source.read(CHUNK):
                hasher.update(chunk)
                out.write(chunk)
        if hasher.hexdigest() != digest:
            raise AssetsMissing(f"{compressed} decompresses to sha256 {hasher.hexdigest()}, "
                                f"SHA256SUMS says {digest}: the file is damaged")
        os.chmod(partial, 0o755)
        os.replace(partial, target)
    except (OSError, lzma.LZMAError) as exc:
        raise AssetsMissing(f"cannot decompress {compressed}: {exc}") from None
    finally:
        if os.path.exists(partial):
            os.unlink(partial)
    return target
