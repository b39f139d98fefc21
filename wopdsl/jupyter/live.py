"""The live view of a run in Jupyter: re-rendered in place as events arrive, with a reply box.

``run.show()`` (or :func:`show`) displays a :class:`LiveView`. It follows
``run.events(after=...)`` in an asyncio task on the kernel's running loop, so the view keeps
updating while the run executes in the background (``run = council.start()``) or in another
process sharing the store (``wopdsl.attach``). When the council has a human member the view
holds a reply box (ipywidgets) that posts with ``run.reply``; a refused post shows its reason
and keeps the typed text. A human voter gets a vote box (``run.vote``) while a decision is
open for it.

Without ipywidgets the view falls back to an HTML display handle updated in place (no reply
box) and says how to install the ``jupyter`` extra.
"""

from __future__ import annotations

import asyncio
import html
from typing import TYPE_CHECKING, Any, Final

from wopdsl.jupyter.approve import ApprovalBox, asks_for_approvals
from wopdsl.jupyter.reply import ReplyBox
from wopdsl.jupyter.vote import VoteBox
from wopdsl.projections import format_line
from wopdsl.projections.deliberation import dissent_line, hidden_text, vote_line
from wopdsl.projections.notebook import RunView, run_view, view_html

if TYPE_CHECKING:
    from wopdsl.run import Run

__all__ = ["INSTALL_HINT", "LiveView", "plain_text", "show"]

INSTALL_HINT: Final = "pip install 'wopdsl[jupyter]'"
"""How to install the notebook extra (IPython, ipywidgets, ipykernel)."""

_STOPPED: Final = frozenset({"completed", "failed", "cancelled"})
DEFAULT_TAIL: Final = 200
"""Messages shown per room in a live view (the latest; earlier ones are counted)."""


