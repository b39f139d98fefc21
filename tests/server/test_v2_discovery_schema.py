"""The v2 discovery document validates against the spec's closed capabilities root.

``v2-capabilities-root-closed`` (RFC 0169 §A.1–§A.4, v2 ``capabilities.md`` §3): the v2
representation of ``/.well-known/openwop`` validates against ``schemas/v2/capabilities.schema.json``
— every family a capability record ``{status, since, witness, until?, …facets}``, nothing else
at the root. The schema here is an excerpt of the real one (the validation keywords of every
key wopdsl can emit; see its ``$comment``), closed over those keys.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.server.conftest import COUNCILS
from wopdsl.protocol.capabilities import capabilities
from wopdsl.server.v2.shapes import discovery_v2

V2 = {"OpenWOP-Version": "2.0"}
SCHEMA = json.loads((Path(__file__).parent / "openwop_v2" /
                     "capabilities.excerpt.schema.json").read_text())
VALIDATOR = jsonschema.Draft202012Validator(SCHEMA)


def _errors(doc: dict[str, Any]) -> list[str]:
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}"
            for e in VALIDATOR.iter_errors(doc)]


def test_the_served_v2_document_validates_and_v1_keeps_its_shape(serve: Any) -> None:
    served = serve(COUNCILS / "desk.toml", args=("--conformance",))
    v2 = served.request("GET", "/.well-known/openwop", token=None, headers=V2)[1]
    assert _errors(v2) == []
    # The v1 envelope list and map are not v2 records, and the turn-result kind is under no
    # registered org (v2 events.md §E3): no record for either.
    assert {"supportedEnvelopes", "schemaVersions"}.isdisjoint(v2)
    v1 = served.request("GET", "/.well-known/openwop", token=None)[1]
    assert v1["supportedEnvelopes"] == ["council.turn-result"]  # v1 requires them.
    assert v1["schemaVersions"] == {"council.turn-result": 1}


def test_every_record_wopdsl_can_emit_validates() -> None:
    v1 = capabilities(8, implementation={"name": "wopdsl", "version": "0"},
                      model_provenance=True)
    v1["limits"]["maxRequestBodyBytes"] = 262144
    v2 = discovery_v2(v1 | {"fixtures": ["conformance-noop"]})
    assert _errors(v2) == []
    assert v2["conversationTurnModelProvenance"] == {
        "status": "experimental", "since": "2.0", "until": "3.0", "witness": "witnessable-gated"}
    assert v2["multiPartyConversation"]["maxParticipants"] == 8
    assert all(v2[f]["since"] in v2["protocolVersions"]
               for f in ("limits", "conversationPrimitive", "multiPartyConversation"))


@pytest.mark.parametrize("change", [
    pytest.param({"supportedEnvelopes": ["council.turn-result"]}, id="v1-envelope-array"),
    pytest.param({"schemaVersions": {"council.turn-result": 1}}, id="v1-schema-map"),
    pytest.param({"openwopConformanceUnknownRootKey": {
        "status": "stable", "since": "2.0", "witness": "claims-check"}}, id="unknown-root-key"),
    pytest.param({"host.replay": {"status": "stable", "since": "2.0",
                                  "witness": "claims-check"}}, id="dotted-mirror-key"),
    pytest.param({"capabilities": {}}, id="v1-wrapper"),
    pytest.param({"profiles": ["openwop-discovery-core"]}, id="root-profiles"),
    pytest.param({"conversationPrimitive": True}, id="v1-boolean-family"),
    pytest.param({"conversationPrimitive": {"status": "experimental", "since": "2.0",
                                            "witness": "claims-check"}},
                 id="experimental-without-until"),
    pytest.param({"limits": {"status": "stable", "since": "2.0", "until": "3.0",
                             "witness": "witnessable-gated", "clarificationRounds": 0,
                             "schemaRounds": 0, "envelopesPerTurn": 1}},
                 id="stable-with-until"),
    pytest.param({"multiPartyConversation": {"status": "experimental", "since": "2.0",
                                             "until": "3.0", "witness": "witnessable-gated",
                                             "supported": True}}, id="supported-in-record"),
    pytest.param({"multiPartyConversation": {"status": "experimental", "since": "2.0",
                                             "until": "3.0", "witness": "witnessable-gated",
                                             "maxParticipants": 1}}, id="roster-below-two"),
])
def test_what_the_closed_root_refuses(change: dict[str, Any]) -> None:
    good = discovery_v2(capabilities(8))
    assert _errors(good) == []
    assert _errors(good | change) != []
