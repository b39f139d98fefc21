"""Checks of AG-UI event streams: the official Python types, and the protocol's behaviour rules.

Every event is validated with the ``ag-ui-protocol`` pydantic models (``ag_ui.core.Event``,
generated from the AG-UI 1.0 JSON Schema), which keep unknown fields: :func:`validate`
refuses any, so a field the schema does not describe fails here. :func:`check_stream` applies
the rules of the 1.0 lifecycle and streaming patterns: ``RUN_STARTED`` first, ``RUN_FINISHED``
or ``RUN_ERROR`` last, nothing after them, every text message and tool call started once,
content only while open, everything closed before ``RUN_FINISHED``, unique interrupt ids.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

pytest.importorskip("ag_ui", reason="needs ag-ui-protocol (the server extra)")

from ag_ui.core import Event, RunAgentInput
from pydantic import BaseModel, TypeAdapter

EVENT = TypeAdapter(Event)
_STREAMS = {"TEXT_MESSAGE": "messageId", "TOOL_CALL": "toolCallId"}
"""Streamed things: START, CONTENT/ARGS, END, by their id field."""


def _no_extras(model: Any, where: str) -> None:
    if isinstance(model, BaseModel):
        extra = model.model_extra or {}
        assert not extra, f"{where}: fields the AG-UI schema does not describe: {sorted(extra)}"
        for name in type(model).model_fields:
            if name in ("raw_event", "metadata", "result", "snapshot", "state",
                        "forwarded_props", "response_schema", "value", "content"):
                continue  # Opaque JSON by the schema.
            _no_extras(getattr(model, name), f"{where}.{name}")
    elif isinstance(model, list):
        for index, item in enumerate(model):
            _no_extras(item, f"{where}[{index}]")


def validate(event: dict[str, Any]) -> Any:
    """Parse ``event`` with the official types; refuse fields they do not describe."""
    parsed = EVENT.validate_python(event)
    _no_extras(parsed, str(event.get("type")))
    return parsed


def validate_input(body: dict[str, Any]) -> Any:
    """Parse a ``RunAgentInput`` with the official type."""
    return RunAgentInput.model_validate(body)


def check_stream(events: list[dict[str, Any]]) -> None:
    """Validate every event and the 1.0 behaviour rules of one stream (one or more runs)."""
    assert events, "an empty stream"
    active = False
    closed_by: str | None = None
    open_text: set[str] = set()
    open_calls: set[str] = set()
    for index, event in enumerate(events):
        validate(event)
        kind = event["type"]
        where = f"event {index} ({kind})"
        if kind == "RUN_STARTED":
            assert not active, f"{where}: a run is already active"
            active, closed_by = True, None
            continue
        if kind == "RUN_ERROR" and closed_by in (None, "RUN_FINISHED"):
            active, closed_by = False, "RUN_ERROR"
            open_text.clear()
            open_calls.clear()
            continue
        assert active, f"{where}: outside a run (closed by {closed_by})"
        if kind == "RUN_FINISHED":
            assert not open_text and not open_calls, f"{where}: still open {open_text} " \
                f"{open_calls}"
            outcome = event.get("outcome") or {}
            ids = [i["id"] for i in outcome.get("interrupts", [])]
            assert len(ids) == len(set(ids)), f"{where}: interrupt ids repeat: {ids}"
            active, closed_by = False, "RUN_FINISHED"
        elif kind.rpartition("_")[0] in _STREAMS:
            family, _, step = kind.rpartition("_")
            key = _STREAMS[family]
            opened = open_text if family == "TEXT_MESSAGE" else open_calls
            if step == "START":
                assert event[key] not in opened, f"{where}: started twice"
                opened.add(event[key])
            elif step in ("CONTENT", "ARGS", "END"):
                assert event[key] in opened, f"{where}: {event[key]} not open"
                if step == "END":
                    opened.discard(event[key])
                elif family == "TEXT_MESSAGE":
                    assert event["delta"], f"{where}: an empty delta"
    assert not active and closed_by is not None, "the stream ends inside a run"


def apply_patch(doc: Any, ops: list[dict[str, Any]]) -> Any:
    """Apply RFC 6902 ``add``/``remove``/``replace`` operations (what the host sends)."""
    doc = copy.deepcopy(doc)
    for op in ops:
        path = [p.replace("~1", "/").replace("~0", "~") for p in op["path"].split("/")[1:]]
        if not path:
            doc = copy.deepcopy(op["value"])
            continue
        parent = doc
        for part in path[:-1]:
            parent = parent[int(part)] if isinstance(parent, list) else parent[part]
        last = path[-1]
        if op["op"] == "remove":
            del parent[last]
        else:
            assert op["op"] in ("add", "replace"), op
            assert op["op"] == "add" or last in parent, f"replace of a missing {op['path']}"
            parent[last] = copy.deepcopy(op["value"])
    return doc


def final_state(events: list[dict[str, Any]], start: Any = None) -> Any:
    """The shared state a client holds after ``events`` (snapshots replace, deltas patch)."""
    state = start
    for event in events:
        if event["type"] == "STATE_SNAPSHOT":
            state = copy.deepcopy(event["snapshot"])
        elif event["type"] == "STATE_DELTA":
            state = apply_patch(state, event["delta"])
    return state


def texts(events: list[dict[str, Any]]) -> dict[str, str]:
    """Each text message's assembled text, by message id."""
    found: dict[str, str] = {}
    for event in events:
        if event["type"] == "TEXT_MESSAGE_START":
            found.setdefault(event["messageId"], "")
        elif event["type"] == "TEXT_MESSAGE_CONTENT":
            found[event["messageId"]] += event["delta"]
    return found
