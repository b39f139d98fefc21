"""The spec's error codes and details on the HTTP host (issue 26; `--json`: tests/cli).

A real `wop serve` on loopback. Each rule has its
positive case (the code and the detail the spec names) and its negative case (the request
that the rule lets through).
"""

from __future__ import annotations

from typing import Any

from tests.server.conftest import REPO

COUNCILS = REPO / "councils"
COUNCIL = COUNCILS / "conformance-multi-party-council.toml"
OVERSIZE = COUNCILS / "conformance-multi-party-council-oversize.toml"


def test_an_oversize_roster_is_conversation_roster_exceeded(serve: Any) -> None:
    served = serve(COUNCIL, OVERSIZE, args=("--max-participants", "8"))
    status, body, _ = served.request("POST", "/v1/runs",
                                     {"workflowId": "conformance-multi-party-council-oversize"})
    assert (status, body["error"]) == (422, "conversation_roster_exceeded"), body
    assert body["details"]["maxParticipants"] == 8
    assert body["details"]["roomId"] == "convo"
    # Negative: the 3-member council fits the same host.
    status, body, _ = served.request("POST", "/v1/runs",
                                     {"workflowId": "conformance-multi-party-council"})
    assert status == 201, body


def test_an_intruder_names_its_speaker_id_and_a_member_is_accepted(serve: Any) -> None:
    served = serve(COUNCIL)
    run_id = served.request("POST", "/v1/runs",
                            {"workflowId": "conformance-multi-party-council"})[1]["runId"]
    served.wait_status(run_id, "waiting-input")
    turn = {"role": "agent", "speakerId": "host:conformance-intruder", "content": "hi"}
    # The published fixture's gate node is `convo`; the host answers it as `room:convo`.
    status, body, _ = served.request("POST", f"/v1/runs/{run_id}/interrupts/convo",
                                     {"resumeValue": turn})
    assert (status, body["error"]) == (422, "conversation_speaker_not_participant"), body
    assert body["details"]["speakerId"] == "host:conformance-intruder"
    assert served.request("GET", f"/v1/runs/{run_id}")[1]["status"] == "waiting-input"
    member = {**turn, "speakerId": "host:conformance-council-a"}
    status, body, _ = served.request("POST", f"/v1/runs/{run_id}/interrupts/convo",
                                     {"resumeValue": member})
    assert status == 200 and body["nodeId"] == "convo", body
    events = served.request("GET", f"/v1/runs/{run_id}/events")[1]["events"]
    exchanged = [e for e in events if e["type"] == "conversation.exchanged"]
    assert [e["payload"]["turn"]["speakerId"] for e in exchanged] == \
        ["host:conformance-council-a"]
    # Negative: a node that is no room of the run is still 404.
    status, body, _ = served.request("POST", f"/v1/runs/{run_id}/interrupts/elsewhere",
                                     {"resumeValue": member})
    assert (status, body["error"]) == (404, "interrupt_not_found")


def test_a_turn_after_cancel_is_interrupt_already_resolved_on_v2(serve: Any) -> None:
    # RFC 0213 §C (v2 errors.md §One code per state): a resolve on a run that has ended is
    # 409 interrupt_already_resolved; v2 registers interrupt_cancelled for no state.
    served = serve(COUNCIL)
    run_id = served.request("POST", "/v1/runs",
                            {"workflowId": "conformance-multi-party-council"})[1]["runId"]
    served.wait_status(run_id, "waiting-input")
    turn = {"resumeValue": {"role": "agent", "speakerId": "host:conformance-council-a",
                            "content": "late"}}
    assert served.request("POST", f"/v1/runs/{run_id}/cancel", {})[0] == 200
    last = served.request("GET", f"/v1/runs/{run_id}/events")[1]["lastEventSeq"]
    for node in ("convo", "room:convo", "conformance-council-a"):
        status, body, _ = served.request("POST", f"/runs/{run_id}/interrupts/{node}", turn,
                                         headers={"OpenWOP-Version": "2.0"})
        assert (status, body["error"]) == (409, "interrupt_already_resolved"), (node, body)
        assert body["details"]["runId"] == f"local/{run_id}"
    # v1 keeps its answer for a cancelled run; nothing was appended either way.
    status, body, _ = served.request("POST", f"/v1/runs/{run_id}/interrupts/convo", turn)
    assert (status, body["error"]) == (422, "interrupt_cancelled"), body
    assert served.request("GET", f"/v1/runs/{run_id}/events")[1]["lastEventSeq"] == last
    # Negative: a running run takes the turn on v2.
    live = served.request("POST", "/v1/runs",
                          {"workflowId": "conformance-multi-party-council"})[1]["runId"]
    served.wait_status(live, "waiting-input")
    status, body, _ = served.request("POST", f"/runs/{live}/interrupts/convo", turn,
                                     headers={"OpenWOP-Version": "2.0"})
    assert status == 200 and body["runId"] == f"local/{live}", body


def test_an_unknown_run_is_run_not_found(serve: Any) -> None:
    served = serve(COUNCIL)
    for path in ("/v1/runs/no-such-run", "/v1/runs/no-such-run/events",
                 "/v1/runs/no-such-run/events/poll?timeout=0"):
        status, body, _ = served.request("GET", path)
        assert (status, body["error"]) == (404, "run_not_found"), (path, body)
        assert body["details"]["runId"] == "no-such-run"
    status, body, _ = served.request("POST", "/v1/runs/no-such-run/cancel", {})
    assert (status, body["error"]) == (404, "run_not_found")
    run_id = served.request("POST", "/v1/runs",
                            {"workflowId": "conformance-multi-party-council"})[1]["runId"]
    assert served.request("GET", f"/v1/runs/{run_id}")[0] == 200


def test_discovery_is_cacheable_and_revalidates_with_304(serve: Any) -> None:
    served = serve(COUNCIL)
    status, doc, raw = served.request("GET", "/.well-known/openwop", token=None)
    headers = {k.lower(): v for k, v in raw.items()}
    assert status == 200 and doc["protocolVersion"] == "1.0"
    assert "max-age=" in headers["cache-control"]
    etag = headers["etag"]
    assert etag.startswith('"') and len(etag) > 2
    status, body, again = served.request("GET", "/.well-known/openwop", token=None,
                                         headers={"If-None-Match": etag})
    assert (status, body) == (304, "")
    assert {k.lower(): v for k, v in again.items()}["etag"] == etag
    # Negative: another validator gets the document.
    status, doc, _ = served.request("GET", "/.well-known/openwop", token=None,
                                    headers={"If-None-Match": '"stale"'})
    assert status == 200 and doc["limits"]["envelopesPerTurn"] == 1
