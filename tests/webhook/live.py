"""A real `fieldwarden serve` (gunicorn, TLS) on 127.0.0.1, and a keep-alive HTTPS client for it.

Every wait is bounded; `stop()` always ends the server (SIGTERM, then SIGKILL).
"""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, NamedTuple, Sequence

START_TIMEOUT = 30.0
STOP_TIMEOUT = 30.0


class Reply(NamedTuple):
    status: int
    headers: dict[str, str]
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


class Client:
    """One HTTPS connection to the server, verifying its certificate with `ca`, reused across requests."""

    def __init__(self, port: int, ca: Path, timeout: float = 10.0) -> None:
        context = ssl.create_default_context(cafile=str(ca))
        self.connection = http.client.HTTPSConnection("127.0.0.1", port, context=context, timeout=timeout)

    def request(self, method: str, path: str, body: bytes | None = None,
                content_type: str | None = "application/json") -> Reply:
        headers = {"Content-Type": content_type} if content_type is not None and body is not None else {}
        self.connection.request(method, path, body=body, headers=headers)
        response = self.connection.getresponse()
        data = response.read()
        return Reply(response.status, {k.lower(): v for k, v in response.getheaders()}, data)

    def post(self, path: str, review: Any) -> Reply:
        return self.request("POST", path, json.dumps(review).encode())

    @property
    def socket(self) -> socket.socket | None:
        return self.connection.sock  # type: ignore[no-any-return]

    def close(self) -> None:
        self.connection.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def clean_environment(home: Path) -> dict[str, str]:
    """The test's environment without any cluster in it (no kubeconfig, not in a pod)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("KUBECONFIG", "KUBERNETES_SERVICE_HOST", "XDG_STATE_HOME") and not k.startswith("FIELDWARDEN_")}
    env["HOME"] = str(home)
    return env


class Server:
    """`python -m fieldwarden serve ARGS --bind 127.0.0.1:PORT`, started and waited for."""

    def __init__(self, args: Sequence[str], folder: Path, env: dict[str, str] | None = None) -> None:
        self.folder = folder
        self.args = list(args)
        self.env = env if env is not None else clean_environment(folder)
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None
        for _ in range(3):  # another process may take the free port before gunicorn binds it
            self.port = free_port()
            self._spawn()
            if self._wait_until_healthy():
                return
            if "in use" not in self.stderr():
                break
        output = self.stop_and_output()
        raise RuntimeError(f"the server did not start: {output}")

    def _spawn(self) -> None:
        self.stdout_path = self.folder / f"server-{self.port}.out"
        self.stderr_path = self.folder / f"server-{self.port}.err"
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "fieldwarden", "serve", "--bind", f"127.0.0.1:{self.port}", *self.args],
                cwd=self.folder, env=self.env, stdout=out, stderr=err, stdin=subprocess.DEVNULL,
            )

    def _wait_until_healthy(self) -> bool:
        assert self.process is not None
        deadline = time.monotonic() + START_TIMEOUT
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                return False
            if self.ca.exists():
                try:
                    client = self.client(timeout=2)
                    try:
                        if client.request("GET", "/healthz").status == 200:
                            return True
                    finally:
                        client.close()
                except (OSError, http.client.HTTPException, ssl.SSLError):
                    pass
            time.sleep(0.1)
        return False

    @property
    def cert_dir(self) -> Path:
        return Path(self.args[self.args.index("--cert-dir") + 1]) if "--cert-dir" in self.args else \
            self.folder / ".local" / "state" / "fieldwarden" / "tls"

    @property
    def ca(self) -> Path:
        return self.cert_dir / "ca.crt"

    def client(self, timeout: float = 10.0) -> Client:
        return Client(self.port, self.ca, timeout)

    def stdout(self) -> str:
        return self.stdout_path.read_text(errors="replace")

    def stderr(self) -> str:
        return self.stderr_path.read_text(errors="replace")

    def signal(self, number: int) -> None:
        assert self.process is not None
        self.process.send_signal(number)

    def wait(self, timeout: float = STOP_TIMEOUT) -> int:
        assert self.process is not None
        return self.process.wait(timeout)

    def stop(self) -> int | None:
        """SIGTERM, wait, SIGKILL if it has to be; the exit status."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(STOP_TIMEOUT)
        return self.process.returncode

    def stop_and_output(self) -> str:
        self.stop()
        return f"exit {self.process.returncode if self.process else None}\n{self.stdout()}\n{self.stderr()}"
