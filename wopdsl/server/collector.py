"""The garbage collector of a process that only serves (``wop serve``): fewer, shorter passes.

A host holding a thousand runs and three thousand streams has hundreds of thousands of
objects that live long (its runs' states, its connections) and makes many short-lived ones
per event. With CPython's defaults the young generation is collected every 700 new
containers, which promotes whatever is alive at that instant, and every few seconds a full
collection walks everything, the modules loaded at start-up included: at 1,000 runs x 3
streams that was about 1.8 CPU-seconds of collection in a 10-second burst, with pauses of
up to a quarter of a second, each one delaying every stream (docs/performance.md, "The HTTP
host"). :func:`tune_collector` freezes what start-up built (never collected again: the
modules, the councils) and collects the young generation every :data:`YOUNG_THRESHOLD`
containers instead.

``create_app`` leaves the collector of your own process as it is; ``wop serve`` calls this.
"""

from __future__ import annotations

import gc
from typing import Final

__all__ = ["YOUNG_THRESHOLD", "tune_collector"]

YOUNG_THRESHOLD: Final = 20_000
"""New containers between two collections of the young generation (CPython's default: 700)."""


def tune_collector() -> None:
    """Freeze the objects built so far and collect the young generation less often.

    Call it once start-up is done (councils loaded, app built), just before serving.
    """
    gc.collect()
    gc.freeze()
    young, middle, old = gc.get_threshold()
    gc.set_threshold(max(young, YOUNG_THRESHOLD), middle, old)
