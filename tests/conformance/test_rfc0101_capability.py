"""RFC 0101 capability: ``multiPartyConversation.maxParticipants`` is advertised and held to,
from ``wop validate`` on (the published oversize fixture's TOML twin)."""

from __future__ import annotations

import json

from .helpers import FIXTURE_COUNCIL, OVERSIZE_COUNCIL


def test_validate_refuses_a_room_over_max_participants(wop):
    done = wop("validate", str(OVERSIZE_COUNCIL))
    assert done.returncode == 2
    assert "error[validation_error]" in done.stderr and "maxParticipants" in done.stderr
    assert "64 participants" in done.stderr


def test_validate_accepts_it_when_the_host_allows_the_roster(wop):
    assert wop("validate", str(OVERSIZE_COUNCIL), "--max-participants", "64").returncode == 0
    assert wop("validate", str(FIXTURE_COUNCIL), "--max-participants", "3").returncode == 0
    assert wop("validate", str(FIXTURE_COUNCIL), "--max-participants", "2").returncode == 2


def test_the_advertised_limit_is_the_enforced_one(wop):
    doc = json.loads(wop("capabilities", "--max-participants", "3").stdout)
    assert doc["multiPartyConversation"] == {"supported": True, "maxParticipants": 3}
    assert doc["conversationPrimitive"] is True
