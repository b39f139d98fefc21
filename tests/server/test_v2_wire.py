"""OpenWOP v2 beside v1 on a real `wop serve`: negotiation, tenant-bound ids, shapes, auth.

Each rule (v2 versioning.md §1.3–§1.4, identity.md §5) with its positive and negative case.
"""

from __future__ import annotations

from typing import Any

from tests.server.conftest import ALICE, BOB, COUNCILS

V2 = {"OpenWOP-Version": "2.0"}
SUBJECT_LANES = {"api-key", "oauth2", "oidc", "mtls", "saml", "scim", "ldap", "workload",
                 "session", "anonymous"}
"""``lane`` of v2 ``subject.schema.json`` (RFC 0170); ``anonymous`` only with kind anonymous."""


def _lower(headers: dict[str, str]) -> dict[str, str]:
    return {k.lower(): v for k, v in headers.items()}


def test_the_header_selects_the_contract(serve: Any) -> None:
    served = serve(COUNCILS / "desk.toml")
    status, v1, h1 = served.request("GET", "/.well-known/openwop", token=None)
    status2, v2, h2 = served.request("GET", "/.well-known/openwop", token=None, headers=V2)
    assert (status, status2) == (200, 200)
    assert v1["protocolVersions"] == v2["protocolVersions"] == ["1.0", "2.0"]
    assert v1 != v2 and v2["limits"]["status"] == "stable"
    # RFC 0197 §C.7: never above the corpus row; experimental carries `until` (RFC 0169 §A.3).
    for family in ("conversationPrimitive", "multiPartyConversation"):
        assert (v2[family]["status"], v2[family]["until"]) == ("experimental", "3.0")
    assert v2["conversationPrimitive"]["witness"] == "claims-check"
    assert "until" not in v2["limits"]
    assert "supported" not in v2["multiPartyConversation"]  # v2: the record is the claim.
    assert {"capabilities", "profiles"}.isdisjoint(v2)
    assert _lower(h1)["openwop-version"] == "1.0" and _lower(h2)["openwop-version"] == "2.0"
    assert _lower(h1)["etag"] != _lower(h2)["etag"]
    status, body, headers = served.request("GET", "/.well-known/openwop", token=None,
                                           headers={"OpenWOP-Version": "9.0"})
    assert (status, body["error"]) == (406, "protocol_version_unsupported")
    assert body["details"]["protocolVersions"] == ["1.0", "2.0"]
    status, body, _ = served.request("GET", "/v1/openapi.json", token=None, headers=V2)
    assert (status, body["error"]) == (400, "protocol_version_mismatch")
    status, body, headers = served.request("GET", "/v1/openapi.json", token=None,
                                           headers={"OpenWOP-Version": "1.0"})
    assert status == 200 and _lower(headers)["openwop-version"] == "1.0"
    # Negative: the unversioned paths are v2 only.
    status, body, _ = served.request("GET", "/openapi.json", token=None)
    assert (status, body["error"]) == (400, "validation_error")
    status, doc, _ = served.request("GET", "/openapi.json", token=None, headers=V2)
    assert status == 200 and "/runs/{runId}/interrupts/{nodeId}" in doc["paths"]


def test_runs_are_tenant_bound_and_readable_through_both_majors(serve: Any,
                                                               tokens_file: Any) -> None:
    served = serve(COUNCILS / "desk.toml", args=("--tokens", str(tokens_file)), token=ALICE)
    status, created, _ = served.request("POST", "/runs", {"workflowId": "desk"}, headers=V2)
    assert status == 201 and created["runId"].startswith("alice/desk-")
    _tenant, store_id = created["runId"].split("/")
    assert created["statusUrl"] == f"/runs/alice~2F{store_id}"
    snap = served.request("GET", created["statusUrl"], headers=V2)[1]
    assert snap["runId"] == created["runId"] and snap["owner"]["tenant"] == "alice"
    assert served.request("GET", f"/v1/runs/{store_id}")[1]["runId"] == store_id
    # A run created through /v1 is read through /runs by its bare id (the overlap).
    v1_id = served.request("POST", "/v1/runs", {"workflowId": "desk"})[1]["runId"]
    assert served.request("GET", f"/runs/{v1_id}", headers=V2)[1]["runId"] == f"alice/{v1_id}"
    page = served.request("GET", f"/runs/{v1_id}/events/poll", headers=V2)[1]
    assert set(page) == {"runId", "events", "lastSequence", "status", "isTerminal"}
    assert {e["runId"] for e in page["events"]} == {f"alice/{v1_id}"}
    after = served.request("GET", f"/runs/{v1_id}/events/poll?afterSequence=2", headers=V2)[1]
    assert [e["sequence"] for e in after["events"]][:1] == [3]
    # Negative: another tenant's id is refused, and so is a caller without a token.
    status, body, _ = served.request("GET", created["statusUrl"], headers=V2, token=BOB)
    assert (status, body["error"]) == (403, "id_tenant_mismatch")
    status, body, _ = served.request("GET", created["statusUrl"], headers=V2, token=None)
    assert (status, body["error"]) == (401, "unauthenticated")  # The v2 registry's name.
    status, body, _ = served.request("GET", created["statusUrl"].replace(store_id, "x" * 16),
                                     headers=V2)
    assert (status, body["error"]) == (404, "not_found")  # v1 names it run_not_found.
    status, body, _ = served.request("GET", "/v1/runs/" + "x" * 16)
    assert (status, body["error"]) == (404, "run_not_found")


