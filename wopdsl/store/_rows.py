"""Decoding a run's stored rows into checked events: shared by the SQL stores."""

from __future__ import annotations

import gc
from typing import Any, Final, NoReturn

from wopdsl.errors import EventInvalid
from wopdsl.protocol.envelope import RunEventDoc, check_event
from wopdsl.store._codec import decode_record, is_valid_record

GC_PAUSE_ROWS: Final = 1000
"""Reads of at least this many records pause the cyclic GC while decoding."""

_CORRUPT: Final = "the log was written by another tool or corrupted; restore a backup"


def decode_rows(place: str, run_id: str, after: int, rows: list[tuple[int, str]], *,
                fast: bool = True) -> list[RunEventDoc]:
    """The events of ``rows`` (``(sequence, body)``, read after ``after``), each checked.

    Decoding builds many containers that all survive, which keeps triggering the cyclic GC;
    a long read pauses it (JSON values have no cycles), which cuts a replay by a quarter.
    ``place`` names the store in errors (a file, a server without its password).

    Raises:
        EventInvalid: a record is not JSON, is not a valid ``RunEventDoc``, has an
            unsupported ``schemaVersion``, does not match its row, or leaves a gap.
    """
    pause_gc = len(rows) >= GC_PAUSE_ROWS and gc.isenabled()
    if pause_gc:
        gc.disable()
    try:
        events: list[RunEventDoc] = []
        expected = max(after + 1, 0)
        for sequence, body in rows:
            try:
                event = decode_record(body, fast=fast)
            except (TypeError, ValueError) as exc:
                raise EventInvalid(f"{place} run {run_id} #{sequence}: record is not valid "
                                   f"JSON: {exc}", hint=_CORRUPT) from None
            if sequence != expected or not is_valid_record(event, run_id, sequence):
                _reject(place, event, run_id, sequence, expected)
            events.append(event)
            expected += 1
        return events
    finally:
        if pause_gc:
            gc.enable()


def _reject(place: str, event: Any, run_id: str, sequence: int, expected: int) -> NoReturn:
    where = f"{place} run {run_id} #{sequence}"
    check_event(event, where=where)  # The precise message for shape and version problems.
    if sequence != expected:
        raise EventInvalid(f"{where}: log has a gap (expected #{expected} next)", hint=_CORRUPT)
    if event["runId"] != run_id or event["sequence"] != sequence:
        raise EventInvalid(f"{where}: record says run {event['runId']} #{event['sequence']}, "
                           "not the row it is stored in", hint=_CORRUPT)
    raise EventInvalid(f"{where}: malformed event record", hint=_CORRUPT)
