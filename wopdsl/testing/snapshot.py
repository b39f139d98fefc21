"""syrupy extensions for councils: the transcript as a text file, the event log as JSON.

Both write one file per assertion under ``__snapshots__/<test module>/`` beside the test,
byte for byte the same on every run, machine and hash seed::

    from wopdsl.testing.snapshot import EventLogSnapshot

    def test_release_team(run_council, snapshot):
        run = run_council("councils/release-team.toml")
        assert run.transcript == snapshot                           # test_release_team.txt
        assert run.events == snapshot(extension_class=EventLogSnapshot)  # ...release_team.1.json

With the ``wopdsl`` pytest plugin (installed with the package), a plain ``snapshot`` already
stores a transcript with :class:`TranscriptSnapshot` and a ``run.events`` log with
:class:`EventLogSnapshot`; every other value keeps syrupy's default extension.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from syrupy.assertion import SnapshotAssertion
from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode

from wopdsl.run import EventLog
from wopdsl.testing.normalise import dump_events, is_transcript

if TYPE_CHECKING:
    from syrupy.data import SnapshotCollection
    from syrupy.extensions.base import AbstractSyrupyExtension
    from syrupy.types import PropertyFilter, PropertyMatcher, SerializedData

__all__ = [
    "CouncilSnapshotAssertion",
    "EventLogSnapshot",
    "MermaidSnapshot",
    "TextSnapshot",
    "TranscriptSnapshot",
    "default_extension_for",
]


class TextSnapshot(SingleFileSnapshotExtension):
    """One UTF-8 text file per assertion (``.txt``), written and read byte for byte.

    Subclass it and set ``file_extension`` for other text formats (see
    :class:`MermaidSnapshot`). Works on every syrupy the ``testing`` extra allows: syrupy 5
    renamed the hooks single-file extensions override (``_file_extension`` →
    ``file_extension``, ``_read_snapshot_data_from_location`` →
    ``read_snapshot_data_from_location``, ``_write_snapshot_collection`` →
    ``write_snapshot_collection``); this class defines both spellings and keeps a subclass's
    extension in both attributes, so either spelling works in a subclass too.
    """

    _write_mode = WriteMode.TEXT
    file_extension = "txt"
    _file_extension = "txt"  # syrupy < 5 reads this name

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = vars(cls)
        if "file_extension" in own:
            cls._file_extension = own["file_extension"]
        elif "_file_extension" in own:
            cls.file_extension = own["_file_extension"]

    def serialize(self, data: Any, *, exclude: PropertyFilter | None = None,
                  include: PropertyFilter | None = None,
                  matcher: PropertyMatcher | None = None) -> SerializedData:
        """Return ``data`` itself; only text is accepted."""
        if not isinstance(data, str):
            raise TypeError(f"{type(self).__name__} stores text; got {type(data).__name__}")
        return str(data)

    # Newlines are not translated: a message holding "\r\n" must read back exactly as written,
    # and a snapshot written on Windows must match on Linux.
    def read_snapshot_data_from_location(self, *, snapshot_location: str, snapshot_name: str,
                                         session_id: str) -> str | None:
        """Return the file's text exactly as stored (``None`` when there is no file)."""
        try:
            with open(snapshot_location, encoding="utf-8", newline="") as handle:
                return handle.read()
        except FileNotFoundError:
            return None

    _read_snapshot_data_from_location = read_snapshot_data_from_location  # syrupy < 5

    @classmethod
    def write_snapshot_collection(cls, *, snapshot_collection: SnapshotCollection,
                                  **_options: Any) -> None:
        """Write the one snapshot of the collection as UTF-8, newlines untouched."""
        data = next(iter(snapshot_collection)).data
        if not isinstance(data, str):
            raise TypeError(f"{cls.__name__} writes text; got {type(data).__name__}")
        with open(snapshot_collection.location, "w", encoding="utf-8", newline="") as handle:
            handle.write(data)

    _write_snapshot_collection = write_snapshot_collection  # syrupy < 5


class TranscriptSnapshot(TextSnapshot):
    """A run's transcript as a readable text file: rooms, senders, message ids, mentions, text.

    Accepts ``run.transcript`` (or the ``Run`` itself). The transcript has no timestamps or
    run ids, so it is stable across runs and machines.
    """

    def serialize(self, data: Any, *, exclude: PropertyFilter | None = None,
                  include: PropertyFilter | None = None,
                  matcher: PropertyMatcher | None = None) -> SerializedData:
        """Return the transcript text."""
        text = getattr(data, "transcript", data)
        if not isinstance(text, str):
            raise TypeError(f"TranscriptSnapshot stores run.transcript (text); got "
                            f"{type(data).__name__}")
        return text