def test_the_chat_page_keeps_get_runs_without_the_header(serve: Any) -> None:
    served = serve(COUNCILS / "desk.toml")
    run_id = served.request("POST", "/v1/runs", {"workflowId": "desk"})[1]["runId"]
    status, page, _ = served.request("GET", f"/runs/{run_id}", token=None,
                                           headers={"Accept": "text/html"})
    assert status == 200 and "<html" in page.lower()
    status, snap, _ = served.request("GET", f"/runs/{run_id}", headers=V2)
    assert status == 200 and snap["owner"]["tenant"] == "local"
    # v2 subject.schema.json: `lane` is one of its enum; the local user of a host without
    # tokens signs in with no key (a session), a token holder with one (api-key, below).
    lane = snap["owner"]["subject"]["lane"]
    assert lane == "session" and lane in SUBJECT_LANES


def test_the_v2_owner_is_who_started_the_run_not_the_caller(serve: Any,
                                                            tokens_file: Any) -> None:
    served = serve(COUNCILS / "desk.toml", args=("--tokens", str(tokens_file)), token=ALICE)
    # bob starts a desk run; alice may read it (the desk's visitor names her).
    created = served.request("POST", "/runs", {"workflowId": "desk"}, headers=V2,
                             token=BOB)[1]
    assert created["runId"].startswith("bob/")
    store_id = created["runId"].split("/")[1]
    as_bob = served.request("GET", created["statusUrl"], headers=V2, token=BOB)[1]
    status, as_alice, _ = served.request("GET", f"/runs/{store_id}", headers=V2)
    assert status == 200 and as_alice["runId"] == f"alice/{store_id}"
    expected = {"tenant": "bob", "subject": {"issuer": "wopdsl", "subjectId": "bob",
                                             "tenant": "bob", "lane": "api-key",
                                             "kind": "user"}}
    assert as_bob["owner"] == as_alice["owner"] == expected
    assert as_bob["owner"]["subject"]["lane"] in SUBJECT_LANES
    # Negative: alice's own run names her, whoever reads it.
    mine = served.request("POST", "/runs", {"workflowId": "desk"}, headers=V2)[1]
    assert served.request("GET", mine["statusUrl"], headers=V2)[1]["owner"]["tenant"] == "alice"
    assert as_alice["owner"]["subject"]["subjectId"] != "alice"


def test_an_encoded_slash_is_one_bound_id_on_v2_and_no_run_on_v1(serve: Any,
                                                                tokens_file: Any) -> None:
    """RFC 0184: a bound id travels as `<tenant>~2F<id>`; `<tenant>%2F<id>` MUST still be
    accepted. A v1 run id holds no `/`, so `%2F` in a v1 run segment names no run."""
    served = serve(COUNCILS / "desk.toml", args=("--tokens", str(tokens_file)), token=ALICE)
    created = served.request("POST", "/runs", {"workflowId": "desk"}, headers=V2)[1]
    store_id = created["runId"].split("/")[1]
    # Positive: every one-segment form of the bound id names the run.
    for path in (f"/runs/alice~2F{store_id}", f"/runs/alice%2F{store_id}",
                 f"/runs/alice%2f{store_id}"):
        status, snap, _ = served.request("GET", path, headers=V2)
        assert (status, snap["runId"]) == (200, created["runId"]), (path, snap)
    page = served.request("GET", f"/runs/alice%2F{store_id}/events/poll", headers=V2)[1]
    assert {e["runId"] for e in page["events"]} == {created["runId"]}
    assert served.request("GET", f"/v1/runs/{store_id}/events")[0] == 200
    # Negative: %2F is never decoded into another resource, a 500 or another tenant.
    for method, path, headers in [
            ("GET", f"/v1/runs/{store_id}%2Fevents", {}),
            ("GET", f"/v1/runs/{store_id}%2fevents%2Fpoll", {}),
            ("POST", f"/v1/runs/{store_id}%2Fcancel", {}),
            ("POST", f"/runs/alice%2F{store_id}%2Fcancel", V2),
            ("GET", f"/runs/alice~7E2F{store_id}", V2)]:  # Projected twice.
        status, body, _ = served.request(method, path, {} if method == "POST" else None,
                                         headers=headers)
        assert status == 404, (method, path, status, body)
        assert body["error"] == ("not_found" if headers else "run_not_found")
        assert body["details"]["runId"]
        assert set(body) == {"error", "message", "details"}
    status, body, _ = served.request("GET", f"/runs/bob%2F{store_id}", headers=V2)
    assert (status, body["error"]) == (403, "id_tenant_mismatch")
    status, snap, _ = served.request("GET", f"/v1/runs/{store_id}")
    assert status == 200 and snap["status"] != "cancelled"


