"""The embedded engine: runs compiled councils, one durable event at a time.

Front ends (CLI, TUI, notebook, plugin, host) use the public API in ``wopdsl``; this package
exports what that API is built from.
"""

from wopdsl.engine.core import Engine, HumanInput
from wopdsl.engine.fork import engine_for, fork
from wopdsl.engine.intake import KeepAnswer

__all__ = ["Engine", "HumanInput", "KeepAnswer", "engine_for", "fork"]
