"""Channel presence over HTTP on a real `wop serve` (RFC 0110, DESIGN.md §24).

What the official scenario ``channel-presence-behavioral`` (and v2's
``v2-channel-presence-delivery``) checks through the conformance seam, and what the web page
relies on: discovery advertises ``channelPresence``; a watcher's SSE stream gets closed
``{conversationId, present, typing}`` snapshots as people join, type and leave; only a room's
people appear and only they are served (403 otherwise); presence never enters the run's log.
"""

from __future__ import annotations

import http.client
import json
import queue
import threading
import time
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from tests.server.conftest import ALICE, BOB, Served

BOARD = """\
[council]
id = "board"
task = "Set the budget."

[[rooms]]
id = "board"
members = ["ann", "bob", "cfo"]

[[rooms]]
id = "side"
members = ["ann", "cfo"]

[[members]]
id = "cfo"
role = "cfo"
engine = "script"
script = [{ summary = "Budget drafted." }]

[[members]]
id = "ann"
role = "user"
engine = "human"
initial_turn = false

[[members]]
id = "bob"
role = "user"
engine = "human"
initial_turn = false
principal = "bob"
"""
SEAM = "/v1/host/sample/channel-presence/snapshot"


class Watcher:
    """An SSE reader of ``GET /v1/runs/{id}/presence`` in a thread: frames into a queue."""

    def __init__(self, served: Served, path: str, token: str | None = None) -> None:
        url = urlsplit(served.url)
        self.conn = http.client.HTTPConnection(url.hostname, url.port, timeout=20)
        headers = {"Accept": "text/event-stream"}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self.conn.request("GET", path, headers=headers)
        self.response = self.conn.getresponse()
        self.frames: queue.Queue[dict[str, Any]] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        event = ""
        try:
            for raw in self.response:
                line = raw.decode().rstrip("\n")
                if line.startswith("event: "):
                    event = line[7:]
                elif line.startswith("data: ") and event == "channel.presence":
                    self.frames.put(json.loads(line[6:]))
        except Exception:
            return

    def until(self, want: dict[str, Any], timeout: float = 10) -> dict[str, Any]:
        """The first frame (from now) whose fields are ``want``."""
        deadline = time.monotonic() + timeout
        seen: list[dict[str, Any]] = []
        while time.monotonic() < deadline:
            try:
                frame = self.frames.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                break
            seen.append(frame)
            if all(frame.get(k) == v for k, v in want.items()):
                return frame
        raise AssertionError(f"no frame with {want}; saw {seen}")

    def close(self) -> None:
        self.conn.close()


def _board(serve: Any, folder: Path, **kwargs: Any) -> tuple[Served, str]:
    path = folder / "board.toml"
    path.write_text(BOARD, encoding="utf-8")
    served: Served = serve(path, **kwargs)
    status, created, _ = served.request("POST", "/v1/runs", {"workflowId": "board"})
    assert status == 201, created
    served.wait_status(created["runId"], "completed")
    return served, str(created["runId"])


def test_watchers_see_who_joins_types_and_leaves_and_the_log_never_changes(
        serve: Any, tmp_path: Path) -> None:
    served, run_id = _board(serve, tmp_path)
    caps = served.request("GET", "/.well-known/openwop")[1]
    assert caps["channelPresence"] == {"supported": True}
    before = served.request("GET", f"/v1/runs/{run_id}/events")[1]["events"]
    cid = f"{run_id}:room:board"
    ann = Watcher(served, f"/v1/runs/{run_id}/presence?as=ann")
    try:
        first = ann.until({"conversationId": cid})
        assert first == {"conversationId": cid, "present": ["user:ann"], "typing": []}
        assert ann.until({"conversationId": f"{run_id}:room:side"})["present"] == ["user:ann"]

        path = f"/v1/runs/{run_id}/presence"
        status, joined, _ = served.request("POST", path, {"room": "board", "member": "bob"})
        assert status == 200, joined
        assert joined["presence"] == {"conversationId": cid,
                                      "present": ["user:ann", "user:bob"], "typing": []}
        ann.until({"present": ["user:ann", "user:bob"], "typing": []})
        session = joined["session"]
        served.request("POST", path, {"room": "board", "member": "bob", "session": session,
                                      "typing": True})
        ann.until({"typing": ["user:bob"]})
        served.request("POST", path, {"room": "board", "member": "bob", "session": session,
                                      "typing": False})
        ann.until({"present": ["user:ann", "user:bob"], "typing": []})
        served.request("POST", path, {"room": "board", "member": "bob", "session": session,
                                      "leave": True})
        ann.until({"conversationId": cid, "present": ["user:ann"]})
        status, snap, _ = served.request("GET", f"{path}?as=bob&room=board")
        assert status == 200 and snap == {"conversationId": cid, "present": ["user:ann"],
                                          "typing": []}
    finally:
        ann.close()
    deadline = time.monotonic() + 10
    while served.request("GET", f"/v1/runs/{run_id}/presence?as=bob&room=board")[1][
            "present"] and time.monotonic() < deadline:
        time.sleep(0.05)  # ann hung up: she leaves
    assert served.request("GET", f"/v1/runs/{run_id}/presence?as=bob&room=board")[1][
        "present"] == []
    after = served.request("GET", f"/v1/runs/{run_id}/events")[1]["events"]
    assert after == before  # presence is never an event of the run


def test_presence_is_served_to_a_rooms_people_only(serve: Any, tmp_path: Path,
                                                   tokens_file: Path) -> None:
    served, run_id = _board(serve, tmp_path, args=("--tokens", str(tokens_file)), token=ALICE)
    path = f"/v1/runs/{run_id}/presence"
    for query, status_code, says in [
        ("?as=cfo&room=board", 403, "'cfo' is not a person in room 'board'"),
        ("?as=bob&room=side", 403, "'bob' is not a person in room 'side'"),
        ("?room=board", 400, "?as=MEMBER"),
        ("?as=ann&room=attic", 404, "has no room 'attic'"),
    ]:
        status, error, _ = served.request("GET", path + query)
        assert (status, says in error["message"]) == (status_code, True), error
    status, error, _ = served.request("GET", f"{path}?as=bob&room=board")
    assert (status, error["error"]) == (403, "forbidden")  # bob speaks only for bob
    status, snap, _ = served.request("GET", f"{path}?as=bob&room=board", token=BOB)
    assert status == 200 and sorted(snap) == ["conversationId", "present", "typing"]
    status, error, _ = served.request("POST", path, {"room": "board", "member": "ann",
                                                     "typing": "yes"})
    assert (status, error["details"]["field"]) == (400, "typing")


def test_the_conformance_seam_answers_the_closed_snapshot_to_members_only(
        serve: Any, tmp_path: Path) -> None:
    served: Served = serve(args=("--conformance",))
    body = {"conversationId": "conf:channel-presence:c1", "member": "user:conformance-runner"}

    status, snap, _ = served.request("POST", SEAM, body)

    assert status == 200, snap
    assert snap == {"conversationId": "conf:channel-presence:c1",
                    "present": ["user:conformance-runner"], "typing": []}
    status, error, _ = served.request("POST", SEAM, {**body,
                                                     "observer": "user:conformance-outsider"})
    assert (status, error["error"]) == (403, "forbidden")
    status, error, _ = served.request("POST", SEAM, {**body, "member": "bob@example.com"})
    assert (status, error["details"]["field"]) == (400, "member")
    assert served.request("GET", "/.well-known/openwop")[1]["channelPresence"] == {
        "supported": True}
