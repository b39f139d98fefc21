"""The v2 shapes of what the v1 host answers: discovery, run snapshot, events, pages.

v2 keeps the v1 event envelope (``RunEventDoc``: ``eventId, runId, type, payload,
timestamp, sequence, schemaVersion`` plus ``nodeId``/``causationId``), with the run id
tenant-bound and each payload in its v2 def (:func:`wopdsl.protocol.v2_events.event_v2`).
The discovery root is :func:`wopdsl.protocol.capabilities.discovery_v2` (``wop capabilities
--v2`` prints the same).
"""

from __future__ import annotations

from typing import Any

from wopdsl.protocol.capabilities import discovery_v2
from wopdsl.protocol.v2_events import bind, event_v2, owner_v2, project

__all__ = ["discovery_v2", "event_v2", "run_url", "snapshot_v2"]


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
