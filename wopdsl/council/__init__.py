"""``Council``: declare a council with decorators (or load it), then run it.

Split by concern: :mod:`wopdsl.council.building` (the calls that declare it),
:mod:`wopdsl.council.declaration` (its spec and graph), :mod:`wopdsl.council.running` (its
runs), and here the public class and :func:`load`.
"""

from __future__ import annotations

import os

from wopdsl.council.running import CouncilRunner
from wopdsl.declare.toml import load_declaration

__all__ = ["Council", "load"]


class Council(CouncilRunner):
    """A council: its declaration plus the Python handlers bound to its members.

    Declare one in code::

        council = Council("release-team", task="Prepare a release note.")
        council.room("review", members=["writer", "reviewer"])

        @council.member(role="writer", brief="Draft the release note.")
        def writer(turn: Turn) -> Reply: ...

    or load one from TOML with :func:`load`. Either way, ``await council.arun()`` runs it.
    """

    def __repr__(self) -> str:
        return f"Council({self._settings.get('id')!r})"


def load(path: str | os.PathLike[str]) -> Council:
    """Load a council file (TOML) into a runnable :class:`Council`.

    Raises:
        DeclarationError: with file:line:col, field path and a hint for every problem.

    Example:
        >>> council = load("councils/release-team.toml")
        >>> council.id
        'release-team'
    """
    declaration = load_declaration(path)
    council = Council.from_spec(declaration.spec, source=path)
    council._declaration = declaration
    return council
