"""The live view's approval box (ipywidgets): decide tool calls that wait for a person."""

from __future__ import annotations

import asyncio
import html
import json
from typing import TYPE_CHECKING, Any

from wopdsl.errors import WopError

if TYPE_CHECKING:
    from wopdsl.run import Run

__all__ = ["ApprovalBox", "asks_for_approvals"]

_ERROR_STYLE = "color:#b91c1c;white-space:pre-wrap;font-family:var(--jp-code-font-family,monospace)"


def asks_for_approvals(council: dict[str, Any]) -> bool:
    """Whether a council definition (``run.started.metadata.council``) has tools to approve."""
    return any(policy.get("approval") for member in council.get("members", [])
               for policy in (member.get("tool_policy") or {}).values())


class ApprovalBox:
    """The waiting call (a picker when several wait), what it does, Approve and Reject.

    Shown while a tool call waits for approval (``approval = MEMBER``); a click calls
    ``run.approve`` in a task on the running loop, a rejection with the typed reason (the
    model reads it). A refused decision shows its reason in the error line.

    Args:
        run: The run whose calls are decided.
        widgets: The ``ipywidgets`` module.
    """

    def __init__(self, run: Run, *, widgets: Any) -> None:
        w = widgets
        self.run = run
        self.call = w.Dropdown(options=[], description="call", layout=w.Layout(width="auto"))
        """The waiting call to decide."""
        self.what = w.HTML(value="")
        """Who asks, for which tool, with which arguments (escaped)."""
        self.reason = w.Text(placeholder="reason (told to the model with a rejection)",
                             layout=w.Layout(flex="1 1 auto", width="auto"))
        self.approve = w.Button(description="Approve", button_style="success", icon="check")
        self.reject = w.Button(description="Reject", button_style="danger", icon="times")
        self.error = w.HTML(value="")
        """Why the last decision was refused."""
        self.widget = w.VBox([w.HBox([self.call, self.what]),
                              w.HBox([self.reason, self.approve, self.reject]), self.error])
        """The box, to display (hidden while nothing waits)."""
        self.decided: list[str] = []
        """Ids of the calls decided from this box."""
        self.pending: asyncio.Task[str | None] | None = None
        self.call.observe(lambda _change: self._describe(), names="value")
        self.approve.on_click(lambda _b: self._clicked(grant=True))
        self.reject.on_click(lambda _b: self._clicked(grant=False))
        self.update(True)

    def update(self, is_open: bool) -> None:
        """Show the calls waiting now (the box hides when none does)."""
        waiting = [a.call_id for a in self.run.state.tools.approvals.values()] if is_open \
            else []
        if list(self.call.options) != waiting:
            self.call.options = waiting
        if waiting and self.call.value not in waiting:
            self.call.value = waiting[0]
        self.widget.layout.display = "" if waiting else "none"
        busy = self.pending is not None and not self.pending.done()
        self.approve.disabled = self.reject.disabled = busy or not waiting
        self._describe()

    def _describe(self) -> None:
        pending = next((a for a in self.run.state.tools.approvals.values()
                        if a.call_id == self.call.value), None)
        if pending is None:
            self.what.value = ""
            return
        shown = ""
        try:
            raw = self.run.store.read_private(self.run.run_id, f"{pending.call_id}#call")
            asked = json.loads(raw[f"{pending.call_id}#call"])
            shown = f"{asked['name']}({asked['arguments']})"
        except Exception:  # a store without private records: the title says enough
            pass
        self.what.value = (f"<b>{html.escape(pending.approver)}</b> to decide: "
                           f"{html.escape(pending.title)} <code>{html.escape(shown[:400])}</code>")

    def _clicked(self, *, grant: bool) -> None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._show_error("no running event loop: use await run.approve(...) instead")
            return
        self.pending = loop.create_task(self.decide(grant=grant))

    async def decide(self, *, grant: bool) -> str | None:
        """Approve or reject the chosen call; return its id (``None``: refused, shown)."""
        if self.call.value is None:
            self._show_error("no tool call waits for approval")
            return None
        self.approve.disabled = self.reject.disabled = True
        try:
            decided = await self.run.approve(self.call.value, reject=not grant,
                                             reason=self.reason.value.strip())
        except WopError as exc:
            self._show_error(exc.render())
            return None
        except Exception as exc:  # a click has no caller to raise to
            self._show_error(f"{type(exc).__name__}: {exc}")
            return None
        finally:
            self.approve.disabled = self.reject.disabled = False
        self.reason.value = ""
        self.error.value = ""
        self.decided.append(decided)
        self.update(True)
        return decided

    def _show_error(self, text: str) -> None:
        self.error.value = (f'<div class="wop-approve-error" style="{_ERROR_STYLE}">'
                            f"{html.escape(text)}</div>")
