"""``wop check --v2``: a stored run as OpenWOP v2 carries it, against the v2 envelope.

The v2 host (``wop serve`` under ``OpenWOP-Version: 2.0``) serves each stored event with its
``runId`` bound to the caller's tenant (``<tenant>/<run id>``); everything else is the
stored document. This check projects every event the same way and validates it against the
bundled v2 ``run-event.schema.json`` (tenant-bound ``runId``, the v2 type registry,
``schemaVersion`` required, closed envelope), then applies every rule of
:func:`~wopdsl.protocol.check.check_events` (the conversation payloads and turns are
already checked against the v2 conversation schemas there).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from wopdsl.protocol.check import Violation, check_events
from wopdsl.protocol.openwop import OpenWopSchemas, bundled_schemas, describe

__all__ = ["as_v2", "check_events_v2"]


def as_v2(event: Mapping[str, Any], tenant: str = "local") -> dict[str, Any]:
    """A stored event as the v2 API serves it to ``tenant``."""
    return {**event, "runId": f"{tenant}/{event['runId']}"}


def _both_type_branches(error: Any) -> bool:
    """Whether ``error`` is the upstream ``type`` ``oneOf`` refusing a registered type.

    ``type`` is a ``oneOf`` of the registry enum and the vendor pattern ``<org>.<name>``,
    which every registered type also matches ("valid under each of"). Its description says
    either branch admits a type (an ``anyOf``): such an error is not counted.
    """
    return bool(error.validator == "oneOf" and list(error.absolute_path) == ["type"]
                and "is valid under each of" in str(error.message))


def check_events_v2(events: Iterable[Mapping[str, Any]], *, tenant: str = "local",
                    schemas: OpenWopSchemas | None = None) -> list[Violation]:
    """Every violation of the v2 envelope and of the log rules, in event order."""
    schemas = schemas or bundled_schemas()
    envelope = schemas.validator("v2/run-event.schema.json")
    listed = list(events)
    found = [Violation(e.get("sequence"), str(e.get("type")), "envelope-v2", describe(error))
             for e in listed for error in envelope.iter_errors(as_v2(e, tenant))
             if not _both_type_branches(error)]
    found += check_events(listed, schemas=schemas)
    return sorted(found, key=lambda v: -1 if v.sequence is None else v.sequence)
