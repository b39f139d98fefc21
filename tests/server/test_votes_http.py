"""Voting over HTTP on a real `wop serve` (DESIGN.md §22): a turn whose content has ``votes``.

``POST /v1/runs/{id}/interrupts/room:board`` (and v2's ``/runs/{id}/interrupts/…``) with
``{"resumeValue": {"turn": {"content": {"text"?, "votes": [{decision, choice, reason}]}}}}``:
a vote with or without a post, refusals with the spec's error envelope and nothing appended,
a member reserved for a principal, and ``Idempotency-Key`` on a vote that saves no message.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.server.conftest import ALICE, BOB, REPO, Served

VOTE_BOARD = REPO / "tests" / "deliberation_councils" / "vote-board.toml"
V2 = {"OpenWOP-Version": "2.0"}
KEY = "vote-key-0123456789abcdefghij"  # also valid under v2's grammar


def _vote(choice: Any = "hold", reason: str = "billing risk", *, text: str | None = None,
          decision: str = "ship", member: str = "founder", **more: Any) -> dict[str, Any]:
    content: dict[str, Any] = {"votes": [{"decision": decision, "choice": choice,
                                          "reason": reason}], **more}
    if text is not None:
        content["text"] = text
    return {"resumeValue": {"operation": "exchange", "turn": {
        "role": "user", "speakerId": f"host:{member}", "content": content}}}


def _events(served: Served, run_id: str, token: str | None = "") -> list[dict[str, Any]]:
    status, page, _ = served.request("GET", f"/v1/runs/{run_id}/events", token=token)
    assert status == 200, page
    return list(page["events"])


def _founder(served: Served, run_id: str, token: str | None = "") -> list[Any]:
    return [e["payload"]["outputs"] for e in _events(served, run_id, token)
            if e["type"] == "node.completed" and e.get("nodeId") == "founder"]


def _posts_by_founder(served: Served, run_id: str) -> list[str]:
    return [e["payload"]["turn"]["content"]["text"] for e in _events(served, run_id)
            if e["type"] == "conversation.exchanged"
            and e["payload"]["turn"].get("speakerId") == "host:founder"]


def _started(served: Served, **kwargs: Any) -> str:
    status, created, _ = served.request("POST", "/v1/runs", {"workflowId": "vote-board"},
                                        **kwargs)
    assert status == 201, created
    served.wait_status(created["runId"], "waiting-input")
    return str(created["runId"])


def _check(served: Served, run_id: str) -> None:
    for flags in ((), ("--v2",)):
        done = subprocess.run([sys.executable, "-m", "wopdsl", "check", *flags, run_id,
                               "--store", str(served.store)],
                              capture_output=True, text=True, check=False, timeout=120)
        assert done.returncode == 0, done.stdout + done.stderr


def test_a_vote_without_text_saves_no_message_and_decides(serve: Any) -> None:
    served: Served = serve(VOTE_BOARD)
    run_id = _started(served)
    path = f"/v1/runs/{run_id}/interrupts/room:board"

    status, answer, _ = served.request("POST", path, _vote())

    assert status == 200, answer
    assert answer == {"runId": run_id, "nodeId": "room:board", "status": answer["status"]}
    served.wait_status(run_id, "completed")
    assert _founder(served, run_id) == [{"summary": "voted hold on ship", "votes": [
        {"decision": "ship", "choice": "hold", "reason": "billing risk"}]}]
    assert _posts_by_founder(served, run_id) == []
    snap = served.request("GET", f"/v1/runs/{run_id}")[1]  # a scale-free board reads back
    assert snap["status"] == "completed"
    completed = _events(served, run_id)[-1]["payload"]["outputs"]
    assert completed["answer"] == "Decision: hold (ship 1, hold 2). Dissent: cto, the " \
        "candidate is green."
    assert completed["decisions"][0]["dissent"] == [
        {"voter": "cto", "choice": "ship", "reason": "the candidate is green"}]
    _check(served, run_id)


def test_a_vote_with_text_posts_too_v2(serve: Any) -> None:
    served: Served = serve(VOTE_BOARD)
    status, created, _ = served.request("POST", "/runs", {"workflowId": "vote-board"},
                                        headers=V2)
    assert status == 201, created
    store_id = created["runId"].rsplit("/", 1)[-1]
    served.wait_status(store_id, "waiting-input")

    status, answer, _ = served.request(
        "POST", created["statusUrl"] + "/interrupts/room:board",
        _vote("SHIP", "green is green", text="Ship it."), headers=V2)

    assert status == 200, answer
    assert answer["runId"] == created["runId"] and answer["messageId"] == "team/founder/3/0"
    served.wait_status(store_id, "completed")
    assert _founder(served, store_id) == [{
        "summary": "Ship it.", "posts": [{"roomId": "board", "text": "Ship it.", "mentions": []}],
        "votes": [{"decision": "ship", "choice": "ship", "reason": "green is green"}]}]
    assert _posts_by_founder(served, store_id) == ["Ship it."]
    _check(served, store_id)


@pytest.mark.parametrize(("body", "status", "code", "says"), [
    (_vote("later"), 422, "validation_error",
     "choice 'later' is not an option of decision 'ship' (ship, hold)"),
    (_vote(decision="launch"), 422, "validation_error",
     "decision 'launch' does not exist (decisions: ship)"),
    (_vote(reason="x" * 2001), 422, "validation_error", "the reason must be text of at most"),
    (_vote(member="cfo"), 422, "validation_error", "cfo is a script member"),
    (_vote(member="ghost"), 422, "conversation_speaker_not_participant",
     "speakerId 'host:ghost' is not a participant of room 'board'"),
    ({"resumeValue": {"content": {"votes": "hold"}}}, 422, "validation_error",
     "content.votes must be a list of {decision, choice, reason}"),
    ({"resumeValue": {"content": {"votes": [{"choice": "hold"}]}}}, 422,
     "validation_error", "votes[0] must be {decision, choice, reason}"),
    ({"resumeValue": {"content": {"votes": [], "text": ""}}}, 422,
     "validation_error", "the post is empty"),
    ({"resumeValue": "hold"}, 400, "validation_error", "resumeValue must be a JSON object"),
    ({"resumeValue": {"operation": "close", "turn": {"content": {
        "votes": [{"decision": "ship", "choice": "hold"}]}}}}, 422, "validation_error",
     "votes go with an exchange, not a close"),
])
def test_refusals_are_clean_and_append_nothing(serve: Any, body: Any, status: int, code: str,
                                               says: str) -> None:
    served: Served = serve(VOTE_BOARD)
    run_id = _started(served)
    before = len(_events(served, run_id))

    got, answer, _ = served.request("POST", f"/v1/runs/{run_id}/interrupts/room:board", body)

    assert (got, answer["error"]) == (status, code), answer
    assert says in answer["message"]
    assert set(answer) <= {"error", "message", "details"}
    assert len(_events(served, run_id)) == before
    assert served.request("GET", f"/v1/runs/{run_id}")[1]["status"] == "waiting-input"
    assert "Traceback" not in served.logs()


def test_a_refused_vote_names_the_field(serve: Any) -> None:
    served: Served = serve(VOTE_BOARD)
    run_id = _started(served)
    body = _vote()
    body["resumeValue"]["turn"]["content"]["votes"].insert(0, {"decision": "ship",
                                                               "choice": "ship"})
    status, answer, _ = served.request("POST", f"/v1/runs/{run_id}/interrupts/room:board",
                                       body)
    assert (status, answer["error"]) == (422, "validation_error"), answer
    assert answer["message"] == "votes[1]: decision 'ship' is voted on twice in one turn"
    assert answer["details"]["field"] == "content.votes[1]"
    assert "vote on an open decision you are a voter of" in answer["details"]["hint"]


def test_a_second_vote_after_the_decision_closed_is_refused(serve: Any) -> None:
    served: Served = serve(VOTE_BOARD)
    run_id = _started(served)
    path = f"/v1/runs/{run_id}/interrupts/room:board"
    assert served.request("POST", path, _vote())[0] == 200
    served.wait_status(run_id, "completed")

    status, answer, _ = served.request("POST", path, _vote("ship"))

    assert (status, answer["error"]) == (409, "run_terminal"), answer
    assert len(_founder(served, run_id)) == 1


def test_only_the_principal_of_a_reserved_voter_votes_as_it(serve: Any, tmp_path: Path,
                                                            tokens_file: Path) -> None:
    councils = tmp_path / "councils"
    councils.mkdir()
    reserved = VOTE_BOARD.read_text().replace('engine = "human"\n',
                                              'engine = "human"\nprincipal = "alice"\n')
    assert 'principal = "alice"' in reserved
    (councils / "vote-board.toml").write_text(reserved)
    served: Served = serve(councils, args=("--tokens", str(tokens_file)), token=BOB)
    run_id = _started(served)  # bob's run: alice is a guest through founder
    path = f"/v1/runs/{run_id}/interrupts/room:board"

    status, answer, _ = served.request("POST", path, _vote(), token=BOB)
    assert (status, answer["error"]) == (403, "forbidden"), answer
    assert _founder(served, run_id, token=BOB) == []

    status, answer, _ = served.request("POST", path, _vote(), token=ALICE)
    assert status == 200, answer
    served.wait_status(run_id, "completed")
    assert _founder(served, run_id, token=BOB)[0]["votes"][0]["choice"] == "hold"


@pytest.mark.parametrize("v2", [False, True])
def test_a_keyed_vote_is_cast_once_and_answers_the_same(serve: Any, v2: bool) -> None:
    served: Served = serve(VOTE_BOARD)
    run_id = _started(served)
    headers = {"Idempotency-Key": KEY, **(V2 if v2 else {})}
    path = f"/runs/{run_id}/interrupts/room:board" if v2 else \
        f"/v1/runs/{run_id}/interrupts/room:board"

    status, first, first_headers = served.request("POST", path, _vote(), headers=headers)
    assert status == 200, first
    assert "messageId" not in first  # a vote alone saves no message
    served.wait_status(run_id, "completed")

    status, again, again_headers = served.request("POST", path, _vote(), headers=headers)

    assert (status, again) == (200, first)
    assert {k.lower(): v for k, v in again_headers.items()}.get(
        "openwop-idempotent-replay") == "true"
    assert "openwop-idempotent-replay" not in {k.lower() for k in first_headers}
    assert len(_founder(served, run_id)) == 1  # cast once
    status, answer, _ = served.request("POST", path, _vote("ship"), headers=headers)
    assert (status, answer["error"]) == (409, "idempotency_key_mismatch"), answer
    assert len(_founder(served, run_id)) == 1
