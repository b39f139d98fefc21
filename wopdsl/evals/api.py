"""Run an eval file from Python (what ``wop eval`` and the ``wop_eval`` fixture do).

Example:
    >>> report = run_eval("evals/board-vs-solo.toml", store="memory:")  # doctest: +SKIP
    >>> report.passed, report.figures("board", "correct")["rate"]  # doctest: +SKIP
    (True, 0.9)
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
from typing import Any

from wopdsl import EventStore, open_store
from wopdsl.evals.cassettes import Mode
from wopdsl.evals.load import load_eval
from wopdsl.evals.report import build_report
from wopdsl.evals.runner import EvalRunner
from wopdsl.evals.table import render_report

__all__ = ["EvalReport", "arun_eval", "run_eval"]


class EvalReport(dict[str, Any]):
    """The JSON report (``wop eval --json``), with a few ways into it."""

    @property
    def passed(self) -> bool:
        """Whether every run finished, matched its recorded answers and every gate holds."""
        return self["passed"] is True and not self["problems"]

    @property
    def table(self) -> str:
        """The report as ``wop eval`` prints it."""
        return render_report(self)

    def figures(self, arm: str, check: str) -> dict[str, Any]:
        """One arm's figures for one check (``rate`` and ``low``/``high``, or ``mean`` …).

        Raises:
            KeyError: no such arm or check.
        """
        for entry in self["arms"]:
            if entry["id"] == arm:
                return dict(entry["checks"][check])
        raise KeyError(f"no arm {arm!r} in eval {self['eval']['id']}")


async def arun_eval(path: str | os.PathLike[str], store: str | os.PathLike[str] | EventStore |
                    None = None, *, mode: Mode = "live", limit: int | None = None) -> EvalReport:
    """Load, run and report an eval file (see :func:`run_eval`)."""
    evaluation = load_eval(path)
    target = store if isinstance(store, EventStore) else open_store(store)
    try:
        outcome = await EvalRunner(evaluation, target, mode=mode, limit=limit).arun()
    finally:
        if target is not store:
            target.close()
    return EvalReport(build_report(outcome))


def run_eval(path: str | os.PathLike[str], store: str | os.PathLike[str] | EventStore |
             None = None, *, mode: Mode = "live", limit: int | None = None) -> EvalReport:
    """Load, run and report an eval file.

    Args:
        path: The eval file.
        store: Where runs are kept (a path, ``"memory:"`` or a store); default
            ``.wop/runs.db``. Finished runs found there are reused.
        mode: ``live``, ``record`` or ``offline`` (recorded answers).
        limit: Only the first ``limit`` cases.

    Raises:
        DeclarationError: the eval file, its cases or councils are invalid.
        CassetteUnreadable: a cassette of recorded answers cannot be read (``offline``).

    Inside a running event loop it runs on a loop of its own in a worker thread.
    """
    go = arun_eval(path, store, mode=mode, limit=limit)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(go)
    with concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="wop_eval") as pool:
        return pool.submit(asyncio.run, go).result()
