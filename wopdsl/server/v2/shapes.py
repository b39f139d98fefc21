"""The v2 shapes of what the v1 host answers: discovery, run snapshot, events, pages.

v2 keeps the v1 event envelope (``RunEventDoc``: ``eventId, runId, type, payload,
timestamp, sequence, schemaVersion`` plus ``nodeId``/``causationId``), with the run id
tenant-bound and each payload in its v2 def (:func:`wopdsl.protocol.v2_events.event_v2`).
The discovery root is closed: version metadata plus one record per capability family
(``{status, since, witness, until?, …facets}``; presence of the record is the claim, RFC 0169
§A.2). A record's ``status`` is never above the corpus's maturity row (RFC 0197 §C.7):
``limits`` is stable, the conversation families and ``replay`` are ``experimental`` with
``until: "3.0"``; ``replay`` names the effect-seam manifest (``effectSeamsManifest``).

v1's ``supportedEnvelopes`` / ``schemaVersions`` (the council turn result,
``council.turn-result``) have no v2 record: v2 makes them families whose ``kinds`` MUST be
namespaced under an org registered in the spec's declaration (``events.md`` §E3), and the
turn result is wopdsl's own kind under no registered org. An LLM member's answer is checked
inside the member; the host takes no AI envelope over the wire, so advertising none (the
records absent) is the truthful v2 claim.
"""

from __future__ import annotations

from typing import Any, Final

from wopdsl.protocol.v2_events import bind, event_v2, owner_v2, project
from wopdsl.server.v2.negotiate import PROTOCOL_VERSIONS
from wopdsl.state.snapshot import EVENT_LOG_SCHEMA_VERSION

__all__ = ["discovery_v2", "event_v2", "run_url", "snapshot_v2"]

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


def discovery_v2(v1: dict[str, Any]) -> dict[str, Any]:
    """The v2 representation of the v1 discovery document ``v1``."""
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


def run_url(tenant: str, run_id: str, suffix: str = "") -> str:
    """``/runs/<projected bound id><suffix>``."""
    return f"/runs/{project(bind(tenant, run_id))}{suffix}"


def snapshot_v2(snapshot: dict[str, Any], tenant: str, owner: str,
                request: dict[str, Any] | None = None, *,
                lane: str = "session") -> dict[str, Any]:
    """A v1 ``RunSnapshot`` as v2 carries it: bound run id, ``owner``, log schema version.

    Args:
        snapshot: The v1 snapshot.
        tenant: The caller's tenant (the run id is bound to it).
        owner: The principal who started the run (``run.started`` ``metadata.principal``;
            the caller's tenant for a run started without one). Its tenant is itself.
        request: The run's ``run.started`` ``metadata.request``: the caller's ``metadata``
            and, under ``runOptions``, its ``tags`` and the keys the host added
            (``tenantId``/``scopeId``); ``tags`` and ``metadata`` surface unchanged (v2
            runs.md §Run options). The council digest moves to the snapshot's extension seat,
            ``extensions["wopdsl.council"].digest`` (the v2 snapshot is closed; RFC 0169 §A.4).
        lane: How principals reach this host (``subject.schema.json`` ``lane``):
            ``api-key`` for a host with bearer tokens, ``session`` for the one local user
            of a host without them.
    """
    doc = {**snapshot, "runId": bind(tenant, str(snapshot["runId"])),
           "owner": owner_v2(owner, lane),
           "eventLogSchemaVersion": int(snapshot["eventLogSchemaVersion"])}
    digest = doc.pop("metadata", {}).get("councilDigest")
    if digest:
        doc["extensions"] = {"wopdsl.council": {"digest": digest}}
    if request is not None:  # The caller's metadata, without what the host added to it.
        options = request.get("runOptions", {})
        hidden = {"runOptions", *options.get("added", ())}
        caller = {k: v for k, v in request.items() if k not in hidden}
        if caller or not options:
            doc["metadata"] = caller
        if "tags" in options:
            doc["tags"] = options["tags"]
    return doc
