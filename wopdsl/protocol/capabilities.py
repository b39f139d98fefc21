"""The host's OpenWOP discovery document: what ``wop serve`` serves and ``wop capabilities`` prints.

One builder, :func:`discovery`, makes the document of a host serving given councils; the
host answers ``GET /.well-known/openwop`` with it (v1, or :func:`discovery_v2` under
``OpenWOP-Version: 2.0``), and ``wop capabilities [PATH…] [--v2]`` prints the same for the
same councils. The document advertises only what the host really does (OpenWOP
capabilities §"Truthful advertisement"):

- ``protocolVersions`` / ``preferredVersion``: the versions spoken (``["1.0", "2.0"]``,
  v1 preferred), which a 2.x client's discovery requires (versioning.md §1.1) besides v1's
  ``protocolVersion``.
- ``supportedEnvelopes`` / ``schemaVersions``: a member turn produces one typed envelope,
  the council turn result ``{summary, data?, posts?}`` (``council.turn-result``, version 1).
- ``limits``: a turn yields exactly one result (``envelopesPerTurn = 1``); the engine runs no
  clarification rounds and no schema-repair rounds (an invalid result fails the turn with
  ``RESULT_INVALID``), so both are ``0``; ``maxRequestBodyBytes`` is the host's body limit.
- ``conversationPrimitive``: rooms are RFC 0005 conversations.
- ``multiPartyConversation``: rooms are multi-party (RFC 0101) with a roster limit that a host
  sets (``wop serve --max-participants``).
- ``conversationTurnModelProvenance`` (RFC 0109, ``{supported: true}``): only for a host whose
  councils have ``llm`` members, whose agent turns carry ``agent.model {provider, model}``
  (a host that stamps it MUST advertise it; one that never does leaves the block out).
- ``runs.pauseResume`` (with its drain policies) and ``replay`` (the fork modes claimed).
- ``channelPresence`` (RFC 0110, ``{supported: true}``): who watches and types in each room
  (``GET/POST /v1/runs/{runId}/presence``); v1 only, as the RFC's seam is a v1 seam.
- ``fixtures``: the OpenWOP conformance fixtures served (``wop serve --conformance``).

The v2 representation (:func:`discovery_v2`) is closed: version metadata plus one record per
capability family (``{status, since, witness, until?, …facets}``; presence of the record is
the claim, RFC 0169 §A.2). A record's ``status`` is never above the corpus's maturity row
(RFC 0197 §C.7): ``limits`` is stable, the conversation families and ``replay`` are
``experimental`` with ``until: "3.0"``; ``replay`` names the effect-seam manifest. v1's
``supportedEnvelopes`` / ``schemaVersions`` have no v2 record: v2 makes them families whose
``kinds`` MUST be namespaced under an org registered in the spec's declaration (``events.md``
§E3), and the turn result is wopdsl's own kind under no registered org; the host takes no AI
envelope over the wire, so advertising none is the truthful v2 claim.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from typing import Any, Final, Protocol

from wopdsl.protocol.codemap import EVENT_LOG_SCHEMA_VERSION

__all__ = [
    "DEFAULT_MAX_BODY_BYTES",
    "DEFAULT_MAX_PARTICIPANTS",
    "DRAIN_POLICIES",
    "PROTOCOL_VERSION",
    "PROTOCOL_VERSIONS",
    "REPLAY_MODES",
    "TURN_RESULT_ENVELOPE",
    "capabilities",
    "discovery",
    "discovery_v2",
]

PROTOCOL_VERSION: Final = "1.0"
"""The OpenWOP protocol version a client gets without asking (v1)."""

PROTOCOL_VERSIONS: Final = ("1.0", "2.0")
"""Every OpenWOP protocol version the host speaks (``protocolVersions``)."""

TURN_RESULT_ENVELOPE: Final = "council.turn-result"
"""The envelope type of a member's turn result."""

DEFAULT_MAX_PARTICIPANTS: Final = 32
"""Default ``multiPartyConversation.maxParticipants`` (agent participants per room).

The limit the engine enforces by default (one definition, here).
"""

DEFAULT_MAX_BODY_BYTES: Final = 256 * 1024
"""Default ``limits.maxRequestBodyBytes``: the largest request body the host takes."""

DRAIN_POLICIES: Final = ("immediate", "drain-current-node")
"""The ``drainPolicy`` values a pause takes (``runs.pauseResume.drainPolicies``)."""

REPLAY_MODES: Final = ("branch",)
"""The fork modes discovery claims (``replay.modes``). ``replay`` is served but not claimed:
the suite's ``replayDeterminism`` asks two replay forks of one run for identical payloads, and
a council's payloads name their run (``conversationId``, interrupt keys, message ids) and
their times (``ts``, ``durationMs``), and a replay fork calls its models again
(docs/openwop.md §Conformance)."""

