"""A host's loop is never held by a sync handler: it runs on a worker thread from its first call.

The check is structural, not timed: discovery answers while the handler is known to be
inside its 3 s sleep (it has written its start marker and not yet its end marker).
"""

from __future__ import annotations

import time
import urllib.request
from collections.abc import Callable
from pathlib import Path

from tests.server.conftest import Served

COUNCILS = Path(__file__).resolve().parent / "fault_councils"


def test_a_slow_sync_handler_does_not_delay_another_request(
        tmp_path: Path, serve: Callable[..., Served]) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    served = serve(COUNCILS / "slow_sync.toml",
                   env={"PYTHONPATH": str(COUNCILS), "WOP_TEST_MARKS": str(marks)})
    status, created, _ = served.request("POST", "/v1/runs", {"workflowId": "slow-sync"})
    assert status == 201, created
    deadline = time.monotonic() + 30
    while not (marks / "started").exists():
        assert time.monotonic() < deadline, served.logs()
        time.sleep(0.01)
    # The handler sleeps now. A request must be answered before it wakes up.
    with urllib.request.urlopen(served.url + "/.well-known/openwop", timeout=30) as resp:
        assert resp.status == 200
        answered_while_sleeping = not (marks / "finished").exists()
    status, runs, _ = served.request("GET", f"/v1/runs/{created['runId']}")
    assert status == 200 and runs["status"] == "running"
    assert answered_while_sleeping, "discovery waited for the sync handler"
    snap = served.wait_status(created["runId"], "completed", timeout=30)
    assert snap["status"] == "completed"
