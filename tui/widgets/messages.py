"""A room's message list, virtualised with the Line API: only visible lines are rendered."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import ClassVar, Final

from rich.cells import cell_len, get_character_cell_size
from rich.style import Style
from rich.text import Text
from textual.cache import LRUCache
from textual.events import Resize
from textual.geometry import Size
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip
from wopdsl_tui.bridge import RoomMessage

from wopdsl.model.mentions import MENTION_RE
from wopdsl.projections import terminal_safe
from wopdsl.projections.deliberation import hidden_text

__all__ = ["MessageList", "wrap_ranges"]

INDENT: Final = 2
"""Cells of hanging indent on a message's continuation lines."""



def wrap_ranges(text: str, width: int, indent: int = INDENT) -> list[tuple[int, int]]:
    """Split ``text`` into visual lines of at most ``width`` cells, breaking at spaces.

    Continuation lines get ``indent`` cells less; a newline always breaks. Returns the
    ``(start, end)`` character range of each line (the breaking space or newline is left out).
    """
    width = max(width, indent + 4)
    # ASCII text is one cell per character, so plain string searches find the breaks.
    measure = len if text.isascii() else cell_len
    ranges: list[tuple[int, int]] = []
    start, size = 0, len(text)
    available = width
    while True:
        newline = text.find("\n", start)
        stop = size if newline < 0 else newline
        if measure(text[start:stop]) <= available:
            ranges.append((start, stop))
            if newline < 0:
                return ranges
            start = newline + 1
        else:
            cut = _fitting(text, start, stop, available) if measure is cell_len \
                else start + available
            space = text.rfind(" ", start + 1, cut + 1)
            if space > start:
                ranges.append((start, space))
                start = space + 1
            else:
                cut = max(cut, start + 1)  # A character wider than the line still moves on.
                ranges.append((start, cut))
                start = cut
        available = width - indent


def _fitting(text: str, start: int, stop: int, available: int) -> int:
    """Return the end of the longest run of ``text[start:stop]`` that fits ``available`` cells."""
    cells = 0
    for index in range(start, stop):
        cells += get_character_cell_size(text[index])
        if cells > available:
            return index
    return stop


