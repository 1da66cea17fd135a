"""JSON-lines logs: the fields bound to the request, the direct and batched writes, and failures."""

from __future__ import annotations

import io
import json
import logging
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from fieldwarden.webhook.server import logs


def test_bound_fields_reach_every_line_of_this_thread_only() -> None:
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(logs.JsonFormatter())
    logs.LOGGER.addHandler(handler)
    old = logs.LOGGER.level
    logs.LOGGER.setLevel(logging.INFO)
    try:
        with logs.bind(uid="u-1"):
            logs.event("inside", rule="FW401")
            other = threading.Thread(target=lambda: logs.event("other thread"))
            other.start()
            other.join()
        logs.event("after")
        try:
            raise ValueError("boom")
        except ValueError:
            logs.event("failed", logging.ERROR, exc_info=True)
    finally:
        logs.LOGGER.removeHandler(handler)
        logs.LOGGER.setLevel(old)
    lines = [json.loads(line) for line in stream.getvalue().splitlines()]
    assert [line["message"] for line in lines] == ["inside", "other thread", "after", "failed"]
    assert lines[0]["uid"] == "u-1" and lines[0]["rule"] == "FW401" and lines[0]["level"] == "info"
    assert "uid" not in lines[1] and "uid" not in lines[2]
    assert "ValueError: boom" in lines[3]["error"] and lines[3]["level"] == "error"


def test_the_installed_handler_writes_the_same_lines_without_log_records() -> None:
    stream = io.StringIO()
    saved, old = logs.LOGGER.handlers[:], logs.LOGGER.level
    logs.LOGGER.handlers[:] = []
    try:
        handler = logs.configure(stream, logging.INFO)
        assert logs.LOGGER.handlers == [handler]
        with logs.bind(uid="u-2"):
            logs.event("admission", decision="denied", warnings=2)  # the direct way: no LogRecord
            logs.event("not shown", logging.DEBUG)
            try:
                raise KeyError("gone")
            except KeyError:
                logs.event("rule raised", logging.ERROR, exc_info=True, rule="FW403")  # through logging
    finally:
        logs.LOGGER.handlers[:] = saved
        logs.LOGGER.setLevel(old)
    direct, recorded = (json.loads(line) for line in stream.getvalue().splitlines())
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", direct["time"])
    assert {k: v for k, v in direct.items() if k != "time"} == {
        "level": "info", "logger": "fieldwarden.webhook", "message": "admission", "uid": "u-2",
        "decision": "denied", "warnings": 2,
    }
    assert recorded["level"] == "error" and recorded["uid"] == "u-2" and recorded["rule"] == "FW403"
    assert "KeyError: 'gone'" in recorded["error"] and set(direct) - {"decision", "warnings"} < set(recorded)


def test_batched_info_lines_wait_a_warning_writes_them_first_and_the_interval_writes_the_rest() -> None:
    stream = io.StringIO()
    handler = logs.JsonLinesHandler(stream, batch_seconds=0.3)
    handler.write_entry({"message": "first"}, logging.INFO)
    handler.write_entry({"message": "second"}, logging.DEBUG)
    assert stream.getvalue() == ""  # waiting for the batch
    handler.write_entry({"message": "trouble"}, logging.WARNING)
    assert [json.loads(line)["message"] for line in stream.getvalue().splitlines()] == ["first", "second", "trouble"]
    handler.write_entry({"message": "later"}, logging.INFO)
    started = time.monotonic()
    while "later" not in stream.getvalue() and time.monotonic() - started < 5:
        time.sleep(0.02)
    assert 0.1 < time.monotonic() - started < 5  # written by the flusher thread, a batch later
    handler.write_entry({"message": "at exit"}, logging.INFO)
    handler.flush()  # what logging.shutdown does at exit
    assert stream.getvalue().splitlines()[-1] == '{"message":"at exit"}'


def test_lines_waiting_at_a_fork_are_written_once(tmp_path: Path) -> None:
    path = tmp_path / "log"
    with open(path, "w", encoding="utf-8") as stream:
        handler = logs.JsonLinesHandler(stream, batch_seconds=60)
        handler.write_entry({"message": "before the fork"}, logging.INFO)
        child = os.fork()
        if child == 0:  # the child writes what it has, then leaves at once
            try:
                handler.write_entry({"message": "in the child"}, logging.INFO)
                handler.flush()
            finally:
                os._exit(0)
        os.waitpid(child, 0)
        handler.flush()
    messages = [json.loads(line)["message"] for line in path.read_text().splitlines()]
    assert sorted(messages) == ["before the fork", "in the child"]


def test_lines_waiting_at_exit_are_written(tmp_path: Path) -> None:
    script = (
        "import logging\n"
        "from fieldwarden.webhook.server import logs\n"
        "logs.configure(batch_seconds=60)\n"
        "logs.event('admission', decision='denied')\n"
        "raise SystemExit(0)\n"  # a worker's way out: logging.shutdown runs at exit
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 0
    assert json.loads(done.stderr)["decision"] == "denied"


def test_a_stream_that_cannot_be_written_loses_the_lines_not_the_request(capsys: pytest.CaptureFixture[str]) -> None:
    stream = io.StringIO()
    stream.close()  # writing raises ValueError
    handler = logs.JsonLinesHandler(stream, batch_seconds=0.0)
    handler.write_entry({"message": "lost"}, logging.INFO)  # does not raise
    assert "1 JSON log line(s) could not be written" in capsys.readouterr().err
