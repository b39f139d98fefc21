"""The OpenWOP schemas the tests validate against: the copy bundled in the package.

``load_schemas()`` returns :class:`CheckedSchemas` over ``wopdsl.protocol.openwop``'s bundled
schemas (never skips: they ship with the package). ``check_events`` runs everything
``wop check`` runs (schemas and log rules, :func:`wopdsl.protocol.check.check_events`).

``reference_dir()`` finds the project's reference copy ``shared/openwop/schemas`` above the
checkout (or ``$WOPDSL_OPENWOP_SCHEMAS``), which ``test_bundled_schemas`` compares with the
bundled copy when it exists.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from wopdsl.protocol.check import check_events
from wopdsl.protocol.openwop import OpenWopSchemas, bundled_schemas

SCHEMAS_ENV = "WOPDSL_OPENWOP_SCHEMAS"
"""Environment variable naming a reference OpenWOP schemas directory."""

_MARKER = "run-event.schema.json"


def reference_dir(start: Path | None = None) -> Path | None:
    """Return the reference schemas directory beside the checkout, or ``None``."""
    configured = os.environ.get(SCHEMAS_ENV)
    if configured:
        path = Path(configured)
        return path if (path / _MARKER).is_file() else None
    here = (start or Path(__file__)).resolve()
    for parent in here.parents:
        candidate = parent / "shared" / "openwop" / "schemas"
        if (candidate / _MARKER).is_file():
            return candidate
    return None


class CheckedSchemas:
    """The bundled schemas, with assertion helpers for tests."""

    def __init__(self, inner: OpenWopSchemas) -> None:
        self.inner = inner
        self.documents = inner.documents
        self.registry = inner.registry

    def event_errors(self, event: Mapping[str, Any]) -> list[str]:
        """Every schema violation of one event, as text (empty when valid)."""
        where = f"#{event.get('sequence')} {event.get('type')}"
        return [f"{where}: {check}: {message}" for check, message in
                self.inner.event_errors(event)]

    def check_events(self, events: Iterable[Mapping[str, Any]]) -> int:
        """Assert the log passes ``wop check`` (schemas and rules); return its length."""
        listed = list(events)
        violations = check_events(listed, schemas=self.inner)
        assert not violations, "events break OpenWOP:\n" + "\n".join(map(str, violations))
        return len(listed)


def load_schemas() -> CheckedSchemas:
    """Return the bundled schemas (loaded once per process)."""
    return CheckedSchemas(bundled_schemas())


def maybe_schemas() -> CheckedSchemas:
    """Kept for callers of the old optional loader: the bundled schemas are always there."""
    return load_schemas()
