"""Recorded answers for an eval: ``--record`` writes them, ``--offline`` replays them (§16).

The testing plugin's cassettes (:mod:`wopdsl.testing.cassette`), one file per arm, case and
repeat: ``<cassettes>/<arm>/<case>.<repeat>.yaml``. Inside, run 1 is the council's run and
runs 2, 3 … its judges (in check order). Replaying answers every model call from the file —
no network, no model, the same answers every time; a call the file does not hold, or whose
request changed (a changed prompt, member or schema), fails the run and names the member and
the turn, with a diff of the request.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Literal

from wopdsl import Council

if TYPE_CHECKING:
    from wopdsl.testing.cassette import Cassette

__all__ = ["CassetteUnreadable", "Mode", "RunCassette", "cassette_missing"]


class CassetteUnreadable(Exception):
    """A cassette file that cannot be read (damaged, or of another format): the eval stops.

    ``wop eval`` prints it as ``CASSETTE_MISMATCH`` (exit 1), the ``wop_eval`` fixture fails
    the test with it.
    """

    def __init__(self, message: str, *, hint: str) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint
        """How to fix it."""


Mode = Literal["live", "record", "offline"]
"""``live``: call the models; ``record``: call them and write what they said; ``offline``:
answer from what was written."""


def cassette_missing() -> str | None:
    """Why cassettes cannot be used here (their YAML library is missing), or ``None``."""
    from importlib.util import find_spec

    if find_spec("yaml") is None:
        return "recorded answers need PyYAML: pip install 'wopdsl[testing]'"
    return None


class RunCassette:
    """The recorded answers of one arm, case and repeat (its run and its judges)."""

    def __init__(self, folder: Path, arm: str, case: str, repeat: int, mode: Mode, *,
                 how: str) -> None:
        from wopdsl.testing.cassette import Cassette, CassetteMismatch

        self.path = folder / arm / f"{case}.{repeat}.yaml"
        try:
            self.cassette: Cassette = Cassette(self.path, record=mode == "record", how=how)
        except CassetteMismatch as exc:
            raise CassetteUnreadable(str(exc).replace("`pytest --wop-record`", how),
                                     hint="record it again, or restore it from version "
                                          "control") from None

    def tap(self, council: Council, run: int) -> None:
        """Send the model calls of ``council``'s next run (the ``run``-th here) through it."""
        from wopdsl.agents.llm import ProfileClient

        tap = None
        for member in council.compile().members.values():
            client = getattr(member.agent, "client", None)
            if isinstance(client, ProfileClient):
                tap = tap or self.cassette.tap(run)
                client.tap = tap

    def finish(self, *, completed: bool, reused: bool = False) -> list[str]:
        """Save (recording) or check what was used (replay); close. Return the problems.

        ``reused``: the run had finished in the store before (nothing was called): recording
        it is impossible — say so —, and replaying it used nothing, rightly.
        """
        cassette = self.cassette
        try:
            problems = cassette.problems[cassette.reported:]
            if cassette.record:
                if reused:
                    return [f"{self.path.parent.name}/{self.path.name}: the run had finished "
                            "in the store before, so nothing was called and nothing recorded; "
                            "record on a fresh store (--store FILE, or delete its runs)"]
                if not problems and cassette.recorded:
                    cassette.save()
                return problems
            unused = cassette.unused() if completed and not problems and not reused else []
            if unused:
                listed = "; ".join(e.where() for e in unused[:5])
                problems.append(f"{cassette.shown} holds {len(unused)} exchange(s) the run "
                                f"no longer makes ({listed}); re-record with --record if the "
                                "change is intended")
            return problems
        finally:
            cassette.close()
