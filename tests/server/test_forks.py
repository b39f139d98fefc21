"""``POST …/runs/{runId}:fork`` and the ``replay`` capability on a real host (v1 replay.md
§Endpoint, v2 replay.md §The surface and runs.md §Fork; the official `replay-fork`,
`v2-run-fork-refusals` and `v2-effect-seam-manifest` scenarios)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.server.conftest import ALICE, COUNCILS, Served

V2 = {"OpenWOP-Version": "2.0"}
MANIFEST = jsonschema.Draft202012Validator(json.loads(
    (Path(__file__).parent / "openwop_v2" / "effect-seam-manifest.schema.json").read_text()))


@pytest.fixture
def served(serve: Any, tokens_file: Path) -> Served:
    host: Served = serve(COUNCILS / "desk.toml", args=("--conformance", "--tokens",
                                                        str(tokens_file)), token=ALICE)
    return host


def _noop(served: Served) -> tuple[str, list[dict[str, Any]]]:
    status, created, _ = served.request("POST", "/v1/runs", {"workflowId": "conformance-noop"})
    assert status == 201, created
    served.wait_status(created["runId"], "completed")
    return created["runId"], _log(served, created["runId"])


def _log(served: Served, run_id: str) -> list[dict[str, Any]]:
    return list(served.request("GET", f"/v1/runs/{run_id}/events")[1]["events"])


def _fork(served: Served, run_id: str, body: dict[str, Any]) -> tuple[int, Any]:
    status, answer, _ = served.request("POST", f"/v1/runs/{run_id}:fork", body)
    return status, answer


def test_discovery_claims_branch_forks_and_names_the_manifest(served: Served) -> None:
    v1 = served.request("GET", "/.well-known/openwop", token=None)[1]
    assert v1["replay"] == {"supported": True, "modes": ["branch"]}
    v2 = served.request("GET", "/.well-known/openwop", token=None, headers=V2)[1]
    assert v2["replay"] == {"status": "experimental", "since": "2.0", "until": "3.0",
                            "witness": "witnessable-gated", "modes": ["branch"],
                            "effectSeamsManifest": "/host/effect-seams"}


def test_the_effect_seam_manifest_lists_the_guarded_tool_seams(served: Served) -> None:
    v1 = served.request("GET", "/v1/host/effect-seams")
    v2 = served.request("GET", "/host/effect-seams", headers=V2)
    assert v1[0] == v2[0] == 200 and v1[1] == v2[1]
    doc = v1[1]
    assert [e.message for e in MANIFEST.iter_errors(doc)] == []
    assert [s["seam"] for s in doc["seams"]] == ["tool.native", "tool.mcp-stdio", "tool.mcp-http"]
    assert all(s["guarded"] is True and "CallRunner" in s["guardedBy"] and s["branchReFires"]
               for s in doc["seams"])
    assert doc["host"]["name"] == "wopdsl" and len(doc["host"]["build"]["id"]) == 64
    # Negative: it is not public, and the v2 path needs the v2 header.
    assert served.request("GET", "/v1/host/effect-seams", token=None)[0] == 401
    status, body, _ = served.request("GET", "/host/effect-seams")
    assert (status, body["error"]) == (400, "validation_error")
    # The manifest does not validate with a row that is not guarded (the schema bites).
    assert list(MANIFEST.iter_errors({**doc, "seams": [{**doc["seams"][0], "guarded": False}]}))


def test_from_seq_is_exclusive_the_event_at_it_runs_again(served: Served) -> None:
    source, log = _noop(served)
    completed = next(e["sequence"] for e in log if e["type"] == "node.completed"
                     and e["nodeId"] == "noop")
    status, fork = _fork(served, source, {"mode": "branch", "fromSeq": completed})
    assert status == 201, fork
    assert (fork["sourceRunId"], fork["fromSeq"], fork["mode"]) == (source, completed, "branch")
    assert fork["eventsUrl"] == f"/v1/runs/{fork['runId']}/events"
    served.wait_status(fork["runId"], "completed")
    forked = _log(served, fork["runId"])
    assert [e["type"] for e in forked[:completed]] == [e["type"] for e in log[:completed]]
    assert forked[completed]["type"] != "node.completed"  # not carried over: re-executed
    assert forked[completed]["type"] == "run.resumed"
    meta = forked[0]["payload"]["metadata"]["forkedFrom"]
    assert (meta["runId"], meta["atSequence"], meta["by"]) == (source, completed - 1, "alice")
    for major in ([], ["--v2"]):  # The fork's log is valid OpenWOP (v1 and v2).
        check = subprocess.run([sys.executable, "-m", "wopdsl", "check", *major, "--store",
                                str(served.store), fork["runId"]], capture_output=True,
                               text=True, timeout=120, check=False)
        assert check.returncode == 0, check.stdout + check.stderr


@pytest.mark.parametrize("body", [{"mode": "replay", "fromSeq": 0}, {"mode": "replay"},
                                  {"mode": "branch", "fromSeq": 0, "runOptionsOverlay": {}},
                                  {"fromSeq": 1}])
def test_a_fork_from_the_start_runs_every_turn_again(served: Served,
                                                     body: dict[str, Any]) -> None:
    source, log = _noop(served)
    status, fork = _fork(served, source, body)
    assert status == 201, fork
    assert fork["fromSeq"] == body.get("fromSeq", 0)
    assert fork["mode"] == body.get("mode", "branch")
    served.wait_status(fork["runId"], "completed")
    forked = _log(served, fork["runId"])
    opened = next(e["sequence"] for e in log if e["type"] == "conversation.opened")
    # The openings follow from the declaration and the task: kept; every turn runs again.
    assert [e["type"] for e in forked[:opened + 1]] == [e["type"] for e in log[:opened + 1]]
    assert "node.started" in [e["type"] for e in forked[opened + 1:]]


def test_the_last_event_is_a_fork_point(served: Served) -> None:
    source, log = _noop(served)
    status, fork = _fork(served, source, {"mode": "branch", "fromSeq": log[-1]["sequence"]})
    assert status == 201, fork
    assert served.wait_status(fork["runId"], "completed")["status"] == "completed"


@pytest.mark.parametrize(("body", "status", "code", "field"), [
    ({"mode": "replay", "runOptionsOverlay": {"tags": ["x"]}}, 400, "validation_error",
     "runOptionsOverlay"),
    ({"mode": "branch", "fromSeq": 0, "runOptionsOverlay": {"tags": ["x"]}}, 400,
     "validation_error", "runOptionsOverlay"),
    ({"mode": "branch", "fromSeq": 0, "runOptionsOverlay": []}, 400, "validation_error",
     "runOptionsOverlay"),
    ({"mode": "branch"}, 400, "validation_error", "fromSeq"),
    ({"mode": "branch", "fromSeq": -1}, 400, "validation_error", "fromSeq"),
    ({"mode": "branch", "fromSeq": "3"}, 400, "validation_error", "fromSeq"),
    ({"mode": "rerun", "fromSeq": 0}, 400, "validation_error", "mode"),
    ({"mode": "branch", "fromSeq": 0, "extra": 1}, 400, "validation_error", None),
])
def test_a_fork_request_that_is_not_one_is_400(served: Served, body: dict[str, Any],
                                               status: int, code: str,
                                               field: str | None) -> None:
    source, _ = _noop(served)
    got, answer = _fork(served, source, body)
    assert (got, answer["error"]) == (status, code), answer
    if field is not None:
        assert answer["details"]["field"] == field
    assert answer["message"]


def test_a_from_seq_not_in_the_log_is_422_fork_point_invalid(served: Served) -> None:
    source, log = _noop(served)
    last = log[-1]["sequence"]
    for body in ({"mode": "branch", "fromSeq": last + 1}, {"mode": "replay", "fromSeq": 99999}):
        status, answer = _fork(served, source, body)
        assert (status, answer["error"]) == (422, "fork_point_invalid"), answer
        assert answer["details"] == {"sourceRunId": source, "fromSeq": body["fromSeq"],
                                     "lastSequence": last}
    status, answer, _ = served.request("POST", f"/runs/alice~2F{source}:fork",
                                       {"mode": "branch", "fromSeq": 999_999}, headers=V2)
    assert (status, answer["error"]) == (422, "fork_point_invalid")
    assert answer["details"]["sourceRunId"] == f"alice/{source}"  # bound, as v2 names runs
    # Nothing was forked by a refusal; an unknown run is 404.
    assert served.request("POST", "/v1/runs/nope:fork", {"mode": "branch", "fromSeq": 0}
                          )[0] == 404


def test_a_v2_replay_fork_answers_201_with_the_parents_owner(served: Served) -> None:
    source, _ = _noop(served)
    status, fork, _ = served.request("POST", f"/runs/alice~2F{source}:fork", {"mode": "replay"},
                                     headers=V2)
    assert status == 201, fork
    assert (fork["sourceRunId"], fork["mode"], fork["fromSeq"]) == (f"alice/{source}",
                                                                    "replay", 0)
    assert fork["eventsUrl"] == "/runs/" + fork["runId"].replace("/", "~2F") + "/events"
    parent = served.request("GET", f"/runs/alice~2F{source}", headers=V2)[1]
    child = served.request("GET", "/runs/" + fork["runId"].replace("/", "~2F"), headers=V2)[1]
    assert child["owner"] == parent["owner"]


def test_the_openapi_document_says_what_is_served(served: Served) -> None:
    paths = served.request("GET", "/v1/openapi.json", token=None)[1]["paths"]
    fork = paths["/v1/runs/{runId}:fork"]["post"]
    assert {"201", "400", "404", "422"} <= set(fork["responses"])
    body = fork["requestBody"]["content"]["application/json"]["schema"]
    assert "required" not in body and set(body["properties"]) == {
        "fromSeq", "mode", "runOptionsOverlay"}
    params = {p["name"]: p for p in paths["/v1/runs/{runId}/events"]["get"]["parameters"]}
    assert params["streamMode"]["schema"]["default"] == "updates"
    assert params["bufferMs"]["schema"]["maximum"] == 5000
    assert "/v1/host/effect-seams" in paths
    v2 = served.request("GET", "/openapi.json", token=None, headers=V2)[1]["paths"]
    assert "/host/effect-seams" in v2 and "/runs/{runId}:fork" in v2
