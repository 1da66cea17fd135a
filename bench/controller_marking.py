"""How fast the readiness-gate controller puts new gated pods in service, against a floor measured in the same run.

    python bench/controller_marking.py [--pods N] [--workers W]

Runs the Kubernetes API test fake (tests/webhook/fake_apiserver.py, kubelet off: pods are
created already Running, so only the controller's work is timed) and:

1. the floor: the same burst of N pods created, then one client thread reading each pod and
   sending its condition patch, one after another, through the same `kubernetes` client, while a bare watch of the same
   pods decodes and drops the events (no cache, no queue, no leader check);
2. the controller (`GateController`, W worker threads, watching), with N gated pods created
   in one burst after it has synced: the time until every pod's gate condition is True,
   and for each pod the delay from its creation to its mark (p50 / p99).

Prints pods/s for both and their ratio (controller / floor): the controller's own overhead.
The fake is pure Python and shares the machine's cores with the controller: the figures
are relative, not what a real API server would allow.
"""

from __future__ import annotations

import argparse
import functools
import logging
import statistics
import sys
import threading
import time
from pathlib import Path
from typing import Sequence

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pods", type=int, default=300)
    parser.add_argument("--workers", type=int, default=2)
    args = parser.parse_args(argv)

    from kubernetes import client

    from fieldwarden.webhook.gate import condition as gate
    from fieldwarden.webhook.gate.controller import GateController
    from fieldwarden.webhook.kube.api import Pods
    from fieldwarden.webhook.kube.reflector import Backoff, Reflector
    from tests.webhook.fake_apiserver import FakeApiServer
    from tests.webhook.pods import GATE, LABEL_SELECTOR, gated_pod, running

    def pod(name: str) -> dict:
        started = running(gated_pod(name))
        del started["metadata"]["resourceVersion"]
        return started

    with FakeApiServer(kubelet=False) as api:
        api_client = client.ApiClient(client.Configuration(host=api.url))
        pods = Pods(api_client)
        stopping = threading.Event()
        watcher = Reflector("floor: pods", functools.partial(client.CoreV1Api(api_client).list_pod_for_all_namespaces,
                                                             label_selector=LABEL_SELECTOR),
                            on_replace=lambda items, version: None, on_event=lambda kind, obj: None, stopping=stopping)
        watching = threading.Thread(target=watcher.run, daemon=True)
        watching.start()  # the same watch traffic as the controller's, decoded and dropped
        began = time.perf_counter()
        for n in range(args.pods):
            api.add_pod(pod(f"floor-{n}"), start=False)
        for n in range(args.pods):
            current = pods.get("shop", f"floor-{n}")
            pods.patch_status("shop", f"floor-{n}", gate.condition_patch(
                GATE, gate.TRUE, gate.REASON_NEW_POD, "floor", current["metadata"]["resourceVersion"]))
        floor = args.pods / (time.perf_counter() - began)
        stopping.set()
        watcher.cut()
        watching.join(5)

    with FakeApiServer(kubelet=False) as api:
        controller = GateController(
            client.ApiClient(client.Configuration(host=api.url)), condition_type=GATE, label_selector=LABEL_SELECTOR,
            workers=args.workers, backoff=Backoff(initial=0.05, cap=0.5),
        )
        controller.start()
        deadline = time.monotonic() + 30
        while not controller.synced():
            assert time.monotonic() < deadline, "the controller did not sync"
            time.sleep(0.01)
        created: dict[str, float] = {}
        marked: dict[str, float] = {}

        class Marks(logging.Handler):  # the controller logs each mark: note when (cheaper than polling the fake)
            def emit(self, record: logging.LogRecord) -> None:
                if record.msg.startswith("controller: set %s True"):
                    marked[str(record.args[2])] = time.perf_counter()  # type: ignore[index]

        marks = Marks()
        gate_log = logging.getLogger("fieldwarden.webhook.gate.controller")
        gate_log.addHandler(marks)
        gate_log.setLevel(logging.INFO)
        began = time.perf_counter()
        for n in range(args.pods):
            name = f"web-{n}"
            created[name] = time.perf_counter()
            api.add_pod(pod(name), start=False)
        while controller.metrics.marked < args.pods and time.monotonic() < deadline + 60:
            time.sleep(0.005)
        controller.stop()
        gate_log.removeHandler(marks)
        if len(marked) < args.pods:
            print(f"only {len(marked)} of {args.pods} pods were marked", file=sys.stderr)
            return 1
        total = max(marked.values()) - began
        delays = sorted((marked[name] - created[name]) * 1000 for name in created)

    rate = args.pods / total
    p99 = delays[min(len(delays) - 1, int(0.99 * len(delays)))]
    print(f"{'floor: serial GET + status PATCH, a bare watch':<48} {floor:8,.0f} pods/s")
    print(f"{'controller: a burst of ' + str(args.pods) + ' new pods, ' + str(args.workers) + ' workers':<48} {rate:8,.0f} pods/s")
    print(f"{'ratio controller / floor':<48} {rate / floor:8.2f}")
    print(f"{'creation -> gate True: p50 / p99':<48} {statistics.median(delays):8.1f} / {p99:.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
