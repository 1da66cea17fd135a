"""`fieldwarden set-image`: the in-place image update of `inplace`, from the command line.

    fieldwarden set-image [-n NS] POD CONTAINER=IMAGE [CONTAINER=IMAGE ...]
    fieldwarden set-image [-n NS] -l SELECTOR [--max-unavailable N|P%] CONTAINER=IMAGE ...

Exit codes: 0 every pod updated (or had nothing to change), 1 an update failed or timed
out (its gate stays False), 2 bad arguments or no cluster.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ...policies.config import ConfigError, load_settings

FIELD_MANAGER = "fieldwarden-set-image"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of `fieldwarden set-image`."""
    parser.add_argument("targets", nargs="+", metavar="POD | CONTAINER=IMAGE",
                        help="the pod (unless -l is given), then one or more CONTAINER=IMAGE")
    parser.add_argument("-n", "--namespace", help="default: the context's namespace, else default")
    parser.add_argument("-l", "--selector", metavar="SELECTOR", help="update every pod this label selector picks")
    parser.add_argument("--max-unavailable", default="1", metavar="N|P%",
                        help="with -l: pods updated (out of service) at a time (default %(default)s)")
    parser.add_argument("--grace-period", type=float, default=5.0, metavar="S",
                        help="seconds between draining the pod and changing its image (default %(default)s)")
    parser.add_argument("--timeout", type=float, default=300.0, metavar="S",
                        help="seconds per pod for the whole update (default %(default)s)")
    parser.add_argument("--config", metavar="FILE", type=Path,
                        help="policy configuration: FW402's condition-type (the webhook's file)")
    parser.add_argument("--kubeconfig", metavar="FILE")
    parser.add_argument("--context", metavar="NAME")


def split_targets(targets: list[str], with_selector: bool) -> tuple[str | None, dict[str, str]]:
    """(pod name or None, {container: image}); raises ValueError worded for the user."""
    words = list(targets)
    pod = None
    if not with_selector:
        if "=" in words[0]:
            raise ValueError("name the pod first (or select pods with -l), then CONTAINER=IMAGE")
        pod = words.pop(0)
    if not words:
        raise ValueError("give at least one CONTAINER=IMAGE")
    images: dict[str, str] = {}
    for word in words:
        container, sep, image = word.partition("=")
        if not sep or not container or not image:
            raise ValueError(f"{word!r} is not CONTAINER=IMAGE")
        if container in images:
            raise ValueError(f"container {container} is named twice")
        images[container] = image
    return pod, images


def run(args: argparse.Namespace) -> int:
    from .process import gate_settings
    from .inplace import Options, UpdateFailed, parse_max_unavailable, update_pod, update_pods
    from ..kube.api import NoCluster, Pods, connect, current_namespace

    try:
        pod, images = split_targets(args.targets, args.selector is not None)
        if args.selector is not None:
            parse_max_unavailable(args.max_unavailable, 1)  # (its syntax, before touching anything)
        if args.grace_period < 0 or args.timeout <= 0:
            raise ValueError("--grace-period must be >= 0 and --timeout > 0")
        condition_type, _ = gate_settings(load_settings(args.config))
        api_client = connect(args.kubeconfig, args.context, "set-image", program="set-image")
    except (ValueError, ConfigError, NoCluster) as exc:
        print(f"fieldwarden: {exc}", file=sys.stderr)
        return 2
    namespace = args.namespace or current_namespace(args.kubeconfig, args.context)
    options = Options(condition_type, args.grace_period, args.timeout)
    pods = Pods(api_client, field_manager=FIELD_MANAGER)

    def say(line: str) -> None:
        print(f"fieldwarden: {line}", flush=True)

    try:
        if pod is not None:
            update_pod(pods, namespace, pod, images, options, say)
            return 0
        result = update_pods(pods, namespace, args.selector, images, args.max_unavailable, options, say)
    except UpdateFailed as exc:
        print(f"fieldwarden: FAILED {exc}", file=sys.stderr)
        return 1
    say(f"{len(result.updated)} updated, {len(result.failed)} failed, {len(result.not_started)} not started")
    for name in result.not_started:
        say(f"not started (after a failure): {name}")
    return 1 if result.failed else 0
