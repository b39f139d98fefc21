"""Private: the CLI's live transcript — one line per accepted message as a run's events arrive."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final, TextIO

from wopdsl import CouncilState
from wopdsl.cli._output import terminal_safe
from wopdsl.cli._tool_lines import LINED, tool_line
from wopdsl.protocol import RunEventDoc
from wopdsl.protocol.payloads import posted_turn, turn_sender

if TYPE_CHECKING:
    from asyncio import AbstractEventLoop

    from wopdsl import EventStore

__all__ = ["LivePrinter", "message_line", "plain_line"]


def message_line(event: RunEventDoc, turn: dict[str, Any] | None = None) -> str:
    """Format a ``conversation.exchanged`` event: ``[room] sender id @mention…: text``.

    ``turn``: the message turn the event carries, when the caller has it already.
    """
    if turn is None:
        turn = posted_turn(event) or event["payload"]["turn"]
    content = turn.get("content") or {}
    if not isinstance(content, dict):
        content = {"text": content}
    room = turn.get("groupId") or event.get("nodeId", "room:")[5:]
    mentions = content.get("mentions", [])
    if not all(type(m) is str for m in mentions):
        mentions = [str(m) for m in mentions]
    # Escaped once, whole: terminal_safe works character by character and keeps line breaks,
    # so this is the line of the escaped parts.
    return terminal_safe(f"[{room}] " + _format_line()(
        turn_sender(turn), turn["messageId"], mentions, str(content.get("text", "")),
        indent="    "))


def plain_line(turn: dict[str, Any]) -> str | None:
    """:func:`message_line` of an agent's post whose line is plain printable ASCII, else ``None``.

    The common line, built without the general path's lookups and escaping (a plain line
    has nothing to escape); any other turn gives ``None`` and takes the general path.
    """
    content = turn.get("content")
    room, sender, message = turn.get("groupId"), turn.get("from"), turn.get("messageId")
    if turn.get("role") != "agent" or type(content) is not dict or type(room) is not str \
            or not room or type(sender) is not str or type(message) is not str:
        return None
    text, mentions = content.get("text"), content.get("mentions", [])
    if type(text) is not str or type(mentions) is not list:
        return None
    try:
        tags = " @" + " @".join(mentions) if mentions else ""
    except TypeError:  # A mention that is not text.
        return None
    line = f"[{room}] {sender} {message}{tags}: {text}"
    return line if line.isascii() and line.isprintable() and "\\" not in line else None


def _format_line() -> Callable[..., str]:
    """``wopdsl.projections.format_line``, loaded on the first message (it loads the fold)."""
    global _FORMAT_LINE
    if _FORMAT_LINE is None:
        from wopdsl.projections import format_line

        _FORMAT_LINE = format_line
    return _FORMAT_LINE


_FORMAT_LINE: Callable[..., str] | None = None

PRINTED: Final = frozenset({"conversation.exchanged", "conversation.closed", *LINED})
"""The event types a printer that does not fold prints a line for (:meth:`LivePrinter.wanted`)."""


@dataclass
class LivePrinter:
    """Prints one line per accepted message as events arrive; remembers its position.

    Its work per event is what it prints: it folds the run's state only for a council with a
    blind room (whose rounds decide which posts are held), and a quiet printer (``--json``)
    prints nothing, so :func:`~wopdsl.cli._drive.follow_while` does not feed it at all.

    While :attr:`loop` is set (a follower feeding it on that loop), lines are gathered and
    written and flushed together once per turn of the loop (every line out before the loop
    runs anything else that waited): one write whatever the stream's buffering
    (``PYTHONUNBUFFERED`` makes each write a system call); otherwise each line is written
    and flushed. :meth:`flush` (and :meth:`catch_up`, which ends with it) writes and flushes
    at once.
    """

    out: TextIO
    """Where lines go."""
    quiet: bool = False
    """Track the position but print nothing (``--json``)."""
    last_sequence: int = -1
    """The last event fed."""
    printed: int = field(default=0)
    """How many message lines were printed."""
    state: CouncilState = field(default_factory=CouncilState)
    """The run as fed so far: its ``run.started`` always, every event when a room is blind
    (the rounds of blind rooms decide what is held)."""
    held: dict[str, list[str]] = field(default_factory=dict)
    """Per blind room, the current round's posts: printed when the round ends."""
    folds: bool = True
    """Whether events are still folded into :attr:`state` (decided by ``run.started``)."""
    loop: AbstractEventLoop | None = field(default=None, repr=False)
    """The loop a follower feeds this printer on (flushes wait for the loop's next turn)."""
    buffered: bool = False
    """Leave flushing to the caller (``wop replay`` prints a whole log, then flushes once)."""
    _flushing: bool = field(default=False, repr=False)
    _lines_out: list[str] = field(default_factory=list, repr=False)
    """Lines gathered for the next flush (while :attr:`loop` is set)."""
    _stash: list[Sequence[RunEventDoc]] = field(default_factory=list, repr=False)
    """Batches taken in place (:meth:`committed`), formatted at the next flush or feed."""
    _thread: int | None = field(default=None, repr=False)
    """The thread of :attr:`loop`: :meth:`committed` feeds only there."""

    def attach(self, loop: AbstractEventLoop | None) -> None:
        """Set (or, with ``None``, clear) the loop a follower feeds this printer on."""
        if loop is None:
            self.flush()
        self.loop = loop
        self._thread = threading.get_ident() if loop is not None else None

    @classmethod
    def resuming(cls, out: TextIO, store: EventStore, run_id: str, *,
                 quiet: bool = False) -> LivePrinter:
        """A printer for a run going on: what is logged already is known, not printed.

        The posts of a blind round going on are held, to be printed when the round ends.
        """
        printer = cls(out, quiet=quiet)
        if quiet:  # Prints nothing: the position is all it needs.
            printer.last_sequence = store.last_sequence(run_id)
            return printer
        for event in store.read(run_id):
            printer.last_sequence = event["sequence"]
            printer._fold(event)
            turn = posted_turn(event)
            if turn is not None:
                printer._lines(event, turn)  # Holds (or releases) a blind round's posts.
        return printer

    def feed(self, event: RunEventDoc) -> None:
        """Take one event (in sequence order); events already seen are skipped."""
        if event["sequence"] <= self.last_sequence:
            return
        self.last_sequence = event["sequence"]
        if self._stash:
            self._drain()
        self._show(event)

    def _show(self, event: RunEventDoc) -> None:
        if self.quiet:
            return
        if self.folds:
            self._fold(event)
        turn = posted_turn(event)
        if turn is None:
            line = tool_line(event)  # tools and approvals (DESIGN.md §20)
            if line is not None:
                self._write(line + "\n")
            return
        lines = self._lines(event, turn)
        self._write(lines[0] + "\n" if len(lines) == 1 else "".join(f"{line}\n" for line in lines))
        self.printed += 1

    def committed(self, events: Sequence[RunEventDoc]) -> None:
        """Take a batch this process just committed, in place (``EventStore.observe_commits``).

        Only a batch that continues what was fed, on the follower's thread, and only once
        ``run.started`` showed that nothing is folded (a blind round's fold could keep parts
        of the events the engine shares): any other batch is left to the follower, which
        reads the log from :attr:`last_sequence`. The batch only moves the position here; its
        lines are formatted at the next flush (once per turn of the loop, when the lines
        are written anyway) or before the next event fed, so the turns in between run with
        the caches they left and the lines are formatted together.
        """
        if self.folds or self._thread != threading.get_ident() or not events or \
                events[0]["sequence"] != self.last_sequence + 1:
            return
        self._stash.append(events)
        self.last_sequence = events[-1]["sequence"]
        if not self._flushing and self.loop is not None:
            self._flushing = True
            self.loop.call_soon(self.flush)

    def _drain(self) -> None:
        """Format the batches taken in place, in order (before any later event)."""
        stash, self._stash = self._stash, []
        for events in stash:
            for event in events:
                kind = event["type"]
                if kind == "conversation.exchanged":
                    # No room is blind here (the printer does not fold): a post is one line.
                    line = plain_line(event["payload"]["turn"])
                    if line is not None:
                        self._write(line + "\n")
                        self.printed += 1
                        continue
                if kind in PRINTED:
                    self._show(event)

    def wanted(self) -> frozenset[str] | None:
        """The event types this printer needs from now on: ``None`` for all of them.

        A printer that folds (a blind room), or that has not seen ``run.started`` yet, needs
        every event; any other needs only those it prints a line for.
        """
        # The state folds from the log's start, so it is past -1 once run.started was fed.
        return PRINTED if self.state.last_sequence >= 0 and not self.folds else None

    def flush(self) -> None:
        """Write what was gathered (formatting the batches taken in place first), then flush."""
        self._flushing = True  # The stash's lines are written below, not scheduled again.
        if self._stash:
            self._drain()
        self._flushing = False
        if self._lines_out:
            text = "".join(self._lines_out)
            self._lines_out.clear()
            self.out.write(text)
        self.out.flush()

    def _write(self, text: str) -> None:
        if self.loop is None:
            self.out.write(text)
            if not self.buffered:
                self.out.flush()
            return
        self._lines_out.append(text)
        if not self._flushing:
            self._flushing = True
            self.loop.call_soon(self.flush)

    def _fold(self, event: RunEventDoc) -> None:
        """Fold ``event`` if the printer still folds; ``run.started`` decides whether it will."""
        state = self.state
        if not self.folds or state.last_sequence != event["sequence"] - 1:
            return
        state.apply(event)
        if event["type"] == "run.started":
            # Only a blind room's rounds change what is printed (and when): without one, the
            # declared rooms are all the printer reads.
            self.folds = any(room.blind for room in state.rooms.values())

    def _lines(self, event: RunEventDoc, turn: dict[str, Any]) -> list[str]:
        """A message's lines; a blind round's posts are held until the round ends."""
        room_id = str(turn.get("groupId") or "")
        room = self.state.rooms.get(room_id)
        system = turn.get("role") == "system"
        if not system and (room is None or not room.blind):
            return [message_line(event, turn)]  # The common case: one line.
        raw = turn.get("content")
        content: dict[str, Any] = raw if isinstance(raw, dict) else {}
        tag = f"[{terminal_safe(room_id)}]"
        if system:
            lines = self.held.pop(room_id, []) if "round" in content or "rounds" in content \
                else []
            lines.append(f"{tag} -- {terminal_safe(str(content.get('text', '')))}")
            block = content.get("decision")
            if isinstance(block, dict):
                from wopdsl.projections import decision_lines

                lines += [terminal_safe(line) for line in decision_lines([block])[3:]]
            return lines
        if room is not None and room.blind and room.round and not room.settled:
            self.held.setdefault(room_id, []).append(message_line(event, turn))
            answered = len(room.round_members) - len(room.pending)
            return [f"{tag} {terminal_safe(turn_sender(turn))} answered round {room.round} "
                    f"(hidden until the round ends: {answered} of {len(room.round_members)})"]
        return [message_line(event, turn)]

    def catch_up(self, store: EventStore, run_id: str) -> None:
        """Feed every stored event after :attr:`last_sequence` (a quiet printer reads none)."""
        if self.quiet:
            return
        try:
            for event in store.read(run_id, self.last_sequence):
                self.feed(event)
        finally:
            self.flush()
