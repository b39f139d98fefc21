"""Principals own runs, over real HTTP with several tokens; a guest cannot fail a run.

alice starts the run; bob is named by its ``guest`` member (a guest of the run); carol is
just another token; ops is an admin (``[admins]`` in the tokens file).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.server.conftest import ALICE, BOB, Served

SEC = Path(__file__).resolve().parent / "sec_councils"
CAROL = "carol-token-5555555555555555"
OPS = "ops-token-77777777777777777777"
HALL = "/interrupts/room:hall"


def _post(text: str, member: str | None = None, mentions: tuple[str, ...] = ()) -> Any:
    turn: dict[str, Any] = {"role": "user", "content": {"text": text,
                                                        "mentions": list(mentions)}}
    if member is not None:
        turn["speakerId"] = f"host:{member}"
    return {"resumeValue": turn}


@pytest.fixture
def served(serve: Any, tmp_path: Path) -> Served:
    tokens = tmp_path / "tokens.toml"
    tokens.write_text(f'[tokens]\nalice = "{ALICE}"\nbob = "{BOB}"\ncarol = "{CAROL}"\n'
                      f'ops = "{OPS}"\n\n[admins]\nprincipals = ["ops"]\n')
    host: Served = serve(SEC, args=("--tokens", str(tokens)), token=ALICE)
    return host


def _last(served: Served, run_id: str) -> int:
    status, page, _ = served.request("GET", f"/v1/runs/{run_id}/events", token=ALICE)
    assert status == 200, page
    return int(page["lastEventSeq"])


def test_who_may_read_fork_cancel_and_post(served: Served) -> None:
    run_id = served.request("POST", "/v1/runs", {"workflowId": "guestbook"})[1]["runId"]
    served.wait_status(run_id, "waiting-input")
    base = f"/v1/runs/{run_id}"
    before = _last(served, run_id)
    reads = [("GET", base, None), ("GET", f"{base}/events", None),
             ("GET", f"{base}/events/poll?timeout=0", None)]
    acts = [("POST", f"{base}/cancel", {}), ("POST", f"{base}:fork", {"fromSeq": before})]
    as_owner_member = ("POST", base + HALL, _post("as the owner, @guest", "owner", ("guest",)))
    as_guest = ("POST", base + HALL, _post("as the guest, @owner", "guest", ("owner",)))
    # carol: nothing at all.
    for method, path, body in [*reads, *acts, as_owner_member, as_guest]:
        status, answer, _ = served.request(method, path, body, token=CAROL)
        assert (status, answer["error"]) == (403, "forbidden"), (path, answer)
        assert "carol" in answer["message"] or answer["details"] == {"member": "guest"}
    status, answer, _ = served.request("GET", f"{base}/events", token=CAROL,
                                       headers={"Accept": "text/event-stream"})
    assert (status, answer["error"]) == (403, "forbidden")
    # bob, the guest: reads, and posts as the member that names him; no more.
    for method, path, body in reads:
        assert served.request(method, path, body, token=BOB)[0] == 200, path
    for method, path, body in [*acts, as_owner_member]:
        status, answer, _ = served.request(method, path, body, token=BOB)
        assert (status, answer["error"]) == (403, "forbidden"), (path, answer)
    # alice, the starter, may not speak for the guest (reserved for bob).
    status, answer, _ = served.request(*as_guest, token=ALICE)
    assert (status, answer["details"]) == (403, {"member": "guest"})
    assert _last(served, run_id) == before  # Nothing refused was appended.
    status, answer, _ = served.request(*as_guest, token=BOB)
    assert status == 200, answer
    status, answer, _ = served.request(*as_owner_member, token=ALICE)
    assert status == 200, answer
    # alice forks her run; the fork is hers (bob is its guest, carol still nobody).
    status, forked, _ = served.request("POST", f"{base}:fork", {"fromSeq": before}, token=ALICE)
    assert status == 201, forked
    fork_id = forked["runId"]
    assert served.request("GET", f"/v1/runs/{fork_id}", token=BOB)[0] == 200
    assert served.request("GET", f"/v1/runs/{fork_id}", token=CAROL)[0] == 403
    # ops, the admin: reads, forks and cancels anyone's run. A fork is owned as its source
    # (replay.md §Fork ownership: owner copied verbatim): alice's; ops is kept as who forked.
    assert served.request("GET", f"{base}/events", token=OPS)[0] == 200
    status, admin_fork, _ = served.request("POST", f"{base}:fork", {"fromSeq": before},
                                           token=OPS)
    assert status == 201, admin_fork
    assert served.request("GET", f"/v1/runs/{admin_fork['runId']}", token=ALICE)[0] == 200
    assert served.request("GET", f"/v1/runs/{admin_fork['runId']}", token=CAROL)[0] == 403
    started = served.request("GET", f"/v1/runs/{admin_fork['runId']}/events",
                             token=OPS)[1]["events"][0]["payload"]["metadata"]
    assert (started["principal"], started["forkedFrom"]["by"]) == ("alice", "ops")
    v2 = {"OpenWOP-Version": "2.0"}
    owner = served.request("GET", f"/runs/alice~2F{admin_fork['runId']}", token=ALICE,
                           headers=v2)[1]["owner"]
    assert owner == served.request("GET", f"/runs/alice~2F{run_id}", token=ALICE,
                                   headers=v2)[1]["owner"]
    assert owner["tenant"] == "alice"
    status, answer, _ = served.request("POST", f"/v1/runs/{fork_id}/cancel", {}, token=OPS)
    assert (status, answer["status"]) == (200, "cancelled")
    status, answer, _ = served.request("POST", f"{base}/cancel", {}, token=ALICE)
    assert (status, answer["status"]) == (200, "cancelled")
    served.stop()
    logs = served.logs()
    assert "Traceback" not in logs and all(t not in logs for t in (ALICE, BOB, CAROL, OPS))


def test_a_guest_cannot_exhaust_a_member(served: Served) -> None:
    run_id = served.request("POST", "/v1/runs", {"workflowId": "guestbook"})[1]["runId"]
    served.wait_status(run_id, "waiting-input")
    hall = f"/v1/runs/{run_id}{HALL}"
    status, answer, _ = served.request("POST", hall, _post("Hi @keeper @echo", None,
                                                           ("keeper", "echo")), token=BOB)
    assert status == 200, answer
    served.wait_status(run_id, "waiting-input")
    before = _last(served, run_id)
    for text, mentions, member, limit, value in [
            ("Again @keeper", ("keeper",), "keeper", "max_turns", 2),
            ("Again @echo", ("echo",), "echo", "script", 1),
            ("Both @echo @keeper", ("echo", "keeper"), "echo", "script", 1)]:
        status, answer, _ = served.request("POST", hall, _post(text, "guest", mentions),
                                           token=BOB)
        assert (status, answer["error"]) == (422, "member_turns_exhausted"), answer
        assert answer["details"]["member"] == member and \
            answer["details"]["limit"] == limit and answer["details"]["value"] == value
        assert f"@{member}" in answer["message"]
    # Mentions inside plain text count too.
    plain = {"resumeValue": {"content": "and now @keeper"}}
    status, answer, _ = served.request("POST", hall, plain, token=BOB)
    assert (status, answer["error"]) == (422, "member_turns_exhausted")
    assert _last(served, run_id) == before
    assert served.request("GET", f"/v1/runs/{run_id}")[1]["status"] == "waiting-input"
    # The run goes on and ends well.
    status, answer, _ = served.request("POST", hall, _post("Thanks, bye"), token=BOB)
    assert status == 200, answer
    snap = served.wait_status(run_id, "completed", "failed")
    assert snap["status"] == "completed", snap
