"""Load the OpenWOP JSON Schemas and validate council run events against them.

Reusable by any test (engine semantics, protocol conformance): ``load_schemas()`` returns an
:class:`OpenWopSchemas` or skips the calling test with a clear message when the schemas are
not available.

Where the schemas are looked for, in order:

1. ``$WOPDSL_OPENWOP_SCHEMAS`` (a directory holding ``run-event.schema.json``);
2. walking up from this file, ``<dir>/shared/openwop/schemas`` or ``<dir>/openwop/schemas``
   for every parent ``<dir>`` (a checkout at ``/work/main`` finds ``/work/shared``; CI has
   ``<clone>/../shared/openwop``).

What each event is checked against (DESIGN.md §7):

- the envelope: ``run-event.schema.json`` (v1 ``RunEventDoc``);
- the payload: ``run-event-payloads.schema.json`` ``$defs`` entry picked through ``_typeIndex``;
- ``conversation.opened`` / ``conversation.closed`` payloads: the ``$defs`` of
  ``v2/conversation-event.schema.json`` (the v2 copy has the RFC 0101 ``participants``);
- ``conversation.exchanged`` payloads: the v1 ``conversation-event.schema.json``
  ``ConversationExchangedPayload``;
- every conversation turn (initial, exchanged, final): ``v2/conversation-turn.schema.json``.
"""

from __future__ import annotations

import functools
import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

SCHEMAS_ENV = "WOPDSL_OPENWOP_SCHEMAS"
"""Environment variable naming the OpenWOP schemas directory."""

_MARKER = "run-event.schema.json"


def find_schemas_dir(start: Path | None = None) -> Path | None:
    """Return the OpenWOP schemas directory, or ``None`` when it cannot be found."""
    configured = os.environ.get(SCHEMAS_ENV)
    if configured:
        path = Path(configured)
        return path if (path / _MARKER).is_file() else None
    here = (start or Path(__file__)).resolve()
    for parent in [here, *here.parents]:
        for candidate in (parent / "shared" / "openwop" / "schemas",
                          parent / "openwop" / "schemas"):
            if (candidate / _MARKER).is_file():
                return candidate
    return None


