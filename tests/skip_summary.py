"""A readable end of `make test`: skipped tests summed up by reason, one line per reason.

pytest's ``-rs`` (part of ``-ra``) prints one ``SKIPPED`` line per test file and reason — a
wall of near-identical lines when a service (PostgreSQL, a browser, the real model) is
missing. The project's ``addopts`` asks pytest for failures and errors only (``-rfE``) and
this plugin (loaded by ``tests/conftest.py``) prints, before them::

    ========================= skipped, by reason =========================
     41 no PostgreSQL server: set WOPDSL_TEST_POSTGRES (…)  [tests/cli, tests/store, …]

Asking for pytest's own lines (``-rs``, ``-ra``) turns this summary off.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import PurePath

import pytest

__all__ = ["pytest_terminal_summary"]

_SHOWN_AREAS = 3
"""Test folders named per reason (the rest are counted)."""


def _reason(report: pytest.TestReport | pytest.CollectReport) -> str:
    longrepr = report.longrepr
    text = longrepr[2] if isinstance(longrepr, tuple) and len(longrepr) == 3 else str(longrepr)
    return text.removeprefix("Skipped: ").strip()


def _area(report: pytest.TestReport | pytest.CollectReport) -> str:
    """The test's folder (``tests/server``), from its node id."""
    parent = PurePath(report.nodeid.split("::", 1)[0]).parent
    return parent.as_posix() if parent.parts else "."


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    """Print one line per skip reason: how many were skipped, and where."""
    if terminalreporter.hasopt("s"):
        return  # pytest prints its own per-test lines.
    skipped = [r for r in terminalreporter.stats.get("skipped", [])
               if isinstance(r, pytest.TestReport | pytest.CollectReport)]
    if not skipped:
        return
    counts: Counter[str] = Counter()
    areas: defaultdict[str, set[str]] = defaultdict(set)
    for report in skipped:
        reason = _reason(report)
        counts[reason] += 1
        areas[reason].add(_area(report))
    terminalreporter.write_sep("=", "skipped, by reason", yellow=True)
    width = len(str(max(counts.values())))
    for reason, count in sorted(counts.items(), key=lambda item: (-item[1], item[0])):
        where = sorted(areas[reason])
        shown = ", ".join(where[:_SHOWN_AREAS])
        if len(where) > _SHOWN_AREAS:
            shown += f", +{len(where) - _SHOWN_AREAS} more"
        terminalreporter.write_line(f"{count:>{width}} {reason}  [{shown}]")
