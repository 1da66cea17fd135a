"""The `server` fixture: a real `fieldwarden serve` (gunicorn, TLS) on 127.0.0.1, one per test module."""

from __future__ import annotations

from typing import Iterator

import pytest

from tests.webhook.live import Server
from tests.webhook.server.serving import server_args


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Server]:
    folder = tmp_path_factory.mktemp("webhook")
    running = Server(server_args(folder), folder)
    try:
        yield running
    finally:
        running.stop()