class OpenWopSchemas:
    """The OpenWOP schemas of one directory, with validators for council events."""

    def __init__(self, root: Path) -> None:
        from jsonschema import Draft202012Validator, FormatChecker
        from referencing import Registry, Resource
        from referencing.jsonschema import DRAFT202012

        self.root = root
        self.documents: dict[str, dict[str, Any]] = {}
        """Every schema file by its path relative to ``root`` (e.g. ``v2/ids.schema.json``)."""
        resources = []
        for path in sorted(root.rglob("*.schema.json")):
            document = json.loads(path.read_text(encoding="utf-8"))
            self.documents[path.relative_to(root).as_posix()] = document
            resource = Resource.from_contents(document, default_specification=DRAFT202012)
            resources.append((document["$id"], resource))
        self.registry: Registry[Any] = Registry().with_resources(resources)
        self._validator_cls = Draft202012Validator
        self._format_checker = FormatChecker()
        payloads = self.documents["run-event-payloads.schema.json"]
        self.type_index: dict[str, str] = {
            type_: ref["$ref"].rsplit("/", 1)[-1]
            for type_, ref in payloads["$defs"]["_typeIndex"]["properties"].items()
        }
        """Event type -> ``$defs`` key of ``run-event-payloads.schema.json``."""

    # -- validators ------------------------------------------------------------------------

    def _ref(self, document: str, pointer: str = "") -> Any:
        schema_id = self.documents[document]["$id"]
        return self._validator_cls(
            {"$ref": f"{schema_id}#{pointer}"},
            registry=self.registry,
            format_checker=self._format_checker,
        )

    @functools.cached_property
    def envelope(self) -> Any:
        """Validator of the v1 ``RunEventDoc`` envelope."""
        return self._ref("run-event.schema.json")

    def payload(self, event_type: str) -> Any | None:
        """Validator of ``event_type``'s payload (``None`` when the type is not indexed)."""
        key = self.type_index.get(event_type)
        return None if key is None else self._payload(key)

    @functools.cache  # noqa: B019 - one instance per schemas dir, cached for the session.
    def _payload(self, key: str) -> Any:
        return self._ref("run-event-payloads.schema.json", f"/$defs/{key}")

    @functools.cached_property
    def conversation_opened(self) -> Any:
        """Validator of ``conversation.opened`` payloads (v2, with ``participants``)."""
        return self._ref("v2/conversation-event.schema.json", "/$defs/ConversationOpenedPayload")

    @functools.cached_property
    def conversation_closed(self) -> Any:
        """Validator of ``conversation.closed`` payloads (v2)."""
        return self._ref("v2/conversation-event.schema.json", "/$defs/ConversationClosedPayload")

    @functools.cached_property
    def conversation_exchanged(self) -> Any:
        """Validator of ``conversation.exchanged`` payloads (v1 RFC 0005 shape)."""
        return self._ref("conversation-event.schema.json", "/$defs/ConversationExchangedPayload")

    @functools.cached_property
    def turn(self) -> Any:
        """Validator of one conversation turn (v2, with the RFC 0101 ``speakerId`` rule)."""
        return self._ref("v2/conversation-turn.schema.json")

    # -- checks ----------------------------------------------------------------------------

    def event_errors(self, event: Mapping[str, Any]) -> list[str]:
        """Return every schema violation of ``event`` (empty when it is valid)."""
        where = f"#{event.get('sequence')} {event.get('type')}"
        errors = [f"{where}: envelope: {_describe(e)}" for e in self.envelope.iter_errors(event)]
        type_ = event.get("type")
        payload = event.get("payload")
        checks: list[tuple[str, Any, Any]] = []
        if isinstance(type_, str):
            validator = self.payload(type_)
            if validator is not None:
                checks.append(("payload", validator, payload))
        if isinstance(payload, dict):
            if type_ == "conversation.opened":
                checks.append(("conversation.opened", self.conversation_opened, payload))
                checks.append(("initialTurn", self.turn, payload.get("initialTurn")))
            elif type_ == "conversation.closed":
                checks.append(("conversation.closed", self.conversation_closed, payload))
                checks.append(("finalTurn", self.turn, payload.get("finalTurn")))
            elif type_ == "conversation.exchanged":
                checks.append(("conversation.exchanged", self.conversation_exchanged, payload))
                checks.append(("turn", self.turn, payload.get("turn")))
        for label, validator, instance in checks:
            errors.extend(f"{where}: {label}: {_describe(e)}"
                          for e in validator.iter_errors(instance))
        return errors

    def check_events(self, events: Iterable[Mapping[str, Any]]) -> int:
        """Assert every event is valid; return how many were checked.

        Raises:
            AssertionError: listing every violation of every event.
        """
        errors: list[str] = []
        count = 0
        for event in events:
            errors.extend(self.event_errors(event))
            count += 1
        assert not errors, "events break the OpenWOP schemas:\n" + "\n".join(errors)
        return count


def _describe(error: Any) -> str:
    where = "/".join(str(p) for p in error.absolute_path) or "<root>"
    return f"{where}: {error.message}"


@functools.cache
def _load(root: str) -> OpenWopSchemas:
    return OpenWopSchemas(Path(root))


def load_schemas() -> OpenWopSchemas:
    """Return the schemas (loaded once per session), or skip the calling test."""
    import pytest

    root = find_schemas_dir()
    if root is None:
        configured = os.environ.get(SCHEMAS_ENV)
        where = (f"${SCHEMAS_ENV}={configured!r} holds no {_MARKER}" if configured
                 else "no shared/openwop/schemas above " + str(Path(__file__).resolve().parent))
        pytest.skip(
            f"OpenWOP schemas not found ({where}): set ${SCHEMAS_ENV} to the directory "
            f"holding {_MARKER}, or put shared/openwop/schemas beside the checkout"
        )
    return _load(str(root))


def maybe_schemas() -> OpenWopSchemas | None:
    """Return the schemas when available, else ``None`` (for optional extra checks)."""
    root = find_schemas_dir()
    return None if root is None else _load(str(root))