class LiveView:
    """A run's view that updates in place as events arrive.

    Build one with :func:`show` (or ``run.show()``), which also displays it and starts
    following the run. Keep it to reach its parts: ``view.reply_box`` (``None`` without a
    human member or without ipywidgets), ``view.status`` and ``view.last_sequence`` (what
    the view shows now), ``view.stop()``.

    Args:
        run: The run to show.
        tail: Messages shown per room (the latest); ``None`` shows all.
        reply: Offer a reply box: ``None`` (default) when the council has a human member.
        use_widgets: Use ipywidgets (default: when installed).
    """

    def __init__(self, run: Run, *, tail: int | None = DEFAULT_TAIL, reply: bool | None = None,
                 use_widgets: bool | None = None) -> None:
        self.run = run
        self.tail = tail
        self.status: str = "pending"
        """The status the view shows now."""
        self.last_sequence: int = -1
        """The last event the view shows."""
        self.renders: int = 0
        """How many times the view was rendered (initial render included)."""
        self.html: str = ""
        """The HTML the view shows now."""
        self.text: str = ""
        """The view as plain text (what front-ends without HTML or widgets show)."""
        self.reply_box: ReplyBox | None = None
        """The reply box, when the view offers one."""
        self.approval_box: ApprovalBox | None = None
        """Approve or reject waiting tool calls, when the council has tools to approve."""
        self.vote_box: VoteBox | None = None
        """Vote on an open decision, when a human member votes on one (DESIGN.md §22)."""
        self.widget: Any = None
        """The ipywidgets container (``None`` in the fallback)."""
        self.failure: BaseException | None = None
        """An error that stopped the follower, also shown in the view."""
        self._task: asyncio.Task[None] | None = None
        self._html_widget: Any = None
        self._handle: Any = None
        self._shown_in: int | None = None
        self._widgets: Any = _import_widgets() if use_widgets is not False else None
        if use_widgets and self._widgets is None:
            raise ImportError(f"the live view's widgets need ipywidgets: {INSTALL_HINT}")
        self._reply = reply
        self._humans: list[str] = []
        if self._widgets is not None:
            self._html_widget = self._widgets.HTML(value="")
            self.widget = self._widgets.VBox([self._html_widget])
        self._render(run_view(run, tail=tail))

    # -- rendering -------------------------------------------------------------------------

    def refresh(self, *, force: bool = False) -> None:
        """Re-render from the log now.

        Args:
            force: Send the view to the front-end even if nothing changed (so the output
                saved by the current cell shows the latest state).
        """
        self._render(run_view(self.run, tail=self.tail), force=force)

    def _render(self, view: RunView, *, force: bool = False) -> None:
        if not self._humans:
            # A run just started has no roster in its log yet: add the box when one appears.
            self._humans = [m.id for m in view.roster if m.engine == "human"]
            if self._humans and self._reply is not False and self.widget is not None:
                state = self.run.state
                rooms = {m: list(state.members[m].rooms) for m in self._humans}
                self.reply_box = ReplyBox(self.run, self._humans, rooms, widgets=self._widgets)
                self.widget.children = (*self.widget.children, self.reply_box.widget)
        if self.vote_box is None and self.widget is not None and self._reply is not False and \
                any(set(d.voters) & set(self._humans) for d in view.decisions):
            self.vote_box = VoteBox(self.run, widgets=self._widgets)
            self.widget.children = (*self.widget.children, self.vote_box.widget)
        if self.approval_box is None and self.widget is not None and \
                asks_for_approvals(self.run.state.council):
            self.approval_box = ApprovalBox(self.run, widgets=self._widgets)
            self.widget.children = (*self.widget.children, self.approval_box.widget)
        body = view_html(view)
        if self.failure is not None:
            body += ('<div class="wop-view-error" style="color:#b91c1c">live view stopped: '
                     f"{html.escape(repr(self.failure))}</div>")
        if self._widgets is None:
            note = ("reply with <code>await run.reply(…)</code>; for a reply box "
                    if self._humans else "for widgets ")
            body += (f'<div class="wop-install" style="color:#6b7280;font-size:11px">{note}'
                     f"install the jupyter extra: <code>{html.escape(INSTALL_HINT)}</code></div>")
        changed = body != self.html
        self.html = body
        self.text = plain_text(view)
        self.status = view.status
        self.last_sequence = view.events - 1
        self.renders += 1
        if self.reply_box is not None:
            self.reply_box.set_open(view.status not in _STOPPED, waiting=view.waiting_for)
        if self.approval_box is not None:
            self.approval_box.update(view.status not in _STOPPED)
        if self.vote_box is not None:
            self.vote_box.update(view.decisions, view.status not in _STOPPED)
        if self._html_widget is not None:
            self._html_widget.value = body
            if force:  # Re-rendering the widget's outputs on every update would lose focus.
                _send_all(self.widget, self._widgets.Widget, set())
                if self._handle is not None:
                    self._handle.update(self._bundle(), raw=True)
        elif self._handle is not None and (changed or force):
            self._handle.update(self._bundle(), raw=True)

    # -- display and following -------------------------------------------------------------

    def display(self) -> LiveView:
        """Display the view in the current cell and start following the run."""
        ipd = _ipython()
        if self._handle is None:
            self._handle = ipd.display(self._bundle(), raw=True, display_id=True)
        else:
            self._handle.display(self._bundle(), raw=True)
        self._shown_in = _execution_count()
        self.follow()
        return self

    def _bundle(self) -> dict[str, Any]:
        """What the view displays: the widget (when there is one), its HTML and its text."""
        bundle: dict[str, Any] = {"text/plain": self.text, "text/html": self.html}
        if self.widget is not None:
            bundle["application/vnd.jupyter.widget-view+json"] = {
                "version_major": 2, "version_minor": 0, "model_id": self.widget.model_id}
        return bundle

    def follow(self) -> None:
        """Start following the run's events on the running loop (no-op without one)."""
        if self._task is not None and not self._task.done():
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._task = loop.create_task(self._follow(), name=f"wopdsl-live-{self.run.run_id}")
        self._task.add_done_callback(self._followed)

    async def _follow(self) -> None:
        run = self.run
        seen = self.last_sequence
        while not (self.status in _STOPPED and seen >= run.store.last_sequence(run.run_id)):
            # ``run.events`` stops when the run stops; a waiting run goes on after a reply,
            # so follow again (it waits for the next event).
            async for event in run.events(after=seen):
                seen = event["sequence"]
                # Render once per burst: skip while more events are already in the log.
                if seen >= run.store.last_sequence(run.run_id):
                    self.refresh()
                    if self.status in _STOPPED and self.last_sequence <= seen:
                        return  # the run's last event is shown
            self.refresh()

    def _followed(self, task: asyncio.Task[None]) -> None:
        if task.cancelled():
            return
        failure = task.exception()
        if failure is not None:
            self.failure = failure
            self.refresh()

    def stop(self) -> None:
        """Stop following the run (the view keeps its last state)."""
        if self._task is not None:
            self._task.cancel()

    @property
    def following(self) -> bool:
        """Whether the view is following the run's events."""
        return self._task is not None and not self._task.done()

    async def wait(self) -> str:
        """Wait until the run stops (ends or waits for input); return the status shown.

        The view is then shown in the calling cell too (the same view, updated in place
        wherever it is), so a saved notebook shows where the run stopped under that cell.
        """
        await self.run.wait()
        self.refresh(force=True)
        if self._shown_in != _execution_count():
            self.display()
        return self.status

    def _ipython_display_(self) -> None:
        # ``run.show()`` as a cell's last line already displayed the view: don't show it twice.
        if self._shown_in is not None and self._shown_in == _execution_count():
            return
        self.display()

    def __repr__(self) -> str:
        return (f"LiveView(run={self.run.run_id!r}, status={self.status!r}, "
                f"following={self.following})")