class MermaidSnapshot(TextSnapshot):
    """A Mermaid diagram (``council.compile().to_mermaid()``) as an ``.mmd`` file."""

    file_extension = "mmd"


class EventLogSnapshot(TextSnapshot):
    """A run's event log as normalised, pretty-printed JSON with sorted keys (``.json``).

    Run ids, event ids, timestamps, ``ts`` values, durations and file paths become stable
    placeholders (``<run>``, ``<event:7>``, ``<ts>``, ``<duration>``, ``<path:NAME>``); the
    order of events and everything else, ``metadata.council`` included, are kept. See
    :func:`wopdsl.testing.normalise.normalise_events`.

    Accepts ``run.events``, the ``Run`` itself, or any list of event dicts.
    """

    file_extension = "json"

    def serialize(self, data: Any, *, exclude: PropertyFilter | None = None,
                  include: PropertyFilter | None = None,
                  matcher: PropertyMatcher | None = None) -> SerializedData:
        """Return the normalised JSON text."""
        events = getattr(data, "events", data)
        if isinstance(events, str | bytes | Mapping) or not isinstance(events, Iterable):
            raise TypeError(f"EventLogSnapshot stores run.events (a list of event dicts); got "
                            f"{type(data).__name__}")
        return dump_events(events)


def default_extension_for(value: object) -> type[AbstractSyrupyExtension] | None:
    """Return the extension the plugin's ``snapshot`` picks for ``value`` (``None``: default).

    A transcript (see :func:`~wopdsl.testing.normalise.is_transcript`) ->
    :class:`TranscriptSnapshot`; an :class:`~wopdsl.EventLog` (``run.events``) ->
    :class:`EventLogSnapshot`.
    """
    if is_transcript(value):
        return TranscriptSnapshot
    if isinstance(value, EventLog):
        return EventLogSnapshot
    return None


class CouncilSnapshotAssertion(SnapshotAssertion):
    """syrupy's ``snapshot`` that stores council output in its own readable files.

    ``assert run.transcript == snapshot`` uses :class:`TranscriptSnapshot` and
    ``assert run.events == snapshot`` uses :class:`EventLogSnapshot`, unless the assertion
    names an extension (``snapshot(extension_class=...)``, ``snapshot.use_extension(...)``).
    Any other value goes to the session's default extension, exactly as without the plugin.
    """

    _routes = True
    _explicit = False

    @classmethod
    def wrapping(cls, snapshot: SnapshotAssertion) -> CouncilSnapshotAssertion:
        """Return a council-aware copy of syrupy's ``snapshot`` fixture value.

        Every constructor field the installed syrupy defines is carried over (newer versions
        add some, e.g. ``update_new_snapshots_only`` in 6.0), so the copy behaves as the
        original does under every command-line option.
        """
        fields = {f.name: getattr(snapshot, f.name)
                  for f in dataclasses.fields(snapshot) if f.init}
        return cls(**fields)

    def with_defaults(self, *, exclude: PropertyFilter | None = None,
                      include: PropertyFilter | None = None,
                      matcher: PropertyMatcher | None = None,
                      extension_class: type[AbstractSyrupyExtension] | None = None,
                      ) -> SnapshotAssertion:
        """Return a copy with new defaults (a chosen extension turns routing off)."""
        copy = super().with_defaults(exclude=exclude, include=include, matcher=matcher,
                                     extension_class=extension_class)
        if isinstance(copy, CouncilSnapshotAssertion):
            copy._routes = self._routes and extension_class is None
        return copy

    def __call__(self, **options: Any) -> SnapshotAssertion:
        """Set options for the next assertion (syrupy's ``SnapshotAssertion.__call__``).

        Every option of the installed syrupy passes through (``name``, ``extension_class``,
        ``exclude``, ``include``, ``matcher``, ``diff`` …); naming an extension turns routing
        off for that assertion.
        """
        if options.get("extension_class") is not None:
            self._explicit = True
        return super().__call__(**options)

    def __eq__(self, other: object) -> bool:
        try:
            routed = self._routes and not self._explicit
            extension = default_extension_for(other) if routed else None
            if extension is not None:
                super().__call__(extension_class=extension)
            return super().__eq__(other)
        finally:
            self._explicit = False
