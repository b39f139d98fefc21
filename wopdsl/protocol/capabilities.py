"""The host's OpenWOP discovery document (what ``wop capabilities`` prints).

The document advertises only what the embedded engine really does (OpenWOP capabilities
§"Truthful advertisement"):

- ``protocolVersions`` / ``preferredVersion``: the versions spoken (``["1.0"]``), which a
  2.x client's discovery requires (versioning.md §1.1) besides v1's ``protocolVersion``.
- ``supportedEnvelopes`` / ``schemaVersions``: a member turn produces one typed envelope,
  the council turn result ``{summary, data?, posts?}`` (``council.turn-result``, version 1).
- ``limits``: a turn yields exactly one result (``envelopesPerTurn = 1``); the engine runs no
  clarification rounds and no schema-repair rounds (an invalid result fails the turn with
  ``RESULT_INVALID``), so both are ``0``.
- ``conversationPrimitive``: rooms are RFC 0005 conversations.
- ``multiPartyConversation``: rooms are multi-party (RFC 0101) with a roster limit that a host
  sets per run (``wop run --max-participants``).
- ``conversationTurnModelProvenance`` (RFC 0109, ``{supported: true}``): only for a host whose
  councils have ``llm`` members, whose agent turns carry ``agent.model {provider, model}``
  (a host that stamps it MUST advertise it; one that never does leaves the block out).
"""

from __future__ import annotations

from typing import Any, Final

__all__ = [
    "DEFAULT_MAX_PARTICIPANTS",
    "PROTOCOL_VERSION",
    "PROTOCOL_VERSIONS",
    "TURN_RESULT_ENVELOPE",
    "capabilities",
]

PROTOCOL_VERSION: Final = "1.0"
"""The OpenWOP protocol version this host speaks."""

PROTOCOL_VERSIONS: Final = (PROTOCOL_VERSION,)
"""Every OpenWOP protocol version this host speaks (``protocolVersions``)."""

TURN_RESULT_ENVELOPE: Final = "council.turn-result"
"""The envelope type of a member's turn result."""

DEFAULT_MAX_PARTICIPANTS: Final = 32
"""Default ``multiPartyConversation.maxParticipants`` (agent participants per room).

The limit the engine enforces by default (one definition, here).
"""


def capabilities(
    max_participants: int = DEFAULT_MAX_PARTICIPANTS,
    *,
    implementation: dict[str, str] | None = None,
    model_provenance: bool = False,
) -> dict[str, Any]:
    """Return the discovery document of a host that runs councils.

    Args:
        max_participants: Most agent participants the host allows in one room (at least 2,
            as RFC 0101 requires of a multi-party host).
        implementation: Optional ``{name, version, vendor}`` identifying the host.
        model_provenance: Whether the host's agent turns can carry RFC 0109 model
            provenance (it serves a council with ``llm`` members); adds
            ``conversationTurnModelProvenance: {supported: true}``.

    Returns:
        A fresh JSON-ready dict with the required v1 keys (``protocolVersion``,
        ``supportedEnvelopes``, ``schemaVersions``, ``limits``), the version list a 2.x
        client reads (``protocolVersions``, ``preferredVersion``), plus
        ``conversationPrimitive`` and ``multiPartyConversation`` (and
        ``conversationTurnModelProvenance`` with ``model_provenance``).

    Raises:
        ValueError: ``max_participants`` is below 2.

    Example:
        >>> doc = capabilities(8)
        >>> doc["multiPartyConversation"]
        {'supported': True, 'maxParticipants': 8}
    """
    if isinstance(max_participants, bool) or max_participants < 2:
        raise ValueError(f"maxParticipants must be an integer >= 2 (got {max_participants!r})")
    doc: dict[str, Any] = {"protocolVersion": PROTOCOL_VERSION,
                           "protocolVersions": list(PROTOCOL_VERSIONS),
                           "preferredVersion": PROTOCOL_VERSION}
    if implementation:
        doc["implementation"] = dict(implementation)
    doc |= {
        "supportedEnvelopes": [TURN_RESULT_ENVELOPE],
        "schemaVersions": {TURN_RESULT_ENVELOPE: 1},
        "limits": {"clarificationRounds": 0, "schemaRounds": 0, "envelopesPerTurn": 1},
        "conversationPrimitive": True,
        "multiPartyConversation": {"supported": True, "maxParticipants": max_participants},
    }
    if model_provenance:
        doc["conversationTurnModelProvenance"] = {"supported": True}
    return doc
