"""TEST FAKE: just enough of a Kubernetes API server for Helm's `lookup` of a Secret.

Helm's `lookup "v1" "Secret" NS NAME` asks discovery for the group version (`GET /api/v1`)
and then `GET /api/v1/namespaces/NS/secrets/NAME`. This serves those two over plain HTTP
on 127.0.0.1, from a dict of Secrets the test fills in (404 with a `Status` otherwise), so
the chart can be rendered as `helm upgrade` renders it over an installed release.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

DISCOVERY = {
    "kind": "APIResourceList",
    "apiVersion": "v1",
    "groupVersion": "v1",
    "resources": [{"name": "secrets", "singularName": "secret", "namespaced": True, "kind": "Secret",
                   "verbs": ["create", "delete", "get", "list", "patch", "update", "watch"]}],
}


class SecretsApi:
    """`with SecretsApi() as api:` serves `api.secrets[(namespace, name)]`; `api.kubeconfig` points at it."""

    def __init__(self) -> None:
        self.secrets: dict[tuple[str, str], dict[str, Any]] = {}
        self.requests: list[str] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="secrets-api", daemon=True)

    def __enter__(self) -> SecretsApi:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    @property
    def kubeconfig(self) -> str:
        port = self._server.server_address[1]
        return json.dumps({
            "apiVersion": "v1", "kind": "Config", "current-context": "test",
            "clusters": [{"name": "test", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
            "users": [{"name": "test", "user": {"token": "test"}}],
            "contexts": [{"name": "test", "context": {"cluster": "test", "user": "test"}}],
        })

    def store(self, secret: dict[str, Any]) -> None:
        """Keep a Secret as the API server would after `helm install` applied it."""
        meta = secret["metadata"]
        self.secrets[(meta["namespace"], meta["name"])] = secret

    def answer(self, path: str) -> tuple[int, dict[str, Any]]:
        self.requests.append(path)
        path = path.split("?", 1)[0]
        if path == "/api/v1":
            return 200, DISCOVERY
        parts = path.strip("/").split("/")
        if len(parts) == 6 and parts[:3] == ["api", "v1", "namespaces"] and parts[4] == "secrets":
            secret = self.secrets.get((parts[3], parts[5]))
            if secret is not None:
                return 200, secret
            return 404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404,
                         "message": f'secrets "{parts[5]}" not found',
                         "details": {"name": parts[5], "kind": "secrets"}}
        return 404, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "NotFound", "code": 404,
                     "message": "the server could not find the requested resource"}


def _handler(api: SecretsApi) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            code, body = api.answer(self.path)
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    return Handler
