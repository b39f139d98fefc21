"""Make run output stable for snapshots: normalised event logs and transcript recognition.

Nothing here needs pytest or syrupy, so these helpers also serve other test runners.

Example:
    >>> from wopdsl.testing.normalise import normalise_events
    >>> events = [{"eventId": "evt.r-7.000000000000", "runId": "r-7", "sequence": 0,
    ...            "type": "run.started", "timestamp": "2026-01-01T00:00:00.000Z",
    ...            "payload": {"conversationId": "r-7:room:review"}}]
    >>> normalise_events(events)[0]["payload"]
    {'conversationId': '<run>:room:review'}
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final

__all__ = [
    "DURATION_KEYS",
    "PATH_KEYS",
    "TIME_KEYS",
    "URL_KEYS",
    "dump_events",
    "is_transcript",
    "normalise_events",
]

TIME_KEYS: Final = frozenset({"timestamp", "ts"})
"""Keys whose values are wall-clock readings; replaced by ``<ts>``."""

DURATION_KEYS: Final = frozenset({"durationMs", "elapsedMs"})
"""Keys whose values are measured durations; replaced by ``<duration>``."""

PATH_KEYS: Final = frozenset({"source"})
"""Keys whose values are file paths (machine-specific); replaced by ``<path:NAME>``."""

URL_KEYS: Final = frozenset({"baseUrl"})
"""Keys whose values are server addresses (a run's model server: a port that changes);
replaced by ``<url>``."""

# Ids are minted from [A-Za-z0-9._~-]; a placeholder only replaces a whole id, never the
# middle of a longer one ("run-1" must not touch "run-10").
_ID_CHARS = r"A-Za-z0-9._~\-"

_SEPARATORS: Final = re.compile(r"[/\\]")

_TRANSCRIPT_HEAD: Final = re.compile(
    r"council [A-Za-z0-9._-]{1,64}: "
    r"(?:pending|running|waiting-input|completed|failed|cancelled)(?: [^\n]*)?\n"
)


def is_transcript(value: object) -> bool:
    """Return whether ``value`` is a council transcript (``run.transcript``).

    A transcript is a ``str`` whose first line reads ``council <id>: <status>``; the pytest
    plugin stores such values as a text file instead of an ``.ambr`` entry.
    """
    return isinstance(value, str) and _TRANSCRIPT_HEAD.match(value) is not None


def normalise_events(events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Return a copy of ``events`` with run-specific values replaced by stable placeholders.

    Order and everything else (types, payloads, ``metadata.council``, sequences) are kept.

    - run ids -> ``<run>`` (a second run in the same list -> ``<run:2>``, ...), also inside
      other ids such as conversation ids (``<run>:room:review``);
    - event ids -> ``<event:SEQ>`` (``<event:2:SEQ>`` for a second run), also where they are
      referenced (``causationId``); a reference to an event outside the list -> ``<event:?N>``;
    - :data:`TIME_KEYS` -> ``<ts>``, :data:`DURATION_KEYS` -> ``<duration>``,
      :data:`PATH_KEYS` -> ``<path:file-name>``, :data:`URL_KEYS` -> ``<url>``.

    Args:
        events: A run's events: ``run.events``, ``store.read(run_id)`` or any list of dicts.

    Returns:
        New plain dicts and lists (the input is not modified).
    """
    items = [dict(event) for event in events]
    tokens: dict[str, str] = {}
    runs: dict[str, int] = {}
    for position, event in enumerate(items):
        run_id = event.get("runId")
        if isinstance(run_id, str) and run_id not in runs:
            runs[run_id] = len(runs) + 1
            tokens[run_id] = "<run>" if runs[run_id] == 1 else f"<run:{runs[run_id]}>"
        event_id = event.get("eventId")
        if isinstance(event_id, str) and event_id not in tokens:
            number = runs.get(run_id, 1) if isinstance(run_id, str) else 1
            sequence = event.get("sequence", position)
            tokens[event_id] = f"<event:{sequence}>" if number == 1 else (
                f"<event:{number}:{sequence}>"
            )
    return [_Normaliser(tokens).value(event) for event in items]


def dump_events(events: Iterable[Mapping[str, Any]]) -> str:
    """Return the normalised events as pretty-printed JSON with sorted keys (and a newline)."""
    return json.dumps(normalise_events(events), indent=2, sort_keys=True, ensure_ascii=False) + "\n"


class _Normaliser:
    def __init__(self, tokens: Mapping[str, str]) -> None:
        self.tokens = dict(tokens)
        self.unknown: dict[str, str] = {}
        # Longest first, so an event id wins over the run id it contains.
        alternatives = "|".join(re.escape(t) for t in sorted(tokens, key=len, reverse=True))
        self.pattern = (
            re.compile(f"(?<![{_ID_CHARS}])(?:{alternatives})(?![{_ID_CHARS}])")
            if alternatives else None
        )

    def value(self, value: Any, key: str | None = None) -> Any:
        if isinstance(value, Mapping):
            return {self.text(str(k)): self.value(v, str(k)) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.value(item) for item in value]
        if key is not None and value is not None:
            if key in TIME_KEYS:
                return "<ts>"
            if key in DURATION_KEYS:
                return "<duration>"
            if key in URL_KEYS and isinstance(value, str):
                return "<url>"
            if key in PATH_KEYS and isinstance(value, str) and not value.startswith("<path:"):
                return f"<path:{_SEPARATORS.split(value)[-1]}>"
            if key in {"eventId", "causationId", "correlationId"} and isinstance(value, str):
                return self.reference(value)
        if isinstance(value, str):
            return self.text(value)
        return value

    def reference(self, value: str) -> str:
        if value in self.tokens:
            return self.tokens[value]
        if value not in self.unknown:
            self.unknown[value] = f"<event:?{len(self.unknown) + 1}>"
        return self.unknown[value]

    def text(self, value: str) -> str:
        if self.pattern is None:
            return value
        return self.pattern.sub(lambda match: self.tokens[match.group(0)], value)
