"""A stored (v1) run event as OpenWOP v2 carries it: bound ids, the v2 payload defs.

v2 keeps the event envelope; what changes is in the ids and the payloads (RFC 0171 §A,
``schemas/v2/run-event-payloads.schema.json``, whose payload defs are closed):

- ``runId`` is tenant-bound, ``<tenant>/<run id>`` (``identity.md`` §5); so are the
  payload's ``interruptId`` and ``sourceRunId``. A bound id's opaque part admits only
  ``[A-Za-z0-9._~-]``: every other byte of the store id is written ``~`` and two hex digits
  (``council-1:room:convo:start`` → ``council-1~3Aroom~3Aconvo~3Astart``), the same
  projection a bound id gets in a URL path segment (RFC 0184).
- ``output.chunk`` carries the bound ``runId`` the v2 def requires.
- ``run.started`` carries ``owner {tenant, subject}``, the block ``RunSnapshot.owner`` has
  (``events.md`` §Payloads, ``identity.md`` §1.1): the principal who started the run.
- The approval events of a tool call take their v2 defs (RFC 0171 §A.4: the legacy shapes
  are the unified interrupt payloads): ``approval.requested`` is an ``interrupt.requested``
  of kind ``approval`` (``{kind, key, data}``, the key as ``interrupt.requested`` has it);
  ``approval.granted``/``approval.rejected`` are ``interrupt.resolved`` (``{nodeId,
  interruptId, kind}``), the deciding principal and the reason under the hatch
  (``x-wopdsl-principal``, ``x-wopdsl-reason``).
- A payload field the event's v2 def does not name travels under the vendor hatch
  (RFC 0185: ``x-wopdsl-<field>``) rather than being dropped; a v2 reader that knows only
  the spec ignores it. ``conversation.opened``/``conversation.closed`` keep the fields of
  ``schemas/v2/conversation-event.schema.json`` (``participants``, ``initialTurn``,
  ``finalTurn`` …) and ``conversation.exchanged`` keeps its ``turn`` (the RFC 0186 seat).
- Each of those turns carries its A2A ``parts`` (RFC 0205 §B, :mod:`wopdsl.protocol.parts`).

The field sets come from the bundled schemas (read as JSON, no validator needed).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from typing import Any, Final

from wopdsl.protocol.codemap import v2_type
from wopdsl.protocol.parts import TURN_SEATS, with_parts

__all__ = ["HATCH", "bind", "event_v2", "is_hatch", "owner_v2", "project", "v2_fields"]

HATCH: Final = "x-wopdsl-"
"""Prefix of a council field carried under the RFC 0185 vendor hatch."""

_HATCHES: Final = ("openwop-", "x-", "vendor.")
_PASSTHROUGH: Final = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                b"abcdefghijklmnopqrstuvwxyz0123456789._-")
_BOUND_KEYS: Final = ("interruptId", "sourceRunId")
_CONVERSATION_DEFS: Final = {"conversation.opened": "ConversationOpenedPayload",
                             "conversation.closed": "ConversationClosedPayload"}
_APPROVAL_DATA: Final = frozenset({"artifactId", "artifactType", "title", "description",
                                   "artifactData", "actions", "approversList",
                                   "requiredApprovals"})
"""``approval.requested`` fields that v2 seats in ``ApprovalData`` (``suspend-request``)."""
_SEATS: Final = {"conversation.exchanged": frozenset({"turn"})}
"""Fields a later spec release seated in a def that the bundled copy predates (RFC 0186)."""


def bind(tenant: str, run_id: str) -> str:
    """``<tenant>/<run id>``: the run id as v2 bodies carry it."""
    return f"{tenant}/{run_id}"


def project(value: str) -> str:
    """``value`` with every byte outside ``[A-Za-z0-9._-]`` written ``~XX`` (``/`` → ``~2F``)."""
    return "".join(chr(b) if b in _PASSTHROUGH else f"~{b:02X}" for b in value.encode())


def is_hatch(key: str) -> bool:
    """Whether ``key`` is a vendor-hatch key (RFC 0185 §B: ``openwop-``/``x-``/``vendor.``)."""
    return key.startswith(_HATCHES)


@functools.cache
def _documents() -> dict[str, Any]:
    from wopdsl.protocol.openwop import schema_files

    files = schema_files()
    return {name: json.loads(files[f"v2/{name}.schema.json"])
            for name in ("run-event-payloads", "conversation-event")}


def _props(definition: Mapping[str, Any], defs: Mapping[str, Any]) -> frozenset[str] | None:
    """The property names a def declares (``None``: it is another document's shape)."""
    ref = definition.get("$ref", "")
    if ref.startswith("#/$defs/"):  # An alias of another def of the same file.
        return _props(defs[ref.rsplit("/", 1)[-1]], defs)
    if ref:  # interrupt.requested: the v2 suspend-request union, carried as it is.
        return None
    return frozenset(definition.get("properties", {}))


@functools.cache
def v2_fields(event_type: str) -> frozenset[str] | None:
    """The payload fields ``event_type``'s v2 def names.

    ``None`` when the payload is carried as it is: a type outside the v2 registry (the
    envelope check refuses it), or a def that is another document's shape
    (``interrupt.requested``: ``v2/suspend-request.schema.json``).
    """
    docs = _documents()
    defs = docs["run-event-payloads"]["$defs"]
    ref = docs["run-event-payloads"]["_typeIndex"]["properties"].get(event_type)
    if ref is None:
        return None
    fields = _props(defs[ref["$ref"].rsplit("/", 1)[-1]], defs)
    if fields is None:
        return None
    conversation = _CONVERSATION_DEFS.get(event_type)
    if conversation is not None:
        fields |= _props(docs["conversation-event"]["$defs"][conversation], {}) or frozenset()
    return fields | _SEATS.get(event_type, frozenset())


def _approval_v2(event_type: str, payload: Mapping[str, Any], node_id: Any
                 ) -> Mapping[str, Any]:
    """A tool call's approval event in its v2 def's shape (see the module docs)."""
    if event_type == "approval.requested":
        data = {k: v for k, v in payload.items() if k in _APPROVAL_DATA}
        rest = {k: v for k, v in payload.items() if k not in _APPROVAL_DATA}
        return {"kind": "approval", "key": rest.pop("interruptId", ""), "data": data,
                **{f"{HATCH}{k}": v for k, v in rest.items()}}
    if event_type in ("approval.granted", "approval.rejected") and "gateId" in payload:
        rest = {k: v for k, v in payload.items() if k != "gateId"}
        return {"nodeId": payload.get("nodeId", node_id), "interruptId": payload["gateId"],
                "kind": "approval", **rest}
    return payload


def _payload_v2(event_type: str, payload: Mapping[str, Any], tenant: str, run_id: str
                ) -> dict[str, Any]:
    fields = v2_fields(event_type)
    out: dict[str, Any] = {}
    for key, value in payload.items():
        if fields is not None and key not in fields and not is_hatch(key):
            out[f"{HATCH}{key}"] = value
        elif key in _BOUND_KEYS and isinstance(value, str):
            out[key] = bind(tenant, project(value))
        else:
            out[key] = value
    if event_type == "output.chunk" and fields is not None and "runId" in fields:
        out["runId"] = bind(tenant, run_id)
    return out


def owner_v2(principal: str, lane: str = "session") -> dict[str, Any]:
    """The v2 ``owner`` block of a run ``principal`` started (``subject.schema.json``).

    Args:
        principal: Who started the run; its own tenant.
        lane: How principals reach the host (``subject.schema.json`` ``lane``): ``api-key``
            for a host with bearer tokens, ``session`` for the one local user of a host
            without them (and of a log read outside any host).
    """
    return {"tenant": principal, "subject": {"issuer": "wopdsl", "subjectId": principal,
                                             "tenant": principal, "lane": lane,
                                             "kind": "user"}}


def event_v2(event: Mapping[str, Any], tenant: str, *, lane: str = "session"
             ) -> dict[str, Any]:
    """A stored event as v2 serves it to ``tenant``: v2 type name, bound ids, v2 payload.

    ``lane`` is the owner's sign-in lane that ``run.started``'s ``owner`` names
    (:func:`owner_v2`).
    """
    run_id = str(event["runId"])
    type_ = v2_type(str(event.get("type")))  # The codemap's v2 name (agent.tool-called).
    doc = {**event, "runId": bind(tenant, run_id), "type": type_}
    payload = event.get("payload")
    if isinstance(payload, Mapping):
        payload = _approval_v2(type_, payload, event.get("nodeId"))
        seat = TURN_SEATS.get(type_)
        if seat is not None and seat in payload:  # RFC 0205 §B: the turn's A2A parts
            payload = {**payload, seat: with_parts(payload[seat])}
        doc["payload"] = _payload_v2(type_, payload, tenant, run_id)
        if type_ == "run.started" and "owner" not in payload:
            metadata = payload.get("metadata")
            principal = metadata.get("principal") if isinstance(metadata, Mapping) else None
            doc["payload"]["owner"] = owner_v2(
                principal if isinstance(principal, str) else tenant, lane)
    return doc
