"""Widgets of the council screen."""

from wopdsl_tui.widgets.composer import Composer, MentionSuggester
from wopdsl_tui.widgets.deliberation import DecisionsView, RoomPane, RoundBar
from wopdsl_tui.widgets.errors import ErrorDetails
from wopdsl_tui.widgets.messages import MessageList
from wopdsl_tui.widgets.roster import Roster
from wopdsl_tui.widgets.status import Notice, StatusLine
from wopdsl_tui.widgets.tools import ApprovalPanel, ToolCalls, ToolsView

__all__ = ["ApprovalPanel", "Composer", "DecisionsView", "ErrorDetails", "MentionSuggester",
           "MessageList", "Notice", "RoomPane", "Roster", "RoundBar", "StatusLine", "ToolCalls",
           "ToolsView"]
