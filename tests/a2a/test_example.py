"""The shipped A2A example both ways: ``examples/a2a_roundtrip.py`` as a user runs it.

A subprocess in a fresh folder: it serves ``examples/a2a-desk.toml`` with ``wop serve --a2a``
and runs ``examples/a2a-board.toml``, whose ``desk`` member is that agent; the desk's
question reaches the board's room, the answer goes back to the same task. Both logs pass
``wop check`` (v1 and v2).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("a2a.client", reason="the a2a extra (wopdsl[a2a]) is not installed")

from wopdsl import SqliteStore

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def test_the_roundtrip_example_convenes_a_served_council_as_a_member(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "WOP_STORE"}
    done = subprocess.run([sys.executable, str(ROOT / "examples" / "a2a_roundtrip.py")],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180,
                          check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert ("waiting-input: the desk asks: boss is asked in room market: analyst said: "
            "Which market should I size, @boss?") in done.stdout
    assert "  you team/you/3/0: Germany\n  desk team/desk/2/0: Sized the Germany market." in \
        done.stdout
    for name in ("board.db", "desk.db"):
        store = SqliteStore(tmp_path / ".wop" / name)
        try:
            [run] = store.runs()
            assert run.last_type == "run.completed"
        finally:
            store.close()
        for extra in ([], ["--v2"]):
            check = subprocess.run([sys.executable, "-m", "wopdsl", "--store",
                                    str(tmp_path / ".wop" / name), "check", *extra,
                                    run.run_id], capture_output=True, text=True, timeout=120,
                                   check=False)
            assert check.returncode == 0, (name, extra, check.stdout)
