"""Fixtures for the host tests: a real `wop serve` subprocess on 127.0.0.1, a free port."""

from __future__ import annotations

import functools
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.server.web_browser import (
    WEB_COUNCILS,
    Page,
    host_path,
    new_driver,
    require_browser,
    screenshot_dir,
)
from tests.tcp_proxy import TcpProxy

pytest.importorskip("starlette", reason="needs the server extra")
pytest.importorskip("uvicorn", reason="needs the server extra")

REPO = Path(__file__).resolve().parents[2]
COUNCILS = Path(__file__).resolve().parent / "councils"

ALICE = "alice-token-0123456789abcdef"
BOB = "bob-token-fedcba9876543210xyz"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Served:
    """A running `wop serve`."""

    url: str
    proc: subprocess.Popen[bytes]
    store: Path
    log: Path
    token: str | None = None
    extra_env: dict[str, str] = field(default_factory=dict)

    def request(self, method: str, path: str, body: Any = None, *, token: str | None = "",
                headers: dict[str, str] | None = None, raw: bytes | None = None
                ) -> tuple[int, Any, dict[str, str]]:
        """Send a request; return (status, decoded JSON or text, headers)."""
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Accept", "application/json")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        use = self.token if token == "" else token
        if use:
            req.add_header("Authorization", f"Bearer {use}")
        for name, value in (headers or {}).items():
            req.add_header(name, value)
        try:
            with urllib.request.urlopen(req, timeout=30) as resp:
                status, text, hdrs = resp.status, resp.read().decode(), dict(resp.headers)
        except urllib.error.HTTPError as exc:
            status, text, hdrs = exc.code, exc.read().decode(), dict(exc.headers)
        try:
            return status, json.loads(text), hdrs
        except json.JSONDecodeError:
            return status, text, hdrs

    def wait_status(self, run_id: str, *statuses: str, timeout: float = 20) -> dict[str, Any]:
        """Poll the run's snapshot until its status is one of ``statuses``."""
        deadline = time.monotonic() + timeout
        while True:
            status, snap, _ = self.request("GET", f"/v1/runs/{run_id}")
            assert status == 200, snap
            if snap["status"] in statuses:
                return snap
            if time.monotonic() > deadline:
                raise AssertionError(f"run {run_id} is {snap['status']}, not {statuses}")
            time.sleep(0.05)

    def stop(self, sig: int = signal.SIGINT) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
            try:
                return self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                return self.proc.wait(5)
        return self.proc.returncode

    def logs(self) -> str:
        return self.log.read_text(errors="replace")


def start_server(tmp: Path, *paths: str | Path, args: tuple[str, ...] = (),
                 env: dict[str, str] | None = None, token: str | None = None,
                 store: Path | None = None, wait: bool = True,
                 open_files: int | None = None, cwd: Path | None = None,
                 default_paths: bool = False) -> Served:
    """Start `wop serve PATH…` (no PATH with ``default_paths``: what it serves by default)."""
    port = free_port()
    store = store or tmp / "runs.db"
    log = tmp / f"serve-{port}.log"
    full_env = {k: v for k, v in os.environ.items() if k not in ("WOP_TOKENS", "WOP_STORE")}
    full_env.update({"PYTHONUNBUFFERED": "1", **(env or {})})
    served_paths = () if default_paths else paths or (COUNCILS,)
    cmd = [sys.executable, "-m", "wopdsl", "serve", *map(str, served_paths),
           "--port", str(port), "--store", str(store), *args]
    with log.open("wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, env=full_env,
                                cwd=cwd or tmp, preexec_fn=None if open_files is None else
                                functools.partial(_limit_files, open_files))
    served = Served(f"http://127.0.0.1:{port}", proc, store, log, token)
    if wait:
        deadline = time.monotonic() + 30
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"wop serve exited {proc.returncode}:\n{served.logs()}")
            try:
                with urllib.request.urlopen(served.url + "/.well-known/openwop", timeout=2):
                    break
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                if time.monotonic() > deadline:
                    proc.kill()
                    raise AssertionError(f"wop serve did not come up:\n{served.logs()}") from None
                time.sleep(0.05)
    return served


def _limit_files(count: int) -> None:
    """In the child: at most ``count`` open files, soft and hard (it cannot raise them)."""
    import resource

    resource.setrlimit(resource.RLIMIT_NOFILE, (count, count))


@pytest.fixture
def serve(tmp_path: Path) -> Iterator[Callable[..., Served]]:
    """Start `wop serve` subprocesses; every one is stopped at the end of the test."""
    started: list[Served] = []

    def go(*paths: str | Path, **kwargs: Any) -> Served:
        served = start_server(tmp_path, *paths, **kwargs)
        started.append(served)
        return served

    yield go
    for served in started:
        served.stop()


@pytest.fixture
def proxy(pg_url: str) -> Iterator[TcpProxy]:
    """A TCP proxy in front of the test's PostgreSQL server (``proxy.via(pg_url)``)."""
    with TcpProxy.before(pg_url) as line:
        yield line


@pytest.fixture
def tokens_file(tmp_path: Path) -> Path:
    path = tmp_path / "tokens.toml"
    path.write_text(f'[tokens]\nalice = "{ALICE}"\nbob = "{BOB}"\n')
    return path


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[Callable[..., Any]]:
    """Start headless Chromiums (``browser(*chromium_args)``); each one quits at the end."""
    found = require_browser()
    drivers: list[Any] = []

    def go(*chromium_args: str) -> Any:
        driver = new_driver(found, tmp_path / f"profile-{len(drivers)}", chromium_args)
        drivers.append(driver)
        return driver

    yield go
    for driver in drivers:
        driver.quit()


@pytest.fixture
def page(tmp_path: Path, serve: Callable[..., Served],
         browser: Callable[..., Any]) -> Callable[..., Page]:
    """Open pages in a headless Chromium on a `wop serve` of the web test councils."""

    def go(*, args: tuple[str, ...] = (), env: dict[str, str] | None = None,
           token: str | None = None, councils: Path = WEB_COUNCILS) -> Page:
        served = serve(councils, args=args, env={"PYTHONPATH": host_path(councils),
                                                 **(env or {})}, token=token)
        return Page(browser(), served, screenshot_dir(tmp_path))

    return go
