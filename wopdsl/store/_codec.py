"""Private: the event codec of the SQL stores — compact JSON out, checked events back.

``encode_event`` writes the standard library's compact JSON about six times faster (orjson),
``decode_body`` reads it back exactly, and ``is_valid_record`` is a cheap structural check
of a decoded record against the row it was stored in.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, Final

import orjson

from wopdsl.protocol.codemap import ERA_V2, era_of, renamed, stored_type, v1_type
from wopdsl.protocol.envelope import SUPPORTED_SCHEMA_VERSIONS, RunEventDoc

__all__ = ["as_read", "as_stored", "decode_body", "decode_record", "encode_event",
           "is_valid_record"]

# The exact encoder (the standard library's): json.dumps builds a new encoder per call when
# given options. Cycles are impossible in events built from typed models; a stray one ends as
# RecursionError.
_encode_exact: Final = json.JSONEncoder(
    ensure_ascii=False, separators=(",", ":"), allow_nan=False, check_circular=False
).encode
_decode_exact: Final = json.JSONDecoder().decode
_ORJSON_OPTIONS: Final = orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_PASSTHROUGH_DATETIME


def encode_event(event: RunEventDoc) -> str:
    """Encode an event as the standard library would, about six times faster.

    orjson writes the same compact JSON for JSON values (a float may be spelled otherwise,
    ``1e-7`` for ``1e-07``, never with another value). What it refuses (integers beyond 64
    bits, non-string keys, sets, objects, cycles, lone surrogates) goes to the exact encoder,
    which stores the first two as the standard library does, behind a leading space that
    sends the body to the exact decoder on reading (orjson would read a huge integer back as a
    float), and refuses the rest; and since orjson writes NaN and infinities as ``null``, a
    text containing ``null`` is re-encoded exactly, so they are refused too.
    """
    try:
        body = orjson.dumps(event, option=_ORJSON_OPTIONS)
    except TypeError:
        text = _encode_exact(event)
        text.encode()  # A lone surrogate has no UTF-8 form: UnicodeEncodeError, not stored.
        return " " + text
    if b"null" in body:
        return _encode_exact(event)
    return body.decode()


def decode_body(body: str, *, fast: bool = True) -> Any:
    """Decode a stored body; ``fast`` (layout 2) lets orjson read the unmarked ones.

    Raises:
        TypeError, ValueError: the body is not JSON.
    """
    # Layout 2 marks the bodies only the exact decoder reads right (see encode_event).
    return orjson.loads(body) if fast and body[:1] == "{" else _decode_exact(body)


def decode_record(body: str, *, fast: bool = True) -> Any:
    """``as_read(decode_body(body, fast=fast))``: a stored body as wopdsl folds it.

    Raises:
        TypeError, ValueError: the body is not JSON.
    """
    event = orjson.loads(body) if fast and body[:1] == "{" else _decode_exact(body)
    if type(event) is dict:
        kind = event.get("type")
        if isinstance(kind, str):
            event["type"] = v1_type(kind)
    return event


def as_stored(events: Sequence[RunEventDoc], era: Callable[[], int]) -> Sequence[RunEventDoc]:
    """``events`` as the run's era stores them (v2 ``persistence.md`` §The era key).

    A run of era 3 (its ``run.started`` says ``eventLogSchemaVersion: 3``) is stored in v2
    vocabulary: the types v2 renames (``agent.toolCalled`` → ``agent.tool-called``) go in
    under their v2 names; an era-2 log keeps v1 names. ``era`` reads the run's era from its
    stored ``run.started``; it is called only for a batch that holds a renamed type and no
    ``run.started`` of its own.
    """
    for event in events:  # A loop: a batch holds a few events, most of them never renamed.
        if renamed(event["type"]):
            break
    else:
        return events
    first = events[0]
    era_ = era_of(first["payload"]) if first["type"] == "run.started" else era()
    if era_ < ERA_V2:
        return events
    out: list[RunEventDoc] = [dict(e) for e in events]  # type: ignore[misc]
    for event in out:
        event["type"] = stored_type(event["type"], era_)
    return out


def as_read(event: Any) -> Any:
    """A decoded record with its type as wopdsl folds it: the v1 name.

    Era-free: the v2 names of renamed types never were v1 names, so a v1 log reads unchanged.
    """
    if type(event) is dict:
        kind = event.get("type")
        if isinstance(kind, str):
            event["type"] = v1_type(kind)
    return event


_REQUIRED_KEYS: Final = frozenset({"eventId", "runId", "type", "payload", "timestamp", "sequence"})
_ALLOWED_KEYS: Final = _REQUIRED_KEYS | {"nodeId", "schemaVersion", "causationId"}


def is_valid_record(event: Any, run_id: str, sequence: int) -> bool:
    """Cheap structural twin of ``check_event``, plus the record's own place in the log.

    About ten times faster than validating with the ``RunEvent`` model, which matters when a
    long run is replayed; ``_reject`` re-runs the model to explain any failure.
    """
    if type(event) is not dict or not _REQUIRED_KEYS <= event.keys() <= _ALLOWED_KEYS:
        return False
    event_id, kind = event["eventId"], event["type"]
    version = event.get("schemaVersion")
    return (
        event["runId"] == run_id
        and event["sequence"] == sequence
        and type(event["sequence"]) is int
        and type(event_id) is str
        and 0 < len(event_id) <= 128
        and type(kind) is str
        and kind != ""
        and type(event["payload"]) is dict
        and type(event["timestamp"]) is str
        and 0 < len(run_id) <= 128
        and _optional_id(event.get("nodeId"))
        and _optional_id(event.get("causationId"))
        and (version is None or (type(version) is int and version in SUPPORTED_SCHEMA_VERSIONS))
    )


def _optional_id(value: object) -> bool:
    return value is None or (type(value) is str and 0 < len(value) <= 128)
