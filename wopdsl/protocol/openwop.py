"""The bundled OpenWOP JSON Schemas, with validators for council run events.

The schemas ship inside the package (``wopdsl/protocol/schemas/``, provenance and licence in
its ``SOURCES.md`` and ``NOTICE``), so ``wop check`` and the conformance tests work on any
installation. Validation needs ``jsonschema`` (a dependency of ``wopdsl``); it is imported
only when a validator is first built, so ``import wopdsl`` stays light.

What each event is checked against (DESIGN.md §7):

- the envelope: ``run-event.schema.json`` (v1 ``RunEventDoc``);
- the payload: the ``run-event-payloads.schema.json`` ``$defs`` entry named by ``_typeIndex``;
- ``conversation.opened`` / ``conversation.closed``: ``v2/conversation-event.schema.json``
  (the v2 copy has the RFC 0101 ``participants``);
- ``conversation.exchanged``: the v1 ``conversation-event.schema.json``
  ``ConversationExchangedPayload``;
- every conversation turn (initial, exchanged, final): ``v2/conversation-turn.schema.json``.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator, Mapping
from importlib import resources
from pathlib import Path
from typing import Any

__all__ = ["SCHEMAS_PACKAGE", "OpenWopSchemas", "bundled_schemas", "errors_of", "schema_files"]

SCHEMAS_PACKAGE = "wopdsl.protocol"
"""The package whose ``schemas/`` folder holds the bundled schema files."""


def schema_files() -> dict[str, bytes]:
    """Return every bundled ``*.schema.json`` by its path under ``schemas/`` (raw bytes)."""
    root = resources.files(SCHEMAS_PACKAGE).joinpath("schemas")
    files: dict[str, bytes] = {}

    def walk(folder: Any, prefix: str) -> None:
        for entry in folder.iterdir():
            if entry.is_dir():
                walk(entry, f"{prefix}{entry.name}/")
            elif entry.name.endswith(".schema.json"):
                files[f"{prefix}{entry.name}"] = entry.read_bytes()

    walk(root, "")
    return dict(sorted(files.items()))


class OpenWopSchemas:
    """A set of OpenWOP schema documents, with validators for council events.

    Args:
        documents: Each schema document by its path relative to the schemas folder
            (``run-event.schema.json``, ``v2/ids.schema.json`` …).
    """

    def __init__(self, documents: Mapping[str, dict[str, Any]]) -> None:
        from jsonschema import Draft202012Validator, FormatChecker
        from referencing import Registry, Resource
        from referencing.jsonschema import DRAFT202012

        self.documents: dict[str, dict[str, Any]] = dict(documents)
        """Every schema document by its relative path."""
        resources_ = [(doc["$id"], Resource.from_contents(doc, default_specification=DRAFT202012))
                      for doc in self.documents.values()]
        self.registry: Any = Registry().with_resources(resources_)
        self._validator_cls = Draft202012Validator
        self._format_checker = FormatChecker()
        payloads = self.documents["run-event-payloads.schema.json"]
        self.type_index: dict[str, str] = {
            type_: ref["$ref"].rsplit("/", 1)[-1]
            for type_, ref in payloads["$defs"]["_typeIndex"]["properties"].items()
        }
        """Event type -> ``$defs`` key of ``run-event-payloads.schema.json``."""
        self._payloads: dict[str, Any] = {}

    @classmethod
    def from_dir(cls, root: str | Path) -> OpenWopSchemas:
        """Load every ``*.schema.json`` under ``root`` (e.g. a reference copy)."""
        base = Path(root)
        return cls({path.relative_to(base).as_posix(): json.loads(path.read_text("utf-8"))
                    for path in sorted(base.rglob("*.schema.json"))})

    # -- validators ------------------------------------------------------------------------

    def validator(self, document: str, pointer: str = "") -> Any:
        """Return a validator of ``document`` (a relative path) at JSON ``pointer``."""
        schema_id = self.documents[document]["$id"]
        return self._validator_cls({"$ref": f"{schema_id}#{pointer}"}, registry=self.registry,
                                   format_checker=self._format_checker)

    @functools.cached_property
    def envelope(self) -> Any:
        """Validator of the v1 ``RunEventDoc`` envelope."""
        return self.validator("run-event.schema.json")

    def payload(self, event_type: str) -> Any | None:
        """Validator of ``event_type``'s payload (``None`` when the type is not indexed)."""
        key = self.type_index.get(event_type)
        if key is None:
            return None
        validator = self._payloads.get(key)
        if validator is None:
            validator = self._payloads[key] = self.validator(
                "run-event-payloads.schema.json", f"/$defs/{key}")
        return validator

    @functools.cached_property
    def conversation_opened(self) -> Any:
        """Validator of ``conversation.opened`` payloads (v2, with ``participants``)."""
        return self.validator("v2/conversation-event.schema.json",
                              "/$defs/ConversationOpenedPayload")

    @functools.cached_property
    def conversation_closed(self) -> Any:
        """Validator of ``conversation.closed`` payloads (v2)."""
        return self.validator("v2/conversation-event.schema.json",
                              "/$defs/ConversationClosedPayload")

    @functools.cached_property
    def conversation_exchanged(self) -> Any:
        """Validator of ``conversation.exchanged`` payloads (v1 RFC 0005 shape)."""
        return self.validator("conversation-event.schema.json",
                              "/$defs/ConversationExchangedPayload")

    @functools.cached_property
    def turn(self) -> Any:
        """Validator of one conversation turn (v2, with the RFC 0101 ``speakerId`` rule)."""
        return self.validator("v2/conversation-turn.schema.json")

    @functools.cached_property
    def parts(self) -> Any:
        """Validator of a v2 turn's ``parts``: a non-empty array of A2A ``Part`` objects.

        RFC 0205 §B's rule (``v2/part.schema.json`` per item), which the bundled turn defs
        predate.
        """
        part = self.documents["v2/part.schema.json"]["$id"]
        return self._validator_cls({"type": "array", "minItems": 1, "items": {"$ref": part}},
                                   registry=self.registry, format_checker=self._format_checker)

    @functools.cached_property
    def snapshot(self) -> Any:
        """Validator of a v1 ``RunSnapshot``."""
        return self.validator("run-snapshot.schema.json")

    # -- checks ----------------------------------------------------------------------------

    def event_errors(self, event: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
        """Yield ``(check, message)`` for every schema violation of ``event``."""
        for message in errors_of(self.envelope, event):
            yield "envelope", message
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
            for message in errors_of(validator, instance):
                yield label, message


def errors_of(validator: Any, instance: Any,
              keep: Callable[[Any], bool] = lambda error: True) -> list[str]:
    """One line per violation of ``instance`` (:func:`describe`), for the errors ``keep`` keeps.

    A ``$ref`` to a schema file that is not bundled is reported as one violation naming it,
    not raised: a log may hold an event type whose payload schema wopdsl does not ship.
    """
    from referencing.exceptions import Unresolvable

    try:
        return [describe(error) for error in validator.iter_errors(instance) if keep(error)]
    except Unresolvable as exc:
        return [f"<root>: cannot be checked: it reaches {exc.ref!r}, a schema not bundled "
                "(see wopdsl/protocol/schemas/SOURCES.md)"]


def describe(error: Any) -> str:
    """One line for a ``jsonschema`` error: the instance path, then the message."""
    where = "/".join(str(p) for p in error.absolute_path) or "<root>"
    message = str(error.message)
    if len(message) > 300:
        message = message[:297] + "..."
    return f"{where}: {message}"


@functools.cache
def bundled_schemas() -> OpenWopSchemas:
    """Return the schemas shipped inside the package (loaded once per process)."""
    return OpenWopSchemas({name: json.loads(raw) for name, raw in schema_files().items()})
