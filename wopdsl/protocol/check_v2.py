"""``wop check --v2``: a stored run as OpenWOP v2 carries it, against the v2 schemas.

The v2 host (``wop serve`` under ``OpenWOP-Version: 2.0``) serves each stored event in its
v2 form (:func:`~wopdsl.protocol.v2_events.event_v2`: ids bound to the caller's tenant,
each payload in its v2 def). This check projects every event the same way and validates it
against the bundled v2 schemas:

- the envelope: ``v2/run-event.schema.json`` (tenant-bound ``runId``, the v2 type registry,
  ``schemaVersion`` required, closed envelope);
- the payload: the ``v2/run-event-payloads.schema.json`` def its ``_typeIndex`` names
  (closed defs; ids by ``v2/ids.schema.json``), with the RFC 0185 vendor hatch
  (``x-…``/``openwop-…``/``vendor.…`` keys admitted opaquely) — for
  ``conversation.opened``/``conversation.closed`` the richer
  ``v2/conversation-event.schema.json`` def, for ``conversation.exchanged`` the bound def
  plus its RFC 0186 ``turn`` seat (checked against ``v2/conversation-turn.schema.json``);
- each turn's RFC 0205 ``parts`` (the bundled turn defs predate them): a non-empty array,
  each item against ``v2/part.schema.json``; the rest of the turn against its def;
- then every rule of :func:`~wopdsl.protocol.check.check_events` on the stored log.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from wopdsl.protocol.check import Violation, check_events
from wopdsl.protocol.openwop import OpenWopSchemas, bundled_schemas, errors_of
from wopdsl.protocol.parts import TURN_SEATS
from wopdsl.protocol.v2_events import event_v2, is_hatch

__all__ = ["as_v2", "check_events_v2", "v2_event_errors"]

_PAYLOADS = "v2/run-event-payloads.schema.json"


def as_v2(event: Mapping[str, Any], tenant: str = "local") -> dict[str, Any]:
    """A stored event as the v2 API serves it to ``tenant``."""
    return event_v2(event, tenant)


def _both_type_branches(error: Any) -> bool:
    """Whether ``error`` is the upstream ``type`` ``oneOf`` refusing a registered type.

    ``type`` is a ``oneOf`` of the registry enum and the vendor pattern ``<org>.<name>``,
    which every registered type also matches ("valid under each of"). Its description says
    either branch admits a type (an ``anyOf``): such an error is not counted.
    """
    return bool(error.validator == "oneOf" and list(error.absolute_path) == ["type"]
                and "is valid under each of" in str(error.message))


def _payload_checks(schemas: OpenWopSchemas, event: Mapping[str, Any]
                    ) -> list[tuple[str, Any, Any]]:
    """``(label, validator, instance)`` for the payload of one v2 event."""
    type_ = str(event.get("type"))
    payload = event.get("payload")
    index = schemas.documents[_PAYLOADS]["_typeIndex"]["properties"]
    if type_ not in index or not isinstance(payload, Mapping):
        return []  # The envelope check reports an unregistered type or a bad payload.
    spec = {k: v for k, v in payload.items() if not is_hatch(k)}  # RFC 0185 §B.
    checks: list[tuple[str, Any, Any]] = []
    seat = TURN_SEATS.get(type_)
    if seat is not None and isinstance(spec.get(seat), Mapping) and "parts" in spec[seat]:
        # RFC 0205 §B: the bundled turn defs predate `parts`; they are checked here.
        spec[seat] = dict(spec[seat])
        checks.append((f"{seat}-parts", schemas.parts, spec[seat].pop("parts")))
    if type_ == "conversation.opened":
        return [*checks, ("payload-v2", schemas.conversation_opened, spec)]
    if type_ == "conversation.closed":
        return [*checks, ("payload-v2", schemas.conversation_closed, spec)]
    if type_ == "conversation.exchanged" and "turn" in spec:  # The RFC 0186 seat.
        checks.append(("turn-v2", schemas.turn, spec.pop("turn")))
    key = index[type_]["$ref"].rsplit("/", 1)[-1]
    checks.append(("payload-v2", schemas.validator(_PAYLOADS, f"/$defs/{key}"), spec))
    return checks


def v2_event_errors(event: Mapping[str, Any], schemas: OpenWopSchemas | None = None
                    ) -> list[tuple[str, str]]:
    """``(check, message)`` for every v2 schema violation of one v2 event document."""
    schemas = schemas or bundled_schemas()
    found = [("envelope-v2", message) for message in
             _errors(schemas.validator("v2/run-event.schema.json"), event)]
    for label, validator, instance in _payload_checks(schemas, event):
        found += [(label, message) for message in _errors(validator, instance)]
    return found


def _errors(validator: Any, instance: Any) -> list[str]:
    """The violations of ``instance``, the registry's double ``type`` branch set aside."""
    return errors_of(validator, instance, keep=lambda error: not _both_type_branches(error))


def check_events_v2(events: Iterable[Mapping[str, Any]], *, tenant: str = "local",
                    schemas: OpenWopSchemas | None = None) -> list[Violation]:
    """Every violation of the v2 schemas and of the log rules, in event order."""
    schemas = schemas or bundled_schemas()
    listed = list(events)
    found = [Violation(e.get("sequence"), str(e.get("type")), check, message)
             for e in listed for check, message in v2_event_errors(as_v2(e, tenant), schemas)]
    found += check_events(listed, schemas=schemas)
    return sorted(found, key=lambda v: -1 if v.sequence is None else v.sequence)