def show(run: Run, *, tail: int | None = DEFAULT_TAIL, reply: bool | None = None) -> LiveView:
    """Display a live view of ``run`` that updates in place as events arrive.

    In a notebook: ``run = council.start()`` then ``run.show()`` — the view follows the run
    while it executes in the background. With a human member (and ipywidgets) it offers a
    reply box; without ipywidgets it still updates, without the box.

    Args:
        run: The run to show (started here, attached, or finished).
        tail: Messages shown per room (the latest); ``None`` shows all.
        reply: Offer a reply box: ``None`` (default) when the council has a human member.

    Returns:
        The displayed :class:`LiveView`.

    Raises:
        ImportError: IPython is not installed (``pip install 'wopdsl[jupyter]'``).

    Example:
        >>> run = council.start()
        >>> view = run.show()
        >>> await view.wait()
        'completed'
    """
    _ipython()
    return LiveView(run, tail=tail, reply=reply).display()


def plain_text(view: RunView) -> str:
    """The view as plain text: status line, who is asked, each room's messages."""
    lines = [f"council {view.council} · run {view.run_id} · {view.status} · "
             f"{view.events} events" + (f" · {view.usage}" if view.usage else "")]
    if view.error:
        lines.append(f"error[{view.error.get('code', 'UNKNOWN')}]: "
                     f"{view.error.get('message', 'run failed')}")
    if view.status == "waiting-input" and view.waiting_for:
        lines.append(f"waiting for input from {', '.join(view.waiting_for)}")
    lines += [f"{member}'s agent asks in room {room}: {question}"
              for member, room, question in view.asks]
    for d in view.decisions:
        lines += [f"decision {d.id}: {d.headline()}"] + [
            f"  {vote_line(v)}" for v in d.mine] + [f"  {dissent_line(x)}" for x in d.dissent]
    if view.chair is not None:
        lines.append(f"{'answer' if view.chair.done else 'chair'} ({view.chair.member}): "
                     f"{view.chair.label()}")
    for room in view.rooms:
        lines += ["", f"room {room.id} ({', '.join(room.members)}) · {room.state}"
                      + (f" · {room.round.label()}" if room.round else "")]
        if room.hidden:
            lines.append(f"  … {room.hidden} earlier message{'' if room.hidden == 1 else 's'}")
        number = room.round.number if room.round else 0
        lines += ["  " + (f"-- {m.text}" if m.system else
                          hidden_text(m.sender, number) if m.id in room.concealed else
                          format_line(m.sender, m.id, m.mentions, m.text, indent="    "))
                  for m in room.messages]
    return "\n".join(lines)


def _send_all(widget: Any, widget_type: type, sent: set[str]) -> None:
    """Send the full state of ``widget`` and of every widget it refers to (children, layout).

    Changes made by the follower task are attributed to the cell that started it; sending
    them again from the current cell makes front-ends that keep only the current cell's
    messages (nbclient, saved notebooks) show the view as it is now.
    """
    if widget.model_id in sent:
        return
    sent.add(widget.model_id)
    widget.send_state()
    for key in widget.keys:
        value = getattr(widget, key, None)
        for item in value if isinstance(value, tuple | list) else (value,):
            if isinstance(item, widget_type):
                _send_all(item, widget_type, sent)


def _import_widgets() -> Any:
    try:
        import ipywidgets
    except ImportError:
        return None
    return ipywidgets


def _ipython() -> Any:
    """Return ``IPython.display`` (typed loosely: its functions are untyped)."""
    try:
        import IPython.display
    except ImportError:
        raise ImportError(f"run.show() needs the jupyter extra: {INSTALL_HINT}") from None
    return IPython.display


def _execution_count() -> int | None:
    try:
        from IPython.core.getipython import get_ipython
    except ImportError:  # pragma: no cover - show() checked IPython already.
        return None
    # IPython 8 leaves get_ipython untyped and IPython 9 types it: one spelling for both.
    getter: Any = get_ipython
    shell: Any = getter()
    return None if shell is None else int(shell.execution_count)
