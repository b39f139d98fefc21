"""`wop runs` says when a running run has stopped: a Ctrl-C'd `wop run` shows `interrupted`.

The log of a run stopped mid-turn still says `running` (nothing is appended on Ctrl-C), so
`wop runs` asks the store whether a process drives it (its claim: a lock on SQLite's claims
file, an advisory lock on PostgreSQL). A real `wop run` subprocess, stopped with SIGINT,
on SQLite and on the real PostgreSQL server; while it still drives the run, `running`.
"""

from __future__ import annotations

import json
import shlex
import signal
import subprocess
import sys
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from tests.cli.conftest import SLOW, Wop, interrupt

COUNCIL = ('[council]\nid = "slow"\ntask = "t"\n\n[[members]]\nid = "solo"\nrole = "s"\n'
           'handler = "slow:solo"\n')


def _row(wop: Wop, store: list[str], run_id: str) -> tuple[str, dict[str, object], str]:
    """The run's STATUS cell in `wop runs`, its `--json` row, and the table's text."""
    table = wop("runs", *store)
    listed = wop("runs", "--json", *store)
    assert table.returncode == listed.returncode == 0, table.stderr + listed.stderr
    cells = next(line.split() for line in table.stdout.splitlines()
                 if line.startswith(run_id + " "))
    row = next(r for r in json.loads(listed.stdout) if r["runId"] == run_id)
    return cells[2], row, table.stdout


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> list[str]:
    if request.param == "sqlite":
        return ["--store", str(tmp_path / "runs.db")]
    url: str = request.getfixturevalue("pg_url")
    return ["--store", url]


def test_a_stopped_run_shows_interrupted_and_a_driven_one_running(
        wop: Wop, tmp_path: Path, store: list[str]) -> None:
    (tmp_path / "slow.py").write_text(SLOW, encoding="utf-8")
    (tmp_path / "slow.toml").write_text(COUNCIL, encoding="utf-8")
    # Background test runs inherit SIGINT ignored: the child gets the default back, as a
    # terminal's `wop run` has it.
    with subprocess.Popen([sys.executable, "-m", "wopdsl", "run", "slow.toml", "--run-id",
                           "slow-1", *store], cwd=tmp_path, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, encoding="utf-8",
                          preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL)
                          ) as child:
        assert child.stdout is not None
        assert child.stdout.readline().startswith("run slow-1 ")
        assert child.stdout.readline() == "handler-started\n"

        driven = _row(wop, store, "slow-1")

        err = interrupt(child)
    assert child.returncode == 130, err
    assert driven[0] == "running" and "interrupted" not in driven[2]
    assert driven[1]["status"] == "running" and driven[1]["driven"] is True

    status, row, text = _row(wop, store, "slow-1")

    assert status == "interrupted"
    assert row["status"] == "running" and row["driven"] is False  # The wire status stays.
    shown = store[1] if store[1].endswith("runs.db") else \
        store[1].replace(urlsplit(store[1]).password or "", "***")
    assert (f"interrupted: no process drives run slow-1 (it stopped mid-run); continue it with "
            f"`wop --store {shlex.quote(shown)} resume slow-1`") in text
    assert (urlsplit(store[1]).password or "\0") not in text + json.dumps(row)

    done = wop("resume", "slow-1", *store)

    assert done.returncode == 0, done.stdout + done.stderr
    status, row, text = _row(wop, store, "slow-1")
    assert status == "completed" and "driven" not in row and "interrupted" not in text