_EXPERIMENTAL: Final = {"status": "experimental", "since": "2.0", "until": "3.0"}
_FAMILIES: Final = {  # RFC 0197 §C.7: never above the corpus row (spec/v2/declaration.json).
    "limits": {"status": "stable", "since": "2.0", "witness": "witnessable-gated"},
    "conversationPrimitive": {**_EXPERIMENTAL, "witness": "claims-check"},
    "multiPartyConversation": {**_EXPERIMENTAL, "witness": "witnessable-gated"},
    "conversationTurnModelProvenance": {**_EXPERIMENTAL, "witness": "witnessable-gated"},
    # replay.md §The surface: the facet names the effect-seam manifest (a constant).
    "replay": {**_EXPERIMENTAL, "witness": "witnessable-gated",
               "effectSeamsManifest": "/host/effect-seams"},
}
_METADATA: Final = ("implementation", "fixtures")


class _Member(Protocol):
    @property
    def engine(self) -> str: ...


class _Council(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def members(self) -> Sequence[_Member]: ...


def discovery(councils: Iterable[_Council], *, implementation: dict[str, str] | None = None,
              max_participants: int = DEFAULT_MAX_PARTICIPANTS,
              max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
              fixtures: Collection[str] = ()) -> dict[str, Any]:
    """The v1 discovery document of a host serving ``councils`` (``wop serve``'s).

    Args:
        councils: The councils served (``wopdsl.Council`` objects), fixtures included.
        implementation: ``{name, version}`` identifying the host.
        max_participants: ``--max-participants``: agent participants per room.
        max_body_bytes: ``--max-body-bytes``: the largest request body.
        fixtures: The ids of the served councils that are conformance fixtures; their
            members do not count for model provenance (``conformance-approval``'s gate posts
            no turn).

    Raises:
        ValueError: ``max_participants`` is below 2.
    """
    provenance = any(member.engine == "llm" for council in councils
                     if council.id not in fixtures for member in council.members)
    return capabilities(max_participants, implementation=implementation,
                        model_provenance=provenance, max_body_bytes=max_body_bytes,
                        fixtures=fixtures)


def capabilities(
    max_participants: int = DEFAULT_MAX_PARTICIPANTS,
    *,
    implementation: dict[str, str] | None = None,
    model_provenance: bool = False,
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    fixtures: Collection[str] = (),
) -> dict[str, Any]:
    """Return the v1 discovery document of a host from its facts (see :func:`discovery`).

    Args:
        max_participants: Most agent participants the host allows in one room (at least 2,
            as RFC 0101 requires of a multi-party host).
        implementation: Optional ``{name, version, vendor}`` identifying the host.
        model_provenance: Whether the host's agent turns can carry RFC 0109 model
            provenance (it serves a council with ``llm`` members); adds
            ``conversationTurnModelProvenance: {supported: true}``.
        max_body_bytes: ``limits.maxRequestBodyBytes``.
        fixtures: The conformance fixtures served (``fixtures``, sorted; none: no key).

    Returns:
        A fresh JSON-ready dict with the required v1 keys (``protocolVersion``,
        ``supportedEnvelopes``, ``schemaVersions``, ``limits``), the version list a 2.x
        client reads (``protocolVersions``, ``preferredVersion``), ``conversationPrimitive``,
        ``multiPartyConversation``, ``runs``, ``replay`` and ``channelPresence`` (and
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
        "limits": {"clarificationRounds": 0, "schemaRounds": 0, "envelopesPerTurn": 1,
                   "maxRequestBodyBytes": max_body_bytes},
        "conversationPrimitive": True,
        "multiPartyConversation": {"supported": True, "maxParticipants": max_participants},
    }
    if model_provenance:
        doc["conversationTurnModelProvenance"] = {"supported": True}
    doc["runs"] = {"pauseResume": {"supported": True,  # capabilities.md §runs.pauseResume
                                   "drainPolicies": list(DRAIN_POLICIES)}}
    doc["replay"] = {"supported": True, "modes": list(REPLAY_MODES)}
    doc["channelPresence"] = {"supported": True}  # RFC 0110 (wopdsl.server.presence)
    if fixtures:
        doc["fixtures"] = sorted(fixtures)
    return doc


def discovery_v2(v1: dict[str, Any]) -> dict[str, Any]:
    """The v2 representation of the v1 discovery document ``v1`` (see the module docstring)."""
    doc: dict[str, Any] = {"protocolVersions": list(PROTOCOL_VERSIONS),
                           "preferredVersion": PROTOCOL_VERSIONS[0],
                           "protocolVersion": PROTOCOL_VERSIONS[-1]}
    doc |= {key: v1[key] for key in _METADATA if key in v1}
    doc["eventLogSchemaVersion"] = EVENT_LOG_SCHEMA_VERSION  # The era new runs are written in.
    for family, record in _FAMILIES.items():
        value = v1.get(family)
        if value is True:
            doc[family] = dict(record)
        elif isinstance(value, dict) and value.get("supported", True):
            doc[family] = {**record, **{k: v for k, v in value.items() if k != "supported"}}
    return doc
