"""A kubeconfig pointing at the Kubernetes API test fake, for the commands' tests and Helm's `lookup`."""

from __future__ import annotations

from pathlib import Path


def kubeconfig_text(server: str, namespace: str = "shop", ca: Path | None = None) -> str:
    authority = f", certificate-authority: '{ca}'" if ca is not None else ""
    return (
        "apiVersion: v1\nkind: Config\ncurrent-context: fake\n"
        f"clusters: [{{name: fake, cluster: {{server: '{server}'{authority}}}}}]\n"
        "users: [{name: fake, user: {token: not-checked}}]\n"
        f"contexts: [{{name: fake, context: {{cluster: fake, user: fake, namespace: {namespace}}}}}]\n"
    )


def write_kubeconfig(path: Path, server: str, namespace: str = "shop", ca: Path | None = None) -> Path:
    path.write_text(kubeconfig_text(server, namespace, ca))
    return path
