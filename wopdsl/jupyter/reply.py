"""The live view's reply box (ipywidgets): post as a human member from a notebook."""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any

from wopdsl.jupyter.boxes import attempt, error_html

if TYPE_CHECKING:
    from wopdsl.run import Run

__all__ = ["ReplyBox"]

class ReplyBox:
    """A text field, a room (and member) picker, a Send button and an error line.

    Send calls ``run.reply`` in a task on the running loop. A refused post
    (``ValidationError``) shows its reason in the error line and keeps the typed text; an
    accepted one clears both. :class:`~wopdsl.jupyter.LiveView` builds one when the council
    has a human member (``view.reply_box``).

    Args:
        run: The run to post to.
        humans: The human members one may post as (the first is the default).
        rooms: Each human member's rooms.
        widgets: The ``ipywidgets`` module.
    """

    def __init__(self, run: Run, humans: list[str], rooms: dict[str, list[str]], *,
                 widgets: Any) -> None:
        w = widgets
        self.run = run
        self.rooms = rooms
        self.text = w.Text(placeholder="Message — @member mentions", description="",
                           layout=w.Layout(flex="1 1 auto", width="auto"))
        """The message field (``@member`` mentions)."""
        self.member = w.Dropdown(options=humans, value=humans[0], description="as",
                                 layout=w.Layout(width="auto"))
        """Whom to post as (shown only when there are several human members)."""
        self.member.layout.display = "" if len(humans) > 1 else "none"
        self.room = w.Dropdown(options=rooms[humans[0]], description="room",
                               layout=w.Layout(width="auto"))
        """The room to post in."""
        self.button = w.Button(description="Send", button_style="primary", icon="paper-plane")
        """Posts the message (in a task)."""
        self.error = w.HTML(value="")
        """Why the last post was refused (empty after an accepted one)."""
        self.widget = w.VBox([w.HBox([self.member, self.room, self.text, self.button]),
                              self.error])
        """The box, to display."""
        self.sent: list[str] = []
        """Ids of the messages sent from this box."""
        self.pending: asyncio.Task[str | None] | None = None
        """The post in progress (after a click)."""
        self._room_chosen = False
        self._choosing = False
        self.member.observe(self._member_changed, names="value")
        self.room.observe(self._room_picked, names="value")
        self.button.on_click(self._clicked)

    def set_open(self, is_open: bool, *, waiting: tuple[str, ...] = ()) -> None:
        """Enable the box while the run can take input; pick the room a waiting human is in.

        Args:
            is_open: Whether the run can still take input.
            waiting: Human members whose turn is requested (or who are asked to answer an
                ``a2a`` member's agent); until the user picks a room, the box shows the
                room the chosen member was asked in.
        """
        busy = self.pending is not None and not self.pending.done()
        self.button.disabled = not is_open or busy
        self.text.disabled = not is_open
        if waiting and not self._room_chosen and self.member.value in waiting:
            room = self._waiting_room(self.member.value)
            if room is not None and room in self.room.options:
                self._choosing = True
                try:
                    self.room.value = room
                finally:
                    self._choosing = False

    def _waiting_room(self, member: str) -> str | None:
        """The room ``member`` was asked in: its turn's trigger's, or an agent's question's."""
        state = self.run.state
        for message_id in reversed(state.queue.get(member, [])):
            message = state.messages.get(message_id)
            if message is not None:
                return message.room
        return next((ask.room for ask in state.asks.open.values()
                     if member in state.rooms[ask.room].members), None)

    def _member_changed(self, change: dict[str, Any]) -> None:
        self.room.options = self.rooms.get(change["new"], [])

    def _room_picked(self, change: dict[str, Any]) -> None:
        if not self._choosing:
            self._room_chosen = True  # the user's choice wins over the automatic one

    def _clicked(self, _button: Any) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._show_error("no running event loop: use await run.reply(...) instead")
            return
        self.pending = loop.create_task(self.send())

    async def send(self) -> str | None:
        """Post the typed text as the chosen member in the chosen room.

        Returns:
            The saved message id, or ``None`` when nothing was sent (the reason is shown).
        """
        text = self.text.value
        if not text.strip():
            self._show_error("type a message first (use @member to ask someone)")
            return None
        self.button.disabled = True
        try:
            done, message_id = await attempt(lambda: self.run.reply(
                text, room=self.room.value, as_=self.member.value), self._show_error)
        finally:
            self.button.disabled = False
        if not done:
            return None
        self.text.value = ""
        self.error.value = ""
        if message_id is not None:
            self.sent.append(message_id)
        return message_id

    def _show_error(self, text: str) -> None:
        self.error.value = error_html("reply", text)
