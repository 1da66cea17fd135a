"""`fieldwarden serve` says "serving" only once a worker booted, and stops saying why when none can.

The broken installs are real: a module shadowed on PYTHONPATH that fails to import, in a
real `fieldwarden serve` (gunicorn, its workers, TLS) run as a subprocess.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from fieldwarden.webhook.server import serve
from fieldwarden.webhook.server.boot import BootReport
from fieldwarden.webhook.server.certs import ensure_certificates
from tests.helpers import write
from tests.webhook.live import Server, clean_environment, free_port
from tests.webhook.server.test_serve import no_cluster, serve_main  # noqa: F401  (a fixture)

RUN_TIMEOUT = 90


def run_serve(folder: Path, shadow: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    """`fieldwarden serve` with the modules in `shadow` (name: source) first on the path, to its end."""
    for name, source in shadow.items():
        write(folder / "shadow", f"{name}/__init__.py", source)
    env = clean_environment(folder)
    env["PYTHONPATH"] = str(folder / "shadow")
    return subprocess.run(
        [sys.executable, "-m", "fieldwarden", "serve", "--bind", f"127.0.0.1:{free_port()}",
         "--cert-dir", str(folder / "tls"), "--workers", "2", *args],
        cwd=folder, env=env, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=RUN_TIMEOUT,
    )


def test_a_worker_that_cannot_boot_stops_it_saying_why_and_it_never_says_serving(tmp_path: Path) -> None:
    # prometheus_client is imported by the workers only, when they build the application.
    done = run_serve(tmp_path, {"prometheus_client": "raise ImportError('prometheus_client is broken (test shadow)')"})
    assert done.returncode == 3  # gunicorn's "worker failed to boot"
    assert "fieldwarden: serving" not in done.stdout
    last = done.stderr.strip().splitlines()[-1]
    assert last == ("fieldwarden: the webhook did not start: no worker could boot: ImportError: prometheus_client "
                    "is broken (test shadow) (this install is incomplete: pip install 'fieldwarden[webhook]' "
                    "into a fresh virtualenv)"), done.stderr[-3000:]
    assert "internal error" not in done.stderr and "Traceback" not in done.stdout


def test_a_package_missing_from_the_install_is_said_before_gunicorn_starts(tmp_path: Path) -> None:
    # As a `pip install 'fieldwarden[webhook]'` with gunicorn 27 and no `packaging` was.
    missing = "raise ModuleNotFoundError(\"No module named 'packaging'\", name='packaging')"
    done = run_serve(tmp_path, {"packaging": missing})
    assert done.returncode == 2
    assert "fieldwarden: serving" not in done.stdout and "Starting gunicorn" not in done.stderr
    assert ("fieldwarden: the webhook's gunicorn worker cannot be loaded: No module named 'packaging'. "
            "This install is incomplete: pip install 'fieldwarden[webhook]' into a fresh virtualenv") in done.stderr


def test_serving_is_said_once_whatever_the_number_of_workers(tmp_path: Path) -> None:
    server = Server(["--workers", "3"], tmp_path)
    try:
        client = server.client()
        try:
            assert client.request("GET", "/healthz").status == 200
        finally:
            client.close()
        assert server.stdout().count("fieldwarden: serving https://") == 1
        assert server.stdout().count("fieldwarden: try: curl") == 1
    finally:
        assert server.stop() == 0


@pytest.mark.parametrize("broken, said", [
    ("certificate", "tls.crt holds no PEM certificate"),
    ("key", "tls.key holds no unencrypted PEM private key"),
    ("pair", "tls.key is not the private key of the certificate in"),
])
def test_a_certificate_that_does_not_load_stops_it_naming_the_file(
        no_cluster: Path, broken: str, said: str) -> None:  # noqa: F811
    ensure_certificates(no_cluster / "tls")
    if broken == "certificate":
        write(no_cluster, "tls/tls.crt", "not a certificate\n")
    elif broken == "key":
        write(no_cluster, "tls/tls.key", "not a key\n")
    else:
        (no_cluster / "tls" / "tls.key").write_bytes((no_cluster / "tls" / "ca.key").read_bytes())
    code, err = serve_main(["--cert-dir", "tls"])
    assert code == 2
    assert "fieldwarden: the TLS certificate does not load: " in err and said in err


def test_the_first_boot_announces_and_no_other() -> None:
    said: list[str] = []
    report = BootReport(lambda: said.append("serving"))
    try:
        assert not report.announced()
        report.booted()
        report.booted()
        assert said == ["serving"] and report.announced()
    finally:
        report.close()


def test_each_reason_is_said_once_on_one_line() -> None:
    report = BootReport(lambda: None)
    try:
        report.failed(ImportError("no module\nnamed x"))
        report.failed(ImportError("no module\nnamed x"))
        report.failed(OSError("disk full"))
        assert report.reasons() == ["ImportError: no module named x", "OSError: disk full"]
        assert report.reasons() == []
    finally:
        report.close()


def test_what_is_said_when_gunicorn_stops() -> None:
    assert serve.boot_failure(0, True, []) is None
    assert serve.boot_failure(0, False, []) is None  # stopped (SIGTERM) before a worker booted
    assert serve.boot_failure(1, False, []) == (
        "the webhook did not start (gunicorn exit status 1): see gunicorn's messages above")
    assert serve.boot_failure(3, True, ["OSError: disk full"]) == (
        "the webhook stopped: a worker could not boot: OSError: disk full")
