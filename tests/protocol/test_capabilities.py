"""The discovery document builder behind `wop capabilities`."""

from __future__ import annotations

import inspect

import pytest

from wopdsl import load
from wopdsl.engine import Engine
from wopdsl.protocol.capabilities import DEFAULT_MAX_PARTICIPANTS, capabilities, discovery


def test_defaults_match_the_limit_the_engine_enforces() -> None:
    engine_default = inspect.signature(Engine).parameters["max_participants"].default
    assert engine_default == DEFAULT_MAX_PARTICIPANTS
    assert capabilities()["multiPartyConversation"]["maxParticipants"] == DEFAULT_MAX_PARTICIPANTS


def test_required_v1_keys_and_consistency() -> None:
    doc = capabilities(4, implementation={"name": "x", "version": "1"})
    assert doc["protocolVersion"] == "1.0"
    assert doc["implementation"] == {"name": "x", "version": "1"}
    assert set(doc["schemaVersions"]) == set(doc["supportedEnvelopes"])
    assert all(isinstance(v, int) and v >= 0 for v in doc["schemaVersions"].values())
    assert all(isinstance(v, int) and v >= 0 for v in doc["limits"].values())
    assert doc["conversationPrimitive"] is True
    assert doc["multiPartyConversation"] == {"supported": True, "maxParticipants": 4}
    assert capabilities() is not capabilities()  # A fresh dict each time.


@pytest.mark.parametrize("bad", [1, 0, -3, True])
def test_a_multi_party_host_allows_at_least_two(bad: int) -> None:
    with pytest.raises(ValueError, match="maxParticipants must be an integer >= 2"):
        capabilities(bad)


def test_model_provenance_is_advertised_only_when_asked() -> None:
    assert "conversationTurnModelProvenance" not in capabilities()
    doc = capabilities(model_provenance=True)
    assert doc["conversationTurnModelProvenance"] == {"supported": True}


def test_llm_councils_but_not_fixtures_claim_model_provenance() -> None:
    review, release = load("councils/llm-review.toml"), load("councils/release-team.toml")
    assert "conversationTurnModelProvenance" not in discovery([release])
    assert discovery([release, review])["conversationTurnModelProvenance"] == {"supported": True}
    fixtures = discovery([release, review], fixtures={"llm-review"})
    assert "conversationTurnModelProvenance" not in fixtures
    assert fixtures["fixtures"] == ["llm-review"]
