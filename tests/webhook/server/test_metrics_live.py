"""/metrics of a real `fieldwarden serve` (gunicorn, 2 workers, TLS on 127.0.0.1): one view of the pod.

A scrape reaches one worker (a new connection each time, as Prometheus makes them); the
counters it shows must be the whole pod's, so they never go down from one scrape to the
next, and they add up to the requests sent. The workers' metric files live in a private
folder the server makes under $TMPDIR, which it empties of earlier servers' leftovers.
"""

from __future__ import annotations

import contextlib
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest

from tests.webhook.exposition import Labels, samples
from tests.webhook.live import Client, Server, clean_environment
from tests.webhook.samples import FIXTURES, edit, review

REQUESTS = "fieldwarden_admission_requests_total"
COUNTING = ("_total", "_count", "_sum", "_bucket")  # samples that must never go down


def server_args(folder: Path) -> list[str]:
    (folder / "hpa.yaml").write_text((FIXTURES / "hpa-web.yaml").read_text())
    return ["--cert-dir", str(folder / "tls"), "--inventory", str(folder / "hpa.yaml"), "--workers", "2"]


def scrape(server: Server) -> dict[tuple[str, Labels], float]:
    client = server.client()  # a new connection: any worker may take it
    try:
        reply = client.request("GET", "/metrics")
    finally:
        client.close()
    assert reply.status == 200 and reply.headers["content-type"].startswith("text/plain; version=0.0.4")
    return samples(reply.body)


def total(found: dict[tuple[str, Labels], float], name: str) -> float:
    return sum(number for (sample, _), number in found.items() if sample == name)


class Scrapes:
    """Every scrape so far; each must show every counting sample at least as high as the one before."""

    def __init__(self, server: Server) -> None:
        self.server = server
        self.last: dict[tuple[str, Labels], float] = {}
        self.count = 0

    def take(self) -> dict[tuple[str, Labels], float]:
        found = scrape(self.server)
        self.count += 1
        for key, before in self.last.items():
            assert key in found, f"scrape {self.count}: {key} vanished"
            assert found[key] >= before, f"scrape {self.count}: {key} went down from {before} to {found[key]}"
        self.last = {key: number for key, number in found.items() if key[0].endswith(COUNTING)}
        return found


def send(clients: list[Client], count: int, start: int) -> None:
    """`count` reviews, spread over the kept-alive connections in turn (so over both workers)."""
    for i in range(start, start + count):
        client = clients[i % len(clients)]
        if i % 2:
            reply = client.post("/mutate", review("pod-create"))
        else:
            data = edit(review("pod-update-set-image"), lambda r: r["object"]["spec"].update(activeDeadlineSeconds=i))
            reply = client.post("/validate", data)
        assert reply.status == 200, reply.body


