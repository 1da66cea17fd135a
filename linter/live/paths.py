"""Request paths of `lint --cluster`, and the one gate every request passes before it is sent.

Names and namespaces come from the linted tree, which may be an attacker's pull request. Each one
is checked as the API server checks it (a namespace is a DNS-1123 label; an object's name a
DNS-1123 subdomain, or for the RBAC kinds any path segment: not `.` or `..`, no `/` or `%`) and
then percent-encoded, as client-go's request builder does, never formatted into a path as it is.
`guard` is the last defence: a request that is not a GET must carry `dryRun=All`, and no path
may hold a dot segment, a query, a fragment or an encoded slash or dot, whoever built it.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING
from urllib.parse import quote

if TYPE_CHECKING:
    from .checks import Request

LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
LABEL_MAX = 63
SUBDOMAIN_MAX = 253
# kinds whose names the API server checks only as path segments (rbac's ValidateRBACName, and the
# kinds named after users or levels); every other name is held to a DNS-1123 subdomain, which the
# API server requires of most kinds and of every custom resource
PATH_SEGMENT_KINDS = frozenset(
    [("rbac.authorization.k8s.io", kind) for kind in ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")]
    + [("certificates.k8s.io", "CertificateSigningRequest")]
    + [("flowcontrol.apiserver.k8s.io", kind) for kind in ("FlowSchema", "PriorityLevelConfiguration")])
_CLEAN_PATH = re.compile(r"(/[A-Za-z0-9._~:@%-]+)+/?\Z")
_SHOWN = 80


class LiveError(Exception):
    """The live checks cannot run (no cluster, refused credentials, no rights): exit code 2 (checks.py re-exports it)."""


class PathError(LiveError):
    """A name the API server would refuse, or a request the gate does not let out."""


def label_problem(text: str) -> str | None:
    """Why `text` is not a DNS-1123 label (a namespace), or None."""
    if not text or len(text) > LABEL_MAX or not LABEL.match(text):
        return (f"{shown(text)} is not a valid DNS-1123 label (at most {LABEL_MAX} characters: lowercase letters, "
                "digits and '-', starting and ending with a letter or digit)")
    return None


def subdomain_problem(text: str) -> str | None:
    """Why `text` is not a DNS-1123 subdomain (most objects' names), or None."""
    if not text or len(text) > SUBDOMAIN_MAX or not all(LABEL.match(part) for part in text.split(".")):
        return (f"{shown(text)} is not a valid DNS-1123 subdomain (at most {SUBDOMAIN_MAX} characters: lowercase "
                "letters, digits, '-' and '.', each part starting and ending with a letter or digit)")
    return None


def segment_problem(text: str) -> str | None:
    """Why `text` cannot be one segment of a request path (the API server's path-segment rule), or None."""
    if text in ("", ".", ".."):
        return f"{shown(text)} cannot be a name"
    if "/" in text or "%" in text:
        return f"{shown(text)} may not contain '/' or '%'"
    if any(ord(c) < 0x20 or c == "\x7f" for c in text):
        return f"{shown(text)} may not contain control characters"
    return None


def name_problem(group: str, kind: str, name: str) -> str | None:
    """Why the API server would refuse `name` for an object of this kind, or None."""
    if (group, kind) in PATH_SEGMENT_KINDS:
        return segment_problem(name)
    if (group, kind) == ("", "Namespace"):
        return label_problem(name)
    return subdomain_problem(name)


def shown(text: str) -> str:
    """A name for a message: quoted and escaped, shortened."""
    import json

    quoted = json.dumps(text)
    return quoted if len(quoted) <= _SHOWN else quoted[:_SHOWN - 4] + '..."'


def segment(text: str) -> str:
    """One path segment, checked and percent-encoded (PathError when it cannot be one)."""
    problem = segment_problem(text)
    if problem is not None:
        raise PathError(f"--cluster: refusing a request path: {problem}")
    return quote(text, safe=":@")


def group_version_path(api_version: str) -> str:
    """`/api/v1` or `/apis/GROUP/VERSION` (PathError for an apiVersion that is neither)."""
    group, _, version = api_version.rpartition("/")
    problem = label_problem(version) or (subdomain_problem(group) if group else None)
    if problem is not None:
        raise PathError(f"--cluster: refusing apiVersion {shown(api_version)}: {problem}")
    return f"/apis/{group}/{version}" if group else f"/api/{version}"


def collection_path(base: str, plural: str, namespace: str) -> str:
    """The path of a resource's collection, in a namespace ('' for a cluster-scoped one)."""
    if not namespace:
        return f"{base}/{segment(plural)}"
    problem = label_problem(namespace)
    if problem is not None:
        raise PathError(f"--cluster: refusing namespace {problem}")
    return f"{base}/namespaces/{segment(namespace)}/{segment(plural)}"


def item_path(base: str, plural: str, namespace: str, name: str) -> str:
    """The path of one object."""
    return f"{collection_path(base, plural, namespace)}/{segment(name)}"


def guard(request: Request) -> None:
    """PathError unless the request may go out: a clean path, and a dry run for anything but GET."""
    path = request.path
    if not _CLEAN_PATH.match(path) or any(part in (".", "..") for part in path.split("/")) or \
            re.search(r"%(2[eEfF]|5[cC])", path):
        raise PathError(f"--cluster: refusing to send {request.method} {shown(path)}: not a clean request path")
    if request.method != "GET" and ("dryRun", "All") not in tuple(request.query):
        raise PathError(f"--cluster: refusing to send {request.method} {shown(path)} without dryRun=All: the live "
                        "checks only read and dry-run")