def test_bulk_cancel_answers_each_id_on_its_own(serve: Any, tokens_file: Any) -> None:
    """v1 rest-endpoints.md §bulk-cancel, v2 runs.md §Cancel: 200 with per-id results."""
    served = serve(COUNCILS / "desk.toml", args=("--conformance", "--tokens", str(tokens_file)),
                   token=ALICE)

    def create(workflow: str, headers: dict[str, str], **inputs: Any) -> str:
        path = "/runs" if headers else "/v1/runs"
        status, body, _ = served.request("POST", path, {"workflowId": workflow,
                                                        "inputs": inputs}, headers=headers)
        assert status == 201, body
        return str(body["runId"])

    long = create("conformance-cancellable", {}, delaySeconds=30)  # The v1 scenario's input.
    done = create("conformance-noop", {})
    served.wait_status(done, "completed")
    status, body, _ = served.request("POST", "/v1/runs:bulk-cancel",
                                     {"runIds": [long, "no-such-run-0000", done]})
    assert status == 200, body
    assert [(r["runId"], r["ok"]) for r in body["results"]] == \
        [(long, True), ("no-such-run-0000", False), (done, False)]
    assert body["results"][0]["status"] == "cancelled"
    assert [r["error"]["code"] for r in body["results"][1:]] == ["not_found", "run_terminal"]
    again = served.request("POST", "/v1/runs:bulk-cancel", {"runIds": [long]})[1]
    assert again["results"] == [{"runId": long, "ok": True, "status": "cancelled"}]
    # v2: bound ids; another tenant's id is refused in its entry, never as a top-level 403.
    mine = create("conformance-cancellable", V2)
    foreign = "bob/conformance-cancellable-0123456789abcdef"
    status, body, _ = served.request("POST", "/runs:bulk-cancel",
                                     {"runIds": [mine, foreign], "reason": "done"}, headers=V2)
    assert status == 200, body
    assert body["results"][0] == {"runId": mine, "ok": True, "status": "cancelled"}
    refused = body["results"][1]["error"]  # v2: the error envelope (error-envelope.schema.json)
    assert refused["error"] == "id_tenant_mismatch" and refused["message"]
    assert "code" not in refused
    # Negative: none, or more than the cap, is 400 validation_error with details.maxRunIds.
    for ids in ([], [f"r-{i}" for i in range(101)], "not-a-list"):
        for path, headers in (("/v1/runs:bulk-cancel", {}), ("/runs:bulk-cancel", V2)):
            status, body, _ = served.request("POST", path, {"runIds": ids}, headers=headers)
            assert (status, body["error"], body["details"]["maxRunIds"]) == \
                (400, "validation_error", 100), (path, ids, body)
    status, body, _ = served.request("POST", "/runs:bulk-cancel", {"runIds": [mine]})
    assert (status, body["error"]) == (400, "validation_error")  # A v2 path without the header.
    assert "/v1/runs:bulk-cancel" in served.request("GET", "/v1/openapi.json")[1]["paths"]
    assert "/runs:bulk-cancel" in served.request("GET", "/openapi.json", headers=V2)[1]["paths"]


def test_a_malformed_escape_in_a_bound_id_is_refused(serve: Any, tokens_file: Any) -> None:
    """RFC 0184: a `~` that does not introduce two hex digits is 400, not 404."""
    served = serve(COUNCILS / "desk.toml", args=("--tokens", str(tokens_file)), token=ALICE)
    for segment in ("alice~2", "alice~zz", "alice~"):
        status, body, _ = served.request("GET", f"/runs/{segment}", headers=V2)
        assert (status, body["error"]) == (400, "validation_error"), (segment, body)
    status, body, _ = served.request("GET", "/runs/alice~2Fno-such-run-000000", headers=V2)
    assert (status, body["error"]) == (404, "not_found")


def test_an_unknown_v2_path_is_not_found(serve: Any) -> None:
    """A v2 operation this host does not serve is a host answer: 404 not_found, versioned."""
    served = serve(COUNCILS / "desk.toml")
    status, body, headers = served.request("POST", "/webhooks", raw=b"{", headers=V2)
    assert (status, body["error"]) == (404, "not_found")
    assert _lower(headers)["openwop-version"] == "2.0"
    for path in ("/prompts", "/content/settings"):  # Unadvertised operations (RFC 0228 §H).
        status, body, _ = served.request("GET", path, headers=V2)
        assert (status, body["error"]) == (404, "not_found"), path
    status, body, _ = served.request("POST", "/runs", raw=b"{", headers=V2)  # Served: 400.
    assert (status, body["error"]) == (400, "validation_error")
    status, body, _ = served.request("GET", "/nowhere")  # No header: not a versioned root.
    assert (status, body["error"]) == (400, "validation_error")
