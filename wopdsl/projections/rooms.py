"""Room files: one file per room, one escaped line per accepted message."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final

from wopdsl._ids import BIDI_CONTROLS
from wopdsl.protocol.envelope import RunEventDoc
from wopdsl.protocol.payloads import posted_turn, turn_sender

__all__ = ["escape", "room_lines", "terminal_safe", "write_room_files"]


_UNSAFE: Final = {
    **{code: f"\\x{code:02x}" for code in [*range(0x20), *range(0x7F, 0xA0)]},
    **{code: f"\\u{code:04x}" for code in (0x2028, 0x2029, *BIDI_CONTROLS)},
}
_ROOM_LINE: Final = str.maketrans(
    {**_UNSAFE, ord("\\"): "\\\\", ord("\n"): "\\n", ord("\r"): "\\r", ord("\t"): "\\t"})
_TERMINAL: Final = str.maketrans(
    {code: text for code, text in _UNSAFE.items() if code not in (0x0A, 0x09)})


def escape(text: str) -> str:
    r"""Escape backslashes, newlines and control characters so a message stays on one line.

    ``\`` -> ``\\``, newline -> ``\n``, carriage return -> ``\r``, tab -> ``\t``, any other
    control character (C0, DEL, C1) -> ``\xNN``, U+2028/2029 and bidirectional formatting
    characters -> ``\uNNNN``.
    """
    if text.isascii() and text.isprintable() and "\\" not in text:
        return text  # The common case, checked much faster than translated: nothing to do.
    return text.translate(_ROOM_LINE)


def terminal_safe(text: str) -> str:
    r"""Escape what a terminal would act on, keeping line breaks and tabs.

    Control characters (ANSI and OSC sequences, ``\r``, NUL, C1) become ``\xNN`` and
    line/paragraph separators and bidirectional formatting characters ``\uNNNN``; nothing
    else changes (backslashes stay single). Text from members and people goes through this
    before any terminal shows it.
    """
    if text.isascii() and (text.isprintable() or text.replace("\n", " ").isprintable()):
        # The common cases (a line, lines ending in line breaks), checked much faster than
        # translated: nothing to do.
        return text
    return text.translate(_TERMINAL)


def room_lines(events: Iterable[RunEventDoc]) -> tuple[list[str], dict[str, list[str]], int]:
    """Fold events into (room ids in order, lines per room, revision = last sequence)."""
    rooms: list[str] = []
    lines: dict[str, list[str]] = {}
    revision = -1
    for event in events:
        revision = event["sequence"]
        if event["type"] == "run.started":
            council = event["payload"].get("metadata", {}).get("council", {})
            rooms = [r["id"] for r in council.get("rooms", [])]
            lines = {r: [] for r in rooms}
        elif (turn := posted_turn(event)) is not None:
            content = turn.get("content") or {}
            mentions = "".join(f" @{escape(m)}" for m in content.get("mentions", []))
            room = turn.get("groupId", "")
            lines.setdefault(room, []).append(
                f"{escape(turn_sender(turn))} {escape(turn['messageId'])}{mentions}: "
                f"{escape(str(content.get('text', '')))}"
            )
    return rooms, lines, revision


def write_room_files(events: Iterable[RunEventDoc], out_dir: str | Path) -> dict[str, Any]:
    """Write one file per room into ``out_dir``; return ``{revision, rooms: [{roomId, path}]}``.

    File names come from the room's declaration index (``room-001.txt``), never from its id:
    a room id is data. Each file is replaced atomically and gets the umask's mode (0644 by
    default), like any file the user writes; other files in ``out_dir`` are left
    alone, and deleting a file deletes no message (the log is the source of truth).
    """
    rooms, lines, revision = room_lines(events)
    folder = Path(out_dir)
    folder.mkdir(parents=True, exist_ok=True)
    listing = []
    for index, room in enumerate(rooms, start=1):
        path = folder / f"room-{index:03d}.txt"
        body = "".join(line + "\n" for line in lines.get(room, []))
        _replace_atomically(path, body)
        listing.append({"roomId": room, "path": str(path)})
    return {"revision": revision, "rooms": listing}


def _replace_atomically(path: Path, body: str) -> None:
    import secrets  # Here: only writing room files needs it.

    # Like any file the user writes: 0666 less the umask (mkstemp would make it 0600).
    while True:
        temp = str(path.parent / f".room-{secrets.token_hex(8)}.tmp")
        try:
            handle = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
        except FileExistsError:  # pragma: no cover - 64 random bits collided.
            continue
        break
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="\n") as file:
            file.write(body)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temp, path)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise
