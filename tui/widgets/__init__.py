"""Widgets of the council screen."""

from wopdsl_tui.widgets.composer import Composer, MentionSuggester
from wopdsl_tui.widgets.errors import ErrorDetails
from wopdsl_tui.widgets.messages import MessageList
from wopdsl_tui.widgets.roster import Roster
from wopdsl_tui.widgets.status import Notice, StatusLine

__all__ = ["Composer", "ErrorDetails", "MentionSuggester", "MessageList", "Notice", "Roster",
           "StatusLine"]
