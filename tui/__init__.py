"""wopdsl_tui: the Textual terminal UI for wopdsl councils (``wop tui``).

Example:
    >>> import wopdsl_tui
    >>> wopdsl_tui.run_app("councils/advisory-board.toml")  # doctest: +SKIP
    0
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from wopdsl_tui.app import CouncilApp

import wopdsl

__all__ = ["CouncilApp", "run_app"]


def run_app(target: str, store: str | None = None, *,
            max_participants: int | None = None, as_: str | None = None) -> int:
    """Run the terminal UI on a council file (start a run) or a run id (attach to it).

    Args:
        target: A council file (``*.toml``) to start, or the id of a stored or running run.
        store: The event store (SQLite path, ``postgresql://`` URL or ``memory:``); default
            ``$WOP_STORE`` or ``.wop/runs.db``.
        max_participants: The host's roster limit per room for a started run.
        as_: The human member the person at this terminal posts as (several people may
            share a run, each from their own terminal).

    Returns:
        The exit code: 0 when the UI closed, 2 when the target is invalid or unknown, or
        ``as_`` is not one of its human members (the error is printed to stderr as
        ``error[CODE]: ...``).
    """
    try:
        source = _resolve(target, store)
        if as_ is not None:
            _check_person(source, as_)
    except wopdsl.WopError as exc:
        print(exc.render(), file=sys.stderr)
        return 2
    app = CouncilApp(source, store=store, max_participants=max_participants, as_=as_)
    result = app.run()
    return result if isinstance(result, int) else 0


def _resolve(target: str, store: str | None) -> wopdsl.Council | wopdsl.Run:
    """Return the council a file declares, or a handle on the run ``target`` names."""
    path = Path(target)
    if target.endswith(".toml") or os.sep in target or path.is_file():
        return wopdsl.load(path)
    where = store or os.environ.get("WOP_STORE") or wopdsl.store.DEFAULT_STORE
    if wopdsl.store.is_file_target(where) and not Path(
            where.removeprefix("sqlite:///")).exists():
        # Opening a missing SQLite file would create it: refuse before touching the disk.
        raise wopdsl.RunNotFound(f"run {target} not found: there is no store at {where}",
                                 hint="list runs with `wop runs`, or pass --store")
    return wopdsl.attach(store, target)


def _check_person(source: wopdsl.Council | wopdsl.Run, member: str) -> None:
    """Refuse ``--as MEMBER`` unless MEMBER is a human member (nobody posts as another)."""
    if isinstance(source, wopdsl.Council):
        humans = [m.id for m in source.members if m.engine == "human"]
    else:
        humans = [m.id for m in source.state.members.values() if m.human]
    if member not in humans:
        raise wopdsl.ValidationError(
            f"--as {member}: not a human member of this council (human members: "
            f"{', '.join(humans) or 'none'})",
            hint=f"pass --as with one of {', '.join(humans)}" if humans else
            "this council has no human member: nobody posts from the terminal; drop --as")
