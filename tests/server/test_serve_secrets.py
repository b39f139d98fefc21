"""`wop serve` never prints the PostgreSQL password: not with --store, not with WOP_STORE."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.server.conftest import COUNCILS, free_port

pytest.importorskip("psycopg", reason="needs the postgres extra")


def _banner(tmp_path: Path, args: list[str], env: dict[str, str]) -> str:
    """Start `wop serve`, wait for its start-up banner, stop it; return all it printed."""
    log = tmp_path / f"serve-{len(list(tmp_path.iterdir()))}.log"
    full_env = {k: v for k, v in os.environ.items() if k not in ("WOP_STORE", "WOP_TOKENS")}
    full_env.update({"PYTHONUNBUFFERED": "1", **env})
    with log.open("wb") as out:
        proc = subprocess.Popen([sys.executable, "-m", "wopdsl", "serve", str(COUNCILS),
                                 "--port", str(free_port()), *args],
                                stdout=out, stderr=subprocess.STDOUT, env=full_env, cwd=tmp_path)
    try:
        deadline = time.monotonic() + 60
        while "Uvicorn running on" not in log.read_text(errors="replace"):
            assert proc.poll() is None, log.read_text(errors="replace")
            assert time.monotonic() < deadline, log.read_text(errors="replace")
            time.sleep(0.05)
    finally:
        proc.terminate()
        assert proc.wait(30) == 0
    return log.read_text(errors="replace")


@pytest.mark.parametrize("how", ["--store", "WOP_STORE"])
def test_the_banner_names_the_database_without_its_password(tmp_path: Path, pg_url: str,
                                                            how: str) -> None:
    password = urlsplit(pg_url).password
    assert password, "the test server's URL carries a password"
    args, env = (["--store", pg_url], {}) if how == "--store" else ([], {"WOP_STORE": pg_url})
    text = _banner(tmp_path, args, env)
    host = urlsplit(pg_url).hostname
    assert f"store postgresql://wop:***@{host}:" in text, text
    assert password not in text
    assert "Traceback" not in text