class MessageList(ScrollView, can_focus=True):
    """The messages of one room: sender, mentions highlighted, message ids on demand.

    The host's system turns (a round begins, a decision closes, the chair is called) are
    notes (``-- Round 1 of 2 begins…``); a blind round's posts by others show as "answered
    — hidden until the round ends" until the round ends (:meth:`set_hidden`).

    Messages are wrapped to the widget's width into an index of visual lines; rendering
    builds strips for the visible lines only, so 10,000 messages scroll as smoothly as ten.
    """

    COMPONENT_CLASSES: ClassVar[set[str]] = {
        "message-list--id",
        "message-list--mention",
        "message-list--empty",
        "message-list--system",
        "message-list--hidden",
    }
    DEFAULT_CSS = """
    MessageList {
        background: $surface;
        overflow-x: hidden;
        overflow-y: scroll;
        scrollbar-size-vertical: 1;
        height: 1fr;
        & > .message-list--id { color: $text-muted; }
        & > .message-list--mention { color: $warning; text-style: bold; }
        & > .message-list--empty { color: $text-muted; text-style: italic; }
        & > .message-list--system { color: $text-muted; text-style: italic; }
        & > .message-list--hidden { color: $text-muted; text-style: italic; }
    }
    """

    show_ids: reactive[bool] = reactive(False)
    """Whether each message shows its id after the sender."""

    def __init__(self, room: str, *, colors: Mapping[str, str], members: Collection[str],
                 id: str | None = None) -> None:
        super().__init__(id=id)
        self.room = room
        """The room whose messages this list shows."""
        self._colors = colors
        self._members = frozenset(members)
        self._messages: list[RoomMessage] = []
        self._plain: list[str] = []
        self._lines: list[tuple[int, int, int]] = []
        """Visual lines of the current width: (message index, start, end)."""
        self._width = 0
        self._stick = True
        self._texts: LRUCache[int, Text] = LRUCache(256)
        self._strips: LRUCache[int, Strip] = LRUCache(1024)
        self._hidden: set[str] = set()
        self._round = 0

    @property
    def count(self) -> int:
        """How many messages the list holds."""
        return len(self._messages)

    @property
    def messages(self) -> Sequence[RoomMessage]:
        """The messages, in saved order."""
        return self._messages

    @property
    def rendered_lines(self) -> int:
        """How many line strips are cached (bounded: the list is virtualised)."""
        return len(self._strips)

    def add_messages(self, messages: Sequence[RoomMessage]) -> None:
        """Append messages (in saved order) and follow them if the list was at its end."""
        stick = self._stick or self.is_vertical_scroll_end
        first = len(self._messages)
        self._messages.extend(messages)
        for message in messages:
            self._plain.append(self._compose_plain(message))
        if self._width:
            for index in range(first, len(self._messages)):
                self._index_message(index)
            self._publish_size(stick)

    @property
    def hidden(self) -> frozenset[str]:
        """Ids of the messages shown as hidden placeholders."""
        return frozenset(self._hidden)

    def set_hidden(self, ids: set[str], round_number: int) -> None:
        """Show these messages (a blind round's posts by others) as placeholders.

        A message no longer in ``ids`` (its round ended) shows its text again.
        """
        if ids == self._hidden:
            return
        changed = ids ^ self._hidden
        self._hidden, self._round = set(ids), round_number
        for index, message in enumerate(self._messages):
            if message.id in changed:
                self._plain[index] = self._compose_plain(message)
        self._rebuild()

    def line_text(self, y: int) -> str:
        """Return the plain text of visual line ``y`` (for tests and copy)."""
        index, start, end = self._lines[y]
        prefix = " " * INDENT if start and self._lines[y - 1][0] == index else ""
        return prefix + self._plain[index][start:end]

    # -- layout ----------------------------------------------------------------------------

    def _compose_plain(self, message: RoomMessage) -> str:
        if message.system:
            return terminal_safe(f"-- {message.text}").replace("\t", " ")
        if message.id in self._hidden:
            return terminal_safe(hidden_text(message.sender, self._round))
        head = message.sender
        if self.show_ids:
            head += f" {message.id}"
        if message.mentions:
            head += " " + " ".join(f"@{m}" for m in message.mentions)
        # Escape sequences, C1 and bidi controls from members and people are shown, not
        # acted on (they would move the cursor or reorder what the reader sees).
        return terminal_safe(f"{head}: {message.text}").replace("\t", " ")

    def _index_message(self, index: int) -> None:
        for start, end in wrap_ranges(self._plain[index], self._width):
            self._lines.append((index, start, end))

    def _rebuild(self) -> None:
        stick = self._stick
        self._lines.clear()
        self._strips.clear()
        self._texts.clear()
        if self._width:
            lines, width = self._lines, self._width
            for index, plain in enumerate(self._plain):
                lines.extend((index, start, end) for start, end in wrap_ranges(plain, width))
        self._publish_size(stick)

    def _publish_size(self, stick: bool) -> None:
        self.virtual_size = Size(self._width, max(1, len(self._lines)))
        if stick:
            self.scroll_end(animate=False, immediate=True, x_axis=False)
        self.refresh()

    def on_resize(self, event: Resize) -> None:
        width = self.scrollable_content_region.width
        if width != self._width:
            self._width = width
            self._rebuild()
        elif self._stick:
            self.scroll_end(animate=False, immediate=True, x_axis=False)

    def watch_show_ids(self) -> None:
        self._plain = [self._compose_plain(m) for m in self._messages]
        self._rebuild()

    def watch_scroll_y(self, old_value: float, new_value: float) -> None:
        super().watch_scroll_y(old_value, new_value)
        # Follow new messages only while the reader is at the bottom.
        self._stick = new_value >= self.max_scroll_y

    def notify_style_update(self) -> None:
        super().notify_style_update()
        self._strips.clear()
        self._texts.clear()

    # -- rendering -------------------------------------------------------------------------

    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        line = int(self.scroll_offset.y) + y
        base = self.rich_style
        if line >= len(self._lines):
            return self._blank_strip(line, base).crop_extend(0, width, base)
        strip = self._strips.get(line)
        if strip is None:
            strip = self._build_strip(line, base)
            self._strips[line] = strip
        return strip.crop_extend(0, width, base)

    def _blank_strip(self, line: int, base: Style) -> Strip:
        if self._lines or line:
            return Strip.blank(self._width, base)
        empty = Text("No messages yet.", style=base)
        empty.stylize(self.get_component_rich_style("message-list--empty"))
        return Strip(list(empty.render(self.app.console)), empty.cell_len)

    def _build_strip(self, line: int, base: Style) -> Strip:
        index, start, end = self._lines[line]
        piece = self._styled(index)[start:end]
        if start and self._lines[line - 1][0] == index:
            piece = Text(" " * INDENT, style=base) + piece
        return Strip(list(piece.render(self.app.console)), piece.cell_len)

    def _styled(self, index: int) -> Text:
        cached = self._texts.get(index)
        if cached is not None:
            return cached
        message, plain = self._messages[index], self._plain[index]
        text = Text(plain, style=self.rich_style, no_wrap=True, end="")
        if message.system or message.id in self._hidden:
            kind = "system" if message.system else "hidden"
            text.stylize(self.get_component_rich_style(f"message-list--{kind}"))
            if not message.system:
                text.stylize(Style(color=self._colors.get(message.sender), bold=True,
                                   italic=False), 0, len(message.sender))
            self._texts[index] = text
            return text
        text.stylize(Style(color=self._colors.get(message.sender), bold=True),
                     0, len(message.sender))
        if self.show_ids:
            at = len(message.sender) + 1
            text.stylize(self.get_component_rich_style("message-list--id"),
                         at, at + len(message.id))
        mention = self.get_component_rich_style("message-list--mention")
        for match in MENTION_RE.finditer(plain):
            if match.group(1) in self._members:
                text.stylize(mention, match.start(), match.end())
        self._texts[index] = text
        return text
