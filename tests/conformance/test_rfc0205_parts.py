"""RFC 0205 §B: v2 conversation turns carry A2A ``parts``.

What the official scenario ``v2-conversation-turn-parts`` (suite 2.36.0) checks, on a real
``wop serve --conformance``: the ``conformance-conversation-lifecycle`` fixture, created and
read over v2, completes; its ``conversation.exchanged`` turns carry ``parts``, and every turn
that does validates (the v2 turn def, its ``parts`` a non-empty array of
``v2/part.schema.json``). Beside it: the parts follow the content, v1 is unchanged, and
``wop check --v2`` refuses malformed parts.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any
from urllib.parse import quote

import pytest

from wopdsl.protocol.check_v2 import as_v2, check_events_v2, v2_event_errors
from wopdsl.protocol.openwop import bundled_schemas, errors_of

pytest.importorskip("starlette", reason="needs the server extra")

V2 = {"OpenWOP-Version": "2.0"}
FIXTURE = "conformance-conversation-lifecycle"
RUN = "a2a-parts-00000001"


def _exchanged(turn: dict[str, Any], sequence: int = 5) -> dict[str, Any]:
    return {"eventId": f"evt.{RUN}.{sequence:012d}", "runId": RUN, "sequence": sequence,
            "type": "conversation.exchanged", "timestamp": "2026-01-01T00:00:00.000Z",
            "schemaVersion": 1, "nodeId": "room:desk",
            "payload": {"conversationId": f"{RUN}:room:desk", "turnIndex": 1, "turn": turn}}


def _turn(**extra: Any) -> dict[str, Any]:
    return {"messageId": "team/a/1/0", "from": "a", "role": "agent", "ts": 1, "turnIndex": 1,
            "groupId": "desk", "speakerId": "host:a",
            "content": {"text": "Ship it, @b.", "mentions": ["b"]}, **extra}


def test_the_lifecycle_fixture_emits_turns_whose_parts_validate(tmp_path: Path) -> None:
    from tests.server.conftest import start_server

    served = start_server(tmp_path, args=("--conformance",), default_paths=True)
    try:
        discovery = served.request("GET", "/.well-known/openwop", headers=V2)[1]
        assert FIXTURE in discovery["fixtures"] and "conversationPrimitive" in discovery
        status, created, _ = served.request("POST", "/runs", {"workflowId": FIXTURE},
                                            headers=V2)
        assert status == 201, created
        run_id = quote(created["runId"], safe="")  # bound: <tenant>/<id>, one path segment
        deadline = time.monotonic() + 20
        while served.request("GET", f"/runs/{run_id}", headers=V2)[1]["status"] != "completed":
            assert time.monotonic() < deadline, "the fixture did not complete"
            time.sleep(0.05)
        events = served.request("GET", f"/runs/{run_id}/events/poll?timeout=1",
                                headers=V2)[1]["events"]
        v1 = served.request("GET", f"/v1/runs/{created['runId'].split('/')[-1]}/events"
                            )[1]["events"]
    finally:
        served.stop()
    turns = [e["payload"]["turn"] for e in events if e["type"] == "conversation.exchanged"]
    assert turns and all("parts" in t for t in turns)  # not inapplicable: every one is shaped
    schemas = bundled_schemas()
    for turn in turns:
        assert turn["parts"][0] == {"text": turn["content"]["text"]}
        bare = {k: v for k, v in turn.items() if k != "parts"}
        assert errors_of(schemas.turn, bare) == [] and errors_of(schemas.parts,
                                                                 turn["parts"]) == []
    v1_turns = [e["payload"]["turn"] for e in v1 if e["type"] == "conversation.exchanged"]
    assert len(v1_turns) == len(turns) and not any("parts" in t for t in v1_turns)  # v1 as is


def test_the_parts_follow_the_content() -> None:
    turn = as_v2(_exchanged(_turn()))["payload"]["turn"]
    assert turn["parts"] == [{"text": "Ship it, @b."},
                             {"data": {"mentions": ["b"]}, "mediaType": "application/json"}]
    assert turn["content"] == {"text": "Ship it, @b.", "mentions": ["b"]}  # kept readable
    voted = as_v2(_exchanged(_turn(content={"text": "", "mentions": [], "votes": [
        {"decision": "ship", "choice": "yes"}]})))["payload"]["turn"]
    assert voted["parts"] == [{"data": {"votes": [{"decision": "ship", "choice": "yes"}]},
                               "mediaType": "application/json"}]
    empty = as_v2(_exchanged(_turn(content={"text": "", "mentions": []})))["payload"]["turn"]
    assert "parts" not in empty  # parts are never an empty array
    kept = [{"url": "https://example.com/a.pdf", "mediaType": "application/pdf"}]
    assert as_v2(_exchanged(_turn(parts=kept)))["payload"]["turn"]["parts"] == kept


@pytest.mark.parametrize(("parts", "why"), [
    ([], "should be non-empty"),
    ([{"kind": "text", "text": "x"}], "Additional properties are not allowed ('kind'"),
    ([{"text": "a", "data": {"b": 1}}], "is valid under each of"),
    ([{"mediaType": "text/plain"}], "is not valid under any of the given schemas"),
    ("hello", "is not of type 'array'"),
])
def test_wop_check_v2_refuses_malformed_parts(parts: Any, why: str) -> None:
    errors = v2_event_errors(as_v2(_exchanged(_turn(parts=parts))))
    assert [label for label, _ in errors] == ["turn-parts"], errors
    assert why in errors[0][1]


def test_wop_check_v2_takes_well_formed_parts() -> None:
    parts = [{"text": "Ship it."}, {"raw": "iVBORw0KGgo=", "mediaType": "image/png"},
             {"data": {"n": 1}, "metadata": {"openwop": {"k": "v"}}}]
    assert v2_event_errors(as_v2(_exchanged(_turn(parts=parts)))) == []
    assert not [v for v in check_events_v2([_exchanged(_turn())])
                if "parts" in v.check or "turn" in v.check]
