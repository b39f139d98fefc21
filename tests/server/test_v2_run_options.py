"""v2 run creation on a real `wop serve`: the `Idempotency-Key` grammar and the run options.

The rules of the official suite's `v2-idempotency-key-grammar` (v2 idempotency.md §Layer 1)
and `v2-run-options-limits` (v2 runs.md §Run options), each with its positive and negative
case.
"""

from __future__ import annotations

from typing import Any

from tests.server.conftest import ALICE, COUNCILS
from wopdsl import SqliteStore

V2 = {"OpenWOP-Version": "2.0"}
ODD_TAGS = ["has space", "emoji \U0001f680", "slash/colon:pipe|", "UPPER-and_under", "x" * 256]
METADATA = {"nested": {"a": 1, "b": [1, "2", None, True]}, "s": "unicode \u221e ok", "n": 0}


def _runs(served: Any) -> int:
    return len(SqliteStore(served.store).runs())


def test_a_v2_idempotency_key_outside_the_grammar_is_refused(serve: Any,
                                                              tokens_file: Any) -> None:
    served = serve(COUNCILS / "desk.toml", args=("--tokens", str(tokens_file)), token=ALICE)
    good = "AAECAwQFBgcICQoLDA0ODw"  # 16 bytes in base64url: 22 characters.
    status, created, _ = served.request("POST", "/runs", {"workflowId": "desk"},
                                        headers={**V2, "Idempotency-Key": good})
    assert status == 201
    again = served.request("POST", "/runs", {"workflowId": "desk"},
                           headers={**V2, "Idempotency-Key": good})
    assert again[0] == 201 and again[1]["runId"] == created["runId"]
    before = _runs(served)
    for bad in ("short", "x" * 129, "has space" + "a" * 20, "a/b" * 10):
        status, body, _ = served.request("POST", "/runs", {"workflowId": "desk"},
                                         headers={**V2, "Idempotency-Key": bad})
        assert (status, body["error"]) == (400, "idempotency_key_invalid"), bad
        assert body["details"]["field"] == "Idempotency-Key"
    assert _runs(served) == before  # Refused before anything ran, and nothing kept.
    # v1 keeps its own rule: 1-255 visible ASCII characters.
    status, _, _ = served.request("POST", "/v1/runs", {"workflowId": "desk"},
                                  headers={"Idempotency-Key": "short"})
    assert status == 201


def test_v2_run_options_are_bounded_and_surface_unchanged(serve: Any,
                                                          tokens_file: Any) -> None:
    served = serve(COUNCILS / "desk.toml", args=("--tokens", str(tokens_file)), token=ALICE)
    status, created, _ = served.request(
        "POST", "/runs", {"workflowId": "desk", "tags": ODD_TAGS, "metadata": METADATA},
        headers=V2)
    assert status == 201  # No tag is refused on its format.
    snap = served.request("GET", created["statusUrl"], headers=V2)[1]
    assert snap["tags"] == ODD_TAGS and snap["metadata"] == METADATA
    # The closed v2 snapshot carries host state in its extension seat (RFC 0169 §A.4).
    assert snap["extensions"]["wopdsl.council"]["digest"].startswith("sha256:")
    assert not [key for key in snap if key.startswith("x-")]
    plain = served.request("POST", "/runs", {"workflowId": "desk"}, headers=V2)[1]
    snap = served.request("GET", plain["statusUrl"], headers=V2)[1]
    assert "tags" not in snap and "metadata" not in snap
    # Negative: over the limits, or a key the closed create body does not name.
    before = _runs(served)
    for body, field in (({"tags": [f"t{i}" for i in range(101)]}, "tags"),
                        ({"tags": ["y" * 257]}, "tags[0]"),
                        ({"tags": [""]}, "tags[0]"),
                        ({"conformanceUnknownRootKey": 1}, None)):
        status, answer, _ = served.request("POST", "/runs", {"workflowId": "desk", **body},
                                           headers=V2)
        assert (status, answer["error"]) == (400, "validation_error"), body
        if field is not None:
            assert answer["details"]["field"] == field
    assert _runs(served) == before
    # The keys the host adds beside the caller's metadata stay out of it; a clash is refused.
    created = served.request("POST", "/runs", {"workflowId": "desk", "metadata": {"a": 1},
                                               "tenantId": "t1"}, headers=V2)[1]
    assert served.request("GET", created["statusUrl"], headers=V2)[1]["metadata"] == {"a": 1}
    for clash in ({"metadata": {"tenantId": "x"}, "tenantId": "t1"},
                  {"metadata": {"runOptions": 1}}):
        status, answer, _ = served.request("POST", "/runs", {"workflowId": "desk", **clash},
                                           headers=V2)
        assert (status, answer["error"]) == (400, "validation_error"), clash


def test_v2_configurable_is_closed_and_versioned(serve: Any, tokens_file: Any) -> None:
    served = serve(COUNCILS / "desk.toml", args=("--tokens", str(tokens_file)), token=ALICE)
    status, _, _ = served.request("POST", "/runs",
                                  {"workflowId": "desk", "configurable": {"version": 1}},
                                  headers=V2)
    assert status == 201  # The control: a versioned, empty configurable.
    before = _runs(served)
    for configurable, field in (({"version": 1, "ai": {"ai.provider": "x"}}, "configurable.ai"),
                                ({"version": 1, "unknownKey": 1}, "configurable.unknownKey"),
                                ({"ai": {"provider": "x"}}, "configurable.version"),
                                ({"version": 2}, "configurable.version")):
        status, body, _ = served.request("POST", "/runs",
                                         {"workflowId": "desk", "configurable": configurable},
                                         headers=V2)
        assert (status, body["error"], body["details"]["field"]) == (
            400, "validation_error", field), configurable
    assert _runs(served) == before
    # v1 keeps its rule: a non-empty configurable is not supported.
    status, body, _ = served.request("POST", "/v1/runs",
                                     {"workflowId": "desk", "configurable": {"version": 1}})
    assert (status, body["details"]["field"]) == (400, "configurable")


def test_every_run_is_stamped_with_its_event_log_era(serve: Any, tokens_file: Any) -> None:
    """v2 persistence.md §The era key: every new run is era 3, as v2 discovery says.

    (v1 version-negotiation.md §Stamping takes 2 and above; an old run without the key is 2.)
    """
    served = serve(COUNCILS / "desk.toml", args=("--tokens", str(tokens_file)), token=ALICE)
    run_id = served.request("POST", "/v1/runs", {"workflowId": "desk"})[1]["runId"]
    assert served.request("GET", f"/v1/runs/{run_id}")[1]["eventLogSchemaVersion"] == 3
    era = served.request("GET", "/.well-known/openwop", token=None,
                         headers=V2)[1]["eventLogSchemaVersion"]
    created = served.request("POST", "/runs", {"workflowId": "desk"}, headers=V2)[1]
    snap = served.request("GET", created["statusUrl"], headers=V2)[1]
    assert snap["eventLogSchemaVersion"] == era == 3  # Written in v2 vocabulary (tests/store).
    v1_doc = served.request("GET", "/.well-known/openwop", token=None)[1]
    assert "eventLogSchemaVersion" not in v1_doc