def children(pid: int) -> list[int]:
    return [int(child) for child in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def eventually(check: Callable[[], bool], what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.1)


@pytest.fixture
def tmpdir_server(tmp_path: Path) -> Iterator[tuple[Server, Path]]:
    """A server whose $TMPDIR is the test's, holding a folder a crashed earlier server left behind."""
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    stale = tmpdir / "fieldwarden-metrics-crashed"
    stale.mkdir(mode=0o700)
    (stale / "master.lock").write_text("")  # nobody holds its lock
    (stale / "counter_12345.db").write_bytes(b"\0" * 4096)
    env = clean_environment(tmp_path)
    env["TMPDIR"] = str(tmpdir)
    env["PROMETHEUS_MULTIPROC_DIR"] = str(stale)  # (replaced: the server makes its own)
    running = Server(server_args(tmp_path), tmp_path, env)
    try:
        yield running, tmpdir
    finally:
        running.stop()


@contextlib.contextmanager
def only(server: Server, worker: int) -> Iterator[None]:
    """While inside, only `worker` runs (the others are stopped), so it takes every new connection."""
    others = [pid for pid in children(server.process.pid) if pid != worker]  # type: ignore[union-attr]
    for pid in others:
        os.kill(pid, signal.SIGSTOP)
    try:
        yield
    finally:
        for pid in others:
            os.kill(pid, signal.SIGCONT)


def test_every_scrape_sees_the_whole_pod_and_counters_never_go_down(tmpdir_server: tuple[Server, Path]) -> None:
    server, tmpdir = tmpdir_server
    scrapes = Scrapes(server)
    assert total(scrapes.take(), REQUESTS) == 0  # nothing from an earlier server is counted
    eventually(lambda: len(children(server.process.pid)) == 2, "two workers")  # type: ignore[union-attr]
    workers = children(server.process.pid)  # type: ignore[union-attr]
    clients = []
    try:
        for worker in workers:  # three kept-alive connections to each worker
            with only(server, worker):
                for _ in range(3):
                    clients.append(server.client())
                    assert clients[-1].request("GET", "/healthz").status == 200
        sent = 0
        for round in range(15):
            send(clients, 12, sent)
            sent += 12
            for worker in (workers if round % 2 else reversed(workers)):
                with only(server, worker):
                    scrapes.take()  # one worker, then the other: neither shows less than the other did
            scrapes.take()
            scrapes.take()  # and twice in a row on new connections, whichever worker takes them
        found = scrapes.take()
        assert total(found, REQUESTS) == sent
        assert total(found, "fieldwarden_admission_duration_seconds_count") == sent
        assert value_of(found, REQUESTS, endpoint="validate", operation="UPDATE", kind="Pod", decision="denied") == sent / 2

        # The folder: this run's own, private, and the crashed server's is gone.
        folders = sorted(tmpdir.glob("fieldwarden-metrics-*"))
        assert len(folders) == 1 and folders[0].name != "fieldwarden-metrics-crashed", folders
        folder = folders[0]
        info = folder.stat()
        assert stat.S_IMODE(info.st_mode) == 0o700 and info.st_uid == os.geteuid()
        for path in folder.iterdir():
            assert not path.stat().st_mode & (stat.S_IWOTH | stat.S_IWGRP), path
        assert len(list(folder.glob("counter_*.db"))) == 2, "both workers answered requests"

        # A worker that dies keeps its counts in the pod's totals; its live gauges go.
        dead = workers[0]
        assert list(folder.glob(f"gauge_live*_{dead}.db"))
        os.kill(dead, signal.SIGKILL)
        eventually(lambda: len(children(server.process.pid)) == 2 and dead not in children(server.process.pid),  # type: ignore[union-attr]
                   "a new worker")
        eventually(lambda: not list(folder.glob(f"gauge_live*_{dead}.db")), "the dead worker's gauges dropped")
        for client in clients:  # (a connection the dead worker held is gone: reconnect)
            client.close()
        send(clients, 10, sent)
        sent += 10
        for _ in range(10):
            found = scrapes.take()
            assert total(found, REQUESTS) == sent
    finally:
        for client in clients:
            client.close()
    assert server.stop() == 0
    assert not list(tmpdir.glob("fieldwarden-metrics-*")), "the folder is removed when the server stops"


def value_of(found: dict[tuple[str, Labels], float], name: str, **labels: str) -> float:
    return found.get((name, tuple(sorted(labels.items()))), 0.0)


# -- a read-only root filesystem with a writable /tmp, as in the Helm chart's pods ---------------

READ_ONLY_ROOT = ('mount --make-rprivate / && mount --bind /tmp /tmp && mount --bind "$FOLDER" "$FOLDER" '
                  '&& mount -o remount,bind,ro / && exec "$@"')


def _read_only_root_works(folder: Path) -> bool:
    probe = READ_ONLY_ROOT.replace('exec "$@"', "! touch /fieldwarden-ro-probe 2>/dev/null && touch /tmp/.fw-probe-$$ "
                                                 "&& rm /tmp/.fw-probe-$$")
    try:
        done = subprocess.run(["unshare", "--mount", "sh", "-c", probe], env={**os.environ, "FOLDER": str(folder)},
                              capture_output=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired):
        return False
    return done.returncode == 0


class ReadOnlyRootServer(Server):
    """The server in a mount namespace of its own where only /tmp and the test's folder are writable."""

    def _spawn(self) -> None:
        self.stdout_path = self.folder / f"server-{self.port}.out"
        self.stderr_path = self.folder / f"server-{self.port}.err"
        command = [sys.executable, "-m", "fieldwarden", "serve", "--bind", f"127.0.0.1:{self.port}", *self.args]
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.process = subprocess.Popen(
                ["unshare", "--mount", "sh", "-c", READ_ONLY_ROOT, "sh", *command],
                cwd=self.folder, env={**self.env, "FOLDER": str(self.folder)}, stdout=out, stderr=err,
                stdin=subprocess.DEVNULL,
            )


def test_metrics_work_with_a_read_only_root_filesystem(tmp_path: Path) -> None:
    if not _read_only_root_works(tmp_path):
        pytest.skip("needs unshare and mount (root, or a user namespace) to make the root filesystem read-only")
    env = clean_environment(tmp_path)
    env.pop("TMPDIR", None)  # the default: /tmp
    env["HOME"] = "/"  # (read-only: nothing may be written there)
    server = ReadOnlyRootServer(server_args(tmp_path), tmp_path, env)
    try:
        scrapes = Scrapes(server)
        clients = [server.client() for _ in range(4)]
        try:
            send(clients, 40, 0)
        finally:
            for client in clients:
                client.close()
        for _ in range(6):
            assert total(scrapes.take(), REQUESTS) == 40
    finally:
        code = server.stop()
    assert code == 0, server.stderr()
    assert "Read-only file system" not in server.stderr()
