"""Fixtures for the CLI tests: real `python -m wopdsl` subprocesses on real SQLite files."""

from __future__ import annotations

import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]

DB = Path(".wop/runs.db")
"""The default store, relative to the directory a `wop` command runs in."""

HUMAN_COUNCIL = """\
[council]
id = "ask-me"
task = "Name the release."
max_turns_per_member = 3

[[rooms]]
id = "desk"
members = ["me", "namer"]

[[members]]
id = "namer"
role = "namer"
engine = "script"
script = [
  { summary = "Asked.", posts = [{ room = "desk", text = "Which name, @me?", mentions = ["me"] }] },
  { summary = "Named: {{ triggers[0].text }}" },
]

[[members]]
id = "me"
role = "user"
engine = "human"
initial_turn = false
"""

# A python handler whose first attempt sleeps until Ctrl-C (slow.py, `slow:solo`).
SLOW = """\
import time
from pathlib import Path

from wopdsl import Reply

MARKER = Path(__file__).with_name("slow.marker")


def solo(turn):
    if not MARKER.exists():
        MARKER.write_text("first attempt")
        print("handler-started", flush=True)
        time.sleep(600)  # Only Ctrl-C ends this attempt; the CLI must not wait for it.
    return Reply(summary="done at last")
"""

FAILING_COUNCIL = """\
[council]
id = "echo"
task = "Talk to yourself."

[[rooms]]
id = "self"
members = ["echo"]

[[members]]
id = "echo"
role = "echo"
engine = "script"
script = [
  { summary = "Once.", posts = [{ room = "self", text = "again @echo", mentions = ["echo"] }] },
]
"""

Wop = Callable[..., subprocess.CompletedProcess[str]]


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env.pop("WOP_STORE", None)
    env["PYTHONIOENCODING"] = "utf-8"
    return env


@pytest.fixture
def wop(tmp_path: Path) -> Wop:
    """Run `python -m wopdsl ARGS...` in tmp_path; return the completed process."""

    def run(*args: str, cwd: Path | None = None, env: dict[str, str] | None = None,
            timeout: float = 120) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "wopdsl", *args], cwd=cwd or tmp_path, env=env or _env(),
            capture_output=True, text=True, encoding="utf-8", timeout=timeout, check=False,
        )

    return run


@pytest.fixture
def release_team(tmp_path: Path) -> Path:
    """councils/release-team.toml copied into tmp_path (relative path returned)."""
    (tmp_path / "councils").mkdir()
    shutil.copy(REPO / "councils" / "release-team.toml", tmp_path / "councils")
    return Path("councils/release-team.toml")


@pytest.fixture
def human_council(tmp_path: Path) -> Path:
    """A council whose script member asks the human member `me` in room `desk`."""
    (tmp_path / "human.toml").write_text(HUMAN_COUNCIL, encoding="utf-8")
    return Path("human.toml")


@pytest.fixture
def failing_council(tmp_path: Path) -> Path:
    """A council whose only member mentions itself and runs out of script (run fails)."""
    (tmp_path / "echo.toml").write_text(FAILING_COUNCIL, encoding="utf-8")
    return Path("echo.toml")


def event_count(db: Path, run_id: str) -> int:
    """Count a run's stored events straight from the SQLite file."""
    return len(stored_events(db, run_id))


def stored_events(db: Path, run_id: str) -> list[dict[str, Any]]:
    """Read a run's events through the public store API."""
    from wopdsl import open_store

    store = open_store(db)
    try:
        return store.read(run_id)
    finally:
        store.close()


def json_lines(text: str) -> list[dict[str, Any]]:
    """Parse JSON Lines output."""
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def sqlite_tables(db: Path) -> list[str]:
    """The tables of a SQLite file (proves it is a real database)."""
    with sqlite3.connect(db) as conn:
        return [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")]


def interrupt(child: subprocess.Popen[str]) -> str:
    """Ctrl-C a `wop` child (SIGINT) and return its stderr once it has exited."""
    child.send_signal(signal.SIGINT)
    try:
        _, err = child.communicate(timeout=60)  # A safety net: a handler may sleep 600 s.
    finally:
        if child.poll() is None:
            child.kill()
    return str(err)
