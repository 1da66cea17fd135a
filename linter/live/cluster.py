"""The edge of `fieldwarden lint --cluster`: HTTP requests to one cluster through the official client.

The `kubernetes` package, unchanged, loads the kubeconfig (`--kubeconfig`, else `KUBECONFIG` or
~/.kube/config; in a pod without one, its service account) with `--context`, authenticates and
speaks to the API server; `DynamicClient.request` carries each request, as it does for every
version of the client's transport. Nothing here decides anything: `Cluster.send` takes plain
requests and gives back status codes and decoded JSON (linter/live/checks.py plans and judges); each
request first passes paths.guard, which lets out no path that is not clean and nothing but
GETs and dry runs, whatever planned it.

Every request has a connect and a read timeout, at most `parallel` are in flight (a thread
pool over one pooled connection set), and API discovery is done by linter/live/checks.py with these
same requests, not with the DynamicClient's own discoverer (unbounded, and it writes a cache
file to the shared temporary folder). Only `fieldwarden lint --cluster` imports this module:
a plain lint never loads the client (tests/linter/test_imports.py).
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Sequence

from kubernetes import client, config
from kubernetes.dynamic import DynamicClient
from kubernetes.dynamic.exceptions import DynamicApiError

from ... import __version__
from .checks import LiveError, Request, Response
from .paths import guard

CONNECT_TIMEOUT = 5.0


class ClusterError(LiveError):
    """No cluster to talk to: a kubeconfig that does not load, an API server out of reach. Exit code 2."""


class _NoDiscovery:
    """Stands in for DynamicClient's discoverer: this module only sends requests (see the docstring)."""

    def __init__(self, dynamic: Any, cache_file: Any) -> None:
        pass


def _configuration(kubeconfig: str | None, context: str | None) -> Any:
    configuration = client.Configuration()
    try:
        config.load_kube_config(config_file=kubeconfig, context=context, client_configuration=configuration,
                                persist_config=False)
    except config.ConfigException as error:
        if kubeconfig is not None or context is not None:
            raise ClusterError(f"--cluster: the kubeconfig does not load: {error}") from None
        try:
            config.load_incluster_config(client_configuration=configuration)
        except config.ConfigException:
            raise ClusterError("--cluster needs a cluster: no kubeconfig ($KUBECONFIG, ~/.kube/config or "
                               f"--kubeconfig: {error}) and no in-cluster service account") from None
    except Exception as error:  # the client's loaders raise what they meet: YAML, files, keys
        raise ClusterError(f"--cluster: the kubeconfig does not load: {type(error).__name__}: {error}") from None
    return configuration


class Cluster:
    """One cluster, as the kubeconfig and context name it."""

    def __init__(self, kubeconfig: str | None, context: str | None, timeout: float = 30.0, parallel: int = 16) -> None:
        configuration = _configuration(kubeconfig, context)
        configuration.connection_pool_maxsize = max(1, parallel)
        configuration.retries = 1  # one retry of a dropped connection; timeouts are not retried forever
        self.server = str(configuration.host)
        self.timeout = (min(CONNECT_TIMEOUT, timeout), timeout)
        self.parallel = max(1, parallel)
        api_client = client.ApiClient(configuration)
        api_client.user_agent = f"fieldwarden/{__version__} (lint --cluster)"
        self._dynamic = DynamicClient(api_client, discoverer=_NoDiscovery)
        self._api_client = api_client
        self._pool: ThreadPoolExecutor | None = None

    def send(self, requests: Sequence[Request]) -> list[Response]:
        """The responses, in order; ClusterError when the API server cannot be reached."""
        if len(requests) <= 1 or self.parallel == 1:
            return [self._one(request) for request in requests]
        if self._pool is None:
            self._pool = ThreadPoolExecutor(max_workers=self.parallel, thread_name_prefix="fieldwarden-cluster")
        return list(self._pool.map(self._one, requests))

    def _one(self, request: Request) -> Response:
        guard(request)  # the one gate: a clean path, and no write (anything but GET carries dryRun=All)
        try:
            reply = self._dynamic.request(
                request.method, request.path, body=request.body, query_params=list(request.query),
                content_type=request.content_type, header_params={"Accept": "application/json"},
                serialize=False, _request_timeout=self.timeout,
            )
            return Response(int(reply.status), _decode(reply.data))
        except DynamicApiError as error:
            return Response(int(error.status or 0), _decode(error.body))
        except client.ApiException as error:
            return Response(int(error.status or 0), _decode(error.body))
        except Exception as error:  # urllib3: refused, reset, timed out, TLS; the client wraps none of them
            raise ClusterError(f"--cluster: cannot reach the API server at {self.server}: {_reason(error)}") from None

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        self._api_client.close()


def _decode(data: Any) -> Any:
    if isinstance(data, bytes):
        data = data.decode("utf-8", "replace")
    if not data:
        return None
    try:
        return json.loads(data)
    except ValueError:
        return data


def _reason(error: Exception) -> str:
    """The innermost cause of a transport error, in a line."""
    reason = getattr(error, "reason", None)
    text = str(reason if reason is not None else error) or type(error).__name__
    return f"{type(error).__name__}: {text}".splitlines()[0][:300]
