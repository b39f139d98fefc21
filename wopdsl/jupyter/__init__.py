"""Drive councils from Jupyter: rich run display, a live view, a reply box.

``import wopdsl`` never loads this package, and nothing below it imports it: a ``Run``
renders itself from its projection (``wopdsl.projections.notebook``), and ``Run.show()``
finds :func:`show` through the ``wopdsl.show`` entry point. IPython/ipywidgets load only
when a view is shown.

Example:
    >>> council = wopdsl.load("councils/release-team.toml")
    >>> run = await council.arun()      # top-level await in a notebook cell
    >>> run                             # rooms, messages, roster, status
    >>> run = council.start()           # returns at once; the run goes on in the background
    >>> run.show()                      # a live view, updated as events arrive
"""

from wopdsl.jupyter.live import INSTALL_HINT, LiveView, show
from wopdsl.jupyter.reply import ReplyBox
from wopdsl.jupyter.vote import VoteBox
from wopdsl.projections.notebook import run_html, run_markdown

__all__ = ["INSTALL_HINT", "LiveView", "ReplyBox", "VoteBox", "run_html", "run_markdown", "show"]
