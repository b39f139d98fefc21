"""``CouncilApp``: watch a council run live and join it as its human member."""

from __future__ import annotations

import asyncio
import os
from typing import Any, ClassVar, Final

from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.widgets import Footer, Log, TabbedContent, TabPane
from wopdsl_tui.bridge import RoomFeed, RunFold, follow
from wopdsl_tui.posting import PostingApp
from wopdsl_tui.presence import Watching
from wopdsl_tui.widgets import (
    Composer,
    DecisionsView,
    ErrorDetails,
    MessageList,
    Notice,
    RoomPane,
    Roster,
    StatusLine,
)
from wopdsl_tui.widgets.tools import ApprovalPanel, ToolsView

import wopdsl

__all__ = ["PALETTE", "CouncilApp"]

PALETTE: Final = ("cyan", "magenta", "green", "yellow", "bright_blue", "bright_red",
                  "bright_cyan", "bright_magenta", "bright_green", "bright_yellow")
"""Sender colours, given to members in declaration order."""

_BREATHE_SECONDS: Final = 0.1
"""While catching up on a long log, let the screen draw this often."""


class CouncilApp(PostingApp):
    """A live view of one council run: room tabs, roster, status line, events, composer.

    A council that deliberates also shows each room's round, hides a blind round's posts by
    others until it ends, and lists its decisions and chair; ``/vote`` (or ``ctrl+b``)
    votes through ``Run.vote``.

    Give it a :class:`wopdsl.Council` to start a run, or a :class:`wopdsl.Run` to attach to
    one (stored, paused, or executing in another process). It reads the run's events only,
    folding them in :class:`~wopdsl_tui.bridge.RunFold`, posts through ``Run.reply`` and
    decides tool calls waiting for approval through ``Run.approve``.

    Args:
        source: The council to start, or the run to attach to.
        store: Where a started run is kept (path, ``"memory:"`` or a store object).
        run_id: The id of a started run (default: a fresh one).
        deterministic: Start with a fixed clock and predictable ids (tests, screenshots).
        max_participants: The host's roster limit per room for a started run.
    """

    TITLE = "wop"
    CSS_PATH = "app.tcss"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+n", "next_room", "Next room", priority=True),
        Binding("ctrl+p", "previous_room", "Prev room", priority=True),
        Binding("ctrl+r", "focus_composer", "Reply", priority=True),
        # Offered while a decision is open for a human member: starts a /vote line.
        Binding("ctrl+b", "vote", "Vote", priority=True),
        # Sends the composer's text as a steering post: the running turns it names stop.
        Binding("ctrl+g", "steer", "Steer", priority=True),
        Binding("ctrl+t", "toggle_events", "Events", priority=True),
        Binding("ctrl+o", "toggle_ids", "Ids", priority=True),
        # Offered once a turn or the run failed: the recorded error details and traceback.
        Binding("ctrl+e", "toggle_errors", "Errors", priority=True),
        Binding("ctrl+s", "resume", "Resume", priority=True),
        # Offered while a tool call waits for a person's decision (the approval panel).
        Binding("ctrl+y", "decide(True)", "Approve", priority=True),
        Binding("ctrl+x", "decide(False)", "Reject", priority=True),
        Binding("ctrl+q", "quit", "Quit", priority=True),
    ]

    def __init__(self, source: wopdsl.Council | wopdsl.Run, *,
                 store: str | os.PathLike[str] | wopdsl.EventStore | None = None,
                 run_id: str | None = None, deterministic: bool = False,
                 max_participants: int | None = None, as_: str | None = None) -> None:
        super().__init__()
        self.fold = RunFold()
        """What the screen shows, folded from the run's events."""
        self.council_run = source if isinstance(source, wopdsl.Run) else None
        """The run on screen (set at mount when the app starts it)."""
        self.run_status = "pending"
        """The run status as last drawn."""
        self.shown_sequence = -1
        """Sequence of the last event drawn on screen."""
        self.human: str | None = as_
        """The human member the composer posts as (``as_``: the person at this screen)."""
        self._as = as_
        self._watching: Watching | None = None
        self.presence: dict[str, wopdsl.PresenceSnapshot] = {}
        """Each room's presence: who watches it and who types, as last shown."""
        self._council = None if isinstance(source, wopdsl.Run) else source
        self._start_options: dict[str, Any] = {"store": store, "run_id": run_id,
                                               "deterministic": deterministic}
        if max_participants is not None:
            self._start_options["max_participants"] = max_participants
        self._laid_out = False
        self._rooms: list[RoomFeed] = []
        self._lists: dict[str, MessageList] = {}
        self._panes: list[RoomPane] = []
        self._colors: dict[str, str] = {}
        self._events_shown = 0
        self._errors_shown = 0
        self._sync_scheduled = False
        self._turn_requested = False
        self._driving = False
        self._posting = False
        self._problem = ""
        self._waiting: list[str] = []
        self._refusal: tuple[str, str] | None = None
        self._keys_state: tuple[object, ...] = ()

    def compose(self) -> ComposeResult:
        with Horizontal(id="main"):
            yield TabbedContent(id="rooms")
            yield Roster(id="roster")
        yield DecisionsView(id="decisions")
        yield ToolsView(id="tool-view")
        yield Log(id="events", auto_scroll=True)
        yield ErrorDetails(id="errors")
        with Vertical(id="composer-box", classes="-hidden"):
            yield Notice(id="notice")
            yield Composer(id="composer")
        yield StatusLine(id="status")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#events", Log).border_title = "Events"
        if self._council is not None:
            try:
                self.council_run = self._council.start(**self._start_options)
            except wopdsl.WopError as exc:
                self._problem = exc.render()
                self._sync()
                return
            self._watch_drive()
        self._sync()
        self._follow_run()

    # -- following the log -----------------------------------------------------------------

    @work(group="follow", exclusive=True, exit_on_error=False)
    async def _follow_run(self) -> None:
        assert self.council_run is not None
        loop = asyncio.get_running_loop()
        breathe_at = loop.time() + _BREATHE_SECONDS
        try:
            async for _event in follow(self.council_run, self.fold):
                if not self._laid_out and self.fold.run_id:
                    await self._lay_out()
                self._schedule_sync()
                if loop.time() >= breathe_at:
                    # A long catch-up yields now and then, so the screen keeps drawing.
                    await asyncio.sleep(0)
                    breathe_at = loop.time() + _BREATHE_SECONDS
        except wopdsl.WopError as exc:
            self._problem = exc.render()
        self._schedule_sync()

    async def _lay_out(self) -> None:
        """Add one tab per room and show the composer, once ``run.started`` is folded."""
        fold = self.fold
        self._laid_out = True
        self._colors = {m: PALETTE[i % len(PALETTE)] for i, m in enumerate(fold.members)}
        self._rooms = list(fold.rooms.values())
        tabs = self.query_one("#rooms", TabbedContent)
        for number, room in enumerate(self._rooms):
            pane = RoomPane(room.id, colors=self._colors, members=room.members,
                            id=f"messages-{number}")
            self._panes.append(pane)
            self._lists[room.id] = pane.messages
            await tabs.add_pane(TabPane(room.id, pane, id=f"room-{number}"))
        humans = fold.humans
        if humans:
            self.human = self._as if self._as in humans else humans[0]
            self.query_one("#composer-box").remove_class("-hidden")
        self._update_target()
        self._watch_presence()

    @work(group="presence", exclusive=True, exit_on_error=False)
    async def _watch_presence(self) -> None:
        """Be present in the rooms of the person at this screen; show who else is."""
        human = self.human
        if human is None or self.council_run is None:
            return
        rooms = [r.id for r in self._rooms if human in r.members]
        self._watching = Watching(self.council_run, human, rooms, self._presence_shown)
        await self._watching.watch()

    def _presence_shown(self, snapshot: wopdsl.PresenceSnapshot) -> None:
        room = snapshot.conversation_id.rpartition(":room:")[2]
        self.presence[room] = snapshot
        self.fold.roster_changed = True
        self._schedule_sync()

    async def on_input_changed(self, event: Composer.Changed) -> None:
        """The person types in the composer: say so to the others in the room."""
        if isinstance(event.input, Composer) and self._watching is not None:
            await self._watching.typed(self.active_room, event.value)

    @work(group="drive", exclusive=True, exit_on_error=False)
    async def _watch_drive(self) -> None:
        """Wait for this process's drive of the run to stop; show why if it broke."""
        assert self.council_run is not None
        self._driving = True
        self.refresh_bindings()
        try:
            await self.council_run.wait()
        except wopdsl.WopError as exc:
            self._problem = exc.render()
        except Exception as exc:
            self._problem = f"the run stopped here: {type(exc).__name__}: {exc}"
        finally:
            self._driving = False
            self.refresh_bindings()
            self._schedule_sync()

    def _schedule_sync(self) -> None:
        # Coalesce: many events arriving together cost one redraw.
        if not self._sync_scheduled:
            self._sync_scheduled = True
            self.call_later(self._sync)

    def _sync(self) -> None:
        """Bring the widgets up to the fold: new messages, events, roster and status."""
        self._sync_scheduled = False
        fold = self.fold
        viewers = fold.humans  # The person at the screen posts and votes as these.
        for pane in self._panes:
            pane.sync(fold, viewers)
        decisions = self.query_one(DecisionsView)
        decisions.show(fold, viewers)
        self.query_one(Composer).set_ballots(decisions.ballots)
        if len(fold.events) > self._events_shown:
            lines = [str(e) for e in fold.events[self._events_shown:]]
            self._events_shown = len(fold.events)
            self.query_one("#events", Log).write_lines(lines)
        if len(fold.errors) > self._errors_shown:
            self._errors_shown = len(fold.errors)
            self.query_one(ErrorDetails).show_errors(fold.errors)
        if fold.roster_changed and self._laid_out:
            fold.roster_changed = False
            self.run_status = fold.status
            self.query_one(Roster).show_members(
                list(fold.members.values()), {m: fold.shown_phase(m) for m in fold.members},
                self._colors, {m: u for m in fold.members if (u := fold.usage(m))},
                fold.streams, self._present())
            self._waiting = fold.waiting_for
            self._on_waiting()
        if fold.tools.changed and self.query_one(ToolsView).show(
                fold.tools, fold.approvals, self.council_run) and not self._turn_requested:
            self.query_one(ApprovalPanel).reason.focus()  # ctrl+y / ctrl+x decide
        self.query_one(StatusLine).show_status(
            run_id=fold.run_id or (self.council_run.run_id if self.council_run else ""),
            status=self.run_status, batch=fold.batch, events=fold.last_sequence + 1,
            waiting=self._waiting, errors=fold.errors, problem=self._problem,
            approvals=[(a.approver, a.call_id) for a in fold.approvals])
        self.shown_sequence = fold.last_sequence
        keys = (self.run_status, self.human, self._driving, fold.terminal, bool(fold.errors),
                len(fold.approvals), tuple(decisions.ballots))
        if keys != self._keys_state:
            # The footer rebuilds on refresh: only when an offered key may have changed.
            self._keys_state = keys
            self.refresh_bindings()
            self._update_target()  # The line above the composer says whether /vote works.

    def _present(self) -> dict[str, str]:
        """Who else watches the run: ``typing`` or ``watching`` (presence, any room)."""
        shown: dict[str, str] = {}
        for snapshot in self.presence.values():
            for ref in snapshot.present:
                member = ref.removeprefix("user:")
                if member != self.human and shown.get(member) != "typing":
                    shown[member] = "typing" if ref in snapshot.typing else "watching"
        return shown

    # -- rooms -----------------------------------------------------------------------------

    def room_view(self, room_id: str) -> MessageList:
        """Return the message list of a room's tab."""
        return self._lists[room_id]

    def on_tabbed_content_tab_activated(self, event: TabbedContent.TabActivated) -> None:
        self._refusal = None
        self._update_target()

    def action_next_room(self) -> None:
        self._step_room(1)

    def action_previous_room(self) -> None:
        self._step_room(-1)

    def _step_room(self, step: int) -> None:
        if not self._rooms:
            return
        rooms = [r.id for r in self._rooms]
        current = rooms.index(self.active_room or rooms[0])
        self._activate_room(rooms[(current + step) % len(rooms)])

    # -- keys ------------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "focus_composer":
            return self.human is not None
        if action == "vote":
            return bool(self.query_one(DecisionsView).ballots)
        if action == "steer":
            return self.human is not None and self.fold.terminal is None
        if action == "toggle_errors":
            return bool(self.fold.errors)
        if action == "decide":
            panel = self.query_one(ApprovalPanel)
            return panel.call_id is not None and not panel.busy
        if action == "resume":
            # Offered for an interrupted run: started, not ended, not waiting for a person,
            # and not driven by this process.
            return (self.council_run is not None and not self._driving
                    and self.run_status == "running" and self.fold.terminal is None)
        return True

    def action_toggle_events(self) -> None:
        events = self.query_one("#events", Log)
        events.display = not events.display

    def action_toggle_errors(self) -> None:
        """Show or hide the error details: each failure's code, message and traceback."""
        details = self.query_one(ErrorDetails)
        details.display = not details.display

    def action_toggle_ids(self) -> None:
        for view in self._lists.values():
            view.show_ids = not view.show_ids

    def action_decide(self, grant: bool) -> None:
        """Approve or reject the tool call the approval panel shows."""
        self.query_one(ApprovalPanel).decide(grant)

    def on_approval_panel_decided(self, event: ApprovalPanel.Decided) -> None:
        # The decision may have set the run going again here: watch that drive.
        self._watch_drive()
        self.refresh_bindings()

    def action_resume(self) -> None:
        """Continue an interrupted run here (one that no other process is executing)."""
        if self.council_run is not None and not self._driving:
            self._resume()

    @work(group="drive", exclusive=True, exit_on_error=False)
    async def _resume(self) -> None:
        assert self.council_run is not None
        self._driving = True
        self.refresh_bindings()
        try:
            await self.council_run.resume()
        except wopdsl.WopError as exc:
            self._problem = exc.render()
        finally:
            self._driving = False
            self.refresh_bindings()
            self._schedule_sync()

    async def action_quit(self) -> None:
        """Leave without ending the run: ``wop resume`` or ``wop tui RUN`` continues it."""
        if self.council_run is not None:
            await self.council_run.detach()
        self.exit(0)
